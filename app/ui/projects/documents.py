"""A project's documents in the window: indexed in the background, with a progress line and Cancel, and a question
in one of its chats sent with them (app.documents.question: whole when they fit comfortably, else its passages).

The index is the projects' own (app.documents, PROJECT_INDEX_FILE_NAME), its file beside the chat database: what
no project lists any more is taken out of it at the next indexing, so a document removed from a project, or a
deleted project's documents, leave nothing behind (the CLI's index is a file of its own, never pruned). One thread
indexes, one project at a time, with its own connection: the GUI thread never reads a file or waits for it, and a
reply never waits for indexing (a question asked meanwhile gets the passages indexed so far, and says so). On Send
the GUI thread reads the index with a connection of its own (SQLite's WAL lets it read while the thread writes): a
keyword search, about 0.1 s at 10,000 passages on a busy 2-core machine (docs/performance-log.md), once per
question; a larger index would want it on the thread too. With an embedding model chosen in Settings
(app.ui.projects.embedding) the indexing thread embeds passages with it in a process of its own, and a question is
embedded on Send and its two rankings fused; without one, passages are found by their words alone, and the line
above the composer says once what a model would add. Changing the model re-embeds the passages (the index keeps
one model's vectors: DocumentIndex.use_embedder).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from app.common.units import plural
from app.documents.index import DocumentIndex
from app.documents.index_db import PROJECT_INDEX_FILE_NAME, IndexFileError
from app.documents.indexer import refresh
from app.documents.question import DocsInput, docs_budget, retrieved_passages, whole_documents
from app.documents.records import IndexProgress, IndexSummary
from app.documents.walk import find_documents
from app.store import StoreError
from app.store.projects import Project
from app.store.projects.sources import Source
from app.ui.projects.embedding import EMBEDDING_ERRORS, AskedVector, WindowEmbedder, how_found_sentence
from app.ui.projects.source_dialog import SourceDialog
from app.ui.widgets.elided_label import ElidedLabel

# Whether a project's documents fit whole is asked on Send, on the GUI thread: a folder of more files than these, or
# with more entries to walk, is taken as too large without reading further (retrieval answers it).
WHOLE_MAX_FILES = 200
WHOLE_MAX_ENTRIES = 2_000


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
    thread only emits the two signals)."""

    sig_progress = Signal(int, object)
    """(project_id, IndexProgress) from the indexing thread."""
    sig_indexed = Signal(int, object, str)
    """(project_id, IndexSummary, how passages are found, a sentence): indexing ended (cancelled or not)."""
    sig_failed = Signal(int, str)
    """(project_id, sentence): the index could not be opened."""

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

    def sources_for(self, question: str, max_tokens: int) -> tuple[Source, ...]:
        """What the open chat's question is sent with: its project's documents whole when they fit comfortably, else
        the passages that match it; () for a chat outside a project with documents, or when none matches."""
        project = self.open_project()
        if project is None or not project.documents or not question.strip():
            return ()
        n_ctx = self.n_ctx or self._window.settings.context_size
        budget = docs_budget(n_ctx, max_tokens)
        # Looked at on the GUI thread, so within bounds: more files than this never fit whole in any context.
        found = find_documents(list(project.documents), max_documents=WHOLE_MAX_FILES, max_entries=WHOLE_MAX_ENTRIES)
        fits = bool(found.files) and found.complete
        docs: Optional[DocsInput] = whole_documents(found.files, budget) if fits else None
        if docs is None:
            if project.id not in self._fresh:
                self.index(project.id)  # a new chat's project, not indexed since the window opened
            docs = self._retrieved(project, question, budget)
        return docs.sources if docs is not None else ()

    def _retrieved(self, project: Project, question: str, budget: int) -> Optional[DocsInput]:
        vector, missed = self.embedder.question_vector(question) if self.embedder is not None else (None, "")
        if missed:
            self._window.conversation.view.add_notice(missed)
        try:
            with DocumentIndex(self.index_path) as index:
                asked = AskedVector(vector) if vector is not None else None
                docs = retrieved_passages(index, question, budget, roots=list(project.documents), embedder=asked)
        except IndexFileError as exc:
            self._window.show_error(str(exc))
            return None
        if self.busy():
            self._window.conversation.view.add_notice(
                "The documents are still being indexed: this answer draws on those indexed so far."
            )
        if not docs.sources:
            self._window.conversation.view.add_notice(
                "No passage of the project's documents matches the question; it is sent without them."
            )
        return docs

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
    documents.chat_shown()  # the chat the window opened on
    return documents
