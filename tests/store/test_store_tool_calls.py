"""A reply's tool calls are stored with it: they survive reopening the database, follow the reply into its versions,
come back in a prompt as the template wants them, and an older database is migrated to hold them."""

from __future__ import annotations

import sqlite3

from app.replies.tool_loop import call_messages
from app.store import SCHEMA_VERSION, ChatStore
from app.store.tool_calls import ToolCallRecord
from app.ui.chat.chat_prompt import prompt_messages
from tests.support.old_schema import take_back

CALL = ToolCallRecord(
    id="call_1",
    name="read_note",
    arguments='{"name": "monday"}',
    server="notes",
    tool="read_note",
    answer="once",
    result="Note monday: buy milk",
    seconds=0.2,
)


def test_calls_are_kept_with_their_reply_and_sent_back_as_the_template_wants(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "What does my note say?")
        reply = store.add_message(chat.id, "assistant", "")
        store.set_tool_calls(reply.id, [CALL])
        store.add_message(chat.id, "assistant", "It says buy milk.")
    with ChatStore(path) as store:  # as after a restart
        assert store.get_message(reply.id).tool_calls == (CALL,)
        messages = prompt_messages(store, chat.id, "")
    assert messages[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_note", "arguments": {"name": "monday"}}}
        ],
    }
    assert messages[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "name": "read_note",
        "content": "Note monday: buy milk",
    }
    assert messages[3]["content"] == "It says buy milk."


def test_a_call_never_answered_is_sent_as_stopped():
    pending = ToolCallRecord(id="call_2", name="add", arguments="{}")
    assert call_messages("", [pending])[1]["content"].startswith("The user stopped this call")


def test_unreadable_calls_leave_the_reply_readable(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat()
        reply = store.add_message(chat.id, "assistant", "text")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET tool_calls = '{not json'")
    conn.commit()
    conn.close()
    with ChatStore(path) as store:
        message = store.get_message(reply.id)
        assert message.content == "text" and message.tool_calls == ()


def test_a_version_5_database_is_migrated_and_keeps_its_messages(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat("Old")
        store.add_message(chat.id, "user", "written before tools")
    take_back(path, 5)  # schema version 5, as the SpecChat before tool calls wrote it
    with ChatStore(path) as store:
        [message] = store.messages(chat.id)
        assert message.content == "written before tools" and message.tool_calls == ()
        reply = store.add_message(chat.id, "assistant", "")
        store.set_tool_calls(reply.id, [CALL])
        assert store.get_message(reply.id).tool_calls == (CALL,)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 6
    conn.close()


def test_calls_are_exported_in_markdown_and_json(tmp_path):
    import json

    from app.replies.export import export_text

    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "What does my note say?")
        reply = store.add_message(chat.id, "assistant", "")
        store.set_tool_calls(reply.id, [CALL])
        markdown = export_text(store, chat.id, "markdown")
        document = json.loads(export_text(store, chat.id, "json"))
    assert "<details><summary>Tool read_note (notes): returned in 0.2 s</summary>" in markdown
    assert "Note monday: buy milk" in markdown and '{"name": "monday"}' in markdown
    assert document["messages"][1]["tool_calls"][0] == CALL.to_dict()
