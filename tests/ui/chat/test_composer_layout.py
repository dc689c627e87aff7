"""The message box: its text starts at the frame's edge with Attach and Send in one row under it, and it grows with
its text without hiding a line behind a scroll bar (up to its limit)."""

from __future__ import annotations

from app.ui.chat.composer import Composer, ComposerEdit


def test_attach_and_send_share_a_row_under_the_text(qtbot):
    composer = Composer()
    qtbot.addWidget(composer)
    composer.resize(700, 200)
    composer.show()
    qtbot.waitExposed(composer)
    edit, attach, send = composer.edit, composer.attach_button, composer.button
    assert attach.geometry().center().y() == send.geometry().center().y()
    assert attach.geometry().top() >= edit.geometry().bottom()
    assert edit.geometry().left() <= attach.geometry().left() + 4  # the text is not pushed right by Attach


def test_the_box_grows_with_its_lines_without_a_scroll_bar(qtbot):
    composer = Composer()
    qtbot.addWidget(composer)
    composer.resize(700, 400)
    composer.show()
    qtbot.waitExposed(composer)
    edit = composer.edit
    one_line = edit.height()
    composer.set_text("\n".join(f"line {n}" for n in range(5)))
    qtbot.waitUntil(lambda: edit.height() > one_line, timeout=2000)
    assert not edit.verticalScrollBar().isVisible()
    composer.set_text("\n".join(f"line {n}" for n in range(ComposerEdit.MAX_LINES + 5)))
    qtbot.waitUntil(edit.verticalScrollBar().isVisible, timeout=2000)  # past its limit it scrolls
