"""Attaching files as a user does: dropped on the window, pasted into the composer or chosen with Attach;
shown as chips, counted by the context gauge before sending, sent as fenced blocks, stored with the message and
sent again by Regenerate. Files that cannot be attached say why."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFileDialog

from app.store.attachments import MAX_ATTACHMENT_BYTES, Attachment

from tests.ui.window_helpers import choose_pair, drop_files, file_mime, send_and_wait

CODE = "def mean(values):\n    return sum(values) / len(values)\n"


def _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft_identical.name)
    return window


def test_a_file_dropped_on_the_window_is_sent_with_the_message_and_again_on_regenerate(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    source = tmp_path / "stats.py"
    source.write_text(CODE)
    assert drop_files(window, source)
    assert window.composer.attachments() == (Attachment("stats.py", CODE),)
    assert window.composer.tray.isVisible()
    assert "attached" in window.footer.context_label.text()  # counted before sending

    message_id = send_and_wait(qtbot, window, "Add a docstring.")
    sent = fake_engine.requests[-1][-1]
    assert sent == {"role": "user", "content": f"Add a docstring.\n\nstats.py\n```py\n{CODE}```"}
    assert window.composer.attachments() == () and not window.composer.tray.isVisible()
    assert "attached" not in window.footer.context_label.text()
    [user] = [m for m in window.store.messages(window.conversation.chat_id) if m.role == "user"]
    assert user.content == "Add a docstring." and user.attachments == (Attachment("stats.py", CODE),)
    assert "Attached   stats.py · 55 B" in window.chat_view.toPlainText()  # the chip on the message

    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=30000):
        window.messages.regenerate(message_id)
    assert fake_engine.requests[-1][-1] == sent  # the file is sent again

    window.conversation.open_chat(window.conversation.chat_id)  # reopened from the store: the chip is still there
    assert "stats.py · 55 B" in window.chat_view.toPlainText()


def test_too_large_and_binary_files_are_refused_with_their_reasons(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    big, image, fine = tmp_path / "huge.log", tmp_path / "logo.png", tmp_path / "notes.md"
    big.write_text("x" * 2 * MAX_ATTACHMENT_BYTES)
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    fine.write_text("# Notes\n")
    drop_files(window, big, image, fine)
    banner = window.error_banner.text()
    assert window.error_banner.isVisible()
    assert "huge.log is 512 KB; files up to 256 KB can be attached." in banner
    assert "logo.png is a damaged or cut-short PNG file." in banner  # read as a picture, by its header
    assert [a.name for a in window.composer.attachments()] == ["notes.md"]  # the good one is kept


def test_a_pasted_file_is_attached_not_typed_and_text_pastes_as_text(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    source = tmp_path / "main.rs"
    source.write_text("fn main() {}\n")
    QApplication.clipboard().setMimeData(file_mime(source))
    window.composer.edit.paste()
    assert [a.name for a in window.composer.attachments()] == ["main.rs"]
    assert window.composer.text() == ""
    QApplication.clipboard().setText("plain words")
    window.composer.edit.paste()
    assert window.composer.text() == "plain words"


def test_the_attach_button_attaches_chosen_files_and_a_chip_can_be_removed(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path, monkeypatch
):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("A\n")
    second.write_text("B\n")
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(first), str(second)], ""))
    qtbot.mouseClick(window.composer.attach_button, Qt.MouseButton.LeftButton)
    assert [a.name for a in window.composer.attachments()] == ["a.txt", "b.txt"]
    assert window.composer.button.isEnabled()  # files alone can be sent
    window.composer.tray.remove("a.txt")
    assert [a.name for a in window.composer.attachments()] == ["b.txt"]
    send_and_wait(qtbot, window, "")
    assert fake_engine.requests[-1][-1]["content"] == "b.txt\n```txt\nB\n```"


def test_editing_a_message_brings_its_files_back(make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    source = tmp_path / "todo.txt"
    source.write_text("milk\n")
    window.composer.add_files([str(source)])
    send_and_wait(qtbot, window, "Sort this.")
    [user] = [m for m in window.store.messages(window.conversation.chat_id) if m.role == "user"]
    window.confirm = lambda *args: True  # editing drops the reply after it: the window asks first
    window.messages.edit_message(user.id)
    assert window.composer.text() == "Sort this." and [a.name for a in window.composer.attachments()] == ["todo.txt"]


def test_thousands_of_dropped_files_attach_a_message_full_and_say_so_in_one_sentence(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    from app.store.attachments import MAX_MESSAGE_ATTACHMENTS

    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    window.composer.edit.setPlainText("my text stays")
    folder = tmp_path / "many"
    folder.mkdir()
    files = []
    for n in range(3000):
        path = folder / f"f{n}.py"
        path.write_text(f"x = {n}\n") if n % 2 else path.write_bytes(b"\x00\xff binary")
        files.append(path)
    assert drop_files(window, *files)
    attached = window.composer.attachments()
    assert 0 < len(attached) <= MAX_MESSAGE_ATTACHMENTS
    shown = window.error_banner.text()
    assert "more files were not attached" in shown and f"at most {MAX_MESSAGE_ATTACHMENTS} files" in shown
    assert len(shown) < 1000  # a few sentences, not three thousand
    assert window.composer.text() == "my text stays"
