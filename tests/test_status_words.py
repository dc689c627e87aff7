"""Issue 36: the status line speaks a person's words, whole sentences with plurals right, and never quotes the
controller's running acceptance estimate as if it were the current reply's."""

from __future__ import annotations

import pytest

from app.common.units import plural
from app.replies.status_words import WHAT_PAYS, in_words


@pytest.mark.parametrize("reason, line", [
    ("ngram draft of 23: expected 1.40x plain",
     "Speculating: copying from earlier text ahead, up to 23 tokens a round, which should make this part about 1.4× "
     "as fast as writing alone."),
    ("model draft of 1: expected 1.10x plain",
     "Speculating: the draft model guesses ahead, up to 1 token a round, which should make this part about 1.1× as "
     "fast as writing alone."),
    ("timing one token at 1 CPU thread before drafting",
     "Measuring how fast this machine writes one token on 1 CPU thread, to judge whether drafting pays."),
    ("fixed draft length 1", "A fixed draft length of 1 token, chosen for this chat."),
    ("2 → 1 CPU threads: another program is busy", "Now using 1 CPU thread instead of 2: another program is busy."),
])
def test_engine_reasons_become_sentences(reason, line):
    words = in_words(reason)
    assert words.line == line
    assert reason in words.details  # the engine's own note stays in the tooltip


def test_a_pause_says_what_would_pay_and_keeps_the_estimate_out_of_the_line():
    words = in_words("speculation paused: drafts are accepted too rarely to pay (acceptance 69%)")
    assert "69%" not in words.line and words.line.startswith("Speculation paused")
    assert WHAT_PAYS in words.details and "attach the file you are editing" in words.details
    costly = in_words("speculation paused: on this machine verifying costs more than it saves (a batch of 2 costs "
                      "1.90x one token)")
    assert "slower here" in costly.line and WHAT_PAYS in costly.details


def test_plurals():
    assert [plural(n, "token") for n in (0, 1, 2, 1024)] == ["0 tokens", "1 token", "2 tokens", "1,024 tokens"]
    assert in_words("").line == ""
