"""The "Get models" panel: curated target + draft pairs first, then a search of the Hugging Face Hub, a
repository's GGUF files by quantization, and one download at a time with progress, cancel and resume.

All network work runs on the panel's own thread pool (app.ui.get_models.worker); the GUI thread only lays out
answers. Errors (offline, not found, gated, disk space...) are shown inline and leave the rest usable. When files
land, `sig_models_downloaded` carries their paths so the window can rescan its library at once.
"""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QLabel,
    QPushButton,
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.platform import paths
from app.hub.client import HubClient, RepoListing
from app.hub.curated import CuratedPair, curated_pairs
from app.hub.download import DownloadJob, DownloadProgress
from app.hub.download_plan import DownloadItem
from app.hub.errors import AuthRequiredError, DownloadCancelled, HubError, OfflineError
from app.hub.repo_files import RemoteModel
from app.ui.widgets import style
from app.hub.repo_projector import download_items
from app.ui.get_models.views import PairCard
from app.ui.get_models.download_row import DownloadRow
from app.ui.get_models.search_tab import HubSearchTab
from app.ui.get_models.token_row import TokenRow
from app.ui.get_models.worker import TaskRunner, cancel_all


class GetModelsPanel(QWidget):
    """Find and download GGUF models. GUI thread only; `shutdown()` before the application quits.

    `pairs` replaces the curated list (tests point it at a local server), `client` the Hub client (default: a
    HubClient for HF_ENDPOINT and the saved token), `dest_dir` the folder downloads land in (default: the app's
    models folder).
    """

    sig_models_downloaded = Signal(list)
    """Files landed and are ready to load: the paths (str) of the models, the first part of a split one."""
    sig_pair_downloaded = Signal(str, str)
    """A curated pair landed: the target's path and the draft's path, to select them together."""
    sig_load_model = Signal(str, str)
    """A model (and draft: "" for none) already downloaded: load it instead of downloading it again."""
    sig_busy_changed = Signal(bool)
    """A download started (True) or ended, finished or not (False)."""

    def __init__(
        self,
        parent: Optional[QWidget] = None,
        *,
        pairs: Optional[Sequence[CuratedPair]] = None,
        client: Optional[HubClient] = None,
        dest_dir: Optional[Path] = None,
    ):
        super().__init__(parent)
        self.pairs = tuple(pairs) if pairs is not None else curated_pairs()
        self._client = client
        self.dest_dir = dest_dir
        self.runner = TaskRunner(self)
        self.runner.signals.sig_progress.connect(self._on_task_progress)
        # Closing the window that holds the panel destroys it: stop downloads then (partial files stay, to resume)
        # instead of blocking on them. A module-level function, since the panel is half gone by then.
        self.destroyed.connect(partial(cancel_all, self.runner.cancel_events))

        self._download_request = 0
        self._download_cancel: Optional[threading.Event] = None
        self._last_download: Optional[Callable[[], None]] = None  # re-runs the last download (resume)
        self._retry_after_token: Optional[Callable[[], None]] = None
        # The library's scanned files by name (set by the window): a pair whose files are in any scanned folder is
        # loaded from there, not downloaded again.
        self.library_files: Callable[[], Mapping[str, Path]] = dict
        self._pair_to_load: Optional[PairCard] = None  # a pair whose missing files are downloading, loaded after
        self._chosen_button: Optional[QPushButton] = None  # the pair's button that started the download, if focused

        self._build()

    # ----- layout

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        self.tabs = QTabWidget()
        self.tabs.addTab(self._build_pairs_tab(), "Recommended pairs")
        self.search_tab = HubSearchTab(self, self.runner)
        self.tabs.addTab(self.search_tab, "Search the Hub")
        layout.addWidget(self.tabs, 1)

        self.message_label = QLabel()
        self.message_label.setWordWrap(True)
        self.message_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message_label.hide()
        layout.addWidget(self.message_label)

        self.token_row = TokenRow(
            self.runner.start, lambda: self.client().base_url, self._on_token_saved, self.show_error
        )
        layout.addWidget(self.token_row)

        self.download_row = DownloadRow(self.cancel_download, self.resume_download)
        layout.addWidget(self.download_row)

    def _build_pairs_tab(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        intro = QLabel(
            "Each pair is a chat model and a much smaller draft model that shares its vocabulary: the draft "
            "proposes tokens and the big model checks them. Whether that is faster depends on the machine: on a "
            "GPU it usually is; on a CPU it pays mostly on edits and repeated text (an attached file you ask to "
            "change), and SpecChat pauses the draft where it would slow the reply."
        )
        intro.setWordWrap(True)
        intro.setObjectName("Muted")
        layout.addWidget(intro)
        cards = QWidget()
        cards_layout = QVBoxLayout(cards)
        self.pair_buttons: dict[str, QPushButton] = {}
        self.pair_cards: list[PairCard] = []
        for pair in self.pairs:
            card = PairCard(pair)
            card.sig_download.connect(self.download_pair)
            card.sig_load.connect(self.sig_load_model)
            self.pair_cards.append(card)
            self.pair_buttons[pair.pair_id] = card.button
            cards_layout.addWidget(card)
        cards_layout.addStretch(1)
        self.refresh_downloaded()
        self.pairs_scroll = scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(cards)
        layout.addWidget(scroll, 1)
        return page

    # ----- actions (GUI thread)

    def client(self) -> HubClient:
        return self._client or HubClient()

    def models_dir(self) -> Path:
        """The folder downloads land in."""
        return self.dest_dir or paths.models_dir()

    def load_model(self, path: Path) -> None:
        """A model found here already: load it instead of downloading it again."""
        self.sig_load_model.emit(str(path), "")

    def retry_after_token(self, retry: Callable[[], None]) -> None:
        """What to run again once a token is saved (a gated repository's listing, a download)."""
        self._retry_after_token = retry

    def refresh_downloaded(self) -> None:
        """Each pair card says Load, Download, or Download the rest, from the files here now."""
        library_files = self.library_files()
        for card in self.pair_cards:
            card.mark_downloaded(self.models_dir(), library_files)

    def download_pair(self, pair_id: str) -> None:
        """Download a curated pair's target and draft as one job (a target that comes alone, as one model); where
        some of its files are here already, only the others, and then the pair is loaded."""
        pair = next((p for p in self.pairs if p.pair_id == pair_id), None)
        if pair is None:
            return
        card = next(c for c in self.pair_cards if c.pair.pair_id == pair_id)
        if any(card.found):
            missing = [f for f, p in zip(pair.files, card.found) if p is None]
            models = [i for i, f in enumerate(missing) if f is not pair.projector]  # a projector is no model
            self._start_download([f.item for f in missing], models, pair=False, label=pair.title, then_load=card)
            return
        items = [f.item for f in pair.files]
        with_draft = pair.draft is not None
        self._start_download(items, primary=[0, 1] if with_draft else [0], pair=with_draft, label=pair.title)

    def download_model(self, listing: RepoListing, model: RemoteModel) -> None:
        """Download one model from a listing (every part of a split model) with the repository's projector, where
        it has one; files here already are skipped, so a model here without its projector fetches only that."""
        items = download_items(listing, model)
        label = model.name + (" + picture projector" if len(items) > len(model.files) else "")
        self._start_download(items, primary=[0], pair=False, label=label)

    def cancel_download(self) -> None:
        if self._download_cancel is not None:
            self._download_cancel.set()
            self.download_row.cancelling()

    def resume_download(self) -> None:
        if self._last_download is not None and not self.is_downloading():
            self._last_download()

    def is_downloading(self) -> bool:
        return self._download_cancel is not None

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel any download (its partial file stays) and wait for background work; call before quitting."""
        return self.runner.shutdown(timeout_ms)

    # ----- downloads

    def _start_download(
        self,
        items: list[DownloadItem],
        primary: list[int],
        pair: bool,
        label: str,
        then_load: Optional[PairCard] = None,
    ) -> None:
        if self.is_downloading():
            self.show_message("A download is already running; wait for it or cancel it first.")
            return
        self.clear_message()
        client = self.client()
        cancel = self.runner.new_cancel_event()
        dest_dir = self.models_dir()

        def work(progress):  # pool thread
            job = DownloadJob(items, dest_dir, client=client, on_progress=progress, cancel_event=cancel)
            return job.run()

        self._download_cancel = cancel
        self._pair_to_load = then_load
        self._last_download = partial(self._start_download, items, primary, pair, label, then_load)
        self._retry_after_token = self._last_download
        self._set_downloading(True, label)
        self._download_request = self.runner.start(
            work,
            partial(self._on_download_finished, primary=primary, pair=pair),
            self._on_download_failed,
        )

    def _set_downloading(self, busy: bool, label: str = "") -> None:
        """Pair buttons off while busy. A disabled button's focus would pass down the pair list and the list
        scroll after it, so focus waits on Cancel and comes back to the chosen pair's button: the list stays put."""
        if busy:
            self.download_row.preparing(label)
            focused = self.window().focusWidget()  # the window's, active or not, as Qt passes focus on
            self._chosen_button = next((b for b in self.pair_buttons.values() if b is focused), None)
            if self._chosen_button is not None:
                self.download_row.cancel_button.setFocus()
        for button in self.pair_buttons.values():
            button.setEnabled(not busy)
        if not busy:
            if self._chosen_button is not None:
                self._chosen_button.setFocus()
                self._chosen_button = None
            self.download_row.ended()
        self.search_tab.update_download_button()
        self.sig_busy_changed.emit(busy)

    def _forget_download(self) -> None:
        if self._download_cancel in self.runner.cancel_events:
            self.runner.cancel_events.remove(self._download_cancel)
        self._download_cancel = None

    def _on_download_finished(self, result: list[Path], primary: list[int], pair: bool) -> None:
        self._forget_download()
        self._last_download = None
        paths_list = [str(p) for p in result]
        self._set_downloading(False)
        landed = [paths_list[i] for i in primary]  # the models (a projector alone: none, but the library rescans)
        self.download_row.landed([Path(p).name for p in landed or paths_list])
        self.refresh_downloaded()
        self.sig_models_downloaded.emit(landed)
        card, self._pair_to_load = self._pair_to_load, None
        if pair:
            self.sig_pair_downloaded.emit(landed[0], landed[1])
        elif card is not None and card.downloaded:  # the rest of a pair whose other files were here
            self.sig_pair_downloaded.emit(*card.target_and_draft())

    def _on_download_failed(self, error: HubError) -> None:
        self._forget_download()
        self._set_downloading(False)
        # After a cancel or a network failure the partial files are kept: offer to continue.
        resumable = isinstance(error, (DownloadCancelled, OfflineError))
        self.download_row.stopped(isinstance(error, DownloadCancelled), resumable and self._last_download is not None)
        self.show_error(error)

    # ----- answers (GUI thread, via queued signals)

    def _on_task_progress(self, request_id: int, record: object) -> None:
        if request_id == self._download_request and isinstance(record, DownloadProgress):
            self.download_row.progress(record)

    def _on_token_saved(self, user: object) -> None:
        """The token row stored a token: retry what needed it."""
        self.show_message(f"Token saved{f' for {user}' if user else ''}.")
        retry, self._retry_after_token = self._retry_after_token, None
        if retry is not None:
            retry()

    # ----- messages

    def show_message(self, text: str) -> None:
        self.message_label.setStyleSheet(f"color: {style.TEXT_MUTED};")
        self.message_label.setText(text)
        self.message_label.show()

    def show_error(self, error: HubError) -> None:
        self.message_label.setStyleSheet(
            f"color: {style.ERROR}; background: {style.ERROR_SOFT}; border-radius: 6px; padding: 6px;"
        )
        self.message_label.setText(str(error))
        self.message_label.show()
        # A gated or private repo: ask for a token right here, then retry what needed it.
        wants_token = isinstance(error, AuthRequiredError) or getattr(error, "may_be_private", False)
        if wants_token:
            self.token_row.ask()
        else:
            self.token_row.hide()

    def clear_message(self) -> None:
        self.message_label.hide()
        self.message_label.clear()

    def message(self) -> str:
        """The message shown inline ("" when none)."""
        return self.message_label.text()
