"""Formatting a conversation with the model's own chat template (the Jinja text stored in the GGUF).

A template comes from a downloaded file, so it is treated as hostile: it runs in Jinja's immutable sandbox, under a
step budget and an output cap that grow with the conversation, and any failure falls back to ChatML with a notice
the front end can show. The budget counts the template's own lines run, not seconds: a busy machine renders the same
conversation as an idle one, and a bigger conversation gets a bigger budget.

A thinking model's earlier replies: an assistant message may carry its reasoning beside its answer, as
`reasoning_content` (what the window and the API send), `reasoning` (vLLM, OpenRouter) or `thinking` (gpt-oss). The
reasoning goes to the template under each of those names the template reads, and the template decides what to keep
(Qwen3: the replies after the last user message; gpt-oss: none but a tool call's; DeepSeek-R1's distills never read
it). A template that reads none of them gets no reasoning at all: it is never glued into the answer's text, where
the model would see its old thoughts as something it said. The request's thinking settings arrive as template
variables (app.engine.local.prompts).
"""

from __future__ import annotations

import functools
import json
import re
import secrets
import sys
from dataclasses import dataclass
from datetime import datetime
from typing import Mapping, Optional, Sequence

from app.engine.errors import PromptFormatError

# Used when a GGUF carries no template or its template cannot be rendered: ChatML is what most small chat
# models (Qwen, SmolLM, many fine-tunes) were trained on.
CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Gemma's turns (Gemma 2 and 3 chat models): a system prompt goes before the first user turn.
GEMMA = (
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'system' %}{{ message['content'] }}\n\n"
    "{% else %}<start_of_turn>{{ 'model' if message['role'] == 'assistant' else 'user' }}\n"
    "{{ message['content'] }}<end_of_turn>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
# The templates a user may choose for a model file that has none, by the name the window shows.
BUILT_IN_TEMPLATES = {"ChatML": CHATML, "Gemma": GEMMA}

# The names an assistant message's reasoning goes by, first found first used.
REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")
# How the generation prompt opens a reply's thinking (R1 distills end it with "<think>\n"); a prompt that ends with
# one of these starts the reply inside its reasoning. Qwen3's closed "<think>\n\n</think>\n\n" does not.
THINKING_OPENERS = ("<think>", "[THINK]", "<|channel|>analysis<|message|>")
# A template may run this many of its lines, plus so many for each message (real templates run 8-50 a message),
# and write this much more than the messages themselves hold, plus so much for each message's markup.
BASE_STEPS = 200_000
STEPS_PER_MESSAGE = 200
OUTPUT_ALLOWANCE = 1 << 20
MARKUP_PER_MESSAGE = 256
# No single string or number a template builds may be larger than this (`'x' * 10**9`, `10 ** 10 ** 10`).
_MAX_VALUE = 1 << 22


class TemplateError(Exception):
    pass


class _OutOfBudget(BaseException):
    """Raised inside the template's frames; a BaseException so no `except Exception` in Jinja swallows it. It never
    leaves this module: render_prompt turns it into a notice, or into PromptFormatError."""


@dataclass(frozen=True)
class RenderedPrompt:
    """The prompt text, the character spans the template wrote itself (everything else is message content), and a
    notice ("" when none) saying the model's own template could not be used."""

    text: str
    markup: tuple[tuple[int, int], ...]
    notice: str = ""
    # The template itself refused this conversation (its raise_exception: "roles must alternate"): the next
    # conversation may well be fine, so the model's template is not given up on for it.
    refused_conversation: bool = False
    # The generation prompt ends with a thinking start marker (R1 distills' "<think>\n"): the reply begins inside
    # its reasoning.
    opens_thinking: bool = False


class _Refusal(TemplateError):
    """The template's own raise_exception: a verdict on the conversation, not a fault of the template."""


def _raise(message: str):
    raise _Refusal(message)


def _check_sizes(values) -> None:
    """Refuse an argument that asks for an enormous string (`'x'|center(10**9)`): it would be built in one step of
    C code, where no deadline can stop it."""
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > _MAX_VALUE:
            raise TemplateError("the template asks for a size too large to write")


