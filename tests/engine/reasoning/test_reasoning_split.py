"""The stream splitter (app.engine.reasoning): a reply's thinking told from its answer whatever the tokens are,
markers split across tokens or written as special tokens, and nothing lost or shown twice."""

from __future__ import annotations

import itertools

import pytest

from app.engine.events import FinishedEvent, GenerationStats, RoundEvent, TokenEvent
from app.engine.reasoning.markers import HARMONY, MAGISTRAL, THINK, markers_for, reply_start
from app.engine.reasoning.splitter import ReplySplitter, split_reply


def run(pieces, markers=(THINK,), start="opening", split=True, rounds=None):
    """Feed `pieces` (text, or (name, True) for a special token that shows as nothing) as one reply's tokens."""
    splitter = ReplySplitter(markers, start, split=split)
    out = []
    for index, piece in enumerate(pieces):
        text, special = (piece[0], True) if isinstance(piece, tuple) else (piece, False)
        if rounds is not None and index in rounds:
            out += splitter.feed(RoundEvent(0, "ngram", 4, rounds[index][0], rounds[index][1], index=index))
        event = TokenEvent(
            0, index, 100 + index, "" if special else text, "target", round=index if rounds is not None else -1
        )
        out += splitter.feed(event, special=text if special else "")
    out += splitter.feed(FinishedEvent(0, "".join(p for p in pieces if isinstance(p, str)), GenerationStats()))
    tokens = [e for e in out if isinstance(e, TokenEvent)]
    finished = out[-1]
    assert isinstance(finished, FinishedEvent)
    # The contract: every token once, in order; each part's texts add up to the finished reply's.
    assert [e.token_id for e in tokens if e.token_id >= 0] == [100 + i for i in range(len(pieces))]
    assert "".join(e.text for e in tokens if e.part == "answer") == finished.text
    assert "".join(e.text for e in tokens if e.part == "reasoning") == finished.reasoning
    return finished, tokens


def splits(text):
    """The text cut into tokens every way that matters: whole, each single cut, each pair of cuts, by character."""
    yield [text]
    for i in range(1, len(text)):
        yield [text[:i], text[i:]]
    for i, j in itertools.combinations(range(1, len(text)), 2):
        yield [text[:i], text[i:j], text[j:]]
    yield list(text)


@pytest.mark.parametrize(
    "reply, reasoning, answer",
    [
        ("<think>\nIs 221 prime? 13*17.\n</think>\n\nNo: 221 = 13 x 17.", "Is 221 prime? 13*17.", "No: 221 = 13 x 17."),
        ("  <think>a < b</think>ok", "a < b", "ok"),
        ("<think></think>\n\nJust this.", "", "Just this."),
        ("Plain <think> answer", "", "Plain <think> answer"),
        ("<b>bold</b> text", "", "<b>bold</b> text"),
        ("\nfirst line\n", "", "\nfirst line\n"),
        ("<think>cut off while thinking </", "cut off while thinking </", ""),
        ("<thi", "", "<thi"),
    ],
)
def test_every_split_of_a_reply_gives_the_same_parts(reply, reasoning, answer):
    for pieces in splits(reply):
        finished, _ = run(pieces)
        assert (finished.reasoning, finished.text) == (reasoning, answer), pieces


def test_a_reply_cut_off_inside_its_thinking_says_so():
    finished, _ = run(["<think>", "still going"])
    assert finished.stats.ended_in_reasoning and finished.text == ""
    finished, _ = run(["<think>", "done", "</think>", "Answer"])
    assert not finished.stats.ended_in_reasoning


def test_marker_tokens_carry_nothing_and_count_as_reasoning():
    finished, tokens = run(["<think>", "\n", "hmm", "\n", "</think>", "\n\n", "Yes."])
    assert [(e.part, e.text) for e in tokens] == [
        ("reasoning", ""),
        ("reasoning", ""),
        ("reasoning", "hmm"),
        ("reasoning", ""),
        ("reasoning", ""),
        ("reasoning", ""),
        ("answer", "Yes."),
    ]
    assert finished.stats.reasoning_tokens == 6


def test_a_token_that_holds_the_boundary_is_followed_by_the_answer_as_its_own_event():
    _, tokens = run(["<think>x", "y</think>\n\nThe", " end"])
    assert [(e.token_id, e.part, e.text) for e in tokens] == [
        (100, "reasoning", "x"),
        (101, "reasoning", "y"),
        (-1, "answer", "The"),
        (102, "answer", " end"),
    ]


def test_the_prompt_may_open_the_thinking():
    for pieces in splits("Let me see.\n</think>\n\nSure."):
        finished, _ = run(pieces, start="reasoning")
        assert (finished.reasoning, finished.text) == ("Let me see.", "Sure."), pieces


def test_a_closed_thinking_in_the_prompt_means_the_reply_is_all_answer():
    prompt = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert reply_start(prompt, (THINK,)) == "answer"
    assert reply_start("<|im_start|>assistant\n<think>\n", (THINK,)) == "reasoning"
    assert reply_start("<|im_start|>assistant\n", (THINK,)) == "opening"
    finished, _ = run(["<think>", "kept as written"], start="answer")
    assert finished.text == "<think>kept as written" and finished.reasoning == ""


def test_format_none_leaves_the_thinking_in_the_answer():
    finished, tokens = run(["<think>", "a", "</think>", "b"], split=False)
    assert finished.text == "<think>a</think>b" and {e.part for e in tokens} == {"answer"}


