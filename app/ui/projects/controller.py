"""Projects in the window: the chat list's project entries (new, rename, settings, delete, export, import, a new
chat in a project, moving chats in and out), a new chat's project until its first message stores it, and the
project's instructions in each reply's system prompt. GUI thread only.

The window creates it with `attach(window)`. It uses the window's public parts only: the store, the chat list, its
controller and the sidebar, the conversation, the chat settings, the model session and library, the engine process,
and `new_chat` (as other features attached this way do, app.ui.chat.chat_exporter).
"""

from __future__ import annotations

import functools
import time
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QModelIndex, QObject, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMenu, QPushButton

from app.engine.targets import target_from_key
from app.replies import project_file
from app.store import StoreError, presets
from app.store.projects import Project, with_instructions
from app.ui.chat.chat_exporter import file_name_for
from app.ui.chat.chat_prompt import chat_session
from app.ui.chat.chat_tree import CHAT_ID_ROLE, PROJECT_ID_ROLE
from app.ui.projects.dialogs import ChatsChoice, ProjectSettingsDialog, ask_delete
from app.ui.widgets.dialog_folders import remember_folder, start_folder

FILE_FILTER = "SpecChat project (*.specchat-project.json);;JSON (*.json)"


class ProjectsController(QObject):
    """Owns the project actions of one window. GUI thread only."""

    sig_error = Signal(str)
    """A sentence saying what could not be done."""
    sig_changed = Signal()
    """Projects or their chats changed (the chat list is filled again)."""
    sig_exported = Signal(str)
    """(path): a project was written there."""
    sig_documents_changed = Signal(int, object)
    """(project_id, tuple of paths): the project's documents changed (none: it was deleted); the document index
    reads them from here."""

    def __init__(self, window):
        super().__init__(window)
        self._window = window
        self._store = window.store
        # The project a new chat goes into once its first message stores it; `since`: when it was asked, so a
        # chat created later is that chat (an older one opened meanwhile is never moved).
        self._pending: Optional[int] = None
        self._pending_since = 0.0

    # ----- questions (tests replace these)

    def ask_name(self, title: str, current: str = "") -> Optional[str]:
        name, ok = QInputDialog.getText(self._window, title, "Project name:", text=current)
        return name if ok else None

    def ask_delete(self, project: Project, chats: int) -> Optional[ChatsChoice]:
        return ask_delete(self._window, project, chats)

    def ask_settings(self, dialog: ProjectSettingsDialog) -> bool:
        return dialog.exec() == ProjectSettingsDialog.DialogCode.Accepted

    def ask_export_path(self, suggested: str) -> str:
        return QFileDialog.getSaveFileName(self._window, "Export project", suggested, FILE_FILTER)[0]

    def ask_import_path(self) -> str:
        return QFileDialog.getOpenFileName(self._window, "Import project", start_folder("export"), FILE_FILTER)[0]

    # ----- projects

    def new_project(self) -> Optional[Project]:
        name = self.ask_name("New project")
        if name is None:
            return None
        project = self._try(lambda: self._store.projects.create_project(name))
        self._changed()
        return project

    def rename_project(self, project_id: int, name: Optional[str] = None) -> None:
        project = self._store.projects.get_project(project_id)
        if project is None:
            return
        name = name if name is not None else self.ask_name("Rename project", project.name)
        if name is not None:
            self._try(lambda: self._store.projects.rename_project(project_id, name))
            self._changed()

    def edit_settings(self, project_id: int) -> None:
        project = self._store.projects.get_project(project_id)
        if project is None:
            return
        window = self._window
        models = [(entry.path, entry.name) for entry in window.library.usable_entries()]
        names = [preset.name for preset in window.chat_settings.presets_source()]
        dialog = ProjectSettingsDialog(project, models, names, window)
        if self.ask_settings(dialog):
            changed = self._try(lambda: self._store.projects.update_project(dialog.project()))
            self._changed()
            if changed is not None and changed.documents != project.documents:
                self.sig_documents_changed.emit(project_id, changed.documents)

    def delete_project(self, project_id: int) -> None:
        """Ask whether its chats are kept (moved out) or deleted with it, then delete it."""
        project = self._store.projects.get_project(project_id)
        if project is None:
            return
        chats = self._store.projects.chat_ids(project_id)
        choice = self.ask_delete(project, len(chats))
        if choice is None:
            return
        conversation = self._window.conversation
        open_gone = choice == "delete" and conversation.chat_id in chats
        if open_gone:
            conversation.stop()
        gone = self._try(lambda: self._store.projects.delete_project(project_id, delete_chats=choice == "delete"))
        for chat_id in gone or []:
            self._window.engine_process.forget_chat(chat_session(chat_id))  # its history and saved KV states there
        if self._pending == project_id:
            self._pending = None
        if project.documents:
            self.sig_documents_changed.emit(project_id, ())
        if open_gone and gone:
            self._window.new_chat()
        self._window.sidebar.set_scope(None)
        self._changed()

    def move_chat(self, chat_id: int, project_id: Optional[int]) -> None:
        """Put a chat in a project, or (None) out of every project."""
        self._try(lambda: self._store.projects.move_chat(chat_id, project_id))
        self._changed()

    # ----- a new chat in a project

    def new_chat_in(self, project_id: int) -> None:
        """A new chat that goes into the project when its first message is sent, on the project's model, draft and
        preset (where it names them); its replies read the project's instructions."""
        project = self._store.projects.get_project(project_id)
        if project is None:
            return
        window = self._window
        window.new_chat()
        self._pending, self._pending_since = project.id, time.time()
        chosen = presets.find(window.chat_settings.presets_source(), project.preset)
        if chosen is not None:
            window.chat_settings.apply_preset(chosen)
        if project.target_path or project.draft_path:
            target = target_from_key(project.target_path) if project.target_path else window.session.target
            window.session.show_chat_models(target, project.draft_path or "")
            if project.draft_path and target == window.session.target:
                window.session.choose_draft(project.draft_path)  # the target already loaded: the draft at once

    def pending_project(self) -> Optional[int]:
        """The project the new chat (not yet stored) goes into, or None."""
        return self._pending if self._window.conversation.chat_id is None else None

    def _on_new_chat_started(self) -> None:
        self._pending = None  # a plain new chat: in no project

    def _on_messages_changed(self, chat_id: int) -> None:
        if self._pending is None or chat_id != self._window.conversation.chat_id:
            return
        chat = self._store.get_chat(chat_id)
        project_id, self._pending = self._pending, None
        if chat is not None and chat.project_id is None and chat.created_at >= self._pending_since:
            self.move_chat(chat_id, project_id)

    def system_prompt(self, chat_prompt: str) -> str:
        """The open chat's system prompt with its project's instructions (the new chat's project's, before it is
        stored)."""
        chat_id = self._window.conversation.chat_id
        project_id = self.pending_project() if chat_id is None else None
        try:
            project = (
                self._store.projects.get_project(project_id)
                if project_id is not None
                else self._store.projects.project_of(chat_id)
                if chat_id is not None
                else None
            )
        except StoreError as exc:
            self.sig_error.emit(str(exc))
            project = None
        return with_instructions(chat_prompt, project.instructions) if project is not None else chat_prompt

    # ----- one file

    def export_project(self, project_id: int, path: Optional[str] = None) -> Optional[Path]:
        project = self._store.projects.get_project(project_id)
        if project is None:
            return None
        stem = Path(file_name_for(project.name, "json")).stem  # what file systems refuse becomes "-"
        suggested = str(Path(start_folder("export")) / (stem + project_file.SUFFIX))
        path = path if path is not None else self.ask_export_path(suggested)
        if not path:
            return None
        try:
            written = project_file.write_project(self._store, project_id, path)
        except StoreError as exc:
            self.sig_error.emit(f"The project could not be exported: {exc}")
            return None
        except OSError as exc:
            self.sig_error.emit(f"The project could not be exported to {path}: {exc.strerror or exc}.")
            return None
        remember_folder("export", str(written))
        self.sig_exported.emit(str(written))
        return written

    def import_project(self, path: Optional[str] = None) -> Optional[Project]:
        path = path if path is not None else self.ask_import_path()
        if not path:
            return None
        try:
            project = project_file.import_project(self._store, path)
        except (project_file.ProjectFileError, StoreError) as exc:
            self.sig_error.emit(str(exc))
            return None
        remember_folder("export", path)
        self._changed()
        if project.documents:
            self.sig_documents_changed.emit(project.id, project.documents)
        return project

    # ----- the chat list's menu

    def add_menu_entries(self, menu: QMenu, index: QModelIndex) -> None:
        project_id = index.data(PROJECT_ID_ROLE) if index.isValid() else None
        chat_id = index.data(CHAT_ID_ROLE) if index.isValid() else None
        if project_id is not None:
            pid = int(project_id)
            menu.addAction("New chat in project", lambda: self.new_chat_in(pid))
            menu.addAction("Rename", lambda: self._window.sidebar.list_view.edit(index))
            menu.addAction("Project settings…", lambda: self.edit_settings(pid))
            menu.addAction("Export project…", lambda: self.export_project(pid))
            menu.addSeparator()
            menu.addAction("Delete project…", lambda: self.delete_project(pid))
        elif chat_id is not None:
            move = menu.addMenu("Move to project")
            current = self._window.chat_list.project_of_index(index)
            for project in self._store.projects.list_projects():
                action = move.addAction(project.name, functools.partial(self.move_chat, int(chat_id), project.id))
                action.setEnabled(project.id != current)
            if current is not None:
                move.addSeparator()
                move.addAction("Out of the project", lambda: self.move_chat(int(chat_id), None))
            move.addSeparator()
            move.addAction("New project…", lambda: self._move_to_new(int(chat_id)))
        else:
            menu.addAction("New project…", self.new_project)
            menu.addAction("Import project…", lambda: self.import_project())

    def _move_to_new(self, chat_id: int) -> None:
        project = self.new_project()
        if project is not None:
            self.move_chat(chat_id, project.id)

    # ----- helpers

    def _try(self, action):
        try:
            return action()
        except StoreError as exc:
            self.sig_error.emit(str(exc))
            return None

    def _changed(self) -> None:
        self._window.chat_lists.refresh()
        sidebar = self._window.sidebar
        sidebar.set_scope(sidebar.scope_project)  # the search box names the project as it is now called
        self.sig_changed.emit()