def _check_format(text: object) -> None:
    """The same for a format string's field widths (`'%0999999999d' % 1`, `'{:>999999999}'.format(1)`)."""
    if isinstance(text, str) and _HUGE_FIELD.search(text):
        raise TemplateError("the template asks for a field too wide to write")


_HUGE_FIELD = re.compile(r"[%:.<>^=+\- #0,_]\d{7,}")


def _guarded_filter(name: str, function):
    @functools.wraps(function)  # keeps Jinja's pass_context/pass_environment marks
    def guarded(*args, **kwargs):
        _check_sizes(args)
        _check_sizes(kwargs.values())
        if name == "format":
            _check_format(next((a for a in args if isinstance(a, str)), None))
        return function(*args, **kwargs)

    return guarded


@functools.lru_cache(maxsize=1)
def _environment():
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class _GuardedEnvironment(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(["*", "**", "%"])

        def call_binop(self, context, operator, left, right):
            big_power = isinstance(right, int) and abs(right) > 64 and isinstance(left, (int, float))
            if operator == "**" and big_power and not -1 <= left <= 1:
                raise TemplateError("the template computes a number too large to write")
            if operator == "*":
                for seq, n in ((left, right), (right, left)):
                    if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > _MAX_VALUE:
                        raise TemplateError("the template builds a string too large to write")
            if operator == "%":
                _check_format(left)
            return super().call_binop(context, operator, left, right)

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (Jinja's own signature)
            _check_sizes(args)
            _check_sizes(kwargs.values())
            method = getattr(__obj, "__wrapped__", __obj)  # Jinja wraps str.format in its own checked version
            if getattr(method, "__name__", "") in ("format", "format_map"):
                _check_format(getattr(method, "__self__", None))
            return super().call(__context, __obj, *args, **kwargs)

    env = _GuardedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters = {name: _guarded_filter(name, f) for name, f in env.filters.items()}
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


@functools.lru_cache(maxsize=16)
def _compiled(template: str):
    """A template compiled once: compiling costs more than rendering, and each request renders the chat's template
    several times (fitting the context, counting, the prompt itself)."""
    return _environment().from_string(template)


def prepare_template(template: Optional[str]) -> None:
    """Compile a model's chat template ahead of its first prompt (at load); a bad one is left for render_prompt to
    report."""
    if template:
        try:
            _compiled(template)
        except Exception:
            pass


def _render_limited(template: str, values: dict, budget_steps: int, max_chars: int) -> str:
    """Render under a budget of `budget_steps` lines of the template's compiled code (loops re-run their first line
    each time round, so nested loops are caught too) and stop once the output passes `max_chars`."""
    compiled = _compiled(template)
    steps_left = budget_steps

    def local_trace(frame, event, arg):
        nonlocal steps_left
        steps_left -= 1
        if steps_left < 0:
            raise _OutOfBudget("it runs far longer than the conversation needs")
        return local_trace

    def global_trace(frame, event, arg):
        # Only the template's own code is traced line by line; Jinja and Python library frames run untraced.
        if frame.f_code.co_filename == "<template>":
            return local_trace(frame, event, arg)
        return None

    parts: list[str] = []
    size = 0
    previous = sys.gettrace()
    sys.settrace(global_trace)
    try:
        for part in compiled.generate(**values):
            size += len(part)
            if size > max_chars:
                raise _OutOfBudget("it writes far more text than the conversation holds")
            parts.append(part)
    finally:
        sys.settrace(previous)
    return "".join(parts)


def raw_prompt(messages: Sequence[dict]) -> RenderedPrompt:
    """Raw completion: the messages' text one after another, a blank line between, with no markup at all, so a base
    model continues the text rather than imitate chat markers it never learned (and no text can become one)."""
    parts = [str(m.get("content") or "") for m in messages]
    text = "\n\n".join(part for part in parts if part)
    return RenderedPrompt(text + "\n\n" if text else "", ())


def render_prompt(
    template: Optional[str],
    messages: Sequence[dict],
    *,
    bos_token: str = "",
    eos_token: str = "",
    add_generation_prompt: bool = True,
    budget_steps: Optional[int] = None,
    tools: Sequence[dict] = (),
    variables: Mapping[str, object] = {},
) -> RenderedPrompt:
    """The prompt for `messages` ([{"role", "content"}, and a reply's reasoning as "reasoning_content"]), ending
    where the assistant's reply begins, with the spans the template wrote. `variables` are more template variables
    (enable_thinking, reasoning_effort: prompts.template_variables); a template that does not read one is
    unaffected. Never raises for a bad template: it falls back to ChatML and says so in `notice`. Raises
    PromptFormatError (an Exception, like every error that leaves here) only when even ChatML cannot hold the
    conversation."""
    messages = [dict(m) for m in messages]
    content_size = sum(len(str(m.get(key) or "")) for m in messages for key in ("content", *REASONING_KEYS))
    max_chars = 4 * content_size + MARKUP_PER_MESSAGE * len(messages) + OUTPUT_ALLOWANCE
    if budget_steps is None:
        budget_steps = BASE_STEPS + STEPS_PER_MESSAGE * len(messages)
    specials: dict = dict(variables)
    if specials:
        max_chars += 4 * len(json.dumps(specials, default=str))
    specials.update(add_generation_prompt=add_generation_prompt, bos_token=bos_token, eos_token=eos_token)
    if tools:  # templates test `tools` for being defined, so it is passed only when there are some
        specials["tools"] = [dict(t) for t in tools]
        max_chars += 4 * len(json.dumps(list(tools)))
    notice, refused = "", False
    if template:
        try:
            return _render_marked(
                template, messages_for_template(template, messages), specials, budget_steps, max_chars
            )
        except _OutOfBudget as exc:
            notice = str(exc)
        except RecursionError:
            notice = "it calls itself without end"
        except MemoryError:
            notice = "it needs more memory than there is"
        except _Refusal as exc:
            notice, refused = f"it reported an error: {exc}", True
        except TemplateError as exc:
            notice = f"it reported an error: {exc}"
        except Exception as exc:  # any other template error: a bad template is no reason to refuse to chat
            notice = f"{type(exc).__name__}: {exc}"
        notice = f"The model's chat template could not be used ({notice}), so the chat is formatted as ChatML."
    try:
        rendered = _render_marked(CHATML, messages_for_template(CHATML, messages), specials, budget_steps, max_chars)
    except (_OutOfBudget, RecursionError, MemoryError) as exc:
        raise PromptFormatError(
            f"The conversation could not be formatted for the model ({exc or 'too large'})."
        ) from None
    return RenderedPrompt(rendered.text, rendered.markup, notice, refused, rendered.opens_thinking)


def _render_marked(
    template: str, messages: list[dict], specials: dict, budget_steps: int, max_chars: int
) -> RenderedPrompt:
    """Render twice: with the real texts, and with each message's content (and reasoning) replaced by a sentinel,
    which shows which characters the template wrote. Only those may later become control tokens: a reply's old
    reasoning is model text, as its content is."""
    text = _render_limited(template, dict(messages=messages, **specials), budget_steps, max_chars)
    opened = opens_thinking(text)
    nonce = secrets.token_hex(4)
    slots: list[str] = []  # the texts the sentinels stand for, by sentinel number

    def sentinel(value: str) -> str:
        slots.append(value)
        return f"\ue000{nonce}:{len(slots) - 1}\ue001"

    marked = []
    for m in messages:
        texts = {key: m[key] for key in ("content", *REASONING_KEYS) if isinstance(m.get(key), str) and m[key]}
        marked.append(dict(m, **{key: sentinel(value) for key, value in texts.items()}) if texts else m)
    everything = RenderedPrompt(text, ((0, len(text)),), opens_thinking=opened)
    try:
        sentinel_text = _render_limited(template, dict(messages=marked, **specials), budget_steps, max_chars)
    except Exception:  # the template judges contents (rare): all it wrote is markup, as before this check existed
        return everything
    pieces = re.split(f"\ue000{nonce}:(\\d+)\ue001", sentinel_text)
    markup_pieces = pieces[0::2]
    indices = [int(i) for i in pieces[1::2]]
    contents = [slots[i] for i in indices]
    spans = _align(text, markup_pieces, contents)
    if spans is not None:
        return RenderedPrompt(text, tuple(spans), opens_thinking=opened)
    if set(indices) == set(range(len(slots))):
        # The template changed a content in a way we cannot follow: use the contents as written, so the markup
        # is still known exactly.
        text = "".join(p + c for p, c in zip(markup_pieces, contents + [""]))
        return RenderedPrompt(text, tuple(_align(text, markup_pieces, contents) or ()), opens_thinking=opened)
    # The template escapes or rewrites contents (the sentinels did not come through), or drops some (an old
    # reply's reasoning): all it wrote is markup.
    return everything


def _align(text: str, markup: list[str], contents: list[str]) -> Optional[list[tuple[int, int]]]:
    """Spans of `text` written by `markup` pieces, which alternate with (possibly trimmed) `contents`."""
    if not text.startswith(markup[0]):
        return None
    spans = [(0, len(markup[0]))]
    pos = len(markup[0])
    for k, content in enumerate(contents):
        nxt = markup[k + 1]
        last = k + 1 == len(contents)
        end = _content_end(text, pos, content, nxt, last)
        if end is None:
            return None
        spans.append((end, end + len(nxt)))
        pos = end + len(nxt)
    return [s for s in spans if s[1] > s[0]] if pos == len(text) else None


def _content_end(text: str, pos: int, content: str, nxt: str, last: bool) -> Optional[int]:
    """Where the content starting at `pos` ends: the content as given when it is there, else the longest stretch
    followed by the next markup that is part of the content (templates trim contents, or keep only a part)."""
    if last:
        end = len(text) - len(nxt)
        ok = end >= pos and text.endswith(nxt) and text[pos:end] in content
        return end if ok else None
    if text.startswith(content + nxt, pos):
        return pos + len(content)
    if not nxt:
        return None
    best = None
    q = text.find(nxt, pos)
    while q != -1 and q - pos <= len(content):
        if text[pos:q] in content:
            best = q
        q = text.find(nxt, q + 1)
    return best


@functools.lru_cache(maxsize=16)
def reasoning_keys_read(template: Optional[str]) -> tuple[str, ...]:
    """Which of REASONING_KEYS the template reads from a message (`message.thinking`, `message['reasoning']`,
    `"thinking" in message`). A name read off something else (Magistral's `block['thinking']` of a content chunk)
    counts too: the template then gets a key it does not look at, which changes nothing."""
    if not template:
        return ()
    return tuple(
        key
        for key in REASONING_KEYS
        if re.search(rf"\.{key}\b|\[\s*['\"]{key}['\"]\s*\]|['\"]{key}['\"]\s+in\s+\w", template)
    )


def reasoning_of(message: dict) -> str:
    """The reasoning an assistant message carries ("" when none), under whichever name it came."""
    for key in REASONING_KEYS:
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def messages_for_template(template: Optional[str], messages: Sequence[dict]) -> list[dict]:
    """The messages as the template gets them: each reply's reasoning under the names the template reads, and
    under none where it reads none. Nothing else of a message changes."""
    keys = reasoning_keys_read(template)
    shaped = []
    for message in messages:
        if not any(key in message for key in REASONING_KEYS):
            shaped.append(dict(message))
            continue
        reasoning = reasoning_of(message) if message.get("role") == "assistant" else ""
        kept = {k: v for k, v in message.items() if k not in REASONING_KEYS}
        if reasoning:
            kept.update((key, reasoning) for key in keys)
        shaped.append(kept)
    return shaped


def opens_thinking(prompt: str) -> bool:
    """Whether the prompt ends inside a thinking block the template opened (so the reply starts as reasoning)."""
    tail = prompt.rstrip()
    return any(tail.endswith(opener) for opener in THINKING_OPENERS)
