"""Branches in the store: Regenerate and Edit keep every version, the chat reads its current branch only, and
deleting leaves nothing no branch reaches."""

from __future__ import annotations

import sqlite3

from app.store import ChatStore


def texts(store: ChatStore, chat_id: int) -> list[str]:
    return [text for _, _, text in store.message_texts(chat_id)]


def test_regenerate_keeps_the_first_reply_as_version_one(tmp_path):
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "hi")
        first = store.add_message(chat.id, "assistant", "hello")
        store.branch_from(chat.id, first.id)
        assert texts(store, chat.id) == ["hi"]
        second = store.add_message(chat.id, "assistant", "hey there")
        versions = store.versions(chat.id)
        assert (versions[second.id].index, versions[second.id].count) == (2, 2)
        assert store.switch_version(chat.id, second.id, versions[second.id].previous)
        assert texts(store, chat.id) == ["hi", "hello"]
        assert (store.versions(chat.id)[first.id].index, store.versions(chat.id)[first.id].count) == (1, 2)


def test_an_edit_keeps_the_old_question_with_its_whole_tail(tmp_path):
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat = store.create_chat()
        q1 = store.add_message(chat.id, "user", "one")
        store.add_message(chat.id, "assistant", "1")
        store.add_message(chat.id, "user", "two")
        store.add_message(chat.id, "assistant", "2")
        store.branch_from(chat.id, q1.id)
        q1b = store.add_message(chat.id, "user", "uno")
        store.add_message(chat.id, "assistant", "I")
        assert texts(store, chat.id) == ["uno", "I"]
        store.switch_version(chat.id, q1b.id, q1.id)
        assert texts(store, chat.id) == ["one", "1", "two", "2"]
        # Found by search again, since it is the current branch.
        assert [c.id for c in store.list_chats("two")] == [chat.id]


def test_deleting_leaves_no_orphan_versions(tmp_path):
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        chat = store.create_chat()
        q = store.add_message(chat.id, "user", "q")
        a = store.add_message(chat.id, "assistant", "a")
        store.branch_from(chat.id, a.id)
        b = store.add_message(chat.id, "assistant", "b")
        store.delete_messages_from(chat.id, b.id)
        assert texts(store, chat.id) == ["q", "a"]  # the other version shows
        store.delete_messages_from(chat.id, q.id)
        assert texts(store, chat.id) == []
        other = store.create_chat()
        store.add_message(other.id, "user", "x")
        y = store.add_message(other.id, "assistant", "y")
        store.branch_from(other.id, y.id)
        store.delete_chat(other.id)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM branch_messages").fetchone()[0] == 0
    conn.close()


def test_the_export_says_which_version_is_current(tmp_path):
    from app.replies.export import export_text

    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "hi")
        first = store.add_message(chat.id, "assistant", "hello")
        store.branch_from(chat.id, first.id)
        store.add_message(chat.id, "assistant", "hey there")
        markdown = export_text(store, chat.id, "markdown")
        assert "(version 2 of 2, the current one)" in markdown and "hey there" in markdown
        assert "hello" not in markdown
        assert '"version": {"index": 2, "count": 2}' in export_text(store, chat.id, "json")
