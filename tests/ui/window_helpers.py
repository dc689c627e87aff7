"""Helpers for window tests: pick models, send a message and wait, as a user would."""

from __future__ import annotations

import time
from pathlib import Path


def choose_pair(qtbot, window, target: Path, draft: Path | str | None):
    """Pick target and draft as a user would, and wait until both are loaded."""
    window.choose_target(str(target))
    qtbot.waitUntil(lambda: not window.drafts.is_checking(), timeout=10000)
    if draft is not None:
        window.choose_draft(str(draft))
    qtbot.waitUntil(window.models_ready, timeout=20000)


def poppies_chat(make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path):
    """A window in a new chat of a project whose one short document goes whole with each question; returns the
    window and the project."""
    import dataclasses

    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    note = tmp_path / "poppies.md"
    note.write_text("# Blue poppies\n\nBlue poppies bloom in late June.\n")
    project = window.store.projects.create_project("Poppies")
    window.store.projects.update_project(dataclasses.replace(project, documents=(str(note),)))
    window.projects.new_chat_in(project.id)
    return window, project


def send_and_wait(qtbot, window, text: str, timeout: int = 30000):
    """Type `text`, press Enter, and wait until the reply is finished and stored."""
    from PySide6.QtCore import Qt

    window.composer.edit.setPlainText(text)
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=timeout) as blocker:
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    return blocker.args[0]


def api_window(
    make_window, qtbot, model_folder, tiny_models, *, fake_engine=None, draft: bool = True, **settings_changes
):
    """A window whose API listens on a free port and answers with the tiny target (and its draft, unless `draft` is
    False), over the scripted engine when `fake_engine` is given; returns it once the API's address is known.
    `settings_changes`: further AppSettings fields (Requests at once, say)."""
    from tests.serve.api_fixtures import DEADLINE_S
    from tests.support.ports import free_port

    window = make_window(engine_factory=fake_engine, api_server=True, api_port=free_port(), **settings_changes)
    choose_pair(
        qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name if draft else None
    )
    qtbot.waitUntil(lambda: bool(window.api_server.state.url), timeout=int(DEADLINE_S * 1000))
    return window


def wait_ms(qtbot, ms: int) -> None:
    end = time.monotonic() + ms / 1000
    while time.monotonic() < end:
        qtbot.wait(10)


def click_link(qtbot, view, label: str, href: str) -> None:
    """Click the transcript link `label` that leads to `href`, as a user would."""
    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtGui import QTextCursor

    document = view.document()
    found = QTextCursor(document)
    while True:
        found = document.find(label, found)
        assert not found.isNull(), f"no link {label!r} to {href!r} in the transcript"
        if found.charFormat().anchorHref() == href:
            break
    cursor = QTextCursor(document)
    cursor.setPosition(found.selectionStart() + 1)
    view.setTextCursor(cursor)
    view.ensureCursorVisible()
    point = view.cursorRect(cursor).center() + QPoint(2, 0)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=point)


def file_mime(*paths):
    """What a file manager puts on the clipboard or in a drag: the files' local URLs."""
    from PySide6.QtCore import QMimeData, QUrl

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    return mime


def drop_files(window, *paths) -> bool:
    """Drag files over the transcript and drop them, as a file manager does; True if the window took them."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QDragEnterEvent, QDropEvent
    from PySide6.QtWidgets import QApplication

    mime = file_mime(*paths)
    where = QPointF(window.chat_view.mapTo(window, QPoint(40, 40)))
    actions = Qt.DropAction.CopyAction
    enter = QDragEnterEvent(where.toPoint(), actions, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    if not enter.isAccepted():
        return False
    drop = QDropEvent(where, actions, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, drop)
    return drop.isAccepted()
