"""Each bad input of issue 56 (item 6) gets one sentence, indexing goes on with the rest, and nothing already
indexed is lost: a 2 GB file, a binary named .txt, a damaged or password-protected PDF, a damaged DOCX, a link
loop, a folder of 100,000 files, a file removed mid-index."""

from __future__ import annotations

import os

import pytest

from app.documents.indexer import refresh
from app.documents.retrieval import retrieve
from app.documents.walk import find_documents
from tests.support.documents import encrypted_pdf_bytes, pdf_bytes


@pytest.fixture
def folder(tmp_path):
    """A folder with one good document, indexed first in each test."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Tides\n\nThe moon pulls the oceans into tides twice a day.\n")
    return docs


def sources_for(index, question, roots):
    return [s.path for s in retrieve(index, question, 2000, roots=roots).sources]


def one_note_about(summary, path):
    notes = [note.sentence for note in summary.notes if note.path == str(path)]
    assert len(notes) == 1, summary.notes
    assert notes[0].count(". ") == 0 and notes[0].endswith("."), notes[0]  # one sentence
    return notes[0]


def test_each_bad_file_is_one_sentence_and_the_rest_is_indexed(index, folder):
    assert refresh(index, [str(folder)]).added == 1
    huge = folder / "huge.txt"
    with open(huge, "wb") as f:  # a sparse 2 GB file: no disk used, and never read
        f.truncate(2_000_000_000)
    (folder / "binary.txt").write_bytes(b"ELF\x00\x01\x02 looks like text to its name only")
    (folder / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    (folder / "damaged.pdf").write_bytes(pdf_bytes(["Half a page"])[:70])
    (folder / "locked.pdf").write_bytes(encrypted_pdf_bytes(["The secret is tides."]))
    (folder / "damaged.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (folder / "fine.txt").write_text("Seashells are found on the shore at low tide.\n")

    summary = refresh(index, [str(folder)])

    assert "2.0 GB" in one_note_about(summary, huge)
    assert "binary" in one_note_about(summary, folder / "binary.txt")
    assert "not UTF-8" in one_note_about(summary, folder / "latin1.txt")
    assert "damaged" in one_note_about(summary, folder / "damaged.pdf")
    assert "password" in one_note_about(summary, folder / "locked.pdf")
    assert "damaged" in one_note_about(summary, folder / "damaged.docx")
    assert (summary.added, summary.unchanged) == (1, 1)
    assert sources_for(index, "seashells shore", [str(folder)]) == [str(folder / "fine.txt")]
    assert sources_for(index, "moon oceans", [str(folder)]) == [str(folder / "good.md")]  # nothing lost


def test_a_link_loop_is_walked_once(index, folder):
    (folder / "inner").mkdir()
    (folder / "inner" / "deep.md").write_text("Coral reefs grow slowly.\n")
    os.symlink(folder, folder / "inner" / "back")  # docs/inner/back -> docs: a loop

    summary = refresh(index, [str(folder)])

    assert summary.added == 2
    assert "walked once" in one_note_about(summary, folder / "inner" / "back")


def test_a_file_removed_mid_index_is_one_sentence_and_the_rest_goes_on(index, folder):
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(f"Notes {name} about whales.\n")

    def remove_b(progress):
        if progress.current.endswith("a.txt"):
            (folder / "b.txt").unlink()  # gone between the walk and its turn

    summary = refresh(index, [str(folder)], progress=remove_b)

    assert "removed" in one_note_about(summary, folder / "b.txt")
    assert summary.added == 3  # a, c and good.md
    assert set(index.documents()) == {str(folder / n) for n in ("a.txt", "c.txt", "good.md")}


def test_a_folder_past_the_bound_is_walked_to_the_bound_and_says_so(tmp_path):
    many = tmp_path / "many"
    many.mkdir()
    for number in range(300):
        (many / f"{number:05}.txt").write_text("x")

    found = find_documents([str(many)], max_documents=100)

    assert len(found.files) == 100 and not found.complete
    assert len(found.notes) == 1 and "more than 100 documents" in found.notes[0].sentence


@pytest.mark.slow
def test_a_folder_of_100_000_files_is_walked_with_a_bound(tmp_path):
    many = tmp_path / "many"
    many.mkdir()
    for number in range(100_000):
        (many / f"{number:06}.log").touch()

    found = find_documents([str(many)])

    assert len(found.files) == 10_000 and not found.complete
    assert "more than 10,000 documents" in found.notes[0].sentence


def test_a_path_that_is_not_there_is_one_sentence(index, tmp_path):
    summary = refresh(index, [str(tmp_path / "nowhere")])
    assert "does not exist" in one_note_about(summary, tmp_path / "nowhere")
