"""The history drafter: continuations of earlier prompts and replies, across chats, kept on disk within bounds."""

from __future__ import annotations

import sqlite3

from app.engine.speculation.history import BYTES_PER_TOKEN, HistoryDrafter
from app.engine.speculation.history_file import HistoryFile, HistorySync

# An earlier reply: 30 distinct tokens.
REPLY = list(range(200, 230))


def _words(text: str) -> list[int]:
    """A stand-in tokenizer: one token per word, numbered by the word."""
    return [int(word) for word in text.split()]


def _text(tokens: list[int]) -> str:
    return " ".join(str(t) for t in tokens)


def test_a_reply_written_before_is_proposed_from_its_start():
    drafter = HistoryDrafter()
    drafter.add(1, "chat-1", [1, 2, 3, 4, 5] + REPLY)
    draft = drafter.propose([9, 9, 1, 2, 3, 4, 5] + REPLY[:3], 8)
    assert draft.tokens == REPLY[3:11]
    assert draft.source == "history"
    assert draft.match_len == 8
    assert draft.confidence == 1.0


def test_the_continuation_most_past_copies_took_wins_and_a_split_stops_the_draft():
    drafter = HistoryDrafter()
    for key in range(3):  # three times "... 10 11 12 13 14" then 15 16
        drafter.add(key, "s", [7, 8, 10, 11, 12, 13, 14, 15, 16])
    drafter.add(3, "s", [7, 8, 10, 11, 12, 13, 14, 99, 98])
    draft = drafter.propose([7, 8, 10, 11, 12, 13, 14], 4)
    assert draft.tokens == [15, 16]
    assert draft.confidence == 0.75
    # Once most texts went on differently, that way wins.
    for key in (4, 5, 6):
        drafter.add(key, "s", [7, 8, 10, 11, 12, 13, 14, 99, 98])
    assert drafter.propose([7, 8, 10, 11, 12, 13, 14], 4).tokens == [99, 98]


def test_no_proposal_where_the_past_went_three_ways():
    drafter = HistoryDrafter()
    for key, then in enumerate((15, 16, 17)):
        drafter.add(key, "s", [7, 8, 10, 11, 12, 13, 14, then])
    assert drafter.propose([7, 8, 10, 11, 12, 13, 14], 4).tokens == []


def test_a_short_coincidental_match_proposes_nothing():
    drafter = HistoryDrafter()
    drafter.add(1, "s", REPLY)
    assert drafter.propose([1, 2, 3] + REPLY[:2], 4).tokens == []


def test_copies_never_cross_from_one_text_into_the_next():
    drafter = HistoryDrafter()
    drafter.add(1, "s", [1, 2, 3, 4, 5, 6])
    drafter.add(2, "s", [50, 51, 52, 53])
    assert drafter.propose([9, 1, 2, 3, 4, 5, 6], 4).tokens == []


def test_memory_is_bounded_and_the_least_recently_used_text_goes_first():
    drafter = HistoryDrafter(memory_bytes=1024 * BYTES_PER_TOKEN)
    drafter.add(1, "a", list(range(1000, 1400)))
    drafter.add(2, "b", list(range(2000, 2400)))
    drafter.propose(list(range(1000, 1010)), 4)  # text 1 was drafted from: now the most recently used
    drafter.add(3, "c", list(range(3000, 3400)))
    assert drafter.keys() == {1, 3}
    assert len(drafter) <= drafter.max_tokens
    assert drafter.propose(list(range(1000, 1010)), 4).tokens == [1010, 1011, 1012, 1013]
    assert drafter.propose(list(range(2000, 2010)), 4).tokens == []


def test_many_additions_keep_every_text_findable():
    drafter = HistoryDrafter()
    for key in range(40):
        drafter.add(key, "s", [5000 + key] + list(range(key * 100, key * 100 + 20)))
    for key in (0, 17, 39):
        start = key * 100
        assert drafter.propose([5000 + key] + list(range(start, start + 6)), 3).tokens == [
            start + 6,
            start + 7,
            start + 8,
        ]


def test_deleting_a_chat_forgets_its_text_in_every_engine_that_holds_it(tmp_path):
    path = tmp_path / "history.sqlite3"
    window_engine = HistorySync(HistoryFile(path), HistoryDrafter(), _words)
    cli_engine = HistorySync(HistoryFile(path), HistoryDrafter(), _words)
    window_engine.record("chat-1", _text(REPLY))
    window_engine.record("chat-2", _text([500 + t for t in REPLY]))
    cli_engine.refresh()  # the other process picks up what was added
    assert cli_engine.drafter.propose(REPLY[:6], 3).tokens == REPLY[6:9]
    HistoryFile(path).forget("chat-1")  # the window deletes chat 1
    for engine in (window_engine, cli_engine):
        engine.refresh()
        assert engine.drafter.propose(REPLY[:6], 3).tokens == []
        assert engine.drafter.propose([500 + t for t in REPLY[:6]], 3).tokens == [500 + t for t in REPLY[6:9]]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM texts WHERE text LIKE '200 201%'").fetchone()[0] == 0


def test_the_file_keeps_within_its_size_dropping_the_oldest_texts(tmp_path):
    file = HistoryFile(tmp_path / "history.sqlite3", max_bytes=1000)
    ids = [file.add("s", f"{n} " * 100) for n in range(10, 20)]  # 300 bytes each
    kept = file.ids()
    assert sum(kept.values()) <= 1000
    assert list(kept) == ids[-3:]


def test_a_history_file_that_cannot_be_opened_turns_history_off_with_a_reason(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    file = HistoryFile(blocker / "history.sqlite3")
    sync = HistorySync(file, HistoryDrafter(), _words)
    sync.record("chat-1", _text(REPLY))  # no crash: drafting goes on without history
    assert sync.drafter.propose(REPLY[:6], 3).tokens == []
    assert "cannot be opened" in file.problem


def _reply(engine, messages, **config):
    from app.engine.config import GenerationConfig
    from app.engine.events import FinishedEvent, TokenEvent

    events = list(engine.chat(messages, GenerationConfig(**{"max_tokens": 40, **config})))
    assert isinstance(events[-1], FinishedEvent)
    history_tokens = [e for e in events if isinstance(e, TokenEvent) and e.drafter == "history"]
    return events[-1].text, history_tokens


def test_a_regenerated_reply_is_drafted_from_history_and_stays_the_targets_own(tiny_models):
    from app.engine.config import LoadSettings
    from app.engine.local.engine import SpecEngine

    engine = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1))
    engine.load_target(tiny_models.target)
    try:
        messages = [{"role": "user", "content": "write the config file again"}]
        plain, _ = _reply(engine, messages, speculative=False, history=False, session="chat-1")
        first, first_history = _reply(engine, messages, drafter="history", draft_max=8, session="chat-1")
        assert first == plain and first_history == []  # nothing in history yet
        again, again_history = _reply(engine, messages, drafter="history", draft_max=8, session="chat-2")
        assert again == plain  # lossless: only the speed changes
        assert len(again_history) >= len(engine.target.tokenize(plain, add_special=False)) // 2
        # Off: history is neither read nor written.
        _, off_history = _reply(engine, messages, drafter="history", draft_max=8, history=False)
        assert off_history == []
        # Deleting both chats removes what they wrote: nothing left to draft from.
        engine.history_file.forget("chat-1")
        engine.history_file.forget("chat-2")
        _, gone_history = _reply(engine, messages, drafter="history", draft_max=8, session="chat-3")
        assert gone_history == []
    finally:
        engine.close()
