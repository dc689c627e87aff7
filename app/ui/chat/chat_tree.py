"""The chat list's item model: project headers, each over its chats, then the chats in no project, newest first.

Two levels. A top-level row is a project (in the projects' order) or, below them, a chat in no project; a project's
rows are its chats. An index's internal id says where it lives: 0 for a top-level row, the project's id for a chat
inside that project. With no projects the model is the flat list of chats it always was (row r is chat r).
GUI thread only.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from PySide6.QtCore import QAbstractItemModel, QMimeData, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal

from app.store import Chat
from app.store.projects import Project

CHAT_ID_ROLE = Qt.ItemDataRole(Qt.ItemDataRole.UserRole + 1)
"""The chat's id (an int); None on a project's header."""
SECONDARY_ROLE = Qt.ItemDataRole(Qt.ItemDataRole.UserRole + 2)
"""The row's second line: when the chat was last written in, and with which model; a project's count of chats."""
PROJECT_ID_ROLE = Qt.ItemDataRole(Qt.ItemDataRole.UserRole + 3)
"""On a project's header, the project's id (an int); None on a chat's row."""

CHAT_IDS_MIME = "application/x-specchat-chat-ids"
"""What a dragged chat row carries: its chat ids as a JSON list."""

AnyIndex = Union[QModelIndex, QPersistentModelIndex]

_ROW_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable
_CHAT_FLAGS = _ROW_FLAGS | Qt.ItemFlag.ItemIsDragEnabled | Qt.ItemFlag.ItemNeverHasChildren  # the view skips asking
_PROJECT_FLAGS = _ROW_FLAGS | Qt.ItemFlag.ItemIsDropEnabled


def relative_time(timestamp: float, now: Optional[float] = None) -> str:
    now = time.time() if now is None else now
    seconds = max(0.0, now - timestamp)
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    return time.strftime("%d %b %Y", time.localtime(timestamp))


def row_time(timestamp: float, now: Optional[float] = None) -> str:
    """A chat row's time: the hour today ("14:32"), "Yesterday 09:10", a day this year ("3 Dec"), else the year."""
    now = time.time() if now is None else now
    then, today = time.localtime(timestamp), time.localtime(now)
    if then[:3] == today[:3]:
        return time.strftime("%H:%M", then)
    if time.localtime(now - 86400)[:3] == then[:3]:
        return time.strftime("Yesterday %H:%M", then)
    if then.tm_year == today.tm_year:
        return f"{then.tm_mday} {time.strftime('%b', then)}"
    return f"{then.tm_mday} {time.strftime('%b %Y', then)}"


def chat_count(n: int) -> str:
    return "No chats" if n == 0 else "1 chat" if n == 1 else f"{n} chats"


