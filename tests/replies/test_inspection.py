"""The inspector's numbers from a reply's recorded rounds: bars, acceptance by position, time saved, histogram."""

from __future__ import annotations

import pytest

from app.engine.events import GenerationStats
from app.replies.inspector_data import (
    ANY_DRAFTER,
    NGRAM,
    MODEL,
    PLAIN,
    PositionAcceptance,
    reply_inspection,
    plain_line,
    round_bars,
)
from app.store.provenance import RoundRecord


def model_round(kept: int, drafted: int, time_s: float, own: int = 7) -> RoundRecord:
    return RoundRecord(
        "model",
        drafted,
        list(range(100, 100 + drafted)),
        [f"t{i}" for i in range(drafted)],
        kept,
        own,
        "x",
        "draft model",
        time_s,
    )


def ngram_round(kept: int, drafted: int, time_s: float) -> RoundRecord:
    return RoundRecord("ngram", drafted, list(range(200, 200 + drafted)), ["n"] * drafted, kept, 8, "y", "copy", time_s)


def plain_round(time_s: float) -> RoundRecord:
    return RoundRecord("none", 0, [], [], 0, 9, "z", "paused", time_s)


# A reply of 4 rounds: the draft model keeps 2 of 4, n-gram keeps all 3, two plain rounds.
ROUNDS = [model_round(2, 4, 0.30), plain_round(0.10), ngram_round(3, 3, 0.12), plain_round(0.14)]


def test_each_round_is_one_bar_of_drafted_and_kept():
    bars = round_bars(ROUNDS)
    assert [(b.drafter, b.drafted, b.kept, b.tokens) for b in bars] == [
        (MODEL, 4, 2, 3),
        (PLAIN, 0, 0, 1),
        (NGRAM, 3, 3, 4),
        (PLAIN, 0, 0, 1),
    ]


def test_tokens_per_round_follow_the_recorded_tokens_when_present():
    # The last round's own token was the end of generation: the reply's tokens do not hold it.
    token_rounds = [0, 0, 0, 1, 2, 2, 2, 2]
    bars = round_bars(ROUNDS, token_rounds)
    assert [b.tokens for b in bars] == [3, 1, 4, 0]


def test_acceptance_by_position_counts_rounds_that_reached_it():
    rounds = [model_round(2, 4, 0.1), model_round(0, 2, 0.1), model_round(4, 4, 0.1), ngram_round(1, 2, 0.1)]
    positions = reply_inspection(rounds).positions
    model = [(p.position, p.reached, p.accepted) for p in positions if p.drafter == MODEL]
    assert model == [(1, 3, 2), (2, 3, 2), (3, 2, 1), (4, 2, 1)]
    ngram = [(p.position, p.reached, p.accepted) for p in positions if p.drafter == NGRAM]
    assert ngram == [(1, 1, 1), (2, 1, 0)]
    assert PositionAcceptance(MODEL, 3, 2, 1).fraction == 0.5


def test_tokens_against_time_and_the_saving_over_plain_decoding():
    inspection = reply_inspection(ROUNDS)
    assert inspection.times == pytest.approx([0.0, 0.30, 0.40, 0.52, 0.66])
    assert inspection.tokens == [0, 3, 4, 8, 9]
    plain = inspection.plain
    # Plain time per token: the median of the plain rounds (0.10, 0.14) = 0.12 s. The drafting rounds' 3 and 4
    # tokens at that time, the plain rounds as measured: 0.36 + 0.10 + 0.48 + 0.14 = 1.08 s against 0.66 s.
    assert plain.token_s == pytest.approx(0.12)
    assert plain.times == pytest.approx((0, 0.36, 0.46, 0.94, 1.08))
    assert plain.verdict() == "estimated: saved 0.4 s (1.6x),\nif plain decoding writes every token in 0.120 s"
    assert "2 plain rounds" in plain.basis


def test_a_reply_slower_than_plain_says_what_it_cost():
    rounds = [model_round(0, 4, 0.5), plain_round(0.1), model_round(1, 4, 0.6)]
    assert (
        reply_inspection(rounds).plain.verdict().startswith("estimated: cost 0.8 s,")
    )  # 4 tokens: 0.4 s plain against 1.2 s


def test_a_slow_plain_round_slows_both_lines_alike():
    # The second plain round was held up by another program: plain decoding would have been held up too.
    rounds = [plain_round(0.1), plain_round(0.1), plain_round(0.9), ngram_round(3, 3, 0.15)]
    plain = reply_inspection(rounds).plain
    assert plain.token_s == pytest.approx(0.1)
    assert plain.saved_s == pytest.approx(0.25)  # only the n-gram round's 4 tokens: 0.4 s plain against 0.15 s


