"""A project's documents in the real window over the scripted engine: a folder added in the project's settings is
indexed in the background with a progress line; a question in one of its chats goes to the model with the passages
that match it, numbered, while the transcript keeps it as typed; the reply lists its sources, and a click on its [1]
shows the passage highlighted in its document. After reopening the chat the sources are still there."""

from __future__ import annotations

import dataclasses

import re

import pytest
from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QColor

from app.documents.index import DocumentIndex

from app.documents.records import IndexProgress
from app.documents.retrieval import NO_EMBEDDER_SENTENCE
from app.store.projects.sources import Source
from app.ui.projects.documents import DocumentsBar
from app.ui.widgets import style
from app.ui.widgets.themes import DARK, LIGHT
from tests.support.contrast import contrast
from app.ui.transcript import message_actions
from app.ui.transcript.source_links import SOURCE_ACTION, source_argument
from tests.ui.window_helpers import choose_pair, poppies_chat, send_and_wait

FLOWERS = ["roses", "tulips", "lilies", "orchids", "daisies", "peonies"]


def _garden(folder):
    """Three files, far more text than half the context holds: each flower a section of its own."""
    folder.mkdir()
    for n, name in enumerate(["spring.md", "summer.md", "autumn.md"]):
        sections = []
        for flower in FLOWERS:
            facts = " ".join(f"Note {k} on {flower} in the {name[:-3]} garden: water them at dawn." for k in range(40))
            sections.append(f"# {flower.title()} in {name[:-3]}\n\n{facts}\n")
        if n == 1:
            sections.append("# Blue poppies\n\nBlue poppies bloom in late June on cool mountain slopes.\n")
        (folder / name).write_text("\n".join(sections))
    return folder


