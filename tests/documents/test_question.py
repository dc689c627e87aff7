"""What documents add to one question, as the CLI and the window share it: the documents whole when they fit
comfortably, else the question's passages numbered; and the same message again from the sources kept with it."""

from __future__ import annotations

from app.documents.index import DocumentIndex
from app.documents.indexer import refresh
from app.documents.question import DocsInput, docs_budget, retrieved_passages, whole_documents


def test_the_budget_is_half_of_what_the_reply_leaves():
    assert docs_budget(4096, 512) == 1792
    assert docs_budget(512, 512) == 256  # never less than a passage needs


def test_documents_that_fit_go_whole_and_those_that_do_not_are_retrieved(tmp_path):
    small = tmp_path / "tides.md"
    small.write_text("# Tides\n\nThe moon pulls the oceans into tides twice a day.\n")
    docs = whole_documents([str(small)], budget=1000)
    assert docs is not None and docs.whole and [s.path for s in docs.sources] == [str(small)]
    text = docs.text("Why are there tides?")
    assert text.startswith("Why are there tides?") and "twice a day" in text

    big = tmp_path / "reefs.md"
    big.write_text("".join(f"## Reef {n}\n\nCoral reef number {n} grows slowly in warm water.\n\n" for n in range(400)))
    assert whole_documents([str(small), str(big)], budget=1000) is None
    with DocumentIndex(tmp_path / "index.db") as index:
        refresh(index, [str(tmp_path)])
        retrieved = retrieved_passages(index, "Why does the moon make tides?", 1000, roots=[str(tmp_path)])
    assert not retrieved.whole and retrieved.sources[0].path == str(small)
    assert [s.number for s in retrieved.sources] == list(range(1, len(retrieved.sources) + 1))
    asked = retrieved.text("Why does the moon make tides?")
    assert "[1] " + str(small) in asked and "Question: Why does the moon make tides?" in asked

    # Rebuilt from the sources kept with the question, the model reads the same message again.
    assert DocsInput.from_sources(retrieved.sources).text("Why does the moon make tides?") == asked
    assert DocsInput.from_sources(docs.sources).text("Why are there tides?") == text
    assert DocsInput.from_sources(()).text("plain") == "plain"
