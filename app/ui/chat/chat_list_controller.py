"""Keeps the sidebar's chat list in step with the store: one row per change, and searches off the GUI thread.

A search may read a large share of a year's messages (a common word), so it runs on a thread of its own with its
own connection to the database; each search is stamped and only the newest one's result is shown. GUI thread
only, except `_run_search`, which runs on the search thread.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from PySide6.QtCore import QObject, Signal

from app.store import ChatStore, StoreError
from app.ui.chat.chat_list import ChatListModel


class ChatListController(QObject):
    """Owns how the chat list is filled. GUI thread only (see the module docstring)."""

    sig_listed = Signal()
    """The list changed: the window selects the open chat again."""
    sig_error = Signal(str)
    """Reading the chats failed; the message is for a person."""
    _sig_found = Signal(int, object)
    """(search id, chats or a StoreError): from the search thread."""

    def __init__(self, store: ChatStore, model: ChatListModel, parent=None):
        super().__init__(parent)
        self._store = store
        self._model = model
        self._query = ""
        self._search_id = 0
        self._searcher: Optional[ChatStore] = None  # the search thread's own connection
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="SpecChat search")
        self._sig_found.connect(self._on_found)

    def search(self, query: str) -> None:
        """Show the chats matching `query` ("" for all) once found; a newer search supersedes this one."""
        self._query = query.strip()
        self.refresh()

    def refresh(self, changed_chat: Optional[int] = None) -> None:
        """List the chats again, or, when one chat got or lost messages outside a search, change only its row."""
        self._search_id += 1
        try:
            if not self._query:
                if changed_chat is None:
                    self._model.set_chats(self._store.list_chats())
                else:
                    self._model.show_chat(changed_chat, self._store.get_chat(changed_chat))
            else:
                self._pool.submit(self._run_search, self._search_id, self._query)
                return
        except StoreError as exc:
            self.sig_error.emit(str(exc))
            return
        self.sig_listed.emit()

    def _run_search(self, search_id: int, query: str) -> None:  # the search thread
        if search_id != self._search_id:
            return  # already superseded
        try:
            if self._searcher is None:
                self._searcher = ChatStore(self._store.path, check_pages=False)
            found: object = self._searcher.list_chats(query)
        except StoreError as exc:
            found = exc
        try:
            self._sig_found.emit(search_id, found)
        except RuntimeError:
            pass  # the window closed meanwhile

    def _on_found(self, search_id: int, found) -> None:
        if search_id != self._search_id:
            return
        if isinstance(found, StoreError):
            self.sig_error.emit(str(found))
            return
        self._model.set_chats(found)
        self.sig_listed.emit()

    def close(self) -> None:
        """End the search thread (a search running now finishes on its own and is dropped)."""
        self._search_id += 1
        self._pool.submit(self._close_searcher)
        self._pool.shutdown(wait=False, cancel_futures=False)

    def _close_searcher(self) -> None:  # the search thread
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None
