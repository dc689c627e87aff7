"""Item models over the model library: every file (the target picker and the library table), and the drafts that
fit the chosen target (the draft picker). Both wrap plain lists of library records; GUI thread only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Optional, Sequence, cast

from PySide6.QtCore import QAbstractListModel, QAbstractTableModel, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from app.engine.config import KvType
from app.engine.gguf.memory import MemoryCost
from app.engine.targets import LocalModel, ServerModel, Target
from app.library import SERVER_SPECULATION, DraftChoice, ModelEntry
from app.store.model_defaults import for_model
from app.ui.widgets import style
from app.ui.widgets.eye_icon import eye_icon

PATH_ROLE = Qt.ItemDataRole(Qt.ItemDataRole.UserRole + 1)
"""The file path of the row (a str), or NGRAM_KEY for the n-gram drafter."""
DETAIL_ROLE = Qt.ItemDataRole(Qt.ItemDataRole.UserRole + 2)
"""A second line of facts for the two-line picker rows."""

NGRAM_KEY = "ngram"
"""The draft picker's key for n-gram prompt lookup (drafting without a draft model)."""


class LibraryModel(QAbstractTableModel):
    """Every .gguf file found, usable or not; unusable rows are disabled and say why. GUI thread only."""

    COLUMNS = ("Name", "Size", "Parameters", "Quantization", "Architecture", "Context", "Memory", "Status")
    MEMORY_COLUMN = COLUMNS.index("Memory")
    CONTEXT_COLUMN = COLUMNS.index("Context")
    STATUS_COLUMN = COLUMNS.index("Status")

    def __init__(self, parent=None):
        super().__init__(parent)
        self._entries: list[ModelEntry] = []
        self._files: list[ModelEntry] = []
        self._server_models: list[ModelEntry] = []
        # What the Memory column sizes each file's KV cache for: the app-wide context and KV type, or the file's own.
        self._context_size = 4096
        self._kv_type: KvType = "f16"
        self._model_defaults: dict[str, dict] = {}
        self._loaded: tuple[Optional[str], Optional[str]] = (None, None)  # the loaded target's and draft's keys

    def set_loaded(self, target_key: Optional[str], draft_key: Optional[str]) -> None:
        """The files loaded now (None: none), which the Status column marks."""
        self._loaded = (target_key, draft_key)
        if self._entries:
            self.dataChanged.emit(
                self.index(0, self.STATUS_COLUMN), self.index(len(self._entries) - 1, self.STATUS_COLUMN)
            )

    def context_of(self, entry: ModelEntry) -> int:
        """The context `entry` is loaded with (and its Memory sized for): its own, else the app's, at most what it
        was trained for."""
        own = for_model(self._model_defaults, entry.path).context_size or self._context_size
        return min(own, entry.context_length) if entry.context_length else own

    def status_of(self, entry: ModelEntry) -> str:
        """The Status column: loaded (as the model or its draft), ready, or why not; a file without a chat template
        says how it is prompted."""
        if not entry.usable:
            return entry.problem or "Cannot be used"
        if entry.path == self._loaded[0]:
            status = "Loaded"
        elif entry.path == self._loaded[1]:
            status = "Loaded as the draft"
        else:
            status = "Ready"
        if entry.source != "server" and not entry.has_chat_template:
            status += " · no chat template"
        return status

    def set_model_settings(self, context_size: int, kv_type: KvType, model_defaults: dict[str, dict]) -> None:
        """The app-wide context size and KV-cache type, and each file's own settings (app.store.model_defaults):
        its context, KV type and projector."""
        self._context_size, self._kv_type, self._model_defaults = context_size, kv_type, dict(model_defaults)
        if self._entries:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._entries) - 1, len(self.COLUMNS) - 1))

    def projector_of(self, entry: ModelEntry) -> str:
        """The projector `entry` reads pictures with: the one chosen in its Model settings, else the one beside it
        ("": it cannot see)."""
        return for_model(self._model_defaults, entry.path).projector or entry.projector

    def memory_of(self, entry: ModelEntry) -> Optional[MemoryCost]:
        """What `entry` takes loaded with its settings: its own context and KV type where it has them."""
        own = for_model(self._model_defaults, entry.path)
        kv_type = cast(KvType, own.kv_cache_type or self._kv_type)
        return entry.memory(self.context_of(entry), kv_type)

    def set_entries(self, entries: Sequence[ModelEntry]) -> None:
        """The files found by a scan (the servers' models stay)."""
        self.beginResetModel()
        self._files = list(entries)
        self._entries = self._files + self._server_models
        self.endResetModel()

    def set_server_entries(self, entries: Sequence[ModelEntry]) -> None:
        """The models the configured servers offer (app.ui.models.server_models), listed after the files."""
        self.beginResetModel()
        self._server_models = list(entries)
        self._entries = self._files + self._server_models
        self.endResetModel()

    def entries(self) -> list[ModelEntry]:
        """The files (what drafts are chosen from and scans replace); servers' models are rows, not files."""
        return list(self._files)

    def usable_entries(self) -> list[ModelEntry]:
        return [e for e in self._entries if e.usable]

    def entry_at(self, row: int) -> Optional[ModelEntry]:
        return self._entries[row] if 0 <= row < len(self._entries) else None

    def row_of(self, path: Optional[str | Target]) -> int:
        """The row of a target, or of its key (a file's path, a server model's key); -1 for none."""
        if path is None:
            return -1
        key = path.key if isinstance(path, (LocalModel, ServerModel)) else str(path)
        for row, entry in enumerate(self._entries):
            if entry.path == key:
                return row
        return -1

    def entry_for(self, path: Optional[str | Target]) -> Optional[ModelEntry]:
        return self.entry_at(self.row_of(path))

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._entries)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            if 0 <= section < len(self.COLUMNS):
                return self.COLUMNS[section]
        return None

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        entry = self._entries[index.row()]
        if entry.usable:
            return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        return Qt.ItemFlag.NoItemFlags

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self._entries)):
            return None
        entry = self._entries[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            values = (
                entry.name,
                entry.size_label,
                entry.parameters_label,
                entry.quantization,
                entry.architecture,
                f"{self.context_of(entry):,}" if entry.context_length else "",
                memory.label if (memory := self.memory_of(entry)) else "",
                self.status_of(entry),
            )
            return values[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [entry.model_name, entry.path] if entry.model_name else [entry.path]
            if not entry.usable:
                lines.insert(0, entry.problem or "This file cannot be used.")
            elif projector := self.projector_of(entry):
                where = "lies beside it" if projector == entry.projector else "is chosen in its Model settings"
                lines.insert(0, f"Sees pictures: its projector {Path(projector).name} {where}.")
            if column == self.MEMORY_COLUMN and (memory := self.memory_of(entry)):
                lines.insert(0, f"Loaded, it takes about {memory.detail}.")
            if column == self.CONTEXT_COLUMN and entry.context_length:
                lines.insert(
                    0,
                    f"Loaded with a context of {self.context_of(entry):,} tokens (Settings, or its Model "
                    f"settings); it was trained for {entry.context_length:,}.",
                )
            if (
                column == self.STATUS_COLUMN
                and entry.usable
                and not entry.has_chat_template
                and entry.source != "server"
            ):
                lines.insert(
                    0,
                    "It has no chat template: its prompts are written as the chat's header row chooses "
                    "(raw completion until you pick a template).",
                )
            return "\n".join(lines)
        if role == Qt.ItemDataRole.DecorationRole and column == 0 and entry.usable and self.projector_of(entry):
            return eye_icon()
        if role == PATH_ROLE:
            return entry.path
        if role == DETAIL_ROLE:
            if not entry.usable:
                return entry.problem or "This file cannot be used."
            return replace(entry, projector=self.projector_of(entry)).summary
        if role == Qt.ItemDataRole.ForegroundRole and not entry.usable and column == self.STATUS_COLUMN:
            return QColor(style.ERROR)
        return None


@dataclass(frozen=True)
class DraftOption:
    """One row of the draft picker."""

    key: str  # a file path, or NGRAM_KEY
    label: str
    detail: str
    enabled: bool
    tooltip: str
    suggested: bool = True  # False: offered only to a user who picks it (a draft not smaller than the target)


NOT_SMALLER = "Won't be faster: not smaller than the target"


class DraftListModel(QAbstractListModel):
    """The draft picker: compatible drafts (best first), n-gram lookup, then incompatible files, disabled, each
    with the reason as its tooltip, so the list is never unexplained. GUI thread only."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._options: list[DraftOption] = []
        self._checking = False

    def set_checking(self) -> None:
        """The target changed and its drafts are not known yet."""
        self.beginResetModel()
        self._checking = True
        self._options = [
            DraftOption(
                "",
                "Checking drafts…",
                "Reading the files' vocabularies",
                False,
                "Checking which drafts share the target's vocabulary",
            ),
        ]
        self.endResetModel()

    def set_no_target(self) -> None:
        self.beginResetModel()
        self._checking = False
        self._options = [DraftOption("", "Choose a model first", "", False, "Choose a model to see which drafts fit")]
        self.endResetModel()

    def set_choices(self, choices: Sequence[DraftChoice], library: LibraryModel) -> None:
        if [c.path for c in choices] == [SERVER_SPECULATION]:
            # NGRAM_KEY: the window then loads no draft file; the server ignores which drafter was asked for.
            detail = "The server speculates with the draft it was started with"
            self._set([DraftOption(NGRAM_KEY, "Set on the server", detail, True, choices[0].reason)])
            return
        options: list[DraftOption] = []
        for choice in choices:
            if not choice.compatible or choice.not_smaller:
                continue
            entry = library.entry_for(choice.path)
            name = entry.name if entry else choice.path.rsplit("/", 1)[-1]
            detail = entry.summary if entry else ""
            if choice.recommended:
                detail = f"Recommended · {detail}" if detail else "Recommended"
            tooltip = "\n".join(p for p in (choice.reason, choice.path) if p)
            options.append(DraftOption(choice.path, name, detail, True, tooltip))
        ngram_detail = "Drafts by looking up repeated text in the conversation; no second model"
        if not options:
            ngram_detail = "No compatible draft model in the library · " + ngram_detail
        options.append(DraftOption(NGRAM_KEY, "N-gram lookup (no draft model)", ngram_detail, True, ngram_detail))
        for choice in choices:
            if not (choice.compatible and choice.not_smaller):
                continue
            entry = library.entry_for(choice.path)
            name = entry.name if entry else choice.path.rsplit("/", 1)[-1]
            detail = f"{NOT_SMALLER} · {entry.summary}" if entry else NOT_SMALLER
            options.append(
                DraftOption(
                    choice.path,
                    name,
                    detail,
                    True,
                    f"{NOT_SMALLER}: a draft must be much smaller to save time; this one "
                    f"can only slow the replies ({choice.reason}).\n{choice.path}",
                    False,
                )
            )
        for choice in choices:
            if choice.compatible:
                continue
            entry = library.entry_for(choice.path)
            name = entry.name if entry else choice.path.rsplit("/", 1)[-1]
            reason = choice.reason or "Not compatible with this target."
            options.append(
                DraftOption(
                    choice.path,
                    name,
                    f"Incompatible: {reason}",
                    False,
                    f"Cannot draft for this model: {reason}\n{choice.path}",
                )
            )
        self._set(options)

    def _set(self, options: list[DraftOption]) -> None:
        self.beginResetModel()
        self._checking = False
        self._options = options
        self.endResetModel()

    def is_checking(self) -> bool:
        return self._checking

    def options(self) -> list[DraftOption]:
        return list(self._options)

    def row_of(self, key: Optional[str], suggested_only: bool = False) -> int:
        """The row of `key` where it can be chosen (-1: it cannot); `suggested_only` leaves out the rows only a
        user may pick (a draft larger than the target)."""
        for row, option in enumerate(self._options):
            if option.key == key and option.enabled and (option.suggested or not suggested_only):
                return row
        return -1

    def first_enabled_row(self) -> int:
        """The best suggestion: never a draft larger than the target."""
        for row, option in enumerate(self._options):
            if option.enabled and option.suggested:
                return row
        return -1

    def option_at(self, row: int) -> Optional[DraftOption]:
        return self._options[row] if 0 <= row < len(self._options) else None

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._options)

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        if self._options[index.row()].enabled:
            return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        return Qt.ItemFlag.NoItemFlags

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self._options)):
            return None
        option = self._options[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return option.label
        if role == Qt.ItemDataRole.ToolTipRole:
            return option.tooltip
        if role == PATH_ROLE:
            return option.key
        if role == DETAIL_ROLE:
            return option.detail
        return None


class TwoLineDelegate(QStyledItemDelegate):
    """Picker rows as a name over a muted line of facts (or the reason a row is disabled)."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        metrics = option.fontMetrics
        return QSize(max(320, option.rect.width()), metrics.height() * 2 + 14)

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        self.initStyleOption(option, index)
        enabled = bool(index.flags() & Qt.ItemFlag.ItemIsEnabled)
        painter.save()
        if option.state & QStyle.StateFlag.State_Selected and enabled:
            painter.fillRect(option.rect, QColor(style.ACCENT_SOFT))
        elif option.state & QStyle.StateFlag.State_MouseOver and enabled:
            painter.fillRect(option.rect, QColor(style.current().hover))
        rect = option.rect.adjusted(10, 5, -10, -5)
        line = option.fontMetrics.height()
        name_font = QFont(option.font)
        name_font.setWeight(QFont.Weight.Medium)
        painter.setFont(name_font)
        painter.setPen(QColor(style.TEXT if enabled else style.TEXT_DISABLED))
        name = index.data(Qt.ItemDataRole.DisplayRole) or ""
        icon = index.data(Qt.ItemDataRole.DecorationRole)  # the eye of a model that can see, at the line's end
        name_width = rect.width() - (line + 4 if isinstance(icon, QIcon) else 0)
        if isinstance(icon, QIcon):
            icon.paint(painter, QRect(rect.right() - line, rect.top(), line, line))
        painter.drawText(
            QRect(rect.left(), rect.top(), name_width, line),
            Qt.AlignmentFlag.AlignVCenter,
            option.fontMetrics.elidedText(name, Qt.TextElideMode.ElideRight, name_width),
        )
        detail_font = QFont(option.font)
        detail_font.setPointSizeF(max(7.0, option.font.pointSizeF() - 1))
        painter.setFont(detail_font)
        detail = index.data(DETAIL_ROLE) or ""
        painter.setPen(QColor(style.TEXT_MUTED if enabled else style.ERROR))
        painter.drawText(
            QRect(rect.left(), rect.top() + line + 2, rect.width(), line),
            Qt.AlignmentFlag.AlignVCenter,
            option.fontMetrics.elidedText(detail, Qt.TextElideMode.ElideRight, rect.width()),
        )
        painter.restore()
