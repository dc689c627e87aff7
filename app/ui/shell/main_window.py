"""The main window: sidebar of chats, model bar, transcript and composer, wired together.

GUI thread only. The window owns the chat store (SQLite, GUI thread) and the engine process (both models, see
engine_process.py). Its parts each hold one concern: ModelSession (which target and draft, loads, readiness),
LibraryController (scans, folders, the library and download windows), ChatSettingsBinding (the open chat's
settings) and Conversation (one chat's turns and the replies streaming into it); what Send checks and asks with
is sending.py's.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Callable, Optional, cast

from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QMainWindow, QStackedWidget

from app.engine.config import GenerationConfig, KvType, LoadSettings
from app.engine.targets import Target, target_from_key
from app.store import AppSettings, ChatSettings, ChatStore, StoreError, load_settings, save_settings
from app.store import model_defaults
from app.ui.chat import chat_exporter
from app.ui.projects import controller as projects_controller
from app.ui.projects import documents as project_documents
from app.ui.attachments import file_drop
from app.ui.chat import compare_plain
from app.ui.inspector import controller as inspector_controller
from app.ui.models import model_actions, server_models
from app.ui.chat import chat_format_choice, chat_header, speculate_anyway
from app.ui.settings import chat_presets
from app.ui.shell import keyboard, sending, versions
from app.ui.chat.chat_list import ChatListModel, ChatSidebar
from app.ui.chat.chat_list_controller import ChatListController
from app.ui.models.model_thinking import ModelThinking
from app.ui.chat.settings_binding import ChatSettingsBinding
from app.ui.transcript.chat_view import ChatView
from app.ui.chat.composer import Composer
from app.ui.chat.chat_prompt import chat_session
from app.ui.chat.conversation import Conversation
from app.ui.shell import app_settings, appearance
from app.ui.shell.empty_state import EmptyLibraryPage
from app.ui.shell.message_commands import MessageCommands
from app.ui.engine_link import api_server
from app.ui.engine_link.engine_process import EngineProcess
from app.ui.models.library_controller import LibraryController
from app.ui.models.library_model import DraftListModel, LibraryModel
from app.ui.models.model_bar import ModelBar
from app.ui.models.model_session import ModelSession
from app.ui.tools.window_tools import WindowTools
from app.ui.shell.window_geometry import restore_geometry, save_geometry
from app.ui.widgets.layouts import column, padded, sidebar_split
from app.ui.shell.window_widgets import ErrorBanner, LegendRow, StatusFooter, confirm_destructive


class MainWindow(QMainWindow):
    """The SpecChat window. GUI thread only.

    `engine_factory` builds the engine in the engine process (tests may pass a picklable fake); `store` defaults to
    the chat database in the user data folder.
    """

    def __init__(
        self,
        store: Optional[ChatStore] = None,
        settings: Optional[AppSettings] = None,
        engine_factory: Optional[Callable] = None,
        scan_on_start: bool = True,
    ):
        super().__init__()
        self.setWindowTitle("SpecChat")
        self.settings = settings if settings is not None else load_settings()
        self.store = store if store is not None else ChatStore()
        self._closed = False

        self.library = LibraryModel(self)
        self.library.set_model_settings(
            self.settings.context_size, cast(KvType, self.settings.kv_cache_type), self.settings.model_defaults
        )
        self.drafts = DraftListModel(self)
        self.drafts.set_no_target()
        self.chat_list = ChatListModel(self)
        self.chat_lists = ChatListController(self.store, self.chat_list, self)
        self.engine_process = EngineProcess(engine_factory, self)
        self.model_bar = ModelBar(self.library, self.drafts)
        self.chat_view = ChatView()
        self.chat_view.model_chosen = lambda: self.session.target is not None  # what the empty chat's welcome says
        self.conversation = Conversation(self.store, self.engine_process, self.chat_view, self)
        self.model_thinking = ModelThinking(self)  # the chat model's thinking switches, and its markers per file
        self.chat_settings = ChatSettingsBinding(self.store, self.conversation, self, self.model_thinking)
        self.library_ctl = LibraryController(self.library, self.model_bar, lambda: self.settings, self)
        self.session = ModelSession(
            self.library,
            self.drafts,
            self.model_bar,
            self.engine_process,
            self.library_ctl.scanner,
            self._load_settings(),
            self.settings.last_draft,
            self,
        )

        self.session.defaults_for = lambda path: model_defaults.for_model(self.settings.model_defaults, path)
        self.chat_settings.selected_target = self.session.target_key  # a new chat's model, until it is stored
        self._build_ui()
        self._connect()
        self.library.modelReset.connect(self._update_page)  # whoever changes the library: scans, servers' models
        self.plain_compare = compare_plain.attach(self)  # Compare with plain on replies
        self.speculate_anyway = speculate_anyway.attach(self)  # the status line's offer to draft where paused
        self.chat_header = chat_header.attach(self)  # the chat's model; asks before a chat swaps the loaded one
        self.chat_list.model_name = self.chat_header.model_name  # the chat rows' second line names it so
        self.chat_format = chat_format_choice.attach(self)  # how a model without a chat template is prompted
        self.model_actions = model_actions.attach(self)  # the library's Load, Model settings, Forget, Delete
        self.shortcuts_sheet = keyboard.attach(self)  # the shortcuts, Esc, and the sheet that lists them (F1)
        self.versions = versions.attach(self)  # "‹ 2/3 ›": the versions Regenerate and Edit keep
        chat_presets.attach(self)  # the chat settings' presets, shown on the switches when chosen
        # MCP tools: the chosen mcp.json's servers, a reply's calls asked about and run (app.ui.tools)
        self.tools = WindowTools(
            self.conversation, self.chat_settings, self.settings.mcp_file, self.composer.set_busy, self.show_error, self
        )
        restore_geometry(self, self.splitter)
        self._refresh_chat_list()
        last = self.store.get_chat(self.settings.last_chat_id) if self.settings.last_chat_id is not None else None
        self._show_chat(last.id if last else None, last.settings if last else self.chat_settings.current())
        self.composer.setFocus()  # where a person starts typing (else focus, now visible, sat on "New chat")
        if self.settings.load_warning:
            self.show_error(self.settings.load_warning)
        if scan_on_start:
            self.library_ctl.rescan()
        self.server_models = server_models.attach(self)
        self.chat_export = chat_exporter.attach(self)
        self.projects = projects_controller.attach(self)  # projects in the chat list; their instructions in replies
        self.documents = project_documents.attach(self)  # a project's documents indexed, and sent with questions
        self.inspector = inspector_controller.attach(self)
        self.appearance = appearance.attach(self)  # System, Light or Dark, switched live
        self.file_drop = file_drop.attach(self)  # files dropped on the window are attached to the next message
        self.api_server = api_server.attach(self)  # the local API's switch and its word in the footer

    # ----- construction

    def _build_ui(self) -> None:
        self.sidebar = ChatSidebar(self.chat_list)
        # No minimum of its own: the sidebar's layout asks for what its header needs (2x scale on a 1366x768
        # laptop leaves 683 px for everything).
        self.error_banner = ErrorBanner()
        self.chat_view.set_highlighting(self.settings.show_highlighting)
        self.chat_view.set_show_refused(self.settings.show_refused)
        self.chat_view.set_keep_thinking_open(self.settings.keep_thinking_open)
        self.legend_row = LegendRow(self.settings.show_highlighting, self.settings.show_refused)
        self.composer = Composer()
        self.footer = StatusFooter()
        spec = partial(sending.reply_spec, self)
        self.messages = MessageCommands(self.conversation, self.composer, self.store, spec, self.show_error)

        self.empty_page = EmptyLibraryPage()
        self.pages = QStackedWidget()
        self.chat_page = column((self.chat_view, 1), self.legend_row, self.composer, self.footer)
        self.pages.addWidget(self.chat_page)
        self.pages.addWidget(self.empty_page)
        main = column(self.model_bar, padded(self.error_banner, 16, 8, 16, 0), (self.pages, 1))

        self.splitter = sidebar_split(self.sidebar, main, (240, 900))
        self.setCentralWidget(self.splitter)  # its size: restore_geometry, fitted to the screen

    def _connect(self) -> None:
        sidebar = self.sidebar
        sidebar.sig_chat_selected.connect(self.open_chat)
        sidebar.sig_new_chat.connect(self.new_chat)
        sidebar.sig_delete_requested.connect(self.delete_chat)
        sidebar.sig_search_changed.connect(self.chat_lists.search)
        self.chat_lists.sig_listed.connect(self._on_chats_listed)
        self.chat_lists.sig_error.connect(self.show_error)
        sidebar.sig_library_requested.connect(self.library_ctl.open_library)
        sidebar.sig_get_models_requested.connect(self.library_ctl.open_get_models)
        sidebar.sig_settings_requested.connect(self.open_app_settings)
        self.chat_list.sig_rename_requested.connect(self.rename_chat)

        bar = self.model_bar
        bar.sig_target_picked.connect(self.choose_target)
        bar.sig_draft_picked.connect(self.choose_draft)
        bar.sig_speculative_toggled.connect(self.set_speculative)
        bar.sig_chat_settings_requested.connect(self.chat_settings.edit)

        self.composer.sig_send.connect(self._on_composer_send)
        self.composer.sig_stop.connect(self.conversation.stop_reply)
        self.composer.sig_cancel_edit.connect(self.messages.cancel_edit)
        self.legend_row.highlight_switch.toggled.connect(self.set_highlighting)
        self.legend_row.refused_switch.toggled.connect(self.set_show_refused)

        view = self.chat_view
        view.sig_copy_message.connect(self.messages.copy_message)
        view.sig_regenerate.connect(self.messages.regenerate)
        view.sig_edit_message.connect(self.messages.edit_message)
        view.sig_retry.connect(lambda: self.messages.regenerate(None))
        view.sig_continue.connect(self.messages.continue_reply)
        view.sig_show_refused_toggled.connect(self.set_show_refused)

        conversation = self.conversation
        conversation.sig_busy_changed.connect(self.composer.set_busy)
        conversation.sig_live_stats.connect(self.legend_row.set_live_stats)
        conversation.sig_status.connect(self.footer.show_status)
        conversation.sig_context_usage.connect(self.footer.show_context_usage)
        conversation.sig_messages_changed.connect(self._refresh_chat_list)
        conversation.sig_error.connect(self.show_error)
        self.chat_settings.sig_error.connect(self.show_error)

        session = self.session
        session.sig_error.connect(self.show_error)
        session.sig_target_chosen.connect(lambda target: self.update_chat_settings(target_path=target.key))
        session.sig_draft_chosen.connect(self._on_draft_chosen)
        session.sig_selection_changed.connect(self._on_selection_changed)
        session.sig_draft_selected.connect(self.chat_settings.set_draft)
        session.sig_target_loaded.connect(self._on_target_loaded)
        session.sig_context_size.connect(conversation.set_context_size)
        session.sig_model_crashed.connect(self.library_ctl.mark_crashed)
        session.sig_model_changed.connect(self.library_ctl.mark_changed)
        session.sig_draft_let_go.connect(lambda _path: self.library_ctl.rescan())

        library_ctl = self.library_ctl
        library_ctl.sig_scanned.connect(self._on_scanned)
        library_ctl.sig_folders_changed.connect(self._on_folders_changed)
        library_ctl.sig_error.connect(self.show_error)

        empty = self.empty_page
        empty.sig_add_folder.connect(self.add_model_folder)
        empty.sig_get_models.connect(library_ctl.open_get_models)
        empty.sig_open_models_folder.connect(library_ctl.open_models_folder)
        empty.sig_rescan.connect(self.library_ctl.rescan)

    # ----- messages to the user

    def show_error(self, message: str) -> None:
        self.error_banner.show_message(message)

    def confirm(self, title: str, text: str, action: str) -> bool:
        """Ask before something that cannot be undone (tests replace this)."""
        return confirm_destructive(self, title, text, action)

    # ----- app settings

    def _load_settings(self, s: Optional[AppSettings] = None) -> LoadSettings:
        return app_settings.load_settings_of(s or self.settings)

    def session_load_settings(self) -> LoadSettings:
        """What the chosen target loads with: the app's load settings under its own (app.store.model_defaults)."""
        return model_defaults.with_load_defaults(
            self._load_settings(), self.session.defaults_for(self.session.target_key())
        )

    def save_app_settings(self) -> None:
        try:
            save_settings(self.settings)
        except StoreError as exc:
            self.show_error(str(exc))

    def open_app_settings(self) -> None:
        app_settings.open_dialog(self)

    def apply_app_settings(self, new: AppSettings) -> None:
        app_settings.apply(self, new)

    def set_highlighting(self, on: bool) -> None:
        """Show or hide who drafted each kept token in the transcript, and remember the choice."""
        app_settings.view_option(
            self, "show_highlighting", self.chat_view.set_highlighting, self.legend_row.highlight_switch, on
        )

    def set_show_refused(self, on: bool) -> None:
        """Show or hide refused draft proposals in the transcript, and remember the choice."""
        app_settings.view_option(
            self, "show_refused", self.chat_view.set_show_refused, self.legend_row.refused_switch, on
        )

    # ----- library

    def library_ready(self) -> bool:
        """The latest scan of the model folders has been applied (False while one is running)."""
        return self.library_ctl.ready()

    def add_model_folder(self, folder: Optional[str] = None) -> None:
        self.library_ctl.add_folder(folder)

    def _on_folders_changed(self, folders: list) -> None:
        self.apply_app_settings(dataclasses.replace(self.settings, model_folders=folders))

    def _on_scanned(self, found: int) -> None:
        self.empty_page.set_details(found - len(self.library.usable_entries()))
        self._update_page()
        # While the header asks whether to load the chat's model, a rescan keeps the loaded one.
        chat_target = None if self.chat_header.asking() else self.chat_settings.current().target
        last = self.settings.last_target
        wanted = chat_target or self.session.target or (target_from_key(last) if last else None)
        pair = self.library_ctl.take_pending_pair()
        self.session.library_rescanned(*(pair or (wanted, None)))

    def _update_page(self) -> None:
        show_empty = self.library_ctl.has_no_models() and self.conversation.chat_id is None
        self.pages.setCurrentWidget(self.empty_page if show_empty else self.chat_page)

    # ----- models

    def choose_target(self, path: str | Target, remember: bool = True) -> None:
        self.session.choose_target(path, remember)

    def choose_draft(self, key: str) -> None:
        self.session.choose_draft(key)

    def models_ready(self) -> bool:
        return self.session.models_ready()

    def set_speculative(self, on: bool) -> None:
        """The chat's Speculative switch: applies to the next message, without reloading anything."""
        self.model_bar.set_speculative(on)
        self.footer.show_status(None)  # what the last reply's rounds said no longer holds
        self.update_chat_settings(speculative=on)

    def _on_selection_changed(self) -> None:
        if self.conversation.chat_id is None:
            self.conversation.reload()  # an empty chat's welcome says to choose a model until one is chosen

    def _on_draft_chosen(self, key: str) -> None:
        self.settings.last_draft = key
        self.save_app_settings()
        self.chat_settings.set_draft(key)

    def _on_target_loaded(self, target: Target) -> None:
        if self.settings.last_target != target.key:
            self.settings.last_target = target.key
            self.save_app_settings()

    # ----- chats

    def update_chat_settings(self, **changes) -> None:
        """Change the open chat's settings (or the new chat's, before its first message stores it)."""
        self.chat_settings.update(**changes)

    def _refresh_chat_list(self, changed_chat: Optional[int] = None) -> None:
        self.chat_lists.refresh(changed_chat)

    def _on_chats_listed(self) -> None:
        self.sidebar.select_chat(self.conversation.chat_id)
        self._update_title()

    def _update_title(self) -> None:
        chat_id = self.conversation.chat_id
        chat = self.store.get_chat(chat_id) if chat_id is not None else None
        self.setWindowTitle(f"{chat.title} — SpecChat" if chat else "SpecChat")

    def new_chat(self) -> None:
        """An empty chat; it is stored when its first message is sent. It starts speculative whatever the last chat
        had: turning speculation off is a choice for one chat, and inherited it went on unnoticed."""
        self.messages.cancel_edit()
        settings = self.chat_settings.start_new(self.session.target_key(), self.session.draft_key, True)
        self._show_chat(None, settings)
        self.composer.setFocus()

    def open_chat(self, chat_id: int) -> None:
        if chat_id == self.conversation.chat_id:
            return
        chat = self.store.get_chat(chat_id)
        if chat is None:
            self._refresh_chat_list()
            return
        self.messages.cancel_edit()
        self._show_chat(chat_id, chat.settings)

    def _show_chat(self, chat_id: Optional[int], settings: ChatSettings) -> None:
        self.conversation.open_chat(chat_id)
        self.sidebar.select_chat(chat_id)
        self._update_title()
        self._apply_chat_settings(settings)
        self._update_page()

    def _apply_chat_settings(self, settings: ChatSettings) -> None:
        """Show a chat's switch and models; a different target is loaded only once the user says so."""
        self.model_bar.set_speculative(settings.speculative)
        self.footer.show_status(None)
        self.speculate_anyway.show_for(settings)
        self.chat_header.show_chat(settings)
        self.chat_format.refresh()  # after the header: it is not shown while the header asks

    def rename_chat(self, chat_id: int, title: str) -> None:
        try:
            self.chat_list.upsert(self.store.rename_chat(chat_id, title))
        except StoreError as exc:
            self.show_error(str(exc))
        self._update_title()

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
        self.engine_process.forget_chat(chat_session(chat_id))  # its history text and saved KV states, there
        if chat_id == self.conversation.chat_id:
            self.new_chat()
        self.chat_list.remove(chat_id)

    # ----- sending

    def _on_composer_send(self, text: str) -> None:
        # A slot returns None: PySide6 6.12 mis-counts a returned bool and later aborts ("deallocating True").
        self.send_message(text)

    def send_message(self, text: str) -> bool:
        """Store the user's message and ask for a reply (sending.py: in a project's chat with documents once its
        sources are found, off the GUI thread); on any problem the composer keeps the text."""
        return sending.send_message(self, text, on_sent=self._update_page)

    def generation_config(self) -> GenerationConfig:
        """What the next request is sent with (sending.py)."""
        return sending.generation_config(self)

    # ----- lifetime

    def shutdown(self) -> None:
        """Stop the reply, end the library thread and the engine process, and close the database. Safe twice."""
        if self._closed:
            return
        self._closed = True
        save_geometry(self, self.splitter)
        if self.settings.last_chat_id != self.conversation.chat_id:
            self.settings.last_chat_id = self.conversation.chat_id
            self.save_app_settings()
        self.appearance.detach()
        self.conversation.close()
        self.tools.close()
        self.documents.wait()
        self.library_ctl.shutdown()
        self.api_server.close()  # its clients in flight hear why, before the engine goes
        self.engine_process.stop()
        self.chat_lists.close()
        self.store.close()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.shutdown()
        super().closeEvent(event)
