"""Which markers open and close a reply's thinking, and whether the reply starts inside it.

The model's own chat template names its markers: `<think>`/`</think>` (Qwen3, DeepSeek-R1 and its distills, GLM,
Phi-4-reasoning), `[THINK]`/`[/THINK]` (Magistral), or gpt-oss's Harmony channels. `<think>` at the start of a
reply is always recognised, as LM Studio and llama-server's deepseek format do, since fine-tunes and models told
to think in a system prompt write it with templates that never mention it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional, Sequence


@dataclass(frozen=True)
class MarkerSet:
    """One family's markers. `start` opens the thinking, `end` closes it; `openings` are the headers that may open
    the answer (after `end`, or at the start of a reply that does not think), in neither part; `reopenings` open
    more thinking after `end`. `closing` is the text written for the model when its thinking budget is spent."""

    name: str
    start: str
    end: str
    openings: tuple[str, ...] = ()
    reopenings: tuple[str, ...] = ()
    closing: str = ""

    @property
    def close_text(self) -> str:
        return self.closing or self.end


THINK = MarkerSet("think", "<think>", "</think>", closing="\n</think>\n\n")
MAGISTRAL = MarkerSet("magistral", "[THINK]", "[/THINK]")
# Harmony (gpt-oss): the analysis channel is the thinking; `<|end|>` closes a message and the final channel's
# header opens the answer. The headers' text is in neither part.
_HARMONY_FINAL = "<|start|>assistant<|channel|>final<|message|>"
HARMONY = MarkerSet(
    "harmony",
    "<|channel|>analysis<|message|>",
    "<|end|>",
    openings=(_HARMONY_FINAL, "<|channel|>final<|message|>"),
    reopenings=("<|start|>assistant<|channel|>analysis<|message|>",),
    closing="<|end|>" + _HARMONY_FINAL,
)
FAMILIES: tuple[MarkerSet, ...] = (HARMONY, MAGISTRAL, THINK)
# What a template's text shows of each family: Harmony's channels (its templates build the headers from parts, and
# `<|end|>` alone is Phi's turn end), Magistral's tag, the think tag.
_SIGNS: tuple[tuple[MarkerSet, str], ...] = ((HARMONY, "<|channel|>"), (MAGISTRAL, "[THINK]"), (THINK, "<think>"))


def markers_for(template: Optional[str], override: Sequence[str] = ()) -> tuple[MarkerSet, ...]:
    """The marker sets a reply is read with, the first the model's own: a per-model `override` (start, end), else
    the family whose markers the chat template's text mentions; `<think>` is always among them."""
    if len(override) >= 2 and override[0] and override[1]:
        chosen = MarkerSet("custom", override[0], override[1])
    else:
        text = template or ""
        chosen = next((family for family, sign in _SIGNS if sign in text), THINK)
    return (chosen,) if chosen.start == THINK.start else (chosen, THINK)


# Where a reply begins: at its opening (markers may follow), already inside its thinking (the prompt opened it),
# or in its answer (the prompt closed the thinking: Qwen3 with enable_thinking false writes an empty block).
ReplyStart = Literal["opening", "reasoning", "answer"]


def reply_start(prompt: str, markers: Sequence[MarkerSet]) -> ReplyStart:
    """How a reply to the rendered `prompt` begins, read from the prompt's end (the generation prompt)."""
    tail = prompt.rstrip()
    for family in markers:
        if tail.endswith(family.end) and family.start in tail[-(len(family.start) + len(family.end) + 8) :]:
            between = tail[: -len(family.end)].rstrip()
            if between.endswith(family.start):
                return "answer"  # an empty thinking block: the template turned thinking off
        if tail.endswith(family.start):
            return "reasoning"
    return "opening"


def written_reply(prompt: str, reasoning: str, answer: str, markers: Sequence[MarkerSet]) -> str:
    """A stopped reply as the model wrote it, from its parts, so that it can be continued: the model's own start
    marker (unless the generation `prompt` opened the thinking), the reasoning, and when an answer had begun, the
    end marker and the answer. Without reasoning, the answer as it is."""
    if not reasoning:
        return answer
    family = markers[0]
    opened = reply_start(prompt, markers) == "reasoning"
    text = ("" if opened else family.start + "\n") + reasoning
    return text + family.close_text + answer if answer else text


def continued_start(prompt: str, partial: str, markers: Sequence[MarkerSet]) -> ReplyStart:
    """Where the continuation of a stopped reply starts: inside its thinking when `partial` (the reply so far,
    after the generation `prompt`) opened one and did not close it, else in its answer."""
    opened = reply_start(prompt, markers) == "reasoning"
    text = partial.lstrip()
    if not text:
        return reply_start(prompt, markers)
    for family in markers:
        if opened or text.startswith(family.start):
            return "answer" if family.end in text else "reasoning"
    return "answer"
