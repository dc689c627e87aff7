"""Formatting a conversation with the model's own chat template (the Jinja text stored in the GGUF)."""

from __future__ import annotations

from datetime import datetime
from typing import Optional, Sequence

# Used when a GGUF carries no template or its template cannot be rendered: ChatML is what most small chat
# models (Qwen, SmolLM, many fine-tunes) were trained on.
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


class TemplateError(Exception):
    pass


def _raise(message: str):
    raise TemplateError(message)


def render_chat(
    template: Optional[str],
    messages: Sequence[dict],
    *,
    bos_token: str = "",
    eos_token: str = "",
    add_generation_prompt: bool = True,
) -> str:
    """The prompt text for `messages` ([{"role", "content"}]), ending where the assistant's reply begins."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
    )
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    values = dict(
        messages=list(messages),
        add_generation_prompt=add_generation_prompt,
        bos_token=bos_token,
        eos_token=eos_token,
    )
    if template:
        try:
            return env.from_string(template).render(**values)
        except (jinja2.TemplateError, TemplateError, TypeError, ValueError):
            pass  # a template we cannot render is no reason to refuse to chat
    return env.from_string(CHATML).render(**values)
