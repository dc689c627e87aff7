"""Renaming a chat in the sidebar: the editor fits its row, the renamed chat stays selected, and chats of one title
can be told apart by their second line."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLineEdit

from app.store import ChatStore
from app.ui.chat.chat_list import SECONDARY_ROLE


def _titles_and_ids(window):
    model = window.chat_list
    return [(model.chat_at(r).title, model.chat_at(r).id) for r in range(model.rowCount())]


def test_renaming_keeps_the_renamed_chat_selected_and_the_editor_inside_the_list(make_window, qtbot):
    with ChatStore() as store:
        ids = [store.create_chat(f"chat {i}").id for i in range(4)]
    window = make_window()
    window.open_chat(ids[0])
    view = window.sidebar.list_view
    renamed = ids[2]
    index = window.chat_list.index(window.chat_list.row_of(renamed))
    view.setCurrentIndex(index)
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_F2)
    editor = view.indexWidget(index) or view.viewport().findChild(QLineEdit)
    qtbot.waitUntil(lambda: view.viewport().findChild(QLineEdit) is not None, timeout=2000)
    editor = view.viewport().findChild(QLineEdit)
    row_rect = view.visualRect(index)
    assert view.viewport().rect().contains(editor.geometry())
    assert editor.height() >= editor.sizeHint().height()  # its text is not clipped
    assert row_rect.contains(editor.geometry().center())
    editor.selectAll()
    qtbot.keyClicks(editor, "Renamed chat")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.store.get_chat(renamed).title == "Renamed chat", timeout=2000)
    current = view.currentIndex()
    assert current.isValid() and window.chat_list.chat_at(current.row()).id == renamed
    assert [i.row() for i in view.selectionModel().selectedIndexes()] == [current.row()]


def test_two_chats_of_one_title_show_different_second_lines(make_window, tiny_models, model_folder):
    from app.store import ChatSettings

    with ChatStore() as store:
        first = store.create_chat("New chat")
        second = store.create_chat(
            "New chat", settings=ChatSettings(target_path=str(model_folder / tiny_models.target.name))
        )
    window = make_window()
    model = window.chat_list
    lines = {model.data(model.index(model.row_of(c.id)), SECONDARY_ROLE) for c in (first, second)}
    assert len(lines) == 2 and all(lines)


def test_a_double_clicked_chat_is_renamed_and_stays_selected(make_window, qtbot):
    with ChatStore() as store:
        ids = [store.create_chat(f"chat {i}").id for i in range(4)]
    window = make_window()
    window.open_chat(ids[3])
    view = window.sidebar.list_view
    renamed = ids[1]
    rect = view.visualRect(window.chat_list.index(window.chat_list.row_of(renamed)))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: view.viewport().findChild(QLineEdit) is not None, timeout=2000)
    editor = view.viewport().findChild(QLineEdit)
    editor.selectAll()
    qtbot.keyClicks(editor, "Renamed")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.store.get_chat(renamed).title == "Renamed", timeout=2000)
    qtbot.waitUntil(lambda: view.viewport().findChild(QLineEdit) is None or not editor.isVisible(), timeout=2000)
    assert window.conversation.chat_id == renamed
    assert window.chat_list.chat_at(view.currentIndex().row()).id == renamed
    assert window.windowTitle().startswith("Renamed")


def test_a_chat_renamed_from_its_menu_leaves_the_selection_on_the_open_chat(make_window, qtbot):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMenu

    with ChatStore() as store:
        ids = [store.create_chat(f"chat {i}").id for i in range(3)]
    window = make_window()
    window.open_chat(ids[2])
    view = window.sidebar.list_view
    other = window.chat_list.index(window.chat_list.row_of(ids[0]))

    def choose_rename() -> None:
        menu = QApplication.activePopupWidget()
        if not isinstance(menu, QMenu):
            QTimer.singleShot(20, choose_rename)
            return
        rename = next(a for a in menu.actions() if a.text() == "Rename")
        menu.close()
        QTimer.singleShot(0, rename.trigger)

    QTimer.singleShot(0, choose_rename)
    view.customContextMenuRequested.emit(view.visualRect(other).center())  # as a right click does
    qtbot.waitUntil(lambda: view.viewport().findChild(QLineEdit) is not None, timeout=2000)
    editor = view.viewport().findChild(QLineEdit)
    editor.selectAll()
    qtbot.keyClicks(editor, "Old chat, renamed")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.store.get_chat(ids[0]).title == "Old chat, renamed", timeout=2000)
    open_row = window.chat_list.row_of(ids[2])
    assert window.conversation.chat_id == ids[2]
    assert [i.row() for i in view.selectionModel().selectedIndexes()] == [open_row]
    window.chat_lists.refresh()  # the list shown again (a message sent, a search cleared): nothing moves
    assert [i.row() for i in view.selectionModel().selectedIndexes()] == [open_row]
