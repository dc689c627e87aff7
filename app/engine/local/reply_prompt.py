"""A request's prompt as the target reads it: a chat rendered with the template (a stopped reply continued where it
ends, a required tool call opened for the model, pictures read by the projector), or a raw completion's text or
token ids; and how its reply's thinking is told from its answer.

SpecEngine (engine.py) turns each request into a ReplyPrompt here, then decodes it.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Iterator, Optional, Sequence

from app.engine.config import GenerationConfig
from app.engine.errors import PromptFormatError
from app.engine.events import EngineEvent, FinishedEvent, TokenEvent
from app.engine.image_files import with_markers
from app.engine.local.chat_format import RenderedPrompt
from app.engine.local.llama_model import LoadedModel
from app.engine.local.prompts import Prompts
from app.engine.local.vision.projector import MediaPrompt
from app.engine.local.vision.seeing import Seeing
from app.engine.reasoning.markers import MarkerSet, ReplyStart, continued_start, markers_for, reply_start, written_reply
from app.engine.reasoning.splitter import ReplySplitter
from app.engine.tools.calls import forced_call


@dataclass(frozen=True)
class ReplyPrompt:
    """What a reply is decoded from: the prompt's `tokens` and `text`, the `config` it runs with (a required call's
    schema set), where the reply starts when it continues a stopped one (`start`), its pictures (`media`), and a
    required call's `opening`, written for the model before its first token."""

    tokens: list[int]
    text: str
    config: GenerationConfig
    start: Optional[ReplyStart] = None
    media: Optional[MediaPrompt] = None
    opening: str = ""


def chat_prompt(
    prompts: Prompts, seeing: Seeing, messages: Sequence[dict], config: GenerationConfig, markers: tuple[MarkerSet, ...]
) -> ReplyPrompt:
    """The prompt of a reply to `messages`. When the last message is the assistant's, its reply is continued where it
    ends (the reply was stopped or interrupted), its thinking written back with the model's `markers`."""
    tools = json.loads(config.tools) if config.tools else ()
    start: Optional[ReplyStart] = None
    messages, images = with_markers(messages)  # each picture a marker in its message's text
    if messages and messages[-1].get("role") == "assistant":
        # The partial reply is model text, not markup: it is appended after the generation prompt as text.
        rendered = prompts.render(messages[:-1], tools, config)
        last = messages[-1]
        thinking = last.get("reasoning_content") or last.get("reasoning") or ""
        partial = written_reply(rendered.text, thinking if isinstance(thinking, str) else "", last["content"], markers)
        start = continued_start(rendered.text, partial, markers)
        rendered = RenderedPrompt(rendered.text + partial, rendered.markup, rendered.notice)
    else:
        rendered = prompts.render(messages, tools, config)
    forced = (
        forced_call(prompts.tool_format, tools, "" if config.tool_choice == "required" else config.tool_choice)
        if tools and config.tool_choice
        else None
    )
    opening = ""
    if forced is not None:
        opening, schema = forced
        config = dataclasses.replace(config, json_schema=json.dumps(schema))
    if opening:
        # A required call: the reply starts inside one, written as the template's markup would be.
        rendered = RenderedPrompt(
            rendered.text + opening,
            rendered.markup + ((len(rendered.text), len(rendered.text) + len(opening)),),
            rendered.notice,
        )
    media = seeing.prompt(rendered, images, prompts.target.path.name) if images else None
    tokens = media.tokens if media is not None else prompts.tokens_for(rendered.text, rendered.markup)
    return ReplyPrompt(tokens, rendered.text, config, start, media, opening)


def remember_turn(prompts: Prompts, seeing: Seeing, prompt: ReplyPrompt, reply: str, written: list[int]) -> None:
    """The finished reply (`reply`, as its tokens wrote it, thinking and markers too; `written`: the prompt's and its
    tokens) kept for the next turn's reuse: by the prompts, or with its pictures by the projector's side."""
    if prompt.media is None:
        prompts.remember(prompt.text + reply, written)
    else:
        seeing.remember(prompt.text + reply, written, prompt.media)


def completion_prompt(prompts: Prompts, prompt: str | Sequence[int], config: GenerationConfig) -> ReplyPrompt:
    """The prompt of a raw completion: its text (no chat template), or its token ids (completion_tokens)."""
    if isinstance(prompt, str):
        tokens, text = prompts.tokens_for(prompt), prompt
    else:
        tokens, text = list(prompt), text_of(prompts.target, prompt)
    if not tokens:
        raise PromptFormatError("The prompt is empty; there is nothing to continue.")
    return ReplyPrompt(tokens, text, config)


def completion_tokens(prompts: Prompts, prompt: str | Sequence[int], suffix: Optional[str] = None) -> list[int]:
    """The tokens of a raw completion's prompt (text, or token ids as they are). With `suffix`, the model's
    fill-in-the-middle prompt (prefix, suffix, then the middle it writes), as llama-server's /infill builds it.
    Raises PromptFormatError for ids outside the vocabulary, or a suffix on a model without FIM tokens."""
    target = prompts.target
    if suffix is None:
        if isinstance(prompt, str):
            return prompts.tokens_for(prompt)
        bad = next((t for t in prompt if not 0 <= t < target.n_vocab), None)
        if bad is not None:
            raise PromptFormatError(f"The prompt holds token {bad}; this model's tokens are 0 to {target.n_vocab - 1}.")
        return list(prompt)
    fim = target.fim_tokens()
    if fim is None:
        raise PromptFormatError(
            f"{target.path.name} has no fill-in-the-middle tokens, so it cannot take a "
            '"suffix"; leave it out, or load a model made for code infill.'
        )
    prefix = prompt if isinstance(prompt, str) else text_of(target, prompt)
    pre, suf, mid = fim
    plain = dict(add_special=False, parse_special=False)  # the code is text: none of it is a control token
    return ([target.bos_id] if target.add_bos else []) + [
        pre,
        *target.tokenize(prefix, **plain),
        suf,
        *target.tokenize(suffix, **plain),
        mid,
    ]


def text_of(target: LoadedModel, tokens: Sequence[int]) -> str:
    """Token ids as the text they write, control tokens by their names."""
    data = b"".join(target.token_bytes(t) or target.token_text(t).encode("utf-8") for t in tokens)
    return data.decode("utf-8", errors="replace")


def reply_markers(model_template: Optional[str], config: GenerationConfig) -> tuple[MarkerSet, ...]:
    """The thinking's markers of the template the request uses (the model's own, its own, or none for raw text),
    or the request's own."""
    template = {"model": model_template, "template": config.chat_template, "raw": None}[config.chat_format]
    return markers_for(template, config.reasoning_markers)


def reply_splitter(prompt: ReplyPrompt, markers: tuple[MarkerSet, ...]) -> ReplySplitter:
    """How the reply's thinking is told from its answer: by `markers`, from where the reply starts (the prompt's
    `start`, else read from the prompt's end)."""
    return ReplySplitter(
        markers,
        prompt.start or reply_start(prompt.text, markers),
        split=prompt.config.reasoning_format != "none",
        continued=prompt.start is not None,
    )


def led_by(opening: str, request_id: int, events: Iterator[EngineEvent]) -> Iterator[EngineEvent]:
    """The reply's events with the forced opening of a call first, as text of no token (token_id -1, like a
    flushed tail), so the reply's text holds the whole call."""
    yield TokenEvent(request_id, 0, -1, opening, "target")
    for event in events:
        if isinstance(event, FinishedEvent):
            event = dataclasses.replace(
                event, text=opening + event.text, call_text=opening + event.call_text if event.call_text else ""
            )
        yield event