def test_without_plain_rounds_the_line_needs_a_measured_fallback():
    rounds = [model_round(3, 4, 0.2), model_round(1, 4, 0.2)]
    line, why = plain_line(round_bars(rounds))
    assert line is None and "no plain round" in why
    line, why = plain_line(round_bars(rounds), fallback_token_s=0.1)
    assert (
        why == "" and line.plain_s == pytest.approx(0.6) and line.verdict().startswith("estimated: saved 0.2 s (1.5x),")
    )


def test_histogram_from_rounds_by_drafter_and_from_stats_without_rounds():
    assert reply_inspection(ROUNDS).histogram == {0: {PLAIN: 2}, 3: {NGRAM: 1}, 4: {MODEL: 1}}
    stats = GenerationStats(
        tokens=20, drafted=12, accepted=9, acceptance_rate=0.75, draft_len_histogram={"0": 3, "4": 3, "bad": 1}
    )  # keys come back from JSON as text
    inspection = reply_inspection(None, None, stats)
    assert not inspection.has_rounds
    assert inspection.histogram == {0: {PLAIN: 3}, 4: {ANY_DRAFTER: 3}}
    assert inspection.summary == "20 tokens  ·  9 of 12 drafted tokens kept (75%)"


def test_summary_names_the_drafters_used():
    summary = reply_inspection(ROUNDS).summary
    assert summary == (
        "9 tokens in 4 rounds  ·  5 of 7 drafted tokens kept (71%)  ·  "
        "draft model 1 round, n-gram 1 round, plain 2 rounds"
    )


def test_rounds_are_set_against_plain_time_measured_close_to_them_at_their_thread_count():
    """The issue's reply: plain rounds timed while another program was busy (3 s a token on 2 threads), drafts
    after the engine went down to 1 thread. Set against the busy moment's plain time the drafts "saved" minutes."""

    def at(record: RoundRecord, threads: int) -> RoundRecord:
        record.threads = threads
        return record

    rounds = [at(plain_round(3.0), 2) for _ in range(6)]
    for _ in range(10):
        rounds += [at(ngram_round(2, 2, 0.08), 1), at(plain_round(0.03), 1)]
    plain = reply_inspection(rounds).plain
    # 10 drafts of 3 tokens at 0.03 s a token against their 0.08 s each: 0.1 s saved, not 10 x 3 x 3 s.
    assert plain.saved_s == pytest.approx(0.1)
    assert plain.verdict().startswith("estimated: saved 0.1 s (1.0x),")
    assert "CPU threads changed during this reply (2 → 1)" in plain.load_note
    assert reply_inspection(ROUNDS).plain.load_note == ""


def test_the_summary_says_why_rounds_paused_or_probed():
    rounds = [
        RoundRecord("model", 4, [1, 2, 3, 4], ["a"] * 4, 3, 7, "x", "draft", 0.3, kind="draft", expected=2.6),
        RoundRecord("none", 0, [], [], 0, 9, "z", "paused", 0.1, kind="paused"),
        RoundRecord("none", 0, [], [], 0, 9, "z", "paused", 0.1, kind="paused"),
        RoundRecord("model", 2, [5, 6], ["b"] * 2, 0, 7, "x", "probing", 0.2, kind="probe"),
    ]
    first, why = reply_inspection(rounds).summary.split("\n")
    assert first.startswith("7 tokens in 4 rounds")
    assert why == (
        "Rounds: 1 drafted where it was expected to pay (kept 3 tokens where the controller expected about "
        "2.6), 1 probed whether drafts pay again, 2 paused: drafts were kept too rarely to pay"
    )


def test_rounds_saved_before_kinds_were_kept_add_no_line():
    assert "\n" not in reply_inspection(ROUNDS).summary


def test_a_thinking_replys_summary_splits_thinking_and_answer():
    stats = GenerationStats(
        tokens=100,
        drafted=40,
        accepted=30,
        acceptance_rate=0.75,
        reasoning_tokens=60,
        reasoning_drafted=30,
        reasoning_accepted=27,
    )
    summary = reply_inspection(None, None, stats).summary
    assert summary.splitlines()[-1] == "Thinking 60 (90% accepted), answer 40 (30% accepted)"
    assert "Thinking" not in reply_inspection(None, None, GenerationStats(tokens=5)).summary
