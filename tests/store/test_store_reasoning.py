"""A thinking model's reasoning, stored apart from its answer (schema version 4, migrated from 3), found by search
only when asked, and sent back with the reply it belongs to."""

from __future__ import annotations

import json
import sqlite3

from app.engine.events import GenerationStats
from app.store import (
    SCHEMA_VERSION,
    AppSettings,
    ChatSettings,
    ChatStore,
    load_settings,
    salvage_database,
    save_settings,
)
from app.store.provenance import RoundRecord
from tests.support.old_schema import take_back

THINKING = "The user wants a prime check. 221 = 13 × 17, so it is not prime."
ANSWER = "No: 221 is 13 × 17."


def _titles(store: ChatStore, query: str, include_reasoning: bool = False) -> set[str]:
    return {chat.title for chat in store.list_chats(query, include_reasoning=include_reasoning)}


def _thinking_reply(store: ChatStore, chat_id: int):
    rounds = [
        RoundRecord(drafter="model", k=4, proposed=[1, 2], proposed_text=["13", " ×"], kept=2),
        RoundRecord(drafter="none", k=0),
    ]
    return store.add_message(
        chat_id,
        "assistant",
        ANSWER,
        stats=GenerationStats(tokens=12, reasoning_tokens=6),
        tokens=[("No: 221 is ", "target"), ("13 × 17.", "draft")],
        token_rounds=[1, 0],
        rounds=rounds,
        reasoning=THINKING,
        reasoning_tokens=[("", "target"), (THINKING[:20], "draft"), (THINKING[20:], "ngram"), ("", "target")],
        reasoning_token_rounds=[-1, 0, 0, 1],
    )


