"""The main window: sidebar of chats, model bar, transcript and composer, wired to the two worker threads.

GUI thread only. The window owns the chat store (SQLite, GUI thread), the engine process (both models, see
engine_process.py) and the library thread (folder scans, compatibility checks).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QByteArray, QSettings, Qt, QUrl
from PySide6.QtGui import QAction, QCloseEvent, QDesktopServices, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app import library, paths
from app.engine.config import GenerationConfig, LoadSettings
from app.engine.remote_engine import is_remote_target
from app.store import AppSettings, ChatSettings, ChatStore, StoreError, load_settings, save_settings
from app.store.unusable_models import mark_unusable, unusable_reason
from app.ui import server_models, style
from app.ui.chat_list import ChatListModel, ChatSidebar
from app.ui.chat_view import ChatView
from app.ui.composer import Composer
from app.ui.conversation import Conversation, transcript_message
from app.ui.elided_label import ElidedLabel
from app.ui.empty_state import EmptyLibraryPage
from app.ui.engine_process import EngineProcess, WorkerDeath
from app.ui.library_dialog import LibraryDialog
from app.ui.library_model import NGRAM_KEY, DraftListModel, LibraryModel
from app.ui.library_worker import LibraryThread
from app.ui.model_bar import ModelBar
from app.ui.settings_dialog import AppSettingsDialog, ChatSettingsDialog
from app.ui.toggle_switch import ToggleSwitch


class MainWindow(QMainWindow):
    """The SpecChat window. GUI thread only.

    `engine_factory` builds the engine in the engine process (tests may pass a picklable fake); `store` defaults to
    the chat database in the user data folder.
    """

    def __init__(self, store: Optional[ChatStore] = None, settings: Optional[AppSettings] = None,
                 engine_factory: Optional[Callable] = None, scan_on_start: bool = True):
        super().__init__()
        self.setWindowTitle("SpecChat")
        self.settings = settings if settings is not None else load_settings()
        self.store = store if store is not None else ChatStore()
        self._closed = False
        self._target: Optional[str] = None
        self._remember_target = False  # save the target as the last one once it has loaded
        self._draft_key: str = ""
        self._wanted_draft: Optional[str] = self.settings.last_draft
        self._pending_settings = ChatSettings()  # a new chat's settings, until its first message creates it
        self._edit_message_id: Optional[int] = None
        self._draft_cache: dict[str, list] = {}
        self._scan_id = 0
        self._scanned_id = 0
        self._draft_check_id = 0
        self._load_id = 0
        self._loaded: tuple[Optional[str], Optional[str]] = (None, None)
        self._load_error = ""
        self._library_dialog: Optional[LibraryDialog] = None
        self._get_models_dialog: Optional[QDialog] = None
        self.get_models_panel = None
        self._pending_pair: Optional[tuple[str, str]] = None

        self.library = LibraryModel(self)
        self.drafts = DraftListModel(self)
        self.drafts.set_no_target()
        self.chat_list = ChatListModel(self)
        self.inference = EngineProcess(engine_factory, self)
        self.library_thread = LibraryThread(self)

        self._build_ui()
        self.conversation = Conversation(self.store, self.inference, self.chat_view, self)
        self._connect()
        self._restore_geometry()
        self._refresh_chat_list()
        self.conversation.open_chat(None)
        self._apply_chat_settings(self._pending_settings)
        if self.settings.load_warning:
            self.show_error(self.settings.load_warning)
        if scan_on_start:
            self.rescan_library()
        self.server_models = server_models.attach(self)

    # ----- construction

    def _build_ui(self) -> None:
        self.sidebar = ChatSidebar(self.chat_list)
        self.sidebar.setMinimumWidth(200)

        self.model_bar = ModelBar(self.library, self.drafts)
        self.error_banner = QFrame()
        self.error_banner.setObjectName("ErrorBanner")
        banner_row = QHBoxLayout(self.error_banner)
        banner_row.setContentsMargins(10, 4, 4, 4)
        self.error_label = QLabel()
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        banner_row.addWidget(self.error_label, 1)
        dismiss = QPushButton("Dismiss")
        dismiss.setObjectName("FlatButton")
        dismiss.clicked.connect(self.error_banner.hide)
        banner_row.addWidget(dismiss, 0, Qt.AlignmentFlag.AlignTop)
        self.error_banner.hide()

        self.chat_view = ChatView()
        self.chat_view.set_highlighting(self.settings.show_highlighting)

        legend_row = QHBoxLayout()
        legend_row.setContentsMargins(28, 2, 28, 0)
        self.legend = QLabel(
            f'<span style="background:{style.DRAFT_HIGHLIGHT}">&nbsp;accepted draft token&nbsp;</span>'
            f'&nbsp;&nbsp;<span style="color:{style.TEXT_MUTED}">plain: written by the model itself</span>'
        )
        self.legend.setObjectName("StatusLine")
        self.legend.setToolTip(
            "Speculative decoding: a small draft proposes tokens and the model verifies them in one batch.\n"
            "Green tokens were proposed by the drafter and accepted; the rest the model produced itself.\n"
            "Hover a token to see which it was."
        )
        legend_row.addWidget(self.legend)
        self.highlight_switch = ToggleSwitch()
        self.highlight_switch.setChecked(self.settings.show_highlighting)
        self.highlight_switch.setToolTip("Show or hide the highlighting of accepted draft tokens")
        self.highlight_switch.setFixedSize(30, 16)
        legend_row.addSpacing(10)
        legend_row.addWidget(self.highlight_switch)
        legend_row.addSpacing(4)
        highlight_label = QLabel("Highlight")
        highlight_label.setObjectName("StatusLine")
        legend_row.addWidget(highlight_label)
        legend_row.addStretch(1)
        self.live_stats = QLabel("")
        self.live_stats.setObjectName("LiveStats")
        legend_row.addWidget(self.live_stats)

        self.composer = Composer()

        footer = QHBoxLayout()
        footer.setContentsMargins(28, 0, 28, 8)
        self.status_line = ElidedLabel("")
        self.status_line.setObjectName("StatusLine")
        footer.addWidget(self.status_line, 1)
        footer.addSpacing(16)
        self.context_label = QLabel("")
        self.context_label.setObjectName("StatusLine")
        footer.addWidget(self.context_label)
        footer.addSpacing(6)
        self.context_gauge = QProgressBar()
        self.context_gauge.setObjectName("ContextGauge")
        self.context_gauge.setTextVisible(False)
        self.context_gauge.setFixedWidth(120)
        self.context_gauge.setRange(0, 1)
        self.context_gauge.setValue(0)
        footer.addWidget(self.context_gauge)

        chat_page = QWidget()
        chat_layout = QVBoxLayout(chat_page)
        chat_layout.setContentsMargins(0, 0, 0, 0)
        chat_layout.setSpacing(0)
        chat_layout.addWidget(self.chat_view, 1)
        chat_layout.addLayout(legend_row)
        chat_layout.addWidget(self.composer)
        chat_layout.addLayout(footer)

        self.empty_page = EmptyLibraryPage()
        self.pages = QStackedWidget()
        self.pages.addWidget(chat_page)
        self.pages.addWidget(self.empty_page)

        main = QWidget()
        main_layout = QVBoxLayout(main)
        main_layout.setContentsMargins(0, 0, 0, 0)
        main_layout.setSpacing(0)
        main_layout.addWidget(self.model_bar)
        banner_box = QVBoxLayout()
        banner_box.setContentsMargins(16, 8, 16, 0)
        banner_box.addWidget(self.error_banner)
        main_layout.addLayout(banner_box)
        main_layout.addWidget(self.pages, 1)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(main)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([240, 900])
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setHandleWidth(1)
        self.setCentralWidget(self.splitter)
        self.resize(1180, 780)

        for text, shortcut, slot in (
            ("New chat", QKeySequence.StandardKey.New, self.new_chat),
            ("Search chats", QKeySequence.StandardKey.Find, self.sidebar.search.setFocus),
            ("Settings", QKeySequence("Ctrl+,"), self.open_app_settings),
            ("Toggle highlighting", QKeySequence("Ctrl+Shift+H"), self.highlight_switch.click),
            ("Rename chat", QKeySequence("F2"), self.sidebar.rename_current),
        ):
            action = QAction(text, self)
            action.setShortcut(shortcut)
            action.triggered.connect(slot)
            self.addAction(action)

    def _connect(self) -> None:
        sidebar = self.sidebar
        sidebar.sig_chat_selected.connect(self.open_chat)
        sidebar.sig_new_chat.connect(self.new_chat)
        sidebar.sig_delete_requested.connect(self.delete_chat)
        sidebar.sig_search_changed.connect(self._refresh_chat_list)
        sidebar.sig_library_requested.connect(self.open_library)
        sidebar.sig_get_models_requested.connect(self.open_get_models)
        sidebar.sig_settings_requested.connect(self.open_app_settings)
        self.chat_list.sig_rename_requested.connect(self.rename_chat)

        bar = self.model_bar
        bar.sig_target_chosen.connect(self.choose_target)
        bar.sig_draft_chosen.connect(self.choose_draft)
        bar.sig_speculative_toggled.connect(self.set_speculative)
        bar.sig_chat_settings_requested.connect(self.open_chat_settings)

        self.composer.sig_send.connect(self._on_composer_send)
        self.composer.sig_stop.connect(self.conversation.stop)
        self.composer.sig_cancel_edit.connect(self._cancel_edit)
        self.highlight_switch.toggled.connect(self.set_highlighting)

        view = self.chat_view
        view.sig_copy_message.connect(self._copy_message)
        view.sig_regenerate.connect(self.regenerate)
        view.sig_edit_message.connect(self.edit_message)
        view.sig_retry.connect(self._retry)
        view.sig_continue.connect(self.continue_reply)

        conversation = self.conversation
        conversation.sig_busy_changed.connect(self.composer.set_busy)
        conversation.sig_live_stats.connect(self.live_stats.setText)
        conversation.sig_round_reason.connect(self._show_round_reason)
        conversation.sig_context_usage.connect(self._show_context_usage)
        conversation.sig_messages_changed.connect(self._refresh_chat_list)
        conversation.sig_error.connect(self.show_error)

        engine = self.inference
        engine.sig_models_loaded.connect(self._on_models_loaded)
        engine.sig_load_failed.connect(self._on_load_failed)
        engine.sig_load_progress.connect(self._on_load_progress)
        engine.sig_worker_died.connect(self._on_worker_died)
        library_worker = self.library_thread.worker
        library_worker.sig_scanned.connect(self._on_scanned)
        library_worker.sig_drafts_checked.connect(self._on_drafts_checked)
        library_worker.sig_failed.connect(self._on_library_failed)

        # Worker signals go to bound methods of this window only: PySide runs a lambda or plain function
        # connected to them on the worker's thread, where no widget may be touched.
        empty = self.empty_page
        empty.sig_add_folder.connect(self.add_model_folder)
        empty.sig_get_models.connect(self.open_get_models)
        empty.sig_open_models_folder.connect(self._open_models_folder)
        empty.sig_rescan.connect(self.rescan_library)

    # ----- messages to the user

    def show_error(self, message: str) -> None:
        self.error_label.setText(message)
        self.error_banner.show()

    def clear_error(self) -> None:
        self.error_banner.hide()

    def confirm(self, title: str, text: str, action: str) -> bool:
        """Ask before something that cannot be undone (tests replace this)."""
        box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=self)
        ok = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.exec()
        return box.clickedButton() is ok

    def _on_library_failed(self, _request_id: int, message: str) -> None:
        self.show_error(message)

    def _show_round_reason(self, reason: str) -> None:
        self.status_line.setText(reason[:1].upper() + reason[1:])

    def _show_context_usage(self, used: int, n_ctx: int) -> None:
        if n_ctx <= 0:
            self.context_label.setText("")
            self.context_gauge.setRange(0, 1)
            self.context_gauge.setValue(0)
            return
        self.context_gauge.setRange(0, n_ctx)
        self.context_gauge.setValue(min(used, n_ctx))
        self.context_label.setText(f"Context {used:,} / {n_ctx:,}")
        self.context_gauge.setToolTip(
            f"{used:,} of {n_ctx:,} tokens of context in use. When a conversation outgrows the context, "
            "the oldest messages are left out of the prompt (you are told when that happens)."
        )
        full = used > 0.85 * n_ctx
        if self.context_gauge.property("full") != full:
            self.context_gauge.setProperty("full", full)
            self.context_gauge.style().unpolish(self.context_gauge)
            self.context_gauge.style().polish(self.context_gauge)

    # ----- app settings

    def _load_settings(self, s: Optional[AppSettings] = None) -> LoadSettings:
        s = s or self.settings
        return LoadSettings(n_ctx=s.context_size, n_threads=s.threads, target_gpu_layers=s.target_gpu_layers,
                            draft_gpu_layers=s.draft_gpu_layers, rpc_servers=tuple(s.rpc_workers))

    def save_app_settings(self) -> None:
        try:
            save_settings(self.settings)
        except StoreError as exc:
            self.show_error(str(exc))

    def open_app_settings(self) -> None:
        dialog = AppSettingsDialog(self.settings, self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            self.apply_app_settings(dialog.settings())

    def apply_app_settings(self, new: AppSettings) -> None:
        old = self.settings
        self.settings = new
        self.save_app_settings()
        if (old.model_folders, old.scan_hf_cache) != (new.model_folders, new.scan_hf_cache):
            self.rescan_library()
        if old.servers != new.servers:
            self.server_models.refresh(new.servers)
        if self._load_settings() != self._load_settings(old):
            self._request_load()

    def set_highlighting(self, on: bool) -> None:
        self.chat_view.set_highlighting(on)
        if self.highlight_switch.isChecked() != on:
            self.highlight_switch.setChecked(on)
        if self.settings.show_highlighting != on:
            self.settings.show_highlighting = on
            self.save_app_settings()

    # ----- library

    def library_folder_list(self) -> list[library.LibraryFolder]:
        return library.library_folders(self.settings.model_folders, self.settings.scan_hf_cache)

    def rescan_library(self) -> None:
        self._scan_id += 1
        if not self.library.rowCount():
            self.model_bar.target_combo.setPlaceholderText("Scanning for models…")
        self.library_thread.request_scan(self._scan_id, self.library_folder_list())

    def library_ready(self) -> bool:
        """The latest scan of the model folders has been applied (False while one is running)."""
        return self._scanned_id == self._scan_id

    def _on_scanned(self, request_id: int, entries: list) -> None:
        if request_id != self._scan_id:
            return
        self._scanned_id = request_id
        self._draft_cache.clear()
        self.library.set_entries(_with_crash_verdicts(entries))
        usable = self.library.usable_entries()
        self.model_bar.target_combo.setPlaceholderText("Choose a model" if usable else "No models found")
        self.empty_page.set_details(len(entries) - len(usable))
        self._update_page()
        wanted = self._chat_settings().target_path or self._target or self.settings.last_target
        if self._pending_pair is not None:
            wanted, self._wanted_draft = self._pending_pair
            self._pending_pair = None
        entry = self.library.entry_for(wanted)
        if entry is not None and entry.usable:
            self.choose_target(entry.path, remember=False)
        elif self._target is not None:
            self._target = None
            self.model_bar.select_target(None)
            self.drafts.set_no_target()
        else:
            self.model_bar.select_target(None)

    def _update_page(self) -> None:
        no_models = self._scanned_id > 0 and not self.library.usable_entries()
        show_empty = no_models and self.conversation.chat_id is None
        self.pages.setCurrentWidget(self.empty_page if show_empty else self.pages.widget(0))

    def add_model_folder(self, folder: Optional[str] = None) -> None:
        if folder is None:
            folder = QFileDialog.getExistingDirectory(self, "Add a folder of GGUF models")
            if not folder:
                return
        if folder in self.settings.model_folders:
            self.rescan_library()
            return
        self.apply_app_settings(dataclasses.replace(self.settings,
                                                    model_folders=[*self.settings.model_folders, folder]))

    def _open_models_folder(self) -> None:
        folder = paths.models_dir()
        folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    def open_library(self) -> None:
        folders = "Scanned folders: " + "; ".join(str(f.path) for f in self.library_folder_list())
        if self._library_dialog is None:
            self._library_dialog = LibraryDialog(self.library, folders, self)
            self._library_dialog.sig_rescan.connect(self.rescan_library)
            self._library_dialog.sig_add_folder.connect(self.add_model_folder)
        self._library_dialog.set_folders_text(folders)
        self._library_dialog.show()
        self._library_dialog.raise_()

    def open_get_models(self) -> None:
        """The download panel in its own window; it stays alive when closed, so downloads keep going."""
        if self._get_models_dialog is None:
            panel_class = _get_models_panel_class()
            if panel_class is None:
                self.show_error(
                    "Downloading is not available in this build. Put .gguf files into "
                    f"{paths.models_dir()} or add a folder that holds them."
                )
                return
            dialog = QDialog(self)
            dialog.setWindowTitle("Get models")
            dialog.resize(820, 560)
            layout = QVBoxLayout(dialog)
            self.get_models_panel = panel_class(dialog)
            layout.addWidget(self.get_models_panel)
            self.get_models_panel.sig_models_downloaded.connect(self.rescan_library)
            self.get_models_panel.sig_pair_downloaded.connect(self._on_pair_downloaded)
            self._get_models_dialog = dialog
        self._get_models_dialog.show()
        self._get_models_dialog.raise_()

    def _on_pair_downloaded(self, target: str, draft: str) -> None:
        """A recommended pair landed: select both once the library has been scanned again."""
        self._pending_pair = (target, draft)
        self.rescan_library()

    # ----- models

    def _chat_settings(self) -> ChatSettings:
        chat_id = self.conversation.chat_id if hasattr(self, "conversation") else None
        if chat_id is not None:
            chat = self.store.get_chat(chat_id)
            if chat is not None:
                return chat.settings
        return self._pending_settings

    def update_chat_settings(self, **changes) -> None:
        """Change the open chat's settings (or the new chat's, before its first message stores it)."""
        settings = dataclasses.replace(self._chat_settings(), **changes)
        chat_id = self.conversation.chat_id
        if chat_id is None:
            self._pending_settings = settings
            return
        try:
            self.store.update_settings(chat_id, settings)
        except StoreError as exc:
            self.show_error(str(exc))

    def choose_target(self, path: str, remember: bool = True) -> None:
        """Use `path` as the target: filter the drafts for it (cached when seen before) and load it."""
        entry = self.library.entry_for(path)
        if entry is None or not entry.usable:
            self.show_error(entry.problem if entry else f"{path} is not in the model library.")
            return
        self._target = entry.path
        self._remember_target = remember
        self.model_bar.select_target(entry.path)
        if remember:
            self.update_chat_settings(target_path=entry.path)
        cached = self._draft_cache.get(entry.path)
        if cached is not None:
            self._show_drafts(entry.path, cached)
            return
        self._draft_check_id += 1
        self.drafts.set_checking()
        self.model_bar.refresh_enabled()
        self.model_bar.set_load_state("Checking drafts…")
        self.library_thread.request_draft_check(self._draft_check_id, entry.path, self.library.entries())

    def _on_drafts_checked(self, request_id: int, target: str, choices: list) -> None:
        self._draft_cache[target] = choices
        if request_id == self._draft_check_id and target == self._target:
            self._show_drafts(target, choices)

    def _show_drafts(self, target: str, choices: list) -> None:
        self.drafts.set_choices(choices, self.library)
        key = self.model_bar.select_draft(self._wanted_draft)
        self.model_bar.refresh_enabled()
        self._draft_key = key
        self._request_load()

    def choose_draft(self, key: str) -> None:
        """Use a draft file, or NGRAM_KEY for n-gram lookup; takes effect from the next message."""
        if self.drafts.row_of(key) < 0:
            return
        self.model_bar.select_draft(key)
        self._draft_key = key
        self._wanted_draft = key
        self.settings.last_draft = key
        self.save_app_settings()
        self.update_chat_settings(draft_path=key)
        self._request_load()

    def set_speculative(self, on: bool) -> None:
        """The chat's Speculative switch: applies to the next message, without reloading anything."""
        self.model_bar.set_speculative(on)
        self.update_chat_settings(speculative=on)

    def _draft_path(self) -> Optional[str]:
        return None if self._draft_key in ("", NGRAM_KEY) else self._draft_key

    def _request_load(self) -> None:
        if self._target is None:
            return
        wanted = (self._target, self._draft_path())
        self._load_id += 1
        self._load_error = ""
        name = self.library.entry_for(self._target).name if self.library.entry_for(self._target) else ""
        self.model_bar.set_load_state("Loading…", f"Loading {name}")
        self.inference.request_load(self._load_id, wanted[0], wanted[1], self._load_settings())

    def _on_models_loaded(self, request_id: int, target, draft, n_ctx: int, note: str = "") -> None:
        if request_id != self._load_id:
            return
        self._loaded = (str(target) if target else None, str(draft) if draft else None)
        self.conversation.set_context_size(n_ctx)
        self.model_bar.set_load_state("Ready", "The models are loaded." + (f" {note}" if note else ""), "ready")
        # Remembered only once loaded: a file that crashes the engine must not be loaded again at every start.
        if self._remember_target and target and self.settings.last_target != str(target):
            self.settings.last_target = str(target)
            self.save_app_settings()
        self._remember_target = False

    def _on_load_progress(self, request_id: int, message: str) -> None:
        if request_id != self._load_id:
            return
        self.model_bar.set_load_state(
            message,
            "Timing this machine's forward passes, once per model and settings (several seconds on a CPU): "
            "the speculation controller decides from them whether drafting can pay here.",
        )

    def _on_load_failed(self, request_id: int, message: str) -> None:
        if request_id != self._load_id:
            return
        self._load_error = message
        self.model_bar.set_load_state("Not loaded", message, "failed")
        self.show_error(message)

    def _on_worker_died(self, death: WorkerDeath) -> None:
        """The engine process crashed or hung and a fresh one runs: say so, and never load a guilty file again."""
        self._loaded = (None, None)
        reason = death.detail or death.message
        if death.loading_path:
            mark_unusable(death.loading_path, f"llama.cpp crashed loading it ({reason})")
            name = Path(death.loading_path).name
            message = (f"{name} crashed the engine while loading, so SpecChat will not load it again. "
                       f"{death.message}" + (f" llama.cpp said: {death.detail}" if death.detail else ""))
            self._load_error = message
            self.model_bar.set_load_state("Not loaded", message, "failed")
            self.show_error(message)
            self.library.set_entries(_with_crash_verdicts(self.library.entries()))
            self._draft_cache.clear()
            if death.loading_path == self._target:
                self._target = None
                self.model_bar.select_target(None)
                self.drafts.set_no_target()
            elif self._target is not None:
                if death.loading_path == self._draft_key:
                    self._draft_key = NGRAM_KEY
                self.choose_target(self._target, remember=False)
            return
        sentence = death.message + (f" llama.cpp said: {death.detail}" if death.detail else "")
        self.show_error(sentence)
        if death.load_request_id is not None:
            # It died measuring or setting up, not reading a file: loading it again would likely crash again.
            self._load_error = sentence
            self.model_bar.set_load_state("Not loaded", sentence, "failed")
            return
        self._request_load()  # the models were fine; the fresh engine needs them again

    def models_ready(self) -> bool:
        return self._target is not None and self._loaded == (self._target, self._draft_path())

    def _send_blocker(self) -> str:
        """Why a message cannot be sent now ("" when it can); the composer keeps its text either way."""
        if self._target is None:
            if self._scanned_id > 0 and not self.library.usable_entries():
                return "There is no model to chat with yet. Add a folder of GGUF files or download a model."
            return "Choose a model in the bar above first."
        if not is_remote_target(self._target) and not os.path.exists(self._target):
            return f"The model file {self._target} is missing. Scan again or choose another model."
        if self._load_error:
            return f"The model could not be loaded: {self._load_error}"
        return ""

    def generation_config(self) -> GenerationConfig:
        s = self._chat_settings()
        speculative = self.model_bar.speculative()
        return GenerationConfig(
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            top_k=s.top_k,
            top_p=s.top_p,
            seed=s.seed,
            speculative=speculative,
            drafter="ngram" if self._draft_key == NGRAM_KEY else "auto",
            draft_max=s.draft_max,
        )

    def _names(self) -> tuple[str, Optional[str]]:
        entry = self.library.entry_for(self._target)
        target_name = entry.name if entry else Path(self._target or "").stem
        if not self.model_bar.speculative():
            return target_name, None
        if is_remote_target(self._target):
            return target_name, "the server's speculation"
        if self._draft_key == NGRAM_KEY or not self._draft_key:
            return target_name, "n-gram drafts"
        draft = self.library.entry_for(self._draft_key)
        return target_name, draft.name if draft else Path(self._draft_key).stem

    # ----- chats

    def _refresh_chat_list(self) -> None:
        try:
            chats = self.store.list_chats(self.sidebar.search.text())
        except StoreError as exc:
            self.show_error(str(exc))
            return
        self.chat_list.set_chats(chats)
        chat_id = self.conversation.chat_id if hasattr(self, "conversation") else None
        self.sidebar.select_chat(chat_id)
        self._update_title()

    def _update_title(self) -> None:
        chat_id = self.conversation.chat_id if hasattr(self, "conversation") else None
        chat = self.store.get_chat(chat_id) if chat_id is not None else None
        self.setWindowTitle(f"{chat.title} — SpecChat" if chat else "SpecChat")

    def new_chat(self) -> None:
        """An empty chat; it is stored when its first message is sent."""
        self._cancel_edit()
        self._pending_settings = dataclasses.replace(
            ChatSettings(), target_path=self._target, draft_path=self._draft_key or None,
            speculative=self.model_bar.speculative() if self.conversation.chat_id is not None else True,
        )
        self.conversation.open_chat(None)
        self.sidebar.select_chat(None)
        self._update_title()
        self._apply_chat_settings(self._pending_settings)
        self._update_page()
        self.composer.edit.setFocus()

    def open_chat(self, chat_id: int) -> None:
        if chat_id == self.conversation.chat_id:
            return
        chat = self.store.get_chat(chat_id)
        if chat is None:
            self._refresh_chat_list()
            return
        self._cancel_edit()
        self.conversation.open_chat(chat_id)
        self.sidebar.select_chat(chat_id)
        self._update_title()
        self._apply_chat_settings(chat.settings)
        self._update_page()

    def _apply_chat_settings(self, settings: ChatSettings) -> None:
        """Show a chat's switch and models; a different target or draft is loaded."""
        self.model_bar.set_speculative(settings.speculative)
        self.status_line.setText("")
        if settings.draft_path:
            self._wanted_draft = settings.draft_path
        entry = self.library.entry_for(settings.target_path)
        if entry is not None and entry.usable and entry.path != self._target:
            self.choose_target(entry.path, remember=False)
        elif self._target and settings.draft_path and settings.draft_path != self._draft_key:
            if self.drafts.row_of(settings.draft_path) >= 0:
                self.model_bar.select_draft(settings.draft_path)
                self._draft_key = settings.draft_path
                self._request_load()

    def rename_chat(self, chat_id: int, title: str) -> None:
        try:
            self.store.rename_chat(chat_id, title)
        except StoreError as exc:
            self.show_error(str(exc))
        self._refresh_chat_list()

    def delete_chat(self, chat_id: int) -> None:
        chat = self.store.get_chat(chat_id)
        if chat is None:
            return
        if not self.confirm("Delete chat", f"Delete “{chat.title}” and all its messages?", "Delete"):
            return
        if chat_id == self.conversation.chat_id:
            self.conversation.stop()
        try:
            self.store.delete_chat(chat_id)
        except StoreError as exc:
            self.show_error(str(exc))
            return
        if chat_id == self.conversation.chat_id:
            self.new_chat()
        self._refresh_chat_list()

    def open_chat_settings(self) -> None:
        dialog = ChatSettingsDialog(self._chat_settings(), self)
        if dialog.exec() == QDialog.DialogCode.Accepted:
            new = dialog.settings()
            self.update_chat_settings(**{f.name: getattr(new, f.name) for f in dataclasses.fields(new)})

    # ----- sending

    def _on_composer_send(self, text: str) -> None:
        # A slot must return None: PySide6 6.12 mis-counts references to a bool a slot returns, and the
        # interpreter later aborts ("deallocating True").
        self.send_message(text)

    def send_message(self, text: str) -> bool:
        """Store the user's message and ask for a reply; on any problem the composer keeps the text."""
        if self.conversation.is_busy() or not text.strip():
            return False
        problem = self._send_blocker()
        if problem:
            self.show_error(problem)
            return False
        self.clear_error()
        edited = self._edit_message_id is not None
        first_message = self.conversation.chat_id is None
        try:
            if self.conversation.chat_id is None:
                settings = dataclasses.replace(
                    self._pending_settings, target_path=self._target, draft_path=self._draft_key or None,
                    speculative=self.model_bar.speculative(),
                )
                chat = self.store.create_chat(settings=settings)
                self.conversation.chat_id = chat.id
            chat_id = self.conversation.chat_id
            if self._edit_message_id is not None:
                self.store.delete_messages_from(chat_id, self._edit_message_id)
                self._edit_message_id = None
            message = self.store.add_message(chat_id, "user", text)
        except StoreError as exc:
            self.show_error(f"The message could not be saved, so it was not sent: {exc}")
            return False
        self.composer.clear_after_send()
        if edited or first_message:
            self.conversation.reload()
        else:
            self.chat_view.add_message(transcript_message(message))  # append; no re-render of the chat
            self.chat_view.scroll_to_end()
        self._refresh_chat_list()
        self._update_page()
        self._start_reply()
        return True

    def _start_reply(self) -> None:
        target_name, draft_name = self._names()
        self.conversation.start_reply(self.generation_config(), self._chat_settings().system_prompt,
                                      target_name, draft_name)

    def _request_args(self) -> Optional[tuple]:
        """(config, system prompt, target name, draft name) for a new request, or None after saying why not."""
        problem = self._send_blocker()
        if problem:
            self.show_error(problem)
            return None
        self.clear_error()
        return (self.generation_config(), self._chat_settings().system_prompt, *self._names())

    def regenerate(self, message_id: Optional[int]) -> None:
        args = self._request_args()
        if args is None:
            return
        try:
            self.conversation.regenerate(*args, message_id)
        except StoreError as exc:
            self.show_error(str(exc))

    def _retry(self) -> None:
        self.regenerate(None)

    def continue_reply(self, message_id: int) -> None:
        """Carry on writing an unfinished reply (stopped, interrupted or cut short)."""
        args = self._request_args()
        if args is not None:
            self.conversation.continue_reply(*args, message_id)

    def edit_message(self, message_id: int) -> None:
        """Put a sent message back into the composer; sending replaces it and everything after it."""
        message = self.store.get_message(message_id)
        if message is None or message.role != "user":
            return
        self.conversation.stop()
        self._edit_message_id = message_id
        self.composer.set_text(message.content)
        self.composer.set_editing(True)

    def _cancel_edit(self) -> None:
        if self._edit_message_id is not None:
            self._edit_message_id = None
            self.composer.set_editing(False)

    def _copy_message(self, message_id: int) -> None:
        message = self.store.get_message(message_id)
        if message is not None:
            QApplication.clipboard().setText(message.content)

    # ----- lifetime

    def _window_settings(self) -> QSettings:
        # An ini file under the config folder, so tests (SPECCHAT_HOME) never touch the user's real settings.
        return QSettings(str(paths.user_config_dir() / "window.ini"), QSettings.Format.IniFormat)

    def _restore_geometry(self) -> None:
        settings = self._window_settings()
        geometry = settings.value("geometry")
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            self.restoreGeometry(geometry)
        splitter = settings.value("splitter")
        if isinstance(splitter, QByteArray) and not splitter.isEmpty():
            self.splitter.restoreState(splitter)

    def shutdown(self) -> None:
        """Stop the reply, end both threads and close the database. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            settings = self._window_settings()
            settings.setValue("geometry", self.saveGeometry())
            settings.setValue("splitter", self.splitter.saveState())
            settings.sync()
        except Exception:
            pass
        self.conversation.stop()
        if self.get_models_panel is not None:
            self.get_models_panel.shutdown()
        self.library_thread.stop()
        self.inference.stop()
        self.store.close()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)


def _with_crash_verdicts(entries: list) -> list:
    """Library entries, with files that crashed the engine before marked unusable with the reason."""
    marked = []
    for entry in entries:
        reason = unusable_reason(entry.path) if entry.usable else None
        marked.append(dataclasses.replace(entry, usable=False, problem=reason) if reason else entry)
    return marked


def _get_models_panel_class():
    """The download panel, or None in a build without the hub client (huggingface_hub is optional there)."""
    try:
        from app.ui.get_models_panel import GetModelsPanel
    except ImportError:
        return None
    return GetModelsPanel
