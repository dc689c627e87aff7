"""The chat list's tree: project headers over their chats, then the chats in no project. A chat that changes
project moves between groups one row at a time; the headers count their chats; a dragged chat names itself."""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QModelIndex

from app.store import ChatStore
from app.ui.chat.chat_tree import CHAT_ID_ROLE, PROJECT_ID_ROLE, SECONDARY_ROLE, ChatListModel


def _shown(model: ChatListModel) -> list[str]:
    """Every row's text, a project's chats indented under it."""
    rows = []
    for r in range(model.rowCount()):
        index = model.index(r)
        rows.append(index.data())
        rows += ["  " + model.index(c, 0, index).data() for c in range(model.rowCount(index))]
    return rows


def test_chats_move_between_projects_a_row_at_a_time(qtmodeltester, tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        work = store.projects.create_project("Work")
        home = store.projects.create_project("Home")
        a, b, c = (store.create_chat(t) for t in ("a", "b", "c"))
        store.projects.move_chat(a.id, work.id)
        model = ChatListModel()
        model.set_contents(store.projects.list_projects(), store.list_chats())
        qtmodeltester.check(model)
        assert _shown(model) == ["Work", "  a", "Home", "c", "b"]
        assert model.index(0).data(SECONDARY_ROLE) == "1 chat" and model.index(1).data(SECONDARY_ROLE) == "No chats"
        assert model.chat_at(2).id == c.id and model.row_of(b.id) == 3 and model.row_of(a.id) == -1
        assert model.index_of(a.id).parent() == model.project_index(work.id)

        resets = []
        model.modelReset.connect(lambda: resets.append(1))
        model.upsert(dataclasses.replace(store.get_chat(b.id), project_id=home.id))
        model.upsert(dataclasses.replace(store.get_chat(a.id), project_id=None))
        assert _shown(model) == ["Work", "Home", "  b", "c", "a"] and resets == []
        assert model.index(1).data(SECONDARY_ROLE) == "1 chat"
        model.remove(b.id)
        assert _shown(model) == ["Work", "Home", "c", "a"]
        qtmodeltester.check(model)


def test_a_dragged_chat_is_dropped_into_a_project_or_out(qtbot, tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        work = store.projects.create_project("Work")
        chat = store.create_chat("loose")
        model = ChatListModel()
        model.set_contents(store.projects.list_projects(), store.list_chats())
        index = model.index_of(chat.id)
        assert index.data(CHAT_ID_ROLE) == chat.id and model.index(0).data(PROJECT_ID_ROLE) == work.id
        data = model.mimeData([index, model.project_index(work.id)])  # a header is never dragged along
        with qtbot.waitSignal(model.sig_move_requested) as into:
            assert model.dropMimeData(data, model.supportedDropActions(), -1, 0, model.project_index(work.id))
        assert into.args == [chat.id, work.id]
        with qtbot.waitSignal(model.sig_move_requested) as out:
            assert model.dropMimeData(data, model.supportedDropActions(), 1, 0, QModelIndex())
        assert out.args == [chat.id, None]


def test_the_sidebar_takes_a_chat_dropped_on_a_projects_header(qtbot, tmp_path):
    from PySide6.QtCore import QPointF, Qt
    from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
    from PySide6.QtWidgets import QApplication

    from app.ui.chat.chat_list import ChatSidebar

    with ChatStore(tmp_path / "chats.db") as store:
        work = store.projects.create_project("Work")
        chat = store.create_chat("loose")
        model = ChatListModel()
        model.set_contents(store.projects.list_projects(), store.list_chats())
        sidebar = ChatSidebar(model)
        qtbot.addWidget(sidebar)
        sidebar.resize(300, 500)
        sidebar.show()
        qtbot.waitExposed(sidebar)
        view, data = sidebar.list_view, model.mimeData([model.index_of(chat.id)])
        where = view.visualRect(model.project_index(work.id)).center()
        move, button, keys = Qt.DropAction.MoveAction, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
        for event in (
            QDragEnterEvent(where, move, data, button, keys),
            QDragMoveEvent(where, move, data, button, keys),
        ):
            QApplication.sendEvent(view.viewport(), event)
            assert event.isAccepted()
        with qtbot.waitSignal(model.sig_move_requested) as moved:
            QApplication.sendEvent(view.viewport(), QDropEvent(QPointF(where), move, data, button, keys))
        assert moved.args == [chat.id, work.id]
