"""An embedding model for a project's documents, chosen in Settings > Documents: the passages are embedded in a
process of the model's own, and a question that shares no word with any passage is still sent with passages, found
by meaning; None brings back words alone, with the sentence that says what a model would add. A model that cannot
be loaded gets one sentence, and words alone go on."""

from __future__ import annotations

import dataclasses

import pytest

from app.documents.index import DocumentIndex
from app.documents.retrieval import NO_EMBEDDER_SENTENCE
from app.testing.synthetic_embedding import write_tiny_embedding_model
from app.ui.projects.embedding import meaning_sentence
from app.ui.settings.dialog import AppSettingsDialog
from app.ui.settings.documents_page import NONE_LABEL
from app.ui.shell import app_settings
from tests.ui.window_helpers import choose_pair, send_and_wait

INDEX_DEADLINE_MS = 90_000  # the embedding process starts and loads the model first
# No word of it is in the documents (the keyword search finds nothing); its meaning is all it has.
UNRELATED_QUESTION = "Xylophone quartz?"


def _garden(folder):
    """More text than half the context holds, so it is retrieved, not sent whole."""
    folder.mkdir()
    for name in ("spring.md", "summer.md"):
        sections = [
            f"# {flower.title()}\n\n" + " ".join(f"Note {k}: water the {flower} at dawn." for k in range(40))
            for flower in ("roses", "tulips", "lilies", "orchids")
        ]
        (folder / name).write_text("\n\n".join(sections))
    return folder


def _choose(window, path: str) -> None:
    """Settings > Documents, the model picked from its list, OK (applied as the window applies it)."""
    dialog = AppSettingsDialog(window.settings, window, embedding_models=[path] if path else [])
    page = dialog.documents_page
    page.model.setCurrentIndex(page.model.findData(path))
    app_settings.apply(window, dialog.settings())
    dialog.close()


def _indexed(qtbot, documents) -> str:
    qtbot.waitUntil(lambda: not documents.busy() and documents.bar.isVisible(), timeout=INDEX_DEADLINE_MS)
    return documents.bar.label.text()


@pytest.mark.slow
def test_an_embedding_model_finds_passages_by_meaning_and_none_brings_back_words_alone(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    model = write_tiny_embedding_model(tmp_path / "tiny-embed.gguf")
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    documents = window.documents
    folder = _garden(tmp_path / "garden")
    project = window.store.projects.create_project("Garden")
    window.store.projects.update_project(dataclasses.replace(project, documents=(str(folder),)))
    window.projects.new_chat_in(project.id)
    documents.index(project.id)
    assert NO_EMBEDDER_SENTENCE in _indexed(qtbot, documents)  # None is the default

    _choose(window, str(model))
    assert window.settings.documents_embedding == str(model)
    text = _indexed(qtbot, documents)
    assert meaning_sentence(model.name) in text and NO_EMBEDDER_SENTENCE not in text
    with DocumentIndex(documents.index_path) as index:  # every passage embedded again, with this model
        assert index.embedder_name() == model.name
        assert len(index.vectors()[0]) == index.passage_count() > 0

    reply_id = send_and_wait(qtbot, window, UNRELATED_QUESTION)
    asked = fake_engine.requests[-1][-1]["content"]
    assert asked.startswith("Answer from the numbered passages below.") and "[1] " in asked
    assert "Sources: [1]" in window.chat_view.toPlainText()
    window.inspector.open_message(reply_id)  # the inspector says how they were found
    assert "found by meaning and words: [1]" in window.inspector.dialog.summary.text()
    window.inspector.dialog.close()

    _choose(window, "")
    text = _indexed(qtbot, documents)
    assert NO_EMBEDDER_SENTENCE in text and documents.embedder is None
    send_and_wait(qtbot, window, UNRELATED_QUESTION)
    asked = fake_engine.requests[-1][-1]["content"]
    assert asked.startswith(UNRELATED_QUESTION)  # no passage shares a word with it: sent alone
    assert "No passage of the project's documents matches the question" in window.chat_view.toPlainText()


@pytest.mark.slow
def test_a_model_that_cannot_be_loaded_gets_a_sentence_and_words_alone_go_on(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window = make_window(engine_factory=fake_engine)
    documents = window.documents
    folder = _garden(tmp_path / "garden")
    project = window.store.projects.create_project("Garden")
    window.store.projects.update_project(dataclasses.replace(project, documents=(str(folder),)))
    window.projects.new_chat_in(project.id)
    documents.index(project.id)
    _indexed(qtbot, documents)

    _choose(window, str(model_folder / tiny_models.target.name))  # a chat model, not an embedding model
    text = _indexed(qtbot, documents)
    assert "could not be used, so passages are found by their words alone" in text
    assert "are indexed (2 documents)" in text
    with DocumentIndex(documents.index_path) as index:
        assert index.passage_count() > 0 and len(index.vectors()[0]) == 0


def test_the_documents_page_lists_the_embedding_models_after_none(qapp, tmp_path):
    from app.store import AppSettings

    first, second = str(tmp_path / "bge-small.gguf"), str(tmp_path / "nomic-embed.gguf")
    dialog = AppSettingsDialog(AppSettings(), embedding_models=[first, second])
    combo = dialog.documents_page.model
    assert [combo.itemText(i) for i in range(combo.count())] == [NONE_LABEL, "bge-small.gguf", "nomic-embed.gguf"]
    assert dialog.settings().documents_embedding == ""  # None is the default
    combo.setCurrentIndex(2)
    assert dialog.settings().documents_embedding == second
    dialog.close()

    # A saved choice the library no longer lists stays chosen: opening Settings never changes it.
    kept = AppSettingsDialog(AppSettings(documents_embedding=first), embedding_models=[])
    assert kept.settings().documents_embedding == first
    kept.close()


def test_a_question_the_model_does_not_embed_in_time_goes_by_its_words_and_says_so():
    """The question's thread waits at most QUESTION_DEADLINE_S for the question's vector (the process may be
    embedding a batch of passages); past it the question goes by its words, with a sentence saying why."""
    from app.ui.projects.embedding import WindowEmbedder

    class Busy:
        def embed(self, texts, timeout_s=None):
            raise TimeoutError(f"No answer came within {timeout_s:g} s.")

    embedder = WindowEmbedder("/models/bge-small.gguf")
    assert embedder.question_vector("When?") == (None, "")  # not loaded yet: words, and nothing more to say
    embedder._worker = Busy()  # type: ignore[assignment]
    vector, missed = embedder.question_vector("When?")
    assert vector is None
    assert missed == (
        "bge-small.gguf did not embed the question (No answer came within 3 s), so its passages were found by its "
        "words."
    )
