"""Export chat… in the window: from the shortcut (the open chat) or the chat list's menu (any chat), as Markdown or
JSON, the file chosen in a save dialog (answered by the test); a failure is one sentence in the banner."""

from __future__ import annotations

import json

from app.ui.chat.chat_exporter import JSON_FILTER, MARKDOWN_FILTER, file_name_for
from tests.ui.window_helpers import choose_pair, send_and_wait


def _export_action(window):
    return next(a for a in window.actions() if a.text() == "Export chat…")


def _answer_dialog(window, path, chosen_filter=MARKDOWN_FILTER) -> list[str]:
    asked: list[str] = []

    def ask(suggested):
        asked.append(suggested)
        return (str(path), chosen_filter) if path else ("", "")

    window.chat_export.ask_path = ask
    return asked


def test_export_the_open_chat_as_json_and_another_as_markdown(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    fake_engine.refuse_tail = 1
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    reply_id = send_and_wait(qtbot, window, "Write add()")
    first_chat = window.conversation.chat_id

    # The shortcut's action, JSON chosen in the dialog, no suffix typed: the suffix is added.
    asked = _answer_dialog(window, tmp_path / "out" / "add", JSON_FILTER)
    with qtbot.waitSignal(window.chat_export.sig_exported) as blocker:
        _export_action(window).trigger()
    assert asked[0].endswith("Write add().md")
    assert blocker.args == [str(tmp_path / "out" / "add.json")]
    document = json.loads((tmp_path / "out" / "add.json").read_text("utf-8"))
    reply = document["messages"][1]
    stored = window.store.get_message(reply_id)
    assert reply["content"] == stored.content and len(reply["rounds"]) == len(stored.rounds)
    assert reply["rounds"][0]["proposed_text"][-1] == " perhaps"  # the refused proposal is in the file
    assert [t["round"] for t in reply["tokens"]] == stored.token_rounds

    # Another chat, exported from the chat list's menu while the first stays open.
    window.new_chat()
    send_and_wait(qtbot, window, "Second chat")
    second_chat = window.conversation.chat_id
    window.open_chat(first_chat)
    _answer_dialog(window, tmp_path / "second.md")
    with qtbot.waitSignal(window.chat_export.sig_exported):
        window.sidebar.sig_export_requested.emit(second_chat)
    text = (tmp_path / "second.md").read_text("utf-8")
    assert text.startswith("# Second chat\n") and "## You\n\nSecond chat" in text
    assert not window.error_banner.isVisible()


def test_cancel_writes_nothing_and_failures_are_one_sentence(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window = make_window(engine_factory=fake_engine)
    _export_action(window).trigger()  # a new, empty chat: nothing to export
    assert window.error_banner.isVisible() and "no chat to export" in window.error_banner.text()
    window.error_banner.hide()

    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    send_and_wait(qtbot, window, "hello")
    _answer_dialog(window, None)
    _export_action(window).trigger()
    assert list(tmp_path.glob("*.md")) == [] and not window.error_banner.isVisible()

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    _answer_dialog(window, blocker / "chat.md")
    _export_action(window).trigger()
    message = window.error_banner.text()
    assert window.error_banner.isVisible() and message.startswith(f"The chat could not be exported to {blocker}")
    assert "\n" not in message and "Traceback" not in message


def test_file_names_from_titles():
    assert file_name_for("Write add() please") == "Write add() please.md"
    assert file_name_for("a/b\\c:d*e?\n", "json") == "a-b-c-d-e.json"
    assert file_name_for("../..") == "chat.md"
