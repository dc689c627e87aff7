"""Keeps the sidebar's chat list in step with the store: one row per change, and searches off the GUI thread.

The list shows the projects (app.store.projects) with their chats; a search shows the projects that hold a chat it
found, and when the search is scoped to a project, that project's chats alone.

A search may read a large share of a year's messages (a common word), so it runs on a thread of its own with its
own connection to the database (app.ui.widgets.background: one thread, kept); only the newest search's result is
shown. GUI thread only, except `_find` and `_close_searcher`, which run on the search thread.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QObject, Signal

from app.store import ChatStore, StoreError
from app.ui.chat.chat_list import ChatListModel
from app.ui.widgets.background import Background


class ChatListController(QObject):
    """Owns how the chat list is filled. GUI thread only (see the module docstring)."""

    sig_listed = Signal()
    """The list changed: the window selects the open chat again."""
    sig_error = Signal(str)
    """Reading the chats failed; the message is for a person."""

    def __init__(self, store: ChatStore, model: ChatListModel, parent=None):
        super().__init__(parent)
        self._store = store
        self._model = model
        self._query = ""
        self._include_reasoning = False
        self._scope: Optional[int] = None  # the project a search looks in (None: every chat)
        self._searcher: Optional[ChatStore] = None  # the search thread's own connection
        self._background = Background("search", self, keep_thread=True)
        self._closed = False  # the store is closing: a late search (the search box's debounce) reads nothing

    def search(self, query: str, include_reasoning: bool = False) -> None:
        """Show the chats matching `query` ("" for all) once found, in answers and, with `include_reasoning`, in
        replies' thinking; a newer search supersedes this one."""
        self._query = query.strip()
        self._include_reasoning = include_reasoning
        self.refresh()

    def set_scope(self, project_id: Optional[int]) -> None:
        """Search within this project (None: every chat); the list is filled again when a search is shown."""
        self._scope = project_id
        if self._query:
            self.refresh()

    def refresh(self, changed_chat: Optional[int] = None) -> None:
        """List the chats again, or, when one chat got or lost messages outside a search, change only its row."""
        if self._closed:
            return
        self._background.supersede()  # whatever a search still finds is no longer asked for
        try:
            if not self._query:
                if changed_chat is None:
                    self._model.set_contents(self._store.projects.list_projects(), self._store.list_chats())
                else:
                    self._model.show_chat(changed_chat, self._store.get_chat(changed_chat))
            else:
                query, include_reasoning = self._query, self._include_reasoning
                self._background.run(lambda: self._find(query, include_reasoning), self._on_found)
                return
        except StoreError as exc:
            self.sig_error.emit(str(exc))
            return
        self.sig_listed.emit()

    def _find(self, query: str, include_reasoning: bool) -> object:  # the search thread
        try:
            if self._searcher is None:
                self._searcher = ChatStore(self._store.path, check_pages=False)
            return self._searcher.list_chats(query, include_reasoning=include_reasoning)
        except StoreError as exc:
            return exc

    def _on_found(self, found) -> None:
        if self._closed:
            return
        if isinstance(found, StoreError):
            self.sig_error.emit(str(found))
            return
        scope = self._scope
        chats = [chat for chat in found if scope is None or chat.project_id == scope]
        try:
            holding = {chat.project_id for chat in chats}
            projects = [p for p in self._store.projects.list_projects() if p.id in holding or p.id == scope]
        except StoreError as exc:
            self.sig_error.emit(str(exc))
            return
        self._model.set_contents(projects, chats)
        self.sig_listed.emit()

    def close(self) -> None:
        """End the search thread (a search running now finishes on its own and is dropped)."""
        self._closed = True
        self._background.close(last=self._close_searcher)

    def _close_searcher(self) -> None:  # the search thread
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
