"""`specchat-cli generate` with a reply that thinks: the JSON's reasoning beside the text, the thinking framed or
hidden in plain output, and the thinking budget (a tiny model whose prompt opens the thinking, as R1 distills'
templates do)."""

from __future__ import annotations

import io
import json
import subprocess

import pytest

from app.cli.thinking_options import DIM, RESET, ThinkingPrinter
from app.engine.events import FinishedEvent, GenerationStats, TokenEvent
from tests.support.processes import run_cli

OPENED = "Question: what is it?\n<think>\n"


def generate(tiny_models, *args) -> subprocess.CompletedProcess:
    done = run_cli(
        "generate",
        "--target",
        str(tiny_models.target),
        "--prompt",
        OPENED,
        "--threads",
        "1",
        "--no-history",
        *map(str, args),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done


def test_json_has_the_reasoning_beside_the_answer_and_the_split_stats(tiny_models):
    out = json.loads(generate(tiny_models, "--max-tokens", 40, "--thinking-budget", 12, "--ngram", "--json").stdout)
    reasoning, tokens, stats = out["reasoning"], out["tokens"], out["stats"]
    assert "".join(t["text"] for t in tokens if t["part"] == "reasoning") == reasoning["text"]
    assert "".join(t["text"] for t in tokens if t["part"] == "answer") == out["text"] != ""
    assert (
        reasoning["tokens"]
        == stats["reasoning_tokens"]
        == sum(t["part"] == "reasoning" and t["id"] >= 0 for t in tokens)
        > 12
    )
    split = stats["split"]
    assert split["reasoning"]["tokens"] + split["answer"]["tokens"] == stats["tokens"] == 40
    assert not reasoning["ended_in_reasoning"] and "</think>" not in out["text"]


@pytest.mark.slow
def test_plain_output_frames_the_thinking_or_hides_it(tiny_models):
    framed = generate(tiny_models, "--max-tokens", 30, "--thinking-budget", 10).stdout
    assert framed.startswith("Thinking:\n") and "\n\nAnswer:\n" in framed
    hidden = generate(tiny_models, "--max-tokens", 30, "--thinking-budget", 10, "--hide-thinking").stdout
    answer = framed.split("\n\nAnswer:\n", 1)[1]
    assert hidden == answer and "Thinking:" not in hidden
    whole = generate(tiny_models, "--max-tokens", 30, "--reasoning-format", "none").stdout
    cut = generate(tiny_models, "--max-tokens", 30).stdout
    assert cut.startswith("Thinking:\n") and cut.rstrip().endswith("[stopped while thinking: no answer yet]")
    assert "Answer:" not in cut and "Thinking:" not in whole


def test_a_terminal_sees_the_thinking_dimmed():
    out = io.StringIO()
    printer = ThinkingPrinter(out, color=True)
    for i, (part, text) in enumerate([("reasoning", "hmm"), ("reasoning", ""), ("answer", "Yes")]):
        printer.token(TokenEvent(0, i, i, text, "target", part=part))
    printer.finish(FinishedEvent(0, "Yes", GenerationStats(), "hmm"))
    assert out.getvalue() == f"{DIM}hmm{RESET}\n\nYes\n"


def test_bad_thinking_options_are_refused_with_a_reason(tiny_models):
    done = run_cli(
        "generate", "--target", str(tiny_models.target), "--prompt", "x", "--thinking-budget", "-1", timeout=120
    )
    assert done.returncode == 2 and "--thinking-budget" in done.stderr
