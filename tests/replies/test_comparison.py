"""What Compare with plain says under a reply, from the stored result (no Qt)."""

from __future__ import annotations

from app.replies.comparison import (
    PlainComparison,
    compare_link_label,
    compare_runs,
    comparison_text,
    failed_state,
    running_state,
)


def test_the_ratio_says_faster_or_slower():
    faster = compare_runs("same", 14.2, "same", 10.0, 20, temperature=0.0).to_dict()
    assert comparison_text(faster) == ("Plain decoding 10.0 tok/s, speculative 14.2 tok/s: 1.42x faster  ·  same text")
    slower = compare_runs("a", 9.1, "a", 10.0, 20, temperature=0.0).to_dict()
    assert "0.91x, slower" in comparison_text(slower)
    even = compare_runs("a", 9.9, "a", 10.0, 20, temperature=0.0).to_dict()
    assert "0.99x, about the same speed" in comparison_text(even)  # one run against one: a 1% gap is noise


def test_texts_that_differ_say_why_they_may():
    sampled = compare_runs("one story", 12.0, "another story", 10.0, 20, temperature=0.7).to_dict()
    assert "texts differ (sampling)" in comparison_text(sampled)
    greedy = compare_runs("one", 12.0, "two", 10.0, 20, temperature=0.0).to_dict()
    assert "texts differ" in comparison_text(greedy) and "sampling" not in comparison_text(greedy)
    # Sampling that happened to draw the same text is the same text.
    assert "same text" in comparison_text(compare_runs("x", 12.0, "x", 10.0, 1, temperature=0.7).to_dict())


def test_a_run_too_short_to_time_says_so():
    assert "too short to time" in comparison_text(compare_runs("x", 0.0, "x", 0.0, 1, temperature=0.0).to_dict())


def test_states_and_links():
    assert comparison_text(None) == "" and compare_link_label(None) == "Compare with plain"
    assert comparison_text(running_state()) == "Comparing with plain decoding… reading the prompt"
    assert comparison_text(running_state(120, 300)) == "Comparing with plain decoding… 120 of 300 tokens (40%)"
    # A run that stops where the model does has no known length: tokens so far, set against the reply's.
    assert (
        comparison_text(running_state(52, 0, 387))
        == "Comparing with plain decoding… 52 tokens so far (the reply has 387)"
    )
    assert compare_link_label(running_state()) == "Cancel comparison"
    assert comparison_text(failed_state("The plain run failed: boom")) == "The plain run failed: boom"
    assert compare_link_label(failed_state("x")) == "Compare with plain"
    stored = compare_runs("x", 12.0, "x", 10.0, 5, temperature=0.0).to_dict()
    assert compare_link_label(stored) == "Compare again"
    assert PlainComparison.from_dict(stored).ratio == 1.2


def test_an_unreadable_stored_result_shows_nothing():
    for bad in ({"speculative_tokens_per_second": "fast"}, {"v": 9}, ["not", "a", "dict"]):
        assert PlainComparison.from_dict(bad) is None
        assert comparison_text(bad if isinstance(bad, dict) else None) == ""


def test_a_load_that_changed_the_threads_is_said_beside_the_speeds():
    calm = compare_runs("a", 20.0, "a", 18.0, 10, 0.0, reply_threads=[2, 2, 2], plain_threads=[2, 2])
    assert calm.load_note == "" and "threads" not in comparison_text(calm.to_dict())
    busy = compare_runs("a", 20.0, "a", 9.0, 10, 0.0, reply_threads=[2, 2, 1, 1], plain_threads=[1, 1])
    text = comparison_text(busy.to_dict())
    assert "the reply ran on 2 → 1, plain decoding on 1" in text
    assert PlainComparison.from_dict(busy.to_dict()).load_note == busy.load_note
