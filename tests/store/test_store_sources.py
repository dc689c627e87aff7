"""The sources a question was sent with are stored with it: they survive reopening the database, a reply cites its
question's, the prompt gives them to the model again with the last question only (the text as typed stays the
message's), and an older database is migrated to hold them."""

from __future__ import annotations

import sqlite3

from app.store import SCHEMA_VERSION, ChatStore
from app.store.projects.sources import Source
from app.ui.chat.chat_prompt import prompt_messages
from tests.support.old_schema import take_back

PASSAGES = (
    Source(1, "/docs/roses.md", 120, 180, 0.03, "Roses bloom in June.", heading="Roses"),
    Source(2, "/docs/soil.md", 0, 40, 0.02, "Loam holds water well.", page=3),
)


def test_sources_are_kept_with_the_question_and_cited_by_its_reply(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat()
        question = store.add_message(chat.id, "user", "When do roses bloom?", sources=PASSAGES)
        reply = store.add_message(chat.id, "assistant", "In June [1].")
        later = store.add_message(chat.id, "user", "Thanks!")
    with ChatStore(path) as store:  # as after a restart
        assert store.get_message(question.id).sources == PASSAGES
        assert store.get_message(question.id).content == "When do roses bloom?"  # as typed
        by_message = store.projects.sources_of(chat.id)
        assert by_message[question.id] == PASSAGES and by_message[reply.id] == PASSAGES
        assert later.id not in by_message  # asked without documents


def test_the_last_question_goes_to_the_model_with_its_passages(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "When do roses bloom?", sources=PASSAGES)
        reply = store.add_message(chat.id, "assistant", "In June [1].")
        asked = prompt_messages(store, chat.id, "", until_id=reply.id)[0]["content"]
        assert "[1] /docs/roses.md" in asked and "Roses bloom in June." in asked and "[2] /docs/soil.md" in asked
        assert "Question: When do roses bloom?" in asked
        store.add_message(chat.id, "user", "And tulips?", sources=PASSAGES[1:])
        messages = prompt_messages(store, chat.id, "")
    assert messages[0]["content"] == "When do roses bloom?"  # an earlier question goes as typed
    assert "Loam holds water well." in messages[2]["content"] and "Roses bloom" not in messages[2]["content"]


def test_documents_given_whole_come_back_as_attachments(tmp_path):
    whole = (Source(1, "/docs/roses.md", 0, 20, 1.0, "Roses bloom in June.", whole=True),)
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "When?", sources=whole)
        [message] = prompt_messages(store, chat.id, "")
    assert message["content"].startswith("When?") and "roses.md" in message["content"]
    assert "Roses bloom in June." in message["content"] and "[1]" not in message["content"]


def test_unreadable_sources_leave_the_message_readable(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat()
        question = store.add_message(chat.id, "user", "text", sources=PASSAGES)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET sources = '{not json'")
    conn.commit()
    conn.close()
    with ChatStore(path) as store:
        message = store.get_message(question.id)
        assert message.content == "text" and message.sources == ()


def test_a_version_7_database_is_migrated_and_keeps_its_messages(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat("Old")
        store.add_message(chat.id, "user", "written before sources")
    take_back(path, 7)  # schema version 7, as the SpecChat before sources wrote it
    with ChatStore(path) as store:
        [message] = store.messages(chat.id)
        assert message.content == "written before sources" and message.sources == ()
        question = store.add_message(chat.id, "user", "with sources", sources=PASSAGES)
        assert store.get_message(question.id).sources == PASSAGES
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 8
    conn.close()
