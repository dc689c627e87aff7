"""The status line and the stats row say what speculation is doing from the engine's typed records (a round's kind,
drafter and plan; a change of threads), never from the controller's English reason (issue 45, item 8): whole
sentences with plurals right, and never the controller's running acceptance estimate as if it were the reply's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.common.units import plural
from app.engine.events import RoundEvent, ThreadsEvent
from app.replies import status_words
from app.replies.status_words import WHAT_PAYS, drafted_words, offers_anyway, round_words, threads_words


def _round(kind, drafter="none", k=0, expected=0.0, threads=0, reason="some words the window never parses"):
    return RoundEvent(0, drafter, k, k, 0, reason, kind=kind, expected=expected, threads=threads)


@pytest.mark.parametrize(
    "event, line",
    [
        (
            _round("draft", "ngram", 23, 9.4),
            "Speculating: copying from earlier text ahead, up to 23 tokens a round, expecting about 9.4 of them kept.",
        ),
        (_round("draft", "model", 1), "Speculating: the draft model guesses ahead, up to 1 token a round."),
        (
            _round("timing", threads=1),
            "Measuring how fast this machine writes one token on 1 CPU thread, to judge whether drafting pays.",
        ),
        (
            _round("fixed", "model", 1),
            "Drafting every round, at the draft length set for this chat, even where that is slower.",
        ),
        (
            _round("batch", "model", 2),
            "Other requests are being answered beside this chat: drafting 2 tokens this round, "
            "where alone it would draft more, so that no request in the batch writes slower for it.",
        ),
        (
            _round("batch"),
            "Other requests are being answered beside this chat: no draft this round, where alone it would "
            "draft more, so that no request in the batch writes slower for it.",
        ),
    ],
)
def test_rounds_become_sentences_from_their_kind_and_plan(event, line):
    words = round_words(event)
    assert words.line == line and words.kind == event.kind
    assert event.reason in words.details  # the engine's own note stays in the tooltip, unread


def test_a_pause_says_what_would_pay_and_is_the_only_moment_to_offer_drafting_anyway():
    paused = round_words(_round("paused", reason="speculation paused: drafts are accepted too rarely (acceptance 69%)"))
    assert "69%" not in paused.line and paused.line.startswith("Speculation paused")
    assert WHAT_PAYS in paused.details and offers_anyway(paused)
    costly = round_words(_round("costly"))
    assert "slower here" in costly.line and offers_anyway(costly)
    assert not offers_anyway(round_words(_round("draft", "model", 4)))
    assert not offers_anyway(round_words(_round("probe", "ngram", 2)))


def test_speculation_off_and_threads():
    assert round_words(_round("unavailable"), speculative=False).line.startswith("Speculation is off for this chat")
    assert (
        threads_words(ThreadsEvent(0, 2, 1, "another program is busy")).line
        == "Now using 1 CPU thread instead of 2: another program is busy."
    )


def test_the_stats_row_names_who_drafted_and_why_nothing_was():
    assert (
        drafted_words(176, 120, ["model", "ngram", "model"], ["draft"])
        == "68% accepted (120/176 drafted by the draft model and n-gram lookup)"
    )
    assert drafted_words(0, 0, ["none"], ["costly", "timing"]) == "no drafts: speculation paused here"
    assert drafted_words(0, 0, ["none"], ["unavailable"]) == "no drafts (plain decoding)"
    assert drafted_words(0, 0, ["none"], ["batch", "unavailable"]) == "no drafts: other requests shared the batch"


def test_no_regex_reads_the_controllers_words():
    tree = ast.parse(Path(status_words.__file__).read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    assert "re" not in imported


def test_plurals():
    assert [plural(n, "token") for n in (0, 1, 2, 1024)] == ["0 tokens", "1 token", "2 tokens", "1,024 tokens"]


def test_a_pause_while_copying_still_drafts_names_the_draft_model_and_gives_no_advice_already_followed():
    """Issue 55, item 2: after replies with most drafts kept (copied), the footer said "too few drafted tokens were
    being kept" and advised attaching the file just attached. It is the draft model that paused; copying goes on."""
    paused = round_words(_round("paused"), drafting={"model", "ngram"})
    assert paused.line.startswith("Draft model paused")
    assert "copying from earlier text goes on" in paused.line
    assert WHAT_PAYS not in paused.details and offers_anyway(paused)
    # With only the draft model drafting, nothing else goes on: the advice stays.
    assert WHAT_PAYS in round_words(_round("paused"), drafting={"model"}).details
