"""A project's documents in the window: indexed in the background, with a progress line and Cancel, and a question
in one of its chats sent with them (app.documents.question: whole when they fit comfortably, else its passages).

The index is the projects' own (app.documents, PROJECT_INDEX_FILE_NAME), its file beside the chat database: what
no project lists any more is taken out of it at the next indexing, so a document removed from a project, or a
deleted project's documents, leave nothing behind (the CLI's index is a file of its own, never pruned). One thread
indexes, one project at a time, with its own connection: the GUI thread never reads a file or waits for it, and a
reply never waits for indexing (a question asked meanwhile gets the passages indexed so far, and says so).

On Send in a project's chat the question's sources are found on a thread of their own
(app.ui.projects.question_sources: the files listed and read, the question embedded, the index searched with that
thread's own connection, which SQLite's WAL lets read while indexing writes); the GUI thread never waits for them.
Meanwhile the composer keeps the text, read-only, its button is Stop, and the live readout says the documents are
being looked through. The result comes back by a queued signal stamped with its Send; Stop, another chat or an
edit drops it, and the text stays in the composer. A chat without documents sends at once, with no thread hop.

With an embedding model chosen in Settings (app.ui.projects.embedding) the indexing thread embeds passages with it
in a process of its own, and a question is embedded on the question's thread and its two rankings fused; without
one, passages are found by their words alone, and the line above the composer says once what a model would add.
Changing the model re-embeds the passages (the index keeps one model's vectors: DocumentIndex.use_embedder).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from app.common.units import plural
from app.documents.index import DocumentIndex
from app.documents.index_db import PROJECT_INDEX_FILE_NAME, IndexFileError
from app.documents.indexer import refresh
from app.documents.question import docs_budget
from app.documents.records import IndexProgress, IndexSummary
from app.store import StoreError
from app.store.projects import Project
from app.store.projects.sources import Source
from app.ui.projects.embedding import EMBEDDING_ERRORS, WindowEmbedder, how_found_sentence
from app.ui.projects.question_sources import FoundSources, SourcesAsked, find_sources
from app.ui.projects.source_dialog import SourceDialog
from app.ui.widgets.background import Background
from app.ui.widgets.elided_label import ElidedLabel

FINDING_TEXT = "Looking through the project's documents…"  # the live readout while a question's sources are found
FIND_FAILED = "The project's documents could not be looked through, so the question is sent without them:"


class DocumentsBar(QWidget):
    """The line above the composer while a project's documents are indexed: what is being read, a bar, Cancel;
    after it, what the index holds (and what an embedding model would add)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(16, 4, 16, 4)
        # While indexing, one line cut at a word's end (the file's name changes each step: wrapped, the line went
        # from one row to two and back); after it, the whole sentence, wrapped.
        self.progress = ElidedLabel()
        self.label = QLabel()
        for label in (self.progress, self.label):
            label.setObjectName("Muted")
            label.setTextFormat(Qt.TextFormat.PlainText)  # names of projects and files as written
        self.label.setWordWrap(True)
        self.bar = QProgressBar()
        self.bar.setObjectName("DocumentsProgress")  # the accent, as the context gauge: the palette's was too pale
        self.bar.setMaximumWidth(160)
        self.bar.setTextVisible(False)
        self.cancel = QPushButton("Cancel")
        self.cancel.setToolTip("Stop indexing; what was indexed is kept, and the rest is indexed next time")
        layout.addWidget(self.progress, 1)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel)
        self.hide()

    def show_progress(self, name: str, progress: IndexProgress) -> None:
        """How far indexing is: a file of how many, and which; before the files are counted (the folders walked, an
        embedding model loading) the bar is busy and says no count, never "0 of 0"."""
        if progress.total:
            current = Path(progress.current).name if progress.current else ""
            counted = f"{progress.done} of {plural(progress.total, 'file')}"
            self.progress.setText(f"Indexing the documents of {name}: {counted}" + (f" · {current}" if current else ""))
            self.bar.setRange(0, progress.total)
            self.bar.setValue(progress.done)
        else:
            self.progress.setText(f"Indexing the documents of {name}…")
            self.bar.setRange(0, 0)  # busy: how much there is is not known yet
        self.label.hide()
        for widget in (self.progress, self.bar, self.cancel):
            widget.show()
        self.show()

    def show_done(self, text: str) -> None:
        self.label.setText(text)
        for widget in (self.progress, self.bar, self.cancel):
            widget.hide()
        self.label.show()
        self.show()