def attach(window) -> ProjectsController:
    """Give `window` (MainWindow) its projects: the sidebar's New project button and menu entries, dragging chats
    in and out, renaming a header in place, and the project's instructions in each reply's system prompt."""
    projects = ProjectsController(window)
    sidebar = window.sidebar
    button = QPushButton("New project")
    button.setObjectName("FlatButton")
    button.setToolTip("A folder of chats with their own instructions, model and documents")
    button.clicked.connect(projects.new_project)
    sidebar.project_button = button
    # Under the chats, first of the sidebar's links: the header keeps the width a narrow window needs.
    sidebar.footer.insertWidget(0, button, 0, Qt.AlignmentFlag.AlignLeft)
    sidebar.menu_hooks.append(projects.add_menu_entries)
    sidebar.sig_scope_changed.connect(window.chat_lists.set_scope)
    sidebar.sig_project_delete_requested.connect(projects.delete_project)
    window.chat_list.sig_move_requested.connect(projects.move_chat, Qt.ConnectionType.QueuedConnection)
    # Queued: the name comes from the list's editor as it commits, and the list is filled again after it closes.
    window.chat_list.sig_project_rename_requested.connect(projects.rename_project, Qt.ConnectionType.QueuedConnection)
    window.chat_settings.sig_new_chat_started.connect(projects._on_new_chat_started)
    window.conversation.sig_messages_changed.connect(projects._on_messages_changed)
    projects.sig_error.connect(window.show_error)
    return projects
