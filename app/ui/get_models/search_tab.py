"""The Get-models panel's "Search the Hub" tab: a query, the GGUF repositories that match, and the chosen one's
files by quantization, each downloaded (or loaded, when it is here already) from the tab.

The searches and listings run on the panel's task pool; a newer question drops the answer to an older one. The
tab asks its host (the panel) for the Hub client, the download and the inline messages. GUI thread only.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Callable, Optional, Protocol

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QVBoxLayout,
    QWidget,
)

from app.hub.client import HubClient, RepoListing, RepoSummary
from app.hub.errors import HubError
from app.hub.repo_files import RemoteModel
from app.ui.get_models.views import REPO_ROLE, download_action, fill_files, fill_results, selected_model
from app.ui.get_models.worker import TaskRunner

CHOOSE_A_REPO = "Choose a repository to see its files."


class SearchHost(Protocol):
    """What the tab needs from the panel that holds it."""

    def client(self) -> HubClient: ...

    def models_dir(self) -> Path: ...

    def is_downloading(self) -> bool: ...

    def download_model(self, listing: RepoListing, model: RemoteModel) -> None: ...

    def load_model(self, path: Path) -> None: ...

    def show_message(self, text: str) -> None: ...

    def show_error(self, error: HubError) -> None: ...

    def clear_message(self) -> None: ...

    def retry_after_token(self, retry: Callable[[], None]) -> None: ...


class HubSearchTab(QWidget):
    """Search the Hub and pick a file. GUI thread only."""

    def __init__(self, host: SearchHost, runner: TaskRunner, parent: Optional[QWidget] = None):
        super().__init__(parent)
        self._host = host
        self._runner = runner
        self._search_request: Optional[int] = None
        self._listing_request: Optional[int] = None
        self._listing: Optional[RepoListing] = None
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.search_edit = QLineEdit()
        self.search_edit.setPlaceholderText("Search GGUF models on the Hugging Face Hub (e.g. qwen coder)")
        self.search_edit.returnPressed.connect(lambda: self.search(self.search_edit.text()))
        row.addWidget(self.search_edit, 1)
        self.search_button = QPushButton("Search")
        self.search_button.clicked.connect(lambda: self.search(self.search_edit.text()))
        row.addWidget(self.search_button)
        layout.addLayout(row)

        splitter = QSplitter(Qt.Orientation.Vertical)
        self.results_list = QListWidget()
        self.results_list.currentItemChanged.connect(self._on_result_chosen)
        splitter.addWidget(self.results_list)
        files = QWidget()
        files_layout = QVBoxLayout(files)
        files_layout.setContentsMargins(0, 0, 0, 0)
        self.repo_label = QLabel(CHOOSE_A_REPO)
        self.repo_label.setObjectName("Muted")
        files_layout.addWidget(self.repo_label)
        self.files_tree = QTreeWidget()
        self.files_tree.setHeaderLabels(["Quantization", "Size", "File"])
        self.files_tree.setRootIsDecorated(True)
        self.files_tree.currentItemChanged.connect(lambda *_: self.update_download_button())
        self.files_tree.itemDoubleClicked.connect(lambda *_: self.download_selected())
        files_layout.addWidget(self.files_tree, 1)
        button_row = QHBoxLayout()
        button_row.addStretch(1)
        self.download_button = QPushButton("Download")
        self.download_button.setObjectName("PrimaryButton")
        self.download_button.setEnabled(False)
        self.download_button.clicked.connect(self.download_selected)
        button_row.addWidget(self.download_button)
        files_layout.addLayout(button_row)
        splitter.addWidget(files)
        layout.addWidget(splitter, 1)

    def search(self, query: str) -> None:
        """Search the Hub for GGUF repositories; results replace the list. An older search's answer is dropped."""
        self._host.clear_message()
        client = self._host.client()
        self.results_list.clear()
        self.search_button.setEnabled(False)
        self._runner.drop(self._search_request)  # the previous search's answer, if late, is dropped
        self._search_request = self._runner.start(
            lambda _progress: client.search_gguf(query), self._on_search_results, self._on_search_failed
        )

    def open_repo(self, repo_id: str) -> None:
        """List a repository's GGUF files, grouped by quantization."""
        self._host.clear_message()
        client = self._host.client()
        self._listing = None
        self.files_tree.clear()
        self.repo_label.setText(f"Reading {repo_id}…")
        self.update_download_button()
        self._runner.drop(self._listing_request)  # the previously chosen repo's listing is dropped
        self._listing_request = self._runner.start(
            lambda _progress: client.list_gguf(repo_id), self._on_listing, self._on_listing_failed
        )
        self._host.retry_after_token(partial(self.open_repo, repo_id))

    def download_selected(self) -> None:
        model, listing = selected_model(self.files_tree), self._listing
        _action, local = download_action(listing, model, self._host.models_dir())
        if local is not None:
            self._host.load_model(local)
        elif model is not None and listing is not None and not self._host.is_downloading():
            self._host.download_model(listing, model)

    def update_download_button(self) -> None:
        """Download, Load or Download projector, as the chosen file asks; off while another download runs."""
        model = selected_model(self.files_tree)
        action, local = download_action(self._listing, model, self._host.models_dir())
        self.download_button.setText(action)
        self.download_button.setEnabled(
            local is not None or (model is not None and self._listing is not None and not self._host.is_downloading())
        )

    def _on_search_results(self, results: list[RepoSummary]) -> None:
        self.search_button.setEnabled(True)
        fill_results(self.results_list, list(results))
        if not results:
            self._host.show_message("No GGUF repositories match that search.")

    def _on_search_failed(self, error: HubError) -> None:
        self.search_button.setEnabled(True)
        self._host.show_error(error)

    def _on_result_chosen(self, current, _previous) -> None:
        if current is not None:
            self.open_repo(current.data(REPO_ROLE))

    def _on_listing(self, listing: object) -> None:
        assert isinstance(listing, RepoListing)
        self._listing = listing
        self.repo_label.setText(
            f"{listing.repo_id}: {listing.model_count} model(s). Choose one and press Download."
            if listing.model_count
            else f"{listing.repo_id} holds picture projectors only, no model to chat with."
        )
        fill_files(self.files_tree, listing, self._host.models_dir())
        self.update_download_button()

    def _on_listing_failed(self, error: HubError) -> None:
        self.repo_label.setText(CHOOSE_A_REPO)
        self._host.show_error(error)
