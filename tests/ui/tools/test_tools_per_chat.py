"""Tools are off in each chat until the chat (or its preset) turns them on (issue 45, item 1): choosing an mcp.json
offers its tools to no chat, so the prompts (and the kept caches) of chats that never wanted tools stay as they were;
a chat that turns them on says so in its header, and only its prompts carry the tools' schema."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog

from app.store import ChatSettings
from app.store.presets import Preset, applied
from app.ui.settings.chat_dialog import ChatSettingsDialog
from tests.ui.window_helpers import send_and_wait

DEADLINE_MS = 60000


def test_an_mcp_file_offers_no_chat_its_tools_until_the_chat_turns_them_on(mcp_window, qtbot, fake_engine, monkeypatch):
    window = mcp_window
    header = window.chat_header.header.summary
    fake_engine.reply = "221 is 13 times 17, so it is not prime."
    plain_id = send_and_wait(qtbot, window, "Is 221 prime?")
    # The servers are ready, but this chat never asked for tools: its prompt carries no schema.
    assert fake_engine.configs[-1]["tools"] == ""
    assert "tools on" not in header.text()
    plain_chat = window.store.get_message(plain_id).chat_id

    def turn_tools_on(dialog):
        dialog.tools.setChecked(True)
        return QDialog.DialogCode.Accepted

    window.new_chat()
    monkeypatch.setattr(ChatSettingsDialog, "exec", turn_tools_on)
    window.chat_settings.edit()
    assert header.text().endswith("· tools on")
    fake_engine.reply = "I can read your notes."
    send_and_wait(qtbot, window, "What does my monday note say?")
    assert "read_note" in fake_engine.configs[-1]["tools"]
    # The first chat still asks without tools, and its header says nothing of them.
    window.open_chat(plain_chat)
    assert "tools on" not in header.text()
    fake_engine.reply = "It is not."
    send_and_wait(qtbot, window, "And 223?")
    assert fake_engine.configs[-1]["tools"] == ""


def test_the_context_gauge_counts_the_tools_schema(mcp_window, qtbot, fake_engine):
    """Issue 45, item 7: the prompt's size, as the gauge shows it, is the prompt as read, the tools' schema included."""
    window = mcp_window
    sizes = []
    window.engine_process.sig_context.connect(lambda context: sizes.append(context.prompt_tokens))
    send_and_wait(qtbot, window, "Hello there")
    window.new_chat()
    window.update_chat_settings(tools=True)
    send_and_wait(qtbot, window, "Hello there")
    schema = len(fake_engine.configs[-1]["tools"].split())  # the scripted engine counts words
    assert schema > 0 and sizes[1] == sizes[0] + schema


def test_a_preset_can_turn_tools_on_and_old_chats_read_them_as_off():
    on = applied(ChatSettings(), Preset("Agent", tools=True))
    assert on.tools is True
    # A chat stored before the switch existed has no "tools" key: it offers no tools.
    old = ChatSettings.from_dict({"temperature": 0.0, "tools_off": ["add"]})
    assert old.tools is False and old.tools_off == ["add"]


def test_a_tool_call_never_flashes_by_as_text_while_it_streams(mcp_window, qtbot, fake_engine):
    """Issue 45, Polish: the call's text (the 1.5B writes it as a fenced JSON block) showed as a code block until the
    reply ended; it is held back, and the finished reply shows the call's block."""
    window = mcp_window
    window.update_chat_settings(tools=True)
    call = '```json\n{"name": "read_note", "arguments": {"name": "monday"}}\n```'
    fake_engine.reply = "Let me read it.\n" + call
    fake_engine.token_delay_s = 0.02
    seen: list[str] = []
    window.conversation.sig_live_stats.connect(lambda _text: seen.append(window.chat_view.streamed_text()))
    window.composer.edit.setPlainText("What does my monday note say?")
    with qtbot.waitSignal(window.conversation.sig_tool_calls, timeout=DEADLINE_MS):
        window.composer.button.click()
    assert any("Let me read it." in text for text in seen)
    assert not any("read_note" in text or "```" in text for text in seen)
    qtbot.waitUntil(lambda: "Allow once" in window.chat_view.toPlainText(), timeout=DEADLINE_MS)
    assert "read_note" in window.chat_view.toPlainText() and "```" not in window.chat_view.toPlainText()
    window.composer.button.click()  # Stop: nothing runs
