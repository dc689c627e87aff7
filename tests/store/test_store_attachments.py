"""Attachments: read with limits, stored with their message (schema version 3, migrated from 2), and sent to the
model after the message's text, so a regenerated reply sees them again."""

from __future__ import annotations

import sqlite3

import pytest

from app.store import SCHEMA_VERSION, ChatStore, salvage_database
from tests.support.old_schema import take_back
from app.store.attachments import (
    MAX_ATTACHMENT_BYTES,
    MAX_MESSAGE_ATTACHMENT_BYTES,
    Attachment,
    AttachmentError,
    check_total,
    read_attachment,
    with_attachments,
)


def test_a_text_file_is_sent_as_its_name_and_a_fenced_block(tmp_path):
    path = tmp_path / "stats.py"
    path.write_text("def mean(xs):\r\n    return sum(xs) / len(xs)\r\n", encoding="utf-8")
    attachment = read_attachment(path)
    assert attachment == Attachment("stats.py", "def mean(xs):\n    return sum(xs) / len(xs)\n")
    assert with_attachments("Add a docstring.", [attachment]) == (
        "Add a docstring.\n\nstats.py\n```py\ndef mean(xs):\n    return sum(xs) / len(xs)\n```"
    )


def test_a_file_holding_a_fence_gets_a_longer_one():
    text = with_attachments("", [Attachment("README.md", "Run:\n```sh\nmake\n```")])
    assert text.startswith("README.md\n````md\n") and text.endswith("\n````")


def test_too_large_binary_and_missing_files_are_refused_with_a_reason(tmp_path):
    big = tmp_path / "big.log"
    big.write_text("x" * 3 * MAX_ATTACHMENT_BYTES)
    with pytest.raises(AttachmentError, match=r"big\.log is 768 KB; files up to 256 KB can be attached"):
        read_attachment(big)
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(AttachmentError, match="photo.png is a binary file; only text and code files"):
        read_attachment(image)
    latin = tmp_path / "old.txt"
    latin.write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(AttachmentError, match="old.txt is not UTF-8 text"):
        read_attachment(latin)
    with pytest.raises(AttachmentError, match="is not a file"):
        read_attachment(tmp_path)
    with pytest.raises(AttachmentError, match="together"):
        check_total([Attachment(f"{n}.txt", "y" * MAX_ATTACHMENT_BYTES) for n in range(3)])
    assert MAX_MESSAGE_ATTACHMENT_BYTES >= 2 * MAX_ATTACHMENT_BYTES


def test_attachments_are_stored_with_the_message_and_in_the_prompt_text(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat()
        attachment = Attachment("notes.txt", "the lighthouse is red\n")
        message = store.add_message(chat.id, "user", "What colour?", attachments=[attachment])
        store.add_message(chat.id, "assistant", "Red.")
        assert message.attachments == (attachment,)
    with ChatStore(tmp_path / "chats.db") as store:
        [user, reply] = store.messages(chat.id)
        assert user.content == "What colour?" and user.attachments == (attachment,) and reply.attachments == ()
        texts = store.message_texts(chat.id)
        assert texts[0][2] == "What colour?\n\nnotes.txt\n```txt\nthe lighthouse is red\n```"
        assert texts[1][2] == "Red."


def test_a_version_2_database_is_migrated_and_keeps_its_messages(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat("Old")
        store.add_message(chat.id, "user", "written before attachments")
    take_back(path, 2)  # schema version 2, as the SpecChat before attachments wrote it
    with ChatStore(path) as store:
        [message] = store.messages(chat.id)
        assert message.content == "written before attachments" and message.attachments == ()
        store.add_message(chat.id, "user", "and after", attachments=[Attachment("a.txt", "A")])
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 3
    conn.close()


def test_unreadable_attachments_leave_the_message_readable(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "hello", attachments=[Attachment("a.txt", "A")])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET attachments = '{not json'")
    conn.commit()
    conn.close()
    with ChatStore(path) as store:
        [message] = store.messages(chat.id)
        assert message.content == "hello" and message.attachments == ()


def test_salvage_keeps_attachments(tmp_path):
    broken, fresh = tmp_path / "broken.db", tmp_path / "fresh.db"
    with ChatStore(broken) as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "see file", attachments=[Attachment("a.txt", "A")])
    salvage_database(broken, fresh)
    with ChatStore(fresh) as store:
        assert store.messages(chat.id)[0].attachments == (Attachment("a.txt", "A"),)


def test_a_first_message_of_files_alone_names_the_chat_after_them(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "", attachments=[Attachment("report.md", "# Q3\n")])
        assert store.get_chat(chat.id).title == "report.md"
