"""ChatStore: what the chat list and the conversation view rely on."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from app.engine.events import GenerationStats
from app.engine.targets import LocalModel, ServerModel
from app.platform.paths import database_path
from app.store import (
    DEFAULT_TITLE,
    ChatSettings,
    ChatStore,
    NotFoundError,
    auto_title,
)
from app.store.provenance_doc import decode_tokens, encode_tokens

# Texts a tokenizer really produces, and the ones that break naive encodings.
TRICKY_TOKENS = [
    ("Hello", "target"),
    ("", "draft"),  # a token that ends mid-character carries ""
    ("\U0001f469\u200d\U0001f4bb", "draft"),  # ZWJ emoji sequence
    ("e\u0301", "target"),  # combining accent
    ("\n\n", "draft"),
    ("\r\n\t", "target"),
    (" 漢字", "draft"),
    ("مرحبا", "target"),  # right-to-left
    ('"quoted" \\ back\\slash', "draft"),
    ("\x00nul", "target"),
    ("\u2028\u2029", "draft"),  # JSON-legal, JavaScript-illegal line separators
    ("\ufeff\uffff", "target"),  # BOM and a non-character
    ("\U0010ffff", "draft"),  # the last code point
    (']},{"texts":', "target"),  # looks like the container format
    ("d", "draft"),
    ("t", "target"),
]


@pytest.fixture
def store():
    with ChatStore() as s:
        yield s


def test_default_path_is_under_the_test_home(specchat_home, store):
    assert store.path == database_path()
    assert specchat_home in store.path.parents
    assert store.path.exists()


def test_chat_and_messages_round_trip_across_reopen(tmp_path):
    path = tmp_path / "chats.sqlite3"
    settings = ChatSettings(
        system_prompt="Be brief.\nVery brief.",
        temperature=0.7,
        top_p=0.9,
        top_k=20,
        seed=1234,
        max_tokens=256,
        draft_max=6,
        speculative=False,
        target_path="/models/big.gguf",
        draft_path="/models/small.gguf",
    )
    stats = GenerationStats(tokens=5, tokens_per_second=41.5, drafted=8, accepted=3, draft_len_histogram={4: 2, 2: 1})
    with ChatStore(path) as store:
        chat = store.create_chat("Physics", settings)
        user = store.add_message(chat.id, "user", "Why is the sky blue?")
        reply = store.add_message(
            chat.id,
            "assistant",
            "Rayleigh.",
            stats=stats,
            tokens=[("Ray", "target"), ("leigh", "draft"), (".", "draft")],
            target_name="big.gguf",
            draft_name="small.gguf",
        )

    with ChatStore(path) as store:
        [again] = store.list_chats()
        assert (again.id, again.title, again.settings) == (chat.id, "Physics", settings)
        assert again.created_at == chat.created_at
        assert store.messages(chat.id) == [user, reply]
        stored = store.messages(chat.id)[1]
        assert stored.stats == stats
        assert stored.stats.draft_len_histogram == {4: 2, 2: 1}  # int keys survive JSON
        assert stored.tokens == [("Ray", "target"), ("leigh", "draft"), (".", "draft")]
        assert (stored.target_name, stored.draft_name) == ("big.gguf", "small.gguf")
        assert store.messages(chat.id)[0].tokens is None


def test_default_chat_settings():
    settings = ChatSettings()
    assert settings.temperature == 0.0
    assert (settings.top_p, settings.top_k, settings.max_tokens) == (0.95, 40, 1024)
    assert settings.seed is None and settings.draft_max is None and settings.speculative


def test_settings_from_a_newer_version_load_and_bad_values_fall_back():
    loaded = ChatSettings.from_dict({"temperature": 1, "top_k": "many", "future_option": True})
    assert loaded.temperature == 1.0 and isinstance(loaded.temperature, float)
    assert loaded.top_k == 40


def test_a_chat_stored_with_ngram_as_its_draft_path_reads_as_ngram_drafting(store):
    chat = store.create_chat("Old", ChatSettings(target_path="/m/t.gguf"))
    conn = sqlite3.connect(store.path)
    with conn:  # as an older version stored n-gram drafting
        conn.execute(
            "UPDATE chats SET settings = ? WHERE id = ?",
            ('{"target_path": "/m/t.gguf", "draft_path": "ngram", "speculative": true}', chat.id),
        )
    conn.close()
    settings = store.get_chat(chat.id).settings
    assert settings.draft_ngram and settings.draft_path is None and settings.target_path == "/m/t.gguf"


def test_chats_stored_with_target_keys_read_back_as_typed_targets(store):
    """Chats saved before targets were typed (a file's path, or "server:<url>#<model>") open as before."""
    file_chat, server_chat = store.create_chat("File"), store.create_chat("Server")
    conn = sqlite3.connect(store.path)
    with conn:  # as every version stored a chat's target
        conn.execute("UPDATE chats SET settings = ? WHERE id = ?", ('{"target_path": "/m/t.gguf"}', file_chat.id))
        conn.execute(
            "UPDATE chats SET settings = ? WHERE id = ?",
            ('{"target_path": "server:http://gpu-box:8080#org/model#q4"}', server_chat.id),
        )
    conn.close()
    assert store.get_chat(file_chat.id).settings.target == LocalModel(Path("/m/t.gguf"))
    assert store.get_chat(server_chat.id).settings.target == ServerModel("http://gpu-box:8080", "org/model#q4")
    assert store.get_chat(server_chat.id).settings.target_path == "server:http://gpu-box:8080#org/model#q4"
    assert ChatSettings().target is None


def test_update_settings_and_rename(store):
    chat = store.create_chat()
    changed = store.update_settings(chat.id, ChatSettings(temperature=0.8, seed=7))
    assert changed.settings == ChatSettings(temperature=0.8, seed=7)
    renamed = store.rename_chat(chat.id, "Renamed ✓")
    assert renamed.title == "Renamed ✓"
    assert store.get_chat(chat.id).settings.seed == 7
    with pytest.raises(NotFoundError):
        store.rename_chat(9999, "x")
    with pytest.raises(NotFoundError):
        store.update_settings(9999, ChatSettings())
    assert store.get_chat(9999) is None


def test_newest_first(store):
    a = store.create_chat("a")
    b = store.create_chat("b")
    c = store.create_chat("c")
    assert [x.title for x in store.list_chats()] == ["c", "b", "a"]
    store.add_message(a.id, "user", "hi")
    assert [x.title for x in store.list_chats()] == ["a", "c", "b"]
    store.rename_chat(b.id, "b2")  # renaming is not activity
    assert [x.title for x in store.list_chats()] == ["a", "c", "b2"]
    store.add_message(c.id, "user", "hi")
    assert [x.id for x in store.list_chats()] == [c.id, a.id, b.id]


def test_newest_first_survives_a_coarse_clock(store, monkeypatch):
    import app.store.chats as chats

    monkeypatch.setattr(chats.time, "time", lambda: 1_700_000_000.0)
    first = store.create_chat("first")
    store.create_chat("second")
    store.add_message(first.id, "user", "hi")
    assert [x.title for x in store.list_chats()] == ["first", "second"]


def test_search_title_and_content_case_insensitive(store):
    cooking = store.create_chat("Cooking pasta")
    physics = store.create_chat("Physics")
    store.add_message(physics.id, "user", "Explain ÄRGER and the Straße of Gibraltar")
    store.add_message(physics.id, "assistant", "100% sure")
    empty = store.create_chat("Nothing here")

    def titles(q: str) -> set[str]:
        return {c.title for c in store.list_chats(q)}

    assert titles("PASTA") == {"Cooking pasta"}
    assert titles("ärger") == {"Physics"}  # beyond ASCII
    assert titles("STRASSE") == {"Physics"}  # casefold: ß == ss
    assert titles("100%") == {"Physics"}  # LIKE wildcards are plain text
    assert titles("_") == set()
    assert titles("zebra") == set()
    assert titles("") == titles("   ") == {"Cooking pasta", "Physics", "Nothing here"}
    assert [c.id for c in store.list_chats("h")] == [empty.id, physics.id]  # still newest first
    assert cooking.id not in {c.id for c in store.list_chats("h")}


def test_delete_chat_cascades_to_messages(store):
    doomed = store.create_chat("doomed")
    kept = store.create_chat("kept")
    store.add_message(doomed.id, "user", "one")
    store.add_message(doomed.id, "assistant", "two", tokens=[("two", "target")])
    store.add_message(kept.id, "user", "stays")
    store.delete_chat(doomed.id)
    store.delete_chat(doomed.id)  # already gone: not an error
    assert store.get_chat(doomed.id) is None
    assert store.messages(doomed.id) == []
    assert [m.content for m in store.messages(kept.id)] == ["stays"]
    conn = sqlite3.connect(store.path)
    assert conn.execute("SELECT count(*) FROM messages WHERE chat_id = ?", (doomed.id,)).fetchone()[0] == 0
    conn.close()


def test_delete_messages_from(store):
    chat = store.create_chat()
    other = store.create_chat()
    m1 = store.add_message(chat.id, "user", "q1")
    store.add_message(other.id, "user", "elsewhere")  # interleaved ids in another chat
    m2 = store.add_message(chat.id, "assistant", "a1")
    m3 = store.add_message(chat.id, "user", "q2")
    store.add_message(other.id, "assistant", "elsewhere too")
    store.add_message(chat.id, "assistant", "a2")

    assert store.delete_messages_from(chat.id, m3.id) == 2  # regenerate from q2: q2 and a2 go
    assert [m.id for m in store.messages(chat.id)] == [m1.id, m2.id]
    assert len(store.messages(other.id)) == 2

    new = store.add_message(chat.id, "user", "q2 edited")
    assert [m.content for m in store.messages(chat.id)] == ["q1", "a1", "q2 edited"]
    assert new.id > m3.id  # ids are never reused, so a late result for m3 cannot land on `new`

    with pytest.raises(NotFoundError):
        store.delete_messages_from(other.id, m1.id)  # wrong chat: nothing deleted
    with pytest.raises(NotFoundError):
        store.delete_messages_from(chat.id, m3.id)  # already deleted
    assert len(store.messages(chat.id)) == 3


def test_token_provenance_round_trips_exactly(store, tmp_path):
    chat = store.create_chat()
    content = "".join(text for text, _ in TRICKY_TOKENS)
    message = store.add_message(chat.id, "assistant", content, tokens=TRICKY_TOKENS)
    assert message.tokens == TRICKY_TOKENS
    store.close()
    with ChatStore() as reopened:
        [stored] = reopened.messages(chat.id)
    assert stored.content == content
    assert stored.tokens == TRICKY_TOKENS
    assert all(type(t) is tuple for t in stored.tokens)


def test_token_encoding_edge_cases():
    assert decode_tokens(encode_tokens([])) == []
    assert decode_tokens(encode_tokens(None)) is None
    lone = [("\ud83d", "draft"), ("\ude00", "target")]  # halves of an emoji, not valid UTF-8 on their own
    assert decode_tokens(encode_tokens(lone)) == lone
    many = [(f"tok{i} ", "draft" if i % 3 else "target") for i in range(5000)]
    encoded = encode_tokens(many)
    assert decode_tokens(encoded) == many
    assert len(encoded) < 60_000  # one short string per token, no per-token objects


def test_bad_tokens_are_refused_before_anything_is_written(store):
    chat = store.create_chat()
    with pytest.raises(ValueError):
        store.add_message(chat.id, "assistant", "x", tokens=[("x", "oracle")])
    with pytest.raises(ValueError):
        store.add_message(chat.id, "robot", "x")
    with pytest.raises(NotFoundError):
        store.add_message(9999, "user", "x")
    assert store.messages(chat.id) == []
    assert store.get_chat(chat.id).title == DEFAULT_TITLE


def test_update_message_content(store):
    chat = store.create_chat()
    reply = store.add_message(chat.id, "assistant", "ab", tokens=[("a", "draft"), ("b", "target")])
    same = store.update_message_content(reply.id, "ab")
    assert same.tokens == [("a", "draft"), ("b", "target")]
    edited = store.update_message_content(reply.id, "abc")
    assert edited.content == "abc" and edited.tokens is None  # highlighting would no longer line up
    assert store.messages(chat.id)[0].content == "abc"
    with pytest.raises(NotFoundError):
        store.update_message_content(9999, "x")


def test_first_user_message_names_a_new_chat(store):
    chat = store.create_chat()
    assert chat.title == DEFAULT_TITLE
    store.add_message(chat.id, "system", "You are helpful.")
    store.add_message(chat.id, "user", "  How do I\nreverse a linked list in C without recursion please?  ")
    title = store.get_chat(chat.id).title
    assert title.startswith("How do I reverse a linked list")
    assert len(title) <= 41 and title.endswith("…") and "\n" not in title
    store.add_message(chat.id, "user", "Another question")
    assert store.get_chat(chat.id).title == title

    named = store.create_chat("My own title")
    store.add_message(named.id, "user", "hello")
    assert store.get_chat(named.id).title == "My own title"


def test_auto_title():
    assert auto_title("Short one") == "Short one"
    assert auto_title("   \n ") == DEFAULT_TITLE
    assert auto_title("x" * 100) == "x" * 40 + "…"
    assert auto_title("word " * 20).endswith("word…")
    assert len(auto_title("word " * 20)) <= 41


def test_store_refuses_other_threads(store):
    errors: list[BaseException] = []

    def worker():
        try:
            store.list_chats()
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert errors and isinstance(errors[0], sqlite3.ProgrammingError)