class ChatListModel(QAbstractItemModel):
    """Projects and chats, each group newest first (the store's order). Editing a title asks the owner to rename;
    dropping chats asks the owner to move them. `model_name` turns a chat's model file into the name its second
    line shows (the window gives the library's)."""

    sig_rename_requested = Signal(int, str)
    """(chat_id, title): the user edited a chat's title in place."""
    sig_project_rename_requested = Signal(int, str)
    """(project_id, name): the user edited a project's name in place."""
    sig_move_requested = Signal(int, object)
    """(chat_id, project_id or None): the user dropped a chat on a project, or outside every project."""

    def __init__(self, parent: Optional[QObject] = None):
        super().__init__(parent)
        self._projects: list[Project] = []
        self._inside: dict[int, list[Chat]] = {}  # a project's chats, by project id
        self._chats: list[Chat] = []  # the chats in no project
        self.model_name: Callable[[str], str] = lambda path: Path(path).stem

    # ----- filling

    def set_chats(self, chats: Sequence[Chat]) -> None:
        """Show these chats under the projects shown now."""
        self.set_contents(self._projects, chats)

    def set_contents(self, projects: Sequence[Project], chats: Sequence[Chat]) -> None:
        """Show these projects, and the chats each under its project (a chat whose project is not shown, below)."""
        self.beginResetModel()
        self._projects = list(projects)
        self._inside = {p.id: [] for p in self._projects}
        self._chats = []
        for chat in chats:
            self._group(self._group_key(chat)).append(chat)
        self.endResetModel()

    def upsert(self, chat: Chat) -> None:
        """Show one chat's new state: its row changes in place, moves to its place among the newest (or to its new
        project), or is added; no other row is touched (the list can hold thousands)."""
        key, row = self._find(chat.id)
        new_key = self._group_key(chat)
        if row >= 0 and key != new_key:
            self._remove_at(key, row)
            row = -1
        group, parent = self._group(new_key), self._parent_index(new_key)
        offset = self._offset(new_key)
        target = self._place_for(group, chat, skip=row)
        if row < 0:
            self.beginInsertRows(parent, offset + target, offset + target)
            group.insert(target, chat)
            self.endInsertRows()
            self._count_changed(new_key)
            return
        if target != row:
            # Qt's move API counts the destination before the moved row is taken out.
            destination = offset + (target if target < row else target + 1)
            self.beginMoveRows(parent, offset + row, offset + row, parent, destination)
            group.insert(target, group.pop(row))
            self.endMoveRows()
        group[target] = chat
        index = self.index(offset + target, 0, parent)
        self.dataChanged.emit(index, index)

    def show_chat(self, chat_id: int, chat: Optional[Chat]) -> None:
        """Show one chat's new state, or (None) that it is gone."""
        if chat is None:
            self.remove(chat_id)
        else:
            self.upsert(chat)

    def remove(self, chat_id: int) -> None:
        key, row = self._find(chat_id)
        if row >= 0:
            self._remove_at(key, row)

    def _remove_at(self, key: Optional[int], row: int) -> None:
        offset = self._offset(key)
        self.beginRemoveRows(self._parent_index(key), offset + row, offset + row)
        del self._group(key)[row]
        self.endRemoveRows()
        self._count_changed(key)

    def _count_changed(self, key: Optional[int]) -> None:
        """A project's header says how many chats it holds."""
        if key is not None:
            header = self.project_index(key)
            self.dataChanged.emit(header, header)

    @staticmethod
    def _place_for(group: list[Chat], chat: Chat, skip: int) -> int:
        """Where `chat` belongs in the store's order (newest first, then larger id), ignoring row `skip`."""
        key = (chat.updated_at, chat.id)
        others = [c for i, c in enumerate(group) if i != skip]
        return next((i for i, c in enumerate(others) if (c.updated_at, c.id) < key), len(others))

    # ----- where things are

    def _group_key(self, chat: Chat) -> Optional[int]:
        return chat.project_id if chat.project_id in self._inside else None

    def _group(self, key: Optional[int]) -> list[Chat]:
        return self._chats if key is None else self._inside[key]

    def _offset(self, key: Optional[int]) -> int:
        """The row of a group's first chat under its parent: loose chats come after the project headers."""
        return len(self._projects) if key is None else 0

    def _parent_index(self, key: Optional[int]) -> QModelIndex:
        return QModelIndex() if key is None else self.project_index(key)

    def _find(self, chat_id: Optional[int]) -> tuple[Optional[int], int]:
        """(group key, row within the group) of the chat, or (None, -1)."""
        for key in (None, *self._inside):
            for row, chat in enumerate(self._group(key)):
                if chat.id == chat_id:
                    return key, row
        return None, -1

    def chat_at(self, row: int) -> Optional[Chat]:
        """The chat in no project at top-level row `row` (None for a project's header or past the end)."""
        row -= len(self._projects)
        return self._chats[row] if 0 <= row < len(self._chats) else None

    def row_of(self, chat_id: Optional[int]) -> int:
        """The top-level row of a chat in no project; -1 for any other."""
        key, row = self._find(chat_id)
        return len(self._projects) + row if key is None and row >= 0 else -1

    def index_of(self, chat_id: Optional[int]) -> QModelIndex:
        """The chat's index wherever it is (invalid when it is not shown)."""
        key, row = self._find(chat_id)
        return self.index(self._offset(key) + row, 0, self._parent_index(key)) if row >= 0 else QModelIndex()

    def project_index(self, project_id: Optional[int]) -> QModelIndex:
        for row, project in enumerate(self._projects):
            if project.id == project_id:
                return self.createIndex(row, 0, 0)
        return QModelIndex()

    def projects(self) -> list[Project]:
        return list(self._projects)

    def project_of_index(self, index: AnyIndex) -> Optional[int]:
        """The project a row is or is in (None for a chat in no project, or no row)."""
        item = self._item(index)
        if isinstance(item, Project):
            return item.id
        if isinstance(item, Chat):
            return index.internalId() or None  # a chat inside a project carries the project's id
        return None

    def _item(self, index: AnyIndex) -> Union[Chat, Project, None]:
        if not index.isValid():
            return None
        key, row = index.internalId(), index.row()
        if key:  # a chat inside project `key`
            group = self._inside.get(key, [])
            return group[row] if 0 <= row < len(group) else None
        if row < len(self._projects):
            return self._projects[row]
        return self.chat_at(row)

    # ----- Qt's item model

    def index(self, row: int, column: int = 0, parent: AnyIndex = QModelIndex()) -> QModelIndex:
        if column != 0 or row < 0:
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, 0, 0) if row < len(self._projects) + len(self._chats) else QModelIndex()
        item = self._item(parent)
        if isinstance(item, Project) and row < len(self._inside[item.id]):
            return self.createIndex(row, 0, item.id)
        return QModelIndex()

    def parent(self, index: Optional[AnyIndex] = None):
        if index is None:
            return QObject.parent(self)  # the QObject's parent, which this name hides
        if not index.isValid() or not index.internalId():
            return QModelIndex()
        return self.project_index(index.internalId())

    def rowCount(self, parent: AnyIndex = QModelIndex()) -> int:
        if not parent.isValid():
            return len(self._projects) + len(self._chats)
        if parent.internalId() or parent.row() >= len(self._projects):
            return 0  # a chat's row (asked for every row as the view lays out)
        return len(self._inside[self._projects[parent.row()].id])

    def columnCount(self, parent: AnyIndex = QModelIndex()) -> int:
        return 1

    def flags(self, index: AnyIndex) -> Qt.ItemFlag:
        # Asked for every row each time the view lays out (thousands): the answers are made once, below.
        if not index.isValid():
            return Qt.ItemFlag.ItemIsDropEnabled  # the space below the rows: out of every project
        if index.internalId():
            return _CHAT_FLAGS  # a chat inside a project
        row = index.row()
        if row < len(self._projects):
            return _PROJECT_FLAGS
        return _CHAT_FLAGS if row < len(self._projects) + len(self._chats) else Qt.ItemFlag.NoItemFlags

    def data(self, index: AnyIndex, role: int = Qt.ItemDataRole.DisplayRole):
        item = self._item(index)
        if item is None:
            return None
        if isinstance(item, Project):
            return self._project_data(item, role)
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return item.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{item.title}\nUpdated {relative_time(item.updated_at)}"
        if role == CHAT_ID_ROLE:
            return item.id
        if role == SECONDARY_ROLE:
            return self.secondary_text(item)
        return None

    def _project_data(self, project: Project, role: int):
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return project.name
        if role == PROJECT_ID_ROLE:
            return project.id
        if role == SECONDARY_ROLE:
            return chat_count(len(self._inside[project.id]))
        if role == Qt.ItemDataRole.ToolTipRole:
            about = project.instructions.strip().splitlines()[0][:120] if project.instructions.strip() else ""
            return f"Project: {project.name}" + (f"\n{about}" if about else "")
        return None

    def secondary_text(self, chat: Chat) -> str:
        """'14:32 · Qwen2.5-Coder 1.5B': two chats of one title differ by when or with what they were written."""
        when = row_time(chat.updated_at)
        path = chat.settings.target_path
        return f"{when} · {self.model_name(path)}" if path else when

    def setData(self, index: AnyIndex, value, role: int = Qt.ItemDataRole.EditRole) -> bool:
        item = self._item(index)
        if item is None or role != Qt.ItemDataRole.EditRole or not isinstance(value, str):
            return False
        title = " ".join(value.split())
        if not title:
            return False
        if isinstance(item, Project):
            if title != item.name:
                self.sig_project_rename_requested.emit(item.id, title)
        elif title != item.title:
            self.sig_rename_requested.emit(item.id, title)
        return True

    # ----- dragging a chat in or out of a project

    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def supportedDragActions(self) -> Qt.DropAction:
        return Qt.DropAction.MoveAction

    def mimeTypes(self) -> list[str]:
        return [CHAT_IDS_MIME]

    def mimeData(self, indexes) -> QMimeData:
        ids = [item.id for item in map(self._item, indexes) if isinstance(item, Chat)]
        data = QMimeData()
        data.setData(CHAT_IDS_MIME, json.dumps(ids).encode("ascii"))
        return data

    def canDropMimeData(self, data, action, row, column, parent) -> bool:
        return data is not None and data.hasFormat(CHAT_IDS_MIME)

    def dropMimeData(self, data, action, row, column, parent) -> bool:
        """A drop on a project (or on a chat in it) moves the chats into it; anywhere else, out of every project.
        The owner moves them in the store and lists them again; no row is moved here (removeRows is not offered,
        so the view's move leaves the rows to that listing)."""
        if data is None or not data.hasFormat(CHAT_IDS_MIME):
            return False
        try:
            ids = [int(i) for i in json.loads(bytes(data.data(CHAT_IDS_MIME).data()).decode("ascii"))]
        except (ValueError, TypeError):
            return False
        project_id = self.project_of_index(parent) if parent.isValid() else None
        for chat_id in ids:
            self.sig_move_requested.emit(chat_id, project_id)
        return bool(ids)