HARMONY_REPLY = [
    ("<|channel|>", True),
    "analysis",
    ("<|message|>", True),
    "User asks",
    " 2+2.",
    ("<|end|>", True),
    ("<|start|>", True),
    "assistant",
    ("<|channel|>", True),
    "final",
    ("<|message|>", True),
    "4",
    ".",
]


def test_harmony_channels_as_special_tokens():
    finished, tokens = run(HARMONY_REPLY, markers=markers_for("{{ '<|channel|>analysis' }}"))
    assert (finished.reasoning, finished.text) == ("User asks 2+2.", "4.")
    assert [e.part for e in tokens if e.token_id >= 0].count("reasoning") == 11


def test_harmony_as_text_every_split():
    text = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Done"
    for pieces in splits(text):
        finished, _ = run(pieces, markers=(HARMONY, THINK))
        assert (finished.reasoning, finished.text) == ("Think.", "Done"), pieces


def test_harmony_reply_with_no_analysis():
    finished, _ = run([("<|channel|>", True), "final", ("<|message|>", True), "Hi"], markers=(HARMONY, THINK))
    assert (finished.reasoning, finished.text) == ("", "Hi")


def test_markers_come_from_the_template_with_think_always_known():
    assert markers_for(None) == (THINK,)
    assert markers_for("{% if x %}<think>{% endif %}") == (THINK,)
    assert markers_for("[THINK]{{ m }}[/THINK]") == (MAGISTRAL, THINK)
    assert markers_for("<|start|>{{ role }}<|channel|>final<|message|>") == (HARMONY, THINK)
    custom = markers_for("<think>", ("<reason>", "</reason>"))
    assert (custom[0].start, custom[0].end) == ("<reason>", "</reason>")
    for pieces in splits("[THINK]Hmm[/THINK]Yes"):
        finished, _ = run(pieces, markers=markers_for("[THINK]"))
        assert (finished.reasoning, finished.text) == ("Hmm", "Yes")
    finished, _ = run(["<think>", "a", "</think>", "b"], markers=markers_for("[THINK]"))
    assert (finished.reasoning, finished.text) == ("a", "b")


def test_rounds_count_to_the_part_of_their_first_token():
    finished, _ = run(["<think>", "a", "</think>", "b", "c"], rounds={1: (3, 2), 3: (4, 1), 0: (2, 0)})
    assert (finished.stats.reasoning_drafted, finished.stats.reasoning_accepted) == (5, 2)


def test_split_reply_over_a_servers_events():
    events = [TokenEvent(0, i, -1, t, "target") for i, t in enumerate(["<thi", "nk>ok</th", "ink>fine"])]
    events.append(FinishedEvent(0, "", GenerationStats()))
    finished = list(split_reply(events, ReplySplitter()))[-1]
    assert isinstance(finished, FinishedEvent) and (finished.reasoning, finished.text) == ("ok", "fine")


def test_the_reply_as_written_is_kept_whatever_the_format():
    for split in (True, False):
        splitter = ReplySplitter(split=split)
        for i, text in enumerate(["<think>", "a", "</think>", "b"]):
            splitter.feed(TokenEvent(0, i, i, text, "target"))
        assert splitter.raw_text == "<think>a</think>b"


def test_a_servers_reasoning_and_its_tokens_without_ids_are_counted():
    events = [
        TokenEvent(0, 0, -1, "Thinking", "target", part="reasoning"),
        TokenEvent(0, 1, -1, " more", "draft", part="reasoning"),
        TokenEvent(0, 2, -1, "Answer", "target"),
        FinishedEvent(0, "", GenerationStats()),
    ]
    finished = list(split_reply(events))[-1]
    assert isinstance(finished, FinishedEvent)
    assert (finished.reasoning, finished.text, finished.stats.reasoning_tokens) == ("Thinking more", "Answer", 2)


def test_a_continued_reply_goes_on_in_the_part_it_stopped_in():
    from app.engine.reasoning.markers import continued_start

    prompt = "<|im_start|>assistant\n"
    assert continued_start(prompt, "<think>\nhalf a thought", (THINK,)) == "reasoning"
    assert continued_start(prompt, "<think>\ndone</think>\nThe ans", (THINK,)) == "answer"
    assert continued_start(prompt, "Plain answer so", (THINK,)) == "answer"
    assert continued_start(prompt + "<think>\n", "still thinking", (THINK,)) == "reasoning"
    splitter = ReplySplitter((THINK,), "reasoning", continued=True)
    out = splitter.feed(TokenEvent(0, 0, 1, " more", "target")) + splitter.feed(FinishedEvent(0, "", GenerationStats()))
    assert isinstance(out[-1], FinishedEvent) and out[-1].reasoning == " more"


def test_a_model_that_ends_its_turn_inside_its_thinking_answered_with_it():
    """Its end-of-turn token closed the thinking, as llama-server's reasoning parser reads an unclosed block at the
    end; a reply cut off by its token limit (or Stop) is still mid-thought, with no answer yet."""

    def finish(stop_reason):
        splitter = ReplySplitter((THINK,))
        for index, piece in enumerate(["<think>", "221 = 13 x 17", ", not prime."]):
            splitter.feed(TokenEvent(0, index, 100 + index, piece, "target"))
        [*_, finished] = splitter.feed(FinishedEvent(0, "", GenerationStats(stop_reason=stop_reason)))
        return finished

    ended = finish("eos")
    assert (ended.text, ended.reasoning) == ("221 = 13 x 17, not prime.", "")
    assert ended.stats.thinking_unclosed and not ended.stats.ended_in_reasoning
    cut = finish("max_tokens")
    assert (cut.text, cut.reasoning) == ("", "221 = 13 x 17, not prime.")
    assert cut.stats.ended_in_reasoning and not cut.stats.thinking_unclosed
