"""The sidebar: the chats, newest first, under their projects, with search, new, rename and delete. GUI thread only."""

from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtCore import (
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
    QMenu,
    QPushButton,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from app.ui.chat.chat_tree import (  # noqa: F401 (the chat list's names, as its users import them)
    CHAT_ID_ROLE,
    PROJECT_ID_ROLE,
    SECONDARY_ROLE,
    ChatListModel,
    relative_time,
    row_time,
)
from app.ui.widgets import style as style_colors

MenuHook = Callable[[QMenu, QModelIndex], None]
"""Adds a feature's entries to the chat list's menu for the row clicked (an invalid index: the empty space)."""


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
        if index.data(PROJECT_ID_ROLE) is not None:  # a project's header: bold, with whether it is open
            opt.font.setBold(True)
            title = ("▾ " if opt.state & QStyle.StateFlag.State_Open else "▸ ") + title
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
    sig_project_delete_requested = Signal(int)
    """(project_id): the user pressed Delete on a project's header (the owner asks what becomes of its chats)."""
    sig_export_requested = Signal(int)
    """(chat_id): the user asked to export this chat to a file."""
    sig_search_changed = Signal(str, bool)
    """(text, include_thinking): the search text (debounced) or whether replies' thinking is searched changed."""
    sig_scope_changed = Signal(object)
    """(project_id or None): the project the search looks in changed (None: every chat)."""
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
        self.menu_hooks: list[MenuHook] = []  # features' entries in the list's menu (app.ui.projects)
        self.scope_project: Optional[int] = None  # the project the search looks in (a header clicked last)
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

        # A tree: project headers over their chats, then the chats in no project. A header opens and closes by a
        # click (its row draws the arrow), so top-level chats are not pushed right by an arrow column.
        self.list_view = QTreeView()
        self.list_view.setModel(model)
        self.list_view.setHeaderHidden(True)
        self.list_view.setRootIsDecorated(False)
        self.list_view.setIndentation(14)
        self.list_view.setExpandsOnDoubleClick(False)  # a double click renames, as on a chat
        self.list_view.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.list_view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list_view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list_view.customContextMenuRequested.connect(self._show_menu)
        self.list_view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list_view.setTextElideMode(Qt.TextElideMode.ElideRight)
        # Every row is a title and a second line: one size for all, so a list of thousands lays out at once.
        self.list_view.setUniformRowHeights(True)
        self.list_view.setItemDelegate(ChatRowDelegate(self.list_view))
        # A chat is dragged onto a project's header to move it in, or onto the chats below the projects to move it
        # out; the model asks its owner to move it in the store (sig_move_requested).
        self.list_view.setDragDropMode(QAbstractItemView.DragDropMode.DragDrop)
        self.list_view.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.list_view.setDropIndicatorShown(True)
        self.list_view.clicked.connect(self._on_clicked)
        self.list_view.activated.connect(self._on_activated)
        layout.addWidget(self.list_view, 1)
        self._collapsed: set[int] = set()  # projects the person closed, kept closed when the list is filled again
        self.list_view.collapsed.connect(lambda index: self._remember_open(index, False))
        self.list_view.expanded.connect(lambda index: self._remember_open(index, True))
        model.modelReset.connect(self._open_projects)

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

        footer = self.footer = QVBoxLayout()  # features add their links here (app.ui.projects: New project)
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

    def set_scope(self, project_id: Optional[int]) -> None:
        """Search within this project (None: every chat); the search box says which."""
        name = next((p.name for p in self.model.projects() if p.id == project_id), None)
        self.search.setPlaceholderText(f"Search in “{name}”" if name else "Search chats")  # a renamed one's too
        if project_id != self.scope_project:
            self.scope_project = project_id
            self.sig_scope_changed.emit(project_id if name else None)

    def select_chat(self, chat_id: Optional[int]) -> None:
        """Highlight the chat without emitting sig_chat_selected."""
        index = self.model.index_of(chat_id)
        if not index.isValid():
            self.list_view.clearSelection()
            return
        self.list_view.setCurrentIndex(index)

    def rename_current(self) -> None:
        index = self.list_view.currentIndex()
        if index.isValid():
            self.list_view.edit(index)

    def _update_empty(self) -> None:
        empty = self.model.rowCount() == 0
        self.empty_label.setText("No chats match" if self.search.text() else "No chats yet")
        self.empty_label.setVisible(empty)

    def _open_projects(self) -> None:
        for project in self.model.projects():
            if project.id not in self._collapsed:
                self.list_view.expand(self.model.project_index(project.id))

    def _remember_open(self, index: QModelIndex, is_open: bool) -> None:
        project_id = index.data(PROJECT_ID_ROLE)
        if project_id is not None:
            (self._collapsed.discard if is_open else self._collapsed.add)(int(project_id))

    def _on_clicked(self, index: QModelIndex) -> None:
        project_id = index.data(PROJECT_ID_ROLE)
        if project_id is not None:  # a header: open or close it, and search in it
            self.list_view.setExpanded(index, not self.list_view.isExpanded(index))
            self.set_scope(int(project_id))
            return
        self._on_activated(index)

    def _on_activated(self, index: QModelIndex) -> None:
        chat_id = index.data(CHAT_ID_ROLE)
        if chat_id is None:
            return
        if self.model.project_of_index(index) != self.scope_project:
            self.set_scope(None)  # a chat elsewhere: the search looks at every chat again
        self.sig_chat_selected.emit(int(chat_id))

    def _delete_current(self) -> None:
        current = self.list_view.currentIndex()
        chat_id, project_id = current.data(CHAT_ID_ROLE), current.data(PROJECT_ID_ROLE)
        if chat_id is not None:
            self.sig_delete_requested.emit(int(chat_id))
        elif project_id is not None:
            self.sig_project_delete_requested.emit(int(project_id))

    def _show_menu(self, pos: QPoint) -> None:
        menu = self.menu_for(self.list_view.indexAt(pos))
        if not menu.isEmpty():
            menu.exec(self.list_view.viewport().mapToGlobal(pos))

    def menu_for(self, index: QModelIndex) -> QMenu:
        """The menu of a row (an invalid index: of the empty space below the rows)."""
        # The menu acts on the row clicked; the selection stays on the open chat, so a chat renamed (or exported)
        # from here never looks opened, and nothing jumps back when the list next shows the open chat.
        menu = QMenu(self)
        chat_id = index.data(CHAT_ID_ROLE) if index.isValid() else None
        if chat_id is not None:
            menu.addAction("Rename", lambda: self.list_view.edit(index))
            menu.addAction("Export…", lambda: self.sig_export_requested.emit(int(chat_id)))
            menu.addAction("Delete", lambda: self.sig_delete_requested.emit(int(chat_id)))
        for hook in self.menu_hooks:
            hook(menu, QModelIndex(index))
        return menu
