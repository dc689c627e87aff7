"""The CLI's thinking options (`generate`, `bench`) and how a reply's thinking is printed: dimmed on a terminal,
framed as "Thinking:" / "Answer:" otherwise, or not at all."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Optional, TextIO

from app.cli.terminal import printable
from app.engine.events import FinishedEvent, TokenEvent

DIM, RESET = "\x1b[2m", "\x1b[0m"


def add_thinking_arguments(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("thinking models (their reasoning between <think> and </think>, or their own markers)")
    on = group.add_mutually_exclusive_group()
    on.add_argument(
        "--thinking",
        dest="thinking",
        action="store_true",
        default=None,
        help="ask the model to think (the chat template's enable_thinking, where it reads it)",
    )
    on.add_argument(
        "--no-thinking",
        dest="thinking",
        action="store_false",
        help="ask the model not to think (enable_thinking false, where the template reads it)",
    )
    group.add_argument(
        "--reasoning-effort",
        choices=("low", "medium", "high"),
        default="",
        help="how hard to think, where the template reads reasoning_effort (gpt-oss)",
    )
    group.add_argument(
        "--thinking-budget",
        type=int,
        default=0,
        metavar="N",
        help="the most thinking tokens: then the model's end marker is written for it and the "
        "answer follows (default 0: no limit)",
    )
    group.add_argument(
        "--reasoning-format",
        choices=("split", "none"),
        default="split",
        help="split: the thinking apart from the answer (default); none: left in the answer's text, markers and all",
    )
    group.add_argument(
        "--reasoning-markers",
        nargs=2,
        metavar=("START", "END"),
        default=None,
        help="the model's own thinking markers, instead of its template's (e.g. '<reason>' '</reason>')",
    )


def thinking_problem(args: argparse.Namespace) -> Optional[str]:
    if args.thinking_budget < 0:
        return "--thinking-budget must be 0 (no limit) or more"
    markers = args.reasoning_markers
    if markers and (not markers[0].strip() or not markers[1].strip() or markers[0] == markers[1]):
        return "--reasoning-markers needs two different texts, START and END"
    return None


def thinking_config(args: argparse.Namespace) -> dict[str, Any]:
    """GenerationConfig's thinking fields from the options."""
    return dict(
        thinking=args.thinking,
        reasoning_effort=args.reasoning_effort,
        thinking_budget=args.thinking_budget,
        reasoning_format=args.reasoning_format,
        reasoning_markers=tuple(args.reasoning_markers or ()),
    )


class ThinkingPrinter:
    """Streams a reply's text: the thinking dimmed where `out` is a terminal, between "Thinking:" and "Answer:"
    lines where it is not (a file, a pipe), left out with `hide`."""

    def __init__(self, out: TextIO = sys.stdout, hide: bool = False, color: Optional[bool] = None):
        self.out, self.hide = out, hide
        self.color = out.isatty() if color is None else color
        self._part = "answer"  # what was printed last
        self._thought = False

    def token(self, event: TokenEvent) -> None:
        if not event.text:
            return
        if event.part == "reasoning":
            if self.hide:
                return
            if self._part != "reasoning":
                self.out.write(DIM if self.color else "Thinking:\n")
                self._part, self._thought = "reasoning", True
        elif self._part == "reasoning":
            self.out.write(f"{RESET}\n\n" if self.color else "\n\nAnswer:\n")
            self._part = "answer"
        self.out.write(printable(event.text))
        self.out.flush()

    def finish(self, finished: Optional[FinishedEvent]) -> None:
        """End the output: the dimming undone; a reply that ended while thinking says it has no answer yet."""
        if self._part == "reasoning" and self.color:
            self.out.write(RESET)
        if finished is not None and finished.stats.ended_in_reasoning:
            self.out.write("\n[stopped while thinking: no answer yet]")
        self.out.write("\n")
        self.out.flush()
