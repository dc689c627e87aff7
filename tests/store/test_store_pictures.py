"""Pictures sent with a message (app.store.attachments): files in the chat's folder under the data folder, named
from the message, sent to the engine before the text, and deleted with the chat."""

from __future__ import annotations

import struct
import zlib

import pytest

from app.store import ChatStore
from app.store.attachments import AttachmentError
from app.store.attachments import picture_from_bytes
from app.ui.chat.chat_prompt import prompt_messages
from tests.vision.pictures import hostile_pictures


def png(width: int = 4, height: int = 3) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    rows = b"".join(b"\x00" + b"\x80\x20\x10" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def test_a_picture_is_a_file_of_its_chat_sent_before_the_text_and_deleted_with_the_chat(tmp_path):
    picture = picture_from_bytes("shot.png", png())
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "What is this?", pictures=[picture])
        stored = store.messages(chat.id)[0].pictures
        assert [p.name for p in stored] == ["shot.png"]
        assert stored[0].path.parent.parent == tmp_path / "pictures"
        assert stored[0].read() == picture.data
        assert store.get_chat(chat.id).title == "What is this?"
        [message] = prompt_messages(store, chat.id, "")
        image, text = message["content"]
        assert image["image"].data == picture.data and text == {"type": "text", "text": "What is this?"}
        store.delete_chat(chat.id)
        assert not stored[0].path.exists() and not stored[0].path.parent.exists()


def test_a_file_that_is_no_picture_gets_a_sentence():
    with pytest.raises(AttachmentError, match="not a picture"):
        picture_from_bytes("notes.png", b"hello")
    with pytest.raises(AttachmentError, match="damaged or cut-short PNG"):
        picture_from_bytes("cut.png", png()[:20])


def test_a_hostile_picture_attached_gets_a_sentence_before_anything_decodes_it():
    for name, data in hostile_pictures().items():
        with pytest.raises(AttachmentError, match=r"damaged or cut-short|decompression bomb|100,000 blocks") as raised:
            picture_from_bytes(name, data)
        assert str(raised.value).startswith(name)


def test_export_links_each_picture_in_markdown_and_names_its_file_in_json(tmp_path):
    import json

    from app.replies.export import export_text

    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "What is this?", pictures=[picture_from_bytes("shot [1].png", png())])
        [stored] = store.messages(chat.id)[0].pictures
        markdown = export_text(store, chat.id, "markdown")
        document = json.loads(export_text(store, chat.id, "json"))
    assert f"![shot (1).png]({stored.path.as_uri()})" in markdown
    assert document["messages"][0]["pictures"] == [{"name": "shot [1].png", "file": str(stored.path)}]


def test_a_picture_stays_with_its_message_across_versions(tmp_path):
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat = store.create_chat()
        first = store.add_message(chat.id, "user", "What is this?", pictures=[picture_from_bytes("a.png", png())])
        store.add_message(chat.id, "assistant", "Noise.")
        store.branch_from(chat.id, first.id)  # Edit: the old version is kept aside
        store.add_message(chat.id, "user", "And this?", pictures=[picture_from_bytes("b.png", png(5, 5))])
        assert [p.name for p in store.messages(chat.id)[0].pictures] == ["b.png"]
        assert store.switch_version(chat.id, store.messages(chat.id)[0].id, first.id)
        [shown] = store.messages(chat.id)[0].pictures
        assert shown.name == "a.png" and shown.read() == png()
