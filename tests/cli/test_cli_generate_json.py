"""`specchat-cli generate --json`: every token's drafter and round, and every round's proposal, refused ids included,
consistent with the tokens and the stats (synthetic models, greedy, so each run is the same)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]


def generate_json(*args) -> dict:
    done = run_cli("generate", *args, "--threads", "1", "--json", timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("drafter", ["model", "ngram"])
def test_tokens_and_rounds_tell_the_same_story(tiny_models, drafter):
    source = ["--draft", tiny_models.draft] if drafter == "model" else ["--ngram"]
    out = generate_json(
        "--target", tiny_models.target, *source, "--prompt", "The cat", "--max-tokens", 60, "--draft-max", 4
    )
    tokens, rounds, stats = out["tokens"], out["rounds"], out["stats"]
    # Today's fields are all still there.
    assert {"text", "tokens", "stats"} <= out.keys() and "".join(t["text"] for t in tokens) == out["text"]
    assert {"id", "text", "source"} <= tokens[0].keys() and stats["tokens"] == len(tokens) == 60

    assert len(rounds) == stats["rounds"]
    assert sum(r["kept"] for r in rounds) == stats["accepted"] == sum(t["source"] == "draft" for t in tokens)
    assert sum(len(r["proposed"]) for r in rounds) == stats["drafted"]
    for token in tokens:
        assert token["drafter"] == (drafter if token["source"] == "draft" else None)
    by_round: dict[int, list[dict]] = {}
    for token in tokens:
        by_round.setdefault(token["round"], []).append(token)
    assert sorted(by_round) == list(range(len(rounds)))  # every round wrote a token, in order
    for index, record in enumerate(rounds):
        written = by_round[index]
        kept = record["kept"]
        # A round writes its kept proposals in order, then the target's own token.
        assert [t["id"] for t in written[:kept]] == record["proposed"][:kept]
        assert [t["source"] for t in written] == ["draft"] * kept + ["target"] * (len(written) - kept)
        if len(written) > kept:
            assert written[kept]["id"] == record["own"] and written[kept]["text"] == record["own_text"]
        if kept < len(record["proposed"]):
            assert record["proposed"][kept] != record["own"]  # refused: the target wrote something else
        assert len(record["proposed_text"]) == len(record["proposed"])
        assert record["drafter"] in (drafter, "none") and record["time_s"] > 0 and record["reason"]
    drafted_rounds = [r for r in rounds if r["proposed"]]
    assert drafted_rounds and all(r["drafter"] == drafter for r in drafted_rounds)
    # A fixed length says so, and expects nothing.
    assert all(r["kind"] == "fixed" for r in drafted_rounds) and all(r["expected"] == 0 for r in rounds)
    assert any(r["kept"] < len(r["proposed"]) for r in drafted_rounds), "some proposal should be refused"


def test_plain_decoding_has_a_round_per_token_and_no_drafter(tiny_models):
    out = generate_json("--target", tiny_models.target, "--prompt", "The cat", "--max-tokens", 8)
    assert [t["round"] for t in out["tokens"]] == list(range(8))
    assert all(t["drafter"] is None and t["source"] == "target" for t in out["tokens"])
    assert [(r["drafter"], r["proposed"], r["kept"]) for r in out["rounds"]] == [("none", [], 0)] * 8
    assert [r["own"] for r in out["rounds"]] == [t["id"] for t in out["tokens"]]
    assert {r["kind"] for r in out["rounds"]} == {"unavailable"}  # speculation off


def test_auto_says_why_each_round_drafted_or_not(tiny_models):
    from app.engine.events import ROUND_KINDS

    out = generate_json(
        "--target", tiny_models.target, "--prompt", "Once upon a time", "--max-tokens", 40, "--ngram", "--no-history"
    )
    rounds = out["rounds"]
    assert rounds and all(r["kind"] in ROUND_KINDS for r in rounds)
    for record in rounds:
        if record["proposed"]:
            assert record["kind"] in ("draft", "probe")
        if record["kind"] == "draft":
            assert 0 < record["expected"] <= record["k"]  # what the controller counted on
        if record["kind"] in ("paused", "costly", "timing"):
            assert not record["proposed"] and record["expected"] == 0
    assert {r["kind"] for r in rounds} - {"unavailable"}  # the controller said why, not only that it could not


@pytest.mark.slow
def test_a_second_run_drafts_from_the_history_the_first_one_left(tiny_models):
    prompt = ["--target", tiny_models.target, "--prompt", "Once upon a time", "--max-tokens", 40]
    first = generate_json(*prompt, "--ngram")
    again = generate_json(*prompt, "--history", "--draft-max", 8)
    assert again["text"] == first["text"]  # greedy: the target's own reply, only faster
    from_history = [t for t in again["tokens"] if t["drafter"] == "history"]
    assert len(from_history) >= 20
    assert {r["drafter"] for r in again["rounds"] if r["proposed"]} >= {"history"}
    skipped = generate_json(*prompt, "--ngram", "--no-history")
    assert not any(t["drafter"] == "history" for t in skipped["tokens"])


@pytest.mark.slow
def test_prompt_stats_say_what_was_read_and_what_came_from_a_saved_state(tiny_models):
    # A long prompt's state is saved after the first run; the second run (a new process's engine) reads it back.
    prompt = " ".join(f"word{i % 89}" for i in range(260))
    args = ["--target", tiny_models.target, "--prompt", prompt, "--max-tokens", 4, "--ctx", 2048]
    first, again = generate_json(*args), generate_json(*args)
    assert first["stats"]["prompt_tokens"] > 1000 and first["stats"]["prompt_cached"] == 0
    assert first["stats"]["prompt_read"] == first["stats"]["prompt_tokens"]
    assert again["stats"]["prompt_cached"] >= 0.9 * again["stats"]["prompt_tokens"]
    assert again["stats"]["prompt_read"] == again["stats"]["prompt_tokens"] - again["stats"]["prompt_cached"]
    assert again["text"] == first["text"]