def test_a_question_is_answered_from_the_project_documents_with_sources(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    projects, documents = window.projects, window.documents
    projects.ask_name = lambda title, current="": "Garden"
    project = projects.new_project()
    folder = _garden(tmp_path / "garden")

    def add_folder(dialog):
        dialog.add_documents([str(folder)])
        return True

    projects.ask_settings = add_folder
    projects.edit_settings(project.id)
    # Indexed off the GUI thread; the line above the composer says how far, then what the index holds.
    qtbot.waitUntil(lambda: not documents.busy(), timeout=20000)
    assert documents.bar.isVisible()
    assert "are indexed (3 documents)" in documents.bar.label.text()
    assert NO_EMBEDDER_SENTENCE in documents.bar.label.text()

    projects.new_chat_in(project.id)
    fake_engine.reply = "Blue poppies bloom in late June [1]."
    reply_id = send_and_wait(qtbot, window, "When do blue poppies bloom?")

    # The model read the passages, numbered, the poppies' first; the chat keeps the question as typed.
    asked = fake_engine.requests[-1][-1]["content"]
    assert asked.startswith("Answer from the numbered passages below.")
    assert f"[1] {folder / 'summer.md'}" in asked and "Blue poppies bloom in late June" in asked
    assert "Question: When do blue poppies bloom?" in asked
    assert len(asked) < len("".join(p.read_text() for p in folder.iterdir()))  # not the documents whole
    question, reply = window.store.messages(window.conversation.chat_id)
    assert question.content == "When do blue poppies bloom?" and reply.id == reply_id
    transcript = window.chat_view.toPlainText()
    assert "Sources: [1] summer.md › Blue poppies" in transcript
    assert "Answer from the numbered passages" not in transcript

    # The reply's [1] is a link; a click shows the passage in its document, highlighted.
    view = window.chat_view
    href = view.action_href(SOURCE_ACTION, source_argument(reply_id, 1))
    assert message_actions.find_link(view.document(), "[1]", href) is not None
    view.anchorClicked.emit(QUrl(href))
    dialog = documents.source_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.highlighted_text().startswith("# Blue poppies")
    assert "# Tulips in summer" in dialog.text.toPlainText()  # the whole document, not the passage alone
    dialog.close()

    # The inspector, opened from the stats row, names the documents and passages used.
    window.inspector.open_message(reply_id)
    summary = window.inspector.dialog.summary.text()
    assert (
        "Answered from 1 passage of 1 document, found by their words: " in summary
        and "[1] summer.md › Blue poppies (characters" in summary
    )
    window.inspector.dialog.close()

    # Reopened, the reply still cites its sources.
    chat_id = window.conversation.chat_id
    window.new_chat()
    window.open_chat(chat_id)
    assert "Sources: [1] summer.md › Blue poppies" in window.chat_view.toPlainText()


def test_indexing_is_cancelled_from_its_line_and_what_was_indexed_is_kept(make_window, qtbot, fake_engine, tmp_path):
    window = make_window(engine_factory=fake_engine)
    documents = window.documents
    folder = tmp_path / "notes"
    folder.mkdir()
    for n in range(60):
        (folder / f"note{n}.txt").write_text(f"Note {n}: " + "words about the garden " * 50)
    project = window.store.projects.create_project("Notes")
    window.store.projects.update_project(dataclasses.replace(project, documents=(str(folder),)))
    documents.index(project.id)
    assert documents.bar.cancel.isVisible() and documents.busy()
    # Before the files are counted the line says no count (it said "0 of 0"), and its bar is busy.
    if documents.bar.bar.maximum() == 0:
        assert documents.bar.progress.text() == "Indexing the documents of Notes…"
    documents.bar.cancel.click()
    qtbot.waitUntil(lambda: not documents.busy(), timeout=20000)
    assert documents.bar.label.text() == "Indexing the documents of Notes was cancelled; what was indexed is kept."
    assert not documents.bar.cancel.isVisible()


def test_documents_that_fit_go_whole_with_the_question(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window, _ = poppies_chat(make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path)
    send_and_wait(qtbot, window, "When do they bloom?")
    asked = fake_engine.requests[-1][-1]["content"]
    assert asked.startswith("When do they bloom?") and "poppies.md" in asked and "late June" in asked
    assert "Answer from the numbered passages" not in asked
    assert "Documents, whole: poppies.md" in window.chat_view.toPlainText()


def _indexed_paths(documents) -> list[str]:
    with DocumentIndex(documents.index_path) as index:
        return sorted(index.documents())


def test_a_document_taken_off_a_project_leaves_nothing_in_the_index(make_window, qtbot, fake_engine, tmp_path):
    window = make_window(engine_factory=fake_engine)
    projects, documents = window.projects, window.documents
    kept, dropped = tmp_path / "kept.md", tmp_path / "dropped.md"
    kept.write_text("# Kept\n\nRoses want sun.\n")
    dropped.write_text("# Dropped\n\nTulips want frost.\n")
    projects.ask_name = lambda title, current="": "Garden"
    project = projects.new_project()

    def settings(change):
        def ask(dialog):
            change(dialog)
            return True

        projects.ask_settings = ask
        projects.edit_settings(project.id)
        qtbot.waitUntil(lambda: not documents.busy(), timeout=20000)

    settings(lambda dialog: dialog.add_documents([str(kept), str(dropped)]))
    assert _indexed_paths(documents) == [str(dropped), str(kept)]

    def remove_dropped(dialog):  # as a person does: select it, press Remove
        dialog.documents.findItems(str(dropped), Qt.MatchFlag.MatchExactly)[0].setSelected(True)
        dialog.remove()

    settings(remove_dropped)
    assert _indexed_paths(documents) == [str(kept)]
    with DocumentIndex(documents.index_path) as index:  # its passages and words went with it
        assert index.conn.execute("SELECT count(*) FROM passages WHERE text LIKE '%Tulips%'").fetchone() == (0,)

    # A deleted project's documents go too (its chats kept or not).
    projects.ask_delete = lambda project, chats: "keep"
    projects.delete_project(project.id)
    qtbot.waitUntil(lambda: not documents.busy(), timeout=20000)
    assert _indexed_paths(documents) == []


@pytest.mark.usefixtures("restore_light")
@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
def test_the_progress_line_counts_files_and_its_bar_shows_against_the_window(qtbot, qapp, theme):
    style.apply_style(qapp, theme)
    bar = DocumentsBar()
    qtbot.addWidget(bar)
    bar.resize(700, 40)
    bar.show_progress("Garden", IndexProgress(0, 0, ""))
    assert bar.progress.text() == "Indexing the documents of Garden…" and bar.bar.maximum() == 0
    one_line = bar.sizeHint().height()
    bar.show_progress("Garden", IndexProgress(3, 4, "/notes/compost.md"))
    assert bar.progress.text() == "Indexing the documents of Garden: 3 of 4 files · compost.md"
    # A long name is cut, never wrapped: the line keeps its height from one file to the next.
    bar.resize(420, 40)
    bar.show_progress("Thesis: speculative decoding on small CPUs", IndexProgress(3, 4, "/notes/a-long-name.md"))
    assert bar.sizeHint().height() == one_line and bar.progress.shown_text(bar.progress.width()).endswith("…")
    # The part done stands out from the window as a control's part should (WCAG's 3:1 for non-text).
    image = bar.bar.grab().toImage()
    done = image.pixelColor(image.width() // 4, image.height() // 2)
    assert contrast(done, QColor(theme.surface)) >= 3, done.name()


def test_a_long_sources_line_never_leaves_a_number_at_a_rows_end(make_window, qtbot, tmp_path):
    window = make_window()
    store = window.store
    chat = store.create_chat("Roses")
    sources = tuple(
        Source(n, str(tmp_path / f"notes{n}.md"), 0, 10, 0.1, "Some text.", heading=f"Garden > Section {n}")
        for n in range(1, 10)
    )
    store.add_message(chat.id, "user", "When do roses bloom?", sources=sources)
    store.add_message(chat.id, "assistant", "In June [1].")
    window.resize(800, 600)
    window.open_chat(chat.id)
    block = window.chat_view.document().begin()
    while block.isValid() and not block.text().startswith("Sources:"):
        block = block.next()
    layout = block.layout()
    rows = [
        block.text()[line.textStart() : line.textStart() + line.textLength()]
        for line in (layout.lineAt(n) for n in range(layout.lineCount()))
    ]
    assert len(rows) > 1  # the line wraps at this width
    assert not any(re.search(r"\[\d+\]\s*$", row) for row in rows), rows
