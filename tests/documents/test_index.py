"""The index kept current file by file, a removed document leaving nothing behind, cancelling between files,
the two rankings fused, and a question's passages numbered within its budget."""

from __future__ import annotations

import os

import pytest

from app.documents.indexer import refresh
from app.documents.retrieval import INSTRUCTION, REMINDER, retrieve
from app.documents.search import fuse, keyword_query, search
from tests.support.documents import HashedWordsEmbedder


@pytest.fixture
def folder(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tides.md").write_text("# Tides\n\nThe moon pulls the oceans into tides twice a day.\n")
    (docs / "reefs.txt").write_text("Coral reefs grow a few centimetres a year in warm shallow water.\n")
    return docs


def rows(index, table):
    return index.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def found(index, question, embedder=None):
    return [index.passages([pid])[pid].path for pid, _ in search(index, question, embedder)]


def test_a_refresh_reads_only_what_changed(index, folder):
    assert refresh(index, [str(folder)]).added == 2
    again = refresh(index, [str(folder)])
    assert (again.added, again.changed, again.unchanged, again.removed) == (0, 0, 2, 0)

    tides = folder / "tides.md"
    tides.write_text("# Tides\n\nSpring tides come at the full and the new moon.\n")
    os.utime(tides, ns=(1, 10**18))  # a new time for certain, whatever the file system's clock grain
    (folder / "kelp.txt").write_text("Kelp forests shelter otters.\n")
    summary = refresh(index, [str(folder)])

    assert (summary.added, summary.changed, summary.unchanged) == (1, 1, 1)
    assert found(index, "spring tides") == [str(tides)]
    assert found(index, "twice a day oceans") == []  # the old text is gone
    assert found(index, "otters") == [str(folder / "kelp.txt")]


def test_a_file_touched_but_not_changed_is_kept(index, folder):
    refresh(index, [str(folder)])
    os.utime(folder / "reefs.txt", ns=(1, 10**18))
    summary = refresh(index, [str(folder)])
    assert (summary.changed, summary.unchanged) == (0, 2)
    assert found(index, "coral") == [str(folder / "reefs.txt")]


def test_a_removed_document_leaves_nothing_behind(index, folder):
    refresh(index, [str(folder)], embedder=HashedWordsEmbedder(), embedder_name="hashed")
    (folder / "reefs.txt").unlink()
    summary = refresh(index, [str(folder)], embedder=HashedWordsEmbedder(), embedder_name="hashed")

    assert summary.removed == 1
    assert list(index.documents()) == [str(folder / "tides.md")]
    assert rows(index, "passages") == rows(index, "passage_vectors") == 1
    assert found(index, "coral reefs", HashedWordsEmbedder()) == [str(folder / "tides.md")]  # by meaning only
    assert index.conn.execute("SELECT count(*) FROM passage_words WHERE passage_words MATCH 'coral'").fetchone()[0] == 0


def test_a_refresh_of_one_folder_keeps_another_folders_documents(index, folder, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "deserts.txt").write_text("Dunes move with the wind.\n")
    refresh(index, [str(folder)])
    refresh(index, [str(other)])
    assert len(index.documents()) == 3


def test_cancelling_stops_between_files_and_keeps_whole_documents(index, folder):
    seen = []
    summary = refresh(
        index, [str(folder)], progress=seen.append, cancelled=lambda: len(seen) >= 1 and len(index.documents()) >= 1
    )

    assert summary.cancelled and len(index.documents()) == 1
    assert seen[0].total == 2 and seen[0].done == 0
    again = refresh(index, [str(folder)])  # the same command goes on from there
    assert (again.added, again.unchanged) == (1, 1)


def test_vectors_come_from_one_embedder_at_a_time(index, folder):
    refresh(index, [str(folder)])
    assert rows(index, "passage_vectors") == 0
    first = HashedWordsEmbedder(dim=32)
    summary = refresh(index, [str(folder)], embedder=first, embedder_name="hashed-32")
    assert summary.unchanged == 2 and rows(index, "passage_vectors") == 2  # filled in, not read again
    refresh(index, [str(folder)], embedder=HashedWordsEmbedder(dim=48), embedder_name="hashed-48")
    assert index.vectors()[1].shape == (2, 48)


def test_reciprocal_rank_fusion_prefers_what_both_rankings_agree_on():
    fused = fuse([[1, 2, 3], [3, 4, 1]])
    assert [pid for pid, _ in fused][:2] == [1, 3]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 63)
    assert {pid for pid, _ in fused} == {1, 2, 3, 4}


def test_a_question_is_asked_by_its_words_safely():
    assert keyword_query('What is "NEAR(moon tides)" NOT* the AND?') == '"near" OR "moon" OR "tides" OR "not"'
    assert keyword_query("what is it?") == ""


def test_a_question_gets_numbered_passages_within_its_budget(index, tmp_path):
    docs = tmp_path / "many"
    docs.mkdir()
    for number in range(20):
        (docs / f"note{number:02}.txt").write_text(f"Lighthouse keeper log {number}. " + "Calm sea today. " * 40)
    refresh(index, [str(docs)])

    retrieval = retrieve(index, "lighthouse keeper", token_budget=600, roots=[str(docs)])

    assert 1 <= len(retrieval.sources) < 20
    assert [s.number for s in retrieval.sources] == list(range(1, len(retrieval.sources) + 1))
    assert len(retrieval.prompt_block) / 3.5 <= 600
    assert retrieval.prompt_block.startswith(INSTRUCTION)
    for source in retrieval.sources:
        assert f"[{source.number}] {source.path}" in retrieval.prompt_block
    assert retrieval.message("Who keeps it?").endswith(f"Question: Who keeps it?\n\n{REMINDER}")
    assert retrieve(index, "lighthouse", 600, roots=[str(tmp_path / "elsewhere")]).sources == ()