def test_a_reply_keeps_its_thinking_apart_from_its_answer(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat("Primes")
        store.add_message(chat.id, "user", "Is 221 prime?")
        saved = _thinking_reply(store, chat.id)
        assert saved.content == ANSWER and saved.reasoning == THINKING
    with ChatStore(tmp_path / "chats.db") as store:
        [question, reply] = store.messages(chat.id)
        assert question.reasoning == "" and question.reasoning_tokens is None
        assert reply.content == ANSWER and reply.reasoning == THINKING
        assert "".join(text for text, _ in reply.reasoning_tokens) == THINKING
        assert [origin for _, origin in reply.reasoning_tokens] == ["target", "draft", "ngram", "target"]
        assert reply.reasoning_token_rounds == [-1, 0, 0, 1] and reply.token_rounds == [1, 0]
        assert reply.stats.reasoning_tokens == 6
        assert store.reasoning_texts(chat.id) == {reply.id: THINKING}


def test_a_streaming_reply_updates_its_thinking_and_the_answer_keeps_it(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat()
        reply = store.add_message(
            chat.id, "assistant", "", reasoning="The user", reasoning_tokens=[("The user", "target")]
        )
        store.update_reply(reply.id, "", reasoning=THINKING, reasoning_tokens=[(THINKING, "target")])
        store.update_reply(
            reply.id, ANSWER, tokens=[(ANSWER, "target")], reasoning=THINKING, reasoning_tokens=[(THINKING, "target")]
        )
        [stored] = store.messages(chat.id)
        assert (stored.content, stored.reasoning) == (ANSWER, THINKING)
        assert _titles(store, "13 × 17, so", include_reasoning=True) == {chat.title}


def test_search_finds_answers_and_finds_thinking_only_when_asked(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat("Primes")
        reply = _thinking_reply(store, chat.id)
        other = store.create_chat("Plain")
        store.add_message(other.id, "assistant", "A plain answer without thinking")
        assert _titles(store, "221 is 13") == {"Primes"}  # the answer, found either way
        assert _titles(store, "prime check") == set()  # only in the thinking
        assert _titles(store, "prime check", include_reasoning=True) == {"Primes"}
        assert _titles(store, "plain answer", include_reasoning=True) == {"Plain"}
        # Shorter than the index's trigrams: every message is read, with the same rule.
        assert _titles(store, "×") == {"Primes"}
        assert _titles(store, "=") == set() and _titles(store, "=", include_reasoning=True) == {"Primes"}
        store.update_message_content(reply.id, "Edited answer")  # the thinking stays with the reply
        assert _titles(store, "prime check", include_reasoning=True) == {"Primes"}
        store.delete_messages_from(chat.id, reply.id)
        assert _titles(store, "prime check", include_reasoning=True) == set()
    conn = sqlite3.connect(tmp_path / "chats.db")
    assert conn.execute("SELECT count(*) FROM reasoning_search").fetchone()[0] == 0  # nothing left behind
    conn.close()


def test_a_version_3_database_is_migrated_and_its_chats_read_and_search_as_before(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat("Old")
        store.add_message(chat.id, "user", "written before thinking was kept")
        store.add_message(chat.id, "assistant", "an old answer", tokens=[("an old answer", "target")])
    take_back(path, 3)  # schema version 3, as the SpecChat before thinking wrote it
    with ChatStore(path) as store:
        [question, answer] = store.messages(chat.id)
        assert answer.content == "an old answer" and answer.reasoning == "" and answer.reasoning_tokens is None
        assert _titles(store, "old answer") == {"Old"} == _titles(store, "old answer", include_reasoning=True)
        reply = _thinking_reply(store, chat.id)
        assert _titles(store, "prime check", include_reasoning=True) == {"Old"}
        assert store.get_message(reply.id).reasoning == THINKING
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 4
    conn.close()


def test_unreadable_reasoning_tokens_leave_the_reply_and_its_thinking_readable(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat()
        _thinking_reply(store, chat.id)
    conn = sqlite3.connect(path)
    conn.execute('UPDATE messages SET reasoning_tokens = \'{"v": 2, "texts": ["a"], "sources": ""}\'')
    conn.commit()
    conn.close()
    with ChatStore(path) as store:
        [reply] = store.messages(chat.id)
        assert reply.content == ANSWER and reply.reasoning == THINKING and reply.reasoning_tokens is None


def test_bad_reasoning_tokens_are_refused_before_anything_is_written(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat()
        try:
            store.add_message(
                chat.id, "assistant", "x", reasoning="y", reasoning_tokens=[("y", "target")], reasoning_token_rounds=[3]
            )  # no such round
        except ValueError as exc:
            assert "round" in str(exc)
        else:
            raise AssertionError("a round index past the reply's rounds was stored")
        assert store.messages(chat.id) == []


def test_salvage_keeps_the_thinking(tmp_path):
    broken, fresh = tmp_path / "broken.db", tmp_path / "fresh.db"
    with ChatStore(broken) as store:
        chat = store.create_chat()
        _thinking_reply(store, chat.id)
    salvage_database(broken, fresh)
    with ChatStore(fresh) as store:
        assert store.messages(chat.id)[0].reasoning == THINKING
        assert _titles(store, "prime check", include_reasoning=True) == {chat.title}


def test_a_chat_keeps_its_thinking_choices_and_older_chats_leave_thinking_to_the_model(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat(settings=ChatSettings(thinking=False, reasoning_effort="high", thinking_budget=32))
        old = store.create_chat()
    conn = sqlite3.connect(tmp_path / "chats.db")  # as a SpecChat before thinking stored it
    conn.execute("UPDATE chats SET settings = ? WHERE id = ?", ('{"temperature": 0.5}', old.id))
    conn.commit()
    conn.close()
    with ChatStore(tmp_path / "chats.db") as store:
        settings = store.get_chat(chat.id).settings
        assert (settings.thinking, settings.reasoning_effort, settings.thinking_budget) == (False, "high", 32)
        older = store.get_chat(old.id).settings
        assert (older.temperature, older.thinking, older.reasoning_effort, older.thinking_budget) == (0.5, None, "", 0)
    bad = ChatSettings.from_dict({"thinking": "yes", "reasoning_effort": "extreme", "thinking_budget": -5})
    assert (bad.thinking, bad.reasoning_effort, bad.thinking_budget) == (None, "", 0)


def test_markers_are_kept_per_model_file_and_bad_ones_dropped(tmp_path):
    path = tmp_path / "settings.json"
    save_settings(AppSettings(reasoning_markers={"/m/a.gguf": ["[THINK]", "[/THINK]"]}, keep_thinking_open=True), path)
    loaded = load_settings(path)
    assert loaded.reasoning_markers == {"/m/a.gguf": ["[THINK]", "[/THINK]"]} and loaded.keep_thinking_open
    assert loaded.load_warning is None
    path.write_text(
        json.dumps(
            {"reasoning_markers": {"/m/a.gguf": ["<t>", "</t>"], "/m/b.gguf": ["only one"], "/m/c.gguf": ["", "</t>"]}}
        )
    )
    loaded = load_settings(path)
    assert loaded.reasoning_markers == {"/m/a.gguf": ["<t>", "</t>"]} and "reasoning_markers" in loaded.load_warning