class DocumentsController(QObject):
    """Indexes the open chat's project's documents and gives a question its sources. GUI thread only (the indexing
    thread only emits its signals; a question's sources are found on a thread of their own: find_sources)."""

    sig_progress = Signal(int, object)
    """(project_id, IndexProgress) from the indexing thread."""
    sig_indexed = Signal(int, object, str)
    """(project_id, IndexSummary, how passages are found, a sentence): indexing ended (cancelled or not)."""
    sig_failed = Signal(int, str)
    """(project_id, sentence): the index could not be opened."""
    sig_finding = Signal(bool)
    """A question's sources are being found, its Send waiting for them (True), or no longer (False)."""

    def __init__(self, window, bar: DocumentsBar):
        super().__init__(window)
        self._window = window
        self._store = window.store
        self.bar = bar
        # Beside the chats (the user's database also when the window runs on a copy of it).
        self.index_path = Path(window.store.pictures_beside).parent / PROJECT_INDEX_FILE_NAME
        self.n_ctx = 0  # the loaded model's context (0: none loaded yet: the app's setting)
        self._fresh: set[int] = set()  # projects indexed since their documents last changed
        self._running: Optional[tuple[int, threading.Thread, threading.Event]] = None
        self._queued: Optional[int] = None
        self.source_dialog: Optional[SourceDialog] = None
        self.embedder: Optional[WindowEmbedder] = None
        self._closed = False  # the window closed: what the thread still emits finds the store closed
        self._finder = Background("documents question", self)  # finds a question's sources (find_sources)
        self._then: Optional[Callable[[tuple[Source, ...]], None]] = None  # the Send waiting for them
        self.set_embedding(window.settings.documents_embedding, reindex=False)
        self.sig_progress.connect(self._on_progress)
        self.sig_indexed.connect(self._on_indexed)
        self.sig_failed.connect(self._on_failed)
        bar.cancel.clicked.connect(self.cancel)

    # ----- which project

    def open_project(self) -> Optional[Project]:
        """The open chat's project (a new chat's, before it is stored), or None."""
        window = self._window
        chat_id = window.conversation.chat_id
        try:
            if chat_id is None:
                pending = window.projects.pending_project()
                return self._store.projects.get_project(pending) if pending is not None else None
            return self._store.projects.project_of(chat_id)
        except StoreError:
            return None

    def chat_shown(self, *_args) -> None:
        """A chat was opened or changed: index its project's documents unless that was done since they changed."""
        project = self.open_project()
        if project is None or not project.documents:
            if self._running is None:
                self.bar.hide()
            return
        if project.id not in self._fresh:
            self.index(project.id)

    def documents_changed(self, project_id: int, paths: tuple[str, ...]) -> None:
        """A project's documents changed (or it was deleted, `paths` empty): index what it lists now, and take what
        no project lists out of the index."""
        self._fresh.discard(project_id)
        self.index(project_id)

    def set_embedding(self, path: str, reindex: bool = True) -> None:
        """Read documents with the embedding model at `path` ("": none, words alone) from now on; the open chat's
        project is indexed again with it (the others when next shown)."""
        if (self.embedder.path if self.embedder is not None else "") == path:
            return
        if self.embedder is not None:
            self.cancel()
            self.embedder.close()
        self.embedder = WindowEmbedder(path) if path else None
        self._fresh.clear()
        if reindex:
            self.chat_shown()

    # ----- indexing

    def index(self, project_id: int) -> None:
        """Index (or refresh) the project's documents on the indexing thread; one at a time, the next one queued."""
        if self._running is not None:
            if self._running[0] != project_id:
                self._queued = project_id
            return
        try:
            project = self._store.projects.get_project(project_id)
            listed = [path for each in self._store.projects.list_projects() for path in each.documents]
        except StoreError:
            return
        if project is None or not project.documents:
            if not self.index_path.exists():
                return
            project, paths = None, []  # only what no project lists is taken out: nothing to show
        else:
            paths = list(project.documents)
        cancel = threading.Event()
        thread = threading.Thread(
            target=self._run, args=(project_id, paths, listed, cancel), name="SpecChat documents index", daemon=True
        )
        self._running = (project_id, thread, cancel)
        if project is not None:
            self.bar.show_progress(project.name, IndexProgress(0, 0, ""))
        thread.start()

    def _run(self, project_id: int, paths: list[str], listed: list[str], cancel: threading.Event) -> None:
        window_embedder = self.embedder
        worker = window_embedder.for_indexing() if window_embedder is not None and paths else None
        found = how_found_sentence(window_embedder)

        def progress(p: IndexProgress) -> None:
            self.sig_progress.emit(project_id, p)

        try:
            with DocumentIndex(self.index_path) as index:
                index.keep_only(listed)
                try:
                    name = window_embedder.name if window_embedder is not None else ""
                    summary = refresh(index, paths, worker, name, progress=progress, cancelled=cancel.is_set)
                except EMBEDDING_ERRORS as exc:  # the model's process failed: the words are indexed all the same
                    found = f"Embedding the passages failed, so they are found by their words alone: {exc}"
                    summary = refresh(index, paths, progress=progress, cancelled=cancel.is_set)
        except IndexFileError as exc:
            self.sig_failed.emit(project_id, str(exc))
            return
        self.sig_indexed.emit(project_id, summary, found)

    def cancel(self) -> None:
        if self._running is not None:
            self._running[2].set()

    def busy(self) -> bool:
        return self._running is not None

    def wait(self, timeout_s: float = 10.0) -> None:
        """Cancel indexing and wait for its thread, and end the embedding model's process (the window closing)."""
        self._closed = True
        self._then = None
        self._finder.close()
        running = self._running
        if running is not None:
            running[2].set()
        if self.embedder is not None:
            self.embedder.close()  # an embedding under way is refused: the thread ends sooner
        if running is not None:
            running[1].join(timeout_s)

    def _on_progress(self, project_id: int, progress: IndexProgress) -> None:
        if self._closed:
            return
        project = self._store.projects.get_project(project_id)
        if project is not None and self._running is not None:
            self.bar.show_progress(project.name, progress)

    def _on_indexed(self, project_id: int, summary: IndexSummary, found: str) -> None:
        if self._closed:
            return
        self._finished()
        project = self._store.projects.get_project(project_id)
        if project is None or not project.documents:
            self.bar.hide()  # what no project lists was taken out; nothing was indexed
        else:
            if not summary.cancelled:
                self._fresh.add(project_id)
            self.bar.show_done(self._summary_text(project_id, summary, found))
        self._next()

    def _on_failed(self, project_id: int, sentence: str) -> None:
        if self._closed:
            return
        self._finished()
        self.bar.show_done(sentence)
        self._next()

    def _finished(self) -> None:
        if self._running is not None:
            self._running[1].join(1.0)  # it has emitted its last signal: it is ending
        self._running = None

    def _next(self) -> None:
        queued, self._queued = self._queued, None
        if queued is not None:
            self.index(queued)

    def _summary_text(self, project_id: int, summary: IndexSummary, found: str) -> str:
        project = self._store.projects.get_project(project_id)
        name = project.name if project is not None else "the project"
        if summary.cancelled:
            return f"Indexing the documents of {name} was cancelled; what was indexed is kept."
        documents = summary.added + summary.changed + summary.unchanged
        text = f"The documents of {name} are indexed ({plural(documents, 'document')})."
        skipped = [note.sentence for note in summary.notes]
        if skipped:
            text += f" {skipped[0]}" + (f" (and {plural(len(skipped) - 1, 'other note')})" if len(skipped) > 1 else "")
        return f"{text} {found}"

    # ----- a question

    def find_sources(self, question: str, max_tokens: int, then: Callable[[tuple[Source, ...]], None]) -> bool:
        """Find what the open chat's question is sent with, on the question's thread: its project's documents whole
        when they fit comfortably, else the passages that match it; `then(sources)` runs on the GUI thread once they
        are found, unless the question was abandoned first. False, and nothing runs, for a chat outside a project
        with documents or a message without text: it is sent at once, without sources."""
        project = self.open_project()
        if project is None or not project.documents or not question.strip() or self._closed:
            return False
        budget = docs_budget(self.n_ctx or self._window.settings.context_size, max_tokens)
        asked = SourcesAsked(question, project.documents, budget, self.index_path, self.embedder)
        self._then = then
        project_id = project.id
        self._finder.run(
            lambda: find_sources(asked),
            lambda found: self._on_found(project_id, found),
            lambda exc: self._on_found(project_id, FoundSources((), True, problem=f"{FIND_FAILED} {exc}")),
        )
        self.sig_finding.emit(True)
        return True

    def finding(self) -> bool:
        """Whether a question waits for its sources."""
        return self._then is not None

    def abandon_question(self) -> None:
        """Drop the question waiting for its sources (Stop, another chat, an edit): what is found for it is
        ignored, and the composer keeps its text."""
        if self._then is None:
            return
        self._then = None
        self._finder.supersede()
        self.sig_finding.emit(False)

    def _on_found(self, project_id: int, found: FoundSources) -> None:
        then, self._then = self._then, None
        if then is None or self._closed:
            return
        self.sig_finding.emit(False)
        notice = self._window.conversation.view.add_notice
        if found.missed:
            notice(found.missed)
        if found.problem:
            self._window.show_error(found.problem)
        elif found.retrieved:
            if project_id not in self._fresh:
                self.index(project_id)  # a new chat's project, not indexed since the window opened
            if self.busy():
                notice("The documents are still being indexed: this answer draws on those indexed so far.")
            if not found.sources:
                notice("No passage of the project's documents matches the question; it is sent without them.")
        then(found.sources)

    # ----- a cited source

    def show_source(self, message_id: int, number: int) -> Optional[SourceDialog]:
        """Show the source [number] of the reply `message_id` in its document."""
        chat_id = self._window.conversation.chat_id
        try:
            sources = self._store.projects.sources_of(chat_id).get(message_id, ()) if chat_id is not None else ()
        except StoreError as exc:
            self._window.show_error(str(exc))
            return None
        source = next((s for s in sources if s.number == number), None)
        if source is None:
            return None
        dialog = SourceDialog(source, self._window)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.source_dialog = dialog  # the one shown last (tests read it)
        dialog.show()
        return dialog


def attach(window) -> DocumentsController:
    """Give `window` its documents line above the composer and the controller behind it."""
    bar = DocumentsBar()
    layout = window.chat_page.layout()
    layout.insertWidget(layout.indexOf(window.composer), bar)
    documents = DocumentsController(window, bar)
    window.projects.sig_documents_changed.connect(documents.documents_changed)
    window.conversation.sig_messages_changed.connect(documents.chat_shown)
    window.sidebar.sig_chat_selected.connect(documents.chat_shown)
    window.chat_view.sig_source.connect(documents.show_source)
    window.session.sig_context_size.connect(lambda n_ctx: setattr(documents, "n_ctx", n_ctx))
    window.conversation.sig_stopping.connect(documents.abandon_question)  # Stop, another chat, an edit
    documents.sig_finding.connect(window.composer.set_sending)
    documents.sig_finding.connect(lambda finding: window.legend_row.set_live_stats(FINDING_TEXT if finding else ""))
    documents.chat_shown()  # the chat the window opened on
    return documents
