"""The sidebar: the chats, newest first, with search, new, rename and delete. GUI thread only."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Optional, Sequence

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QAction, QColor, QFont, QFontMetrics, QKeySequence, QPainter, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from app.store import Chat
from app.ui.widgets import style as style_colors

CHAT_ID_ROLE = Qt.ItemDataRole(Qt.ItemDataRole.UserRole + 1)
"""The chat's id (an int)."""
SECONDARY_ROLE = Qt.ItemDataRole(Qt.ItemDataRole.UserRole + 2)
"""The row's second line: when the chat was last written in, and with which model."""


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


class ChatListModel(QAbstractListModel):
    """Chats as a list, newest first (the store's order). Editing a title asks the owner to rename.
    `model_name` turns a chat's model file into the name its second line shows (the window gives the library's)."""

    sig_rename_requested = Signal(int, str)
    """(chat_id, title): the user edited a chat's title in place."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._chats: list[Chat] = []
        self.model_name: Callable[[str], str] = lambda path: Path(path).stem

    def set_chats(self, chats: Sequence[Chat]) -> None:
        self.beginResetModel()
        self._chats = list(chats)
        self.endResetModel()

    def upsert(self, chat: Chat) -> None:
        """Show one chat's new state: its row changes in place, or moves up to its place among the newest, or is
        added; no other row is touched (the list can hold thousands)."""
        row = self.row_of(chat.id)
        target = self._place_for(chat, skip=row)
        if row < 0:
            self.beginInsertRows(QModelIndex(), target, target)
            self._chats.insert(target, chat)
            self.endInsertRows()
            return
        if target != row:
            # Qt's move API counts the destination before the moved row is taken out.
            self.beginMoveRows(QModelIndex(), row, row, QModelIndex(), target if target < row else target + 1)
            self._chats.insert(target, self._chats.pop(row))
            self.endMoveRows()
        self._chats[target] = chat
        index = self.index(target)
        self.dataChanged.emit(index, index)

    def show_chat(self, chat_id: int, chat: Optional[Chat]) -> None:
        """Show one chat's new state, or (None) that it is gone."""
        if chat is None:
            self.remove(chat_id)
        else:
            self.upsert(chat)

    def remove(self, chat_id: int) -> None:
        row = self.row_of(chat_id)
        if row >= 0:
            self.beginRemoveRows(QModelIndex(), row, row)
            del self._chats[row]
            self.endRemoveRows()

    def _place_for(self, chat: Chat, skip: int) -> int:
        """Where `chat` belongs in the store's order (newest first, then larger id), ignoring row `skip`."""
        key = (chat.updated_at, chat.id)
        others = [c for i, c in enumerate(self._chats) if i != skip]
        return next((i for i, c in enumerate(others) if (c.updated_at, c.id) < key), len(others))

    def chat_at(self, row: int) -> Optional[Chat]:
        return self._chats[row] if 0 <= row < len(self._chats) else None

    def row_of(self, chat_id: Optional[int]) -> int:
        for row, chat in enumerate(self._chats):
            if chat.id == chat_id:
                return row
        return -1

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._chats)

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self._chats)):
            return None
        chat = self._chats[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return chat.title
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"{chat.title}\nUpdated {relative_time(chat.updated_at)}"
        if role == CHAT_ID_ROLE:
            return chat.id
        if role == SECONDARY_ROLE:
            return self.secondary_text(chat)
        return None

    def secondary_text(self, chat: Chat) -> str:
        """'14:32 · Qwen2.5-Coder 1.5B': two chats of one title differ by when or with what they were written."""
        when = row_time(chat.updated_at)
        path = chat.settings.target_path
        return f"{when} · {self.model_name(path)}" if path else when

    def setData(self, index: QModelIndex | QPersistentModelIndex, value, role=Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or role != Qt.ItemDataRole.EditRole or not isinstance(value, str):
            return False
        title = " ".join(value.split())
        if not title:
            return False
        chat = self._chats[index.row()]
        if title != chat.title:
            self.sig_rename_requested.emit(chat.id, title)
        return True


class ChatRowDelegate(QStyledItemDelegate):
    """A chat's row: its title, and under it, quieter, its second line (SECONDARY_ROLE). The row's background,
    hover, selection and focus ring come from the style sheet. The rename editor covers the whole row, so its
    text is never clipped. GUI thread only."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width(), size.height() + QFontMetrics(self._small_font(option)).height() + 1)

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        widget = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        title, opt.text = opt.text, ""
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)  # background and ring
        opt.text = title
        text = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, widget)
        small = self._small_font(option)
        title_height = text.height() - QFontMetrics(small).height() - 1
        painter.save()
        painter.setFont(opt.font)
        painter.setPen(opt.palette.color(QPalette.ColorRole.Text))
        title_rect = QRect(text.left(), text.top(), text.width(), title_height)
        elided = QFontMetrics(opt.font).elidedText(title, Qt.TextElideMode.ElideRight, text.width())
        painter.drawText(title_rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), elided)
        painter.setFont(small)
        painter.setPen(QColor(style_colors.TEXT_MUTED))
        second = str(index.data(SECONDARY_ROLE) or "")
        second_rect = QRect(text.left(), title_rect.bottom() + 1, text.width(), text.bottom() - title_rect.bottom())
        elided = QFontMetrics(small).elidedText(second, Qt.TextElideMode.ElideRight, text.width())
        painter.drawText(second_rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop), elided)
        painter.restore()

    def updateEditorGeometry(
        self, editor: QWidget, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        editor.setGeometry(option.rect.adjusted(4, 1, -4, -1))  # the row's rounded box (the sheet's item margin)

    @staticmethod
    def _small_font(option: QStyleOptionViewItem) -> QFont:
        font = QFont(option.font)
        font.setPointSizeF(max(7.0, option.font.pointSizeF() - 1.5))
        return font


class ChatSidebar(QWidget):
    """Chat list with its search box and buttons. GUI thread only."""

    sig_chat_selected = Signal(int)
    """The user opened this chat."""
    sig_new_chat = Signal()
    """The user asked for a new chat."""
    sig_delete_requested = Signal(int)
    """The user asked to delete this chat (the owner confirms)."""
    sig_export_requested = Signal(int)
    """(chat_id): the user asked to export this chat to a file."""
    sig_search_changed = Signal(str, bool)
    """(text, include_thinking): the search text (debounced) or whether replies' thinking is searched changed."""
    sig_library_requested = Signal()
    """The user asked to see the model library."""
    sig_get_models_requested = Signal()
    """The user asked to download models."""
    sig_settings_requested = Signal()
    """The user asked for the app settings."""

    def __init__(self, model: ChatListModel, parent=None):
        super().__init__(parent)
        self.setObjectName("Sidebar")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.model = model
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 12, 10, 10)
        layout.setSpacing(8)

        header = QHBoxLayout()
        title = QLabel("SpecChat")
        title.setObjectName("AppTitle")
        header.addWidget(title)
        header.addStretch(1)
        self.new_button = QPushButton("New chat")
        self.new_button.setToolTip("Start a new chat (Ctrl+N)")
        self.new_button.clicked.connect(self.sig_new_chat)
        header.addWidget(self.new_button)
        layout.addLayout(header)

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search chats")
        self.search.setClearButtonEnabled(True)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(150)
        self._search_timer.timeout.connect(self._emit_search)
        self.search.textChanged.connect(self._search_timer.start)
        layout.addWidget(self.search)
        # Answers are what a chat is found by; a thinking model's reasoning repeats the question and wanders, so it
        # is searched only when asked. Shown while there is something to search for.
        self.include_thinking = QCheckBox("Include thinking")
        self.include_thinking.setToolTip("Also find chats by what thinking models wrote before they answered")
        self.include_thinking.toggled.connect(self._emit_search)
        self.include_thinking.hide()
        self.search.textChanged.connect(lambda text: self.include_thinking.setVisible(bool(text.strip())))
        layout.addWidget(self.include_thinking)

        self.list_view = QListView()
        self.list_view.setModel(model)
        self.list_view.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.list_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list_view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list_view.customContextMenuRequested.connect(self._show_menu)
        self.list_view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list_view.setTextElideMode(Qt.TextElideMode.ElideRight)
        # Every row is a title and a second line: one size for all, so a list of thousands lays out at once.
        self.list_view.setUniformItemSizes(True)
        self.list_view.setItemDelegate(ChatRowDelegate(self.list_view))
        self.list_view.clicked.connect(self._on_clicked)
        self.list_view.activated.connect(self._on_clicked)
        layout.addWidget(self.list_view, 1)

        self.empty_label = QLabel("No chats yet")
        self.empty_label.setObjectName("Muted")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.empty_label)
        # The list changes a row at a time (a new chat, a removed one) as well as all at once.
        for change in (model.modelReset, model.rowsInserted, model.rowsRemoved):
            change.connect(self._update_empty)

        delete_action = QAction("Delete chat", self)
        delete_action.setShortcut(QKeySequence.StandardKey.Delete)
        delete_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        delete_action.triggered.connect(self._delete_current)
        self.list_view.addAction(delete_action)

        footer = QVBoxLayout()
        footer.setSpacing(2)
        for label, signal, tip in (
            ("Model library", self.sig_library_requested, "Every model file found, and folders to scan"),
            ("Get models", self.sig_get_models_requested, "Download GGUF models"),
            ("Settings", self.sig_settings_requested, "Model folders, threads, context size, GPU layers"),
        ):
            button = QPushButton(label)
            button.setObjectName("FlatButton")
            button.setToolTip(tip)
            button.clicked.connect(signal)
            footer.addWidget(button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addLayout(footer)
        self._update_empty()

    def _emit_search(self) -> None:
        self.sig_search_changed.emit(self.search.text(), self.include_thinking.isChecked())

    def select_chat(self, chat_id: Optional[int]) -> None:
        """Highlight the chat without emitting sig_chat_selected."""
        row = self.model.row_of(chat_id)
        if row < 0:
            self.list_view.clearSelection()
            return
        self.list_view.setCurrentIndex(self.model.index(row))

    def rename_current(self) -> None:
        index = self.list_view.currentIndex()
        if index.isValid():
            self.list_view.edit(index)

    def _update_empty(self) -> None:
        empty = self.model.rowCount() == 0
        self.empty_label.setText("No chats match" if self.search.text() else "No chats yet")
        self.empty_label.setVisible(empty)

    def _on_clicked(self, index: QModelIndex) -> None:
        chat_id = index.data(CHAT_ID_ROLE)
        if chat_id is not None:
            self.sig_chat_selected.emit(int(chat_id))

    def _delete_current(self) -> None:
        index = self.list_view.currentIndex()
        if index.isValid():
            self.sig_delete_requested.emit(int(index.data(CHAT_ID_ROLE)))

    def _show_menu(self, pos: QPoint) -> None:
        index = self.list_view.indexAt(pos)
        if not index.isValid():
            return
        # The menu acts on the row clicked; the selection stays on the open chat, so a chat renamed (or exported)
        # from here never looks opened, and nothing jumps back when the list next shows the open chat.
        menu = QMenu(self)
        menu.addAction("Rename", lambda: self.list_view.edit(index))
        menu.addAction("Export…", lambda: self.sig_export_requested.emit(int(index.data(CHAT_ID_ROLE))))
        menu.addAction("Delete", lambda: self.sig_delete_requested.emit(int(index.data(CHAT_ID_ROLE))))
        menu.exec(self.list_view.viewport().mapToGlobal(pos))
