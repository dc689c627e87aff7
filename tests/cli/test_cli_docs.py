"""`specchat-cli index PATH` and `generate --docs PATH`: documents that fit go whole after the message; larger ones
are indexed and the passages that match the question go numbered, listed by `--json` as "sources" in citation
order (synthetic models, so what is tested is what is sent and listed, not what a tiny model says)."""

from __future__ import annotations

import json

import pytest

from app.cli import generate_cmd, main
from app.documents.retrieval import INSTRUCTION, NO_EMBEDDER_SENTENCE, REMINDER


@pytest.fixture
def sent(monkeypatch):
    """The messages each generate run sends the model."""
    messages = []
    build = generate_cmd.build_engine

    def recording_engine(args):
        engine = build(args)
        chat = engine.chat

        def recording_chat(sent_messages, config, **kwargs):
            messages.append(sent_messages)
            return chat(sent_messages, config, **kwargs)

        engine.chat = recording_chat
        return engine

    monkeypatch.setattr(generate_cmd, "build_engine", recording_engine)
    return messages


def generate(tiny_models, *args):
    return main(["generate", "--target", str(tiny_models.target), "--max-tokens", "4", "--threads", "1", *args])


@pytest.fixture
def library(tmp_path):
    """A folder far larger than a 2,048-token context: 40 notes, one of them about the lighthouse."""
    folder = tmp_path / "library"
    folder.mkdir()
    for number in range(40):
        (folder / f"note{number:02}.md").write_text(f"# Note {number}\n\n" + "Nothing much happened today. " * 60)
    (folder / "keeper.md").write_text("# Keeper\n\nThe lighthouse keeper winds the lamp clock at dusk.\n")
    return folder


def test_documents_that_fit_go_whole_after_the_message(tiny_models, tmp_path, sent, capsys):
    notes = tmp_path / "notes.md"
    notes.write_text("The lamp is lit at dusk.\n")
    assert generate(tiny_models, "--chat", "When is the lamp lit?", "--docs", str(notes), "--json") == 0
    assert sent[0][-1]["content"] == "When is the lamp lit?\n\nnotes.md\n```md\nThe lamp is lit at dusk.\n```"
    sources = json.loads(capsys.readouterr().out)["sources"]
    assert sources == [{"path": str(notes), "start": 0, "end": 25, "score": 1.0, "text": "The lamp is lit at dusk.\n"}]


def test_larger_documents_are_indexed_and_their_passages_cited(tiny_models, library, sent, capsys):
    question = "Who winds the lighthouse lamp clock?"
    code = generate(tiny_models, "--ctx", "2048", "--chat", question, "--docs", str(library), "--json")
    out, err = capsys.readouterr()

    assert code == 0, err
    sources = json.loads(out)["sources"]
    assert sources[0]["path"] == str(library / "keeper.md")
    assert set(sources[0]) == {"path", "start", "end", "score", "text"}
    assert sources[0]["text"] == (library / "keeper.md").read_text()[sources[0]["start"] : sources[0]["end"]]
    assert [s["score"] for s in sources] == sorted((s["score"] for s in sources), reverse=True)
    content = sent[0][-1]["content"]
    assert content.startswith(INSTRUCTION) and content.endswith(f"Question: {question}\n\n{REMINDER}")
    for number, source in enumerate(sources, start=1):  # numbered in the order "sources" lists them
        assert f"[{number}] {source['path']}" in content
    assert NO_EMBEDDER_SENTENCE in err


def test_plain_output_says_what_each_number_points_at(tiny_models, library, capsys):
    assert generate(tiny_models, "--ctx", "2048", "--chat", "lighthouse keeper?", "--docs", str(library)) == 0
    err = capsys.readouterr().err
    assert f"[1] {library / 'keeper.md'} (characters 0-" in err


def test_index_builds_then_refreshes_with_a_progress_bar(library, tmp_path, capsys):
    db = tmp_path / "docs.db"
    assert main(["index", str(library), "--db", str(db)]) == 0
    out, err = capsys.readouterr()
    assert out == f"Indexed 41 files (41 added, 0 changed, 0 unchanged, 0 removed): 81 passages in {db}.\n"
    assert "[####################] 100%  41/41 files" in err

    (library / "keeper.md").unlink()
    assert main(["index", str(library), "--db", str(db)]) == 0
    assert capsys.readouterr().out.startswith("Indexed 40 files (0 added, 0 changed, 40 unchanged, 1 removed)")


def test_bad_docs_options_are_one_sentence(tiny_models, tmp_path, capsys):
    assert generate(tiny_models, "--prompt", "x", "--docs", str(tmp_path)) == 2
    assert (
        capsys.readouterr().err
        == "error: --docs goes with --chat MESSAGE (the message is the question the documents answer)\n"
    )
    assert generate(tiny_models, "--chat", "x", "--docs", str(tmp_path / "gone")) == 2
    assert capsys.readouterr().err == f"error: --docs: no document to read ({tmp_path / 'gone'} does not exist)\n"
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "picture.png").write_bytes(b"\x89PNG")
    assert main(["index", str(empty), "--db", str(tmp_path / "i.db")]) == 2
    assert capsys.readouterr().err.endswith(
        f"error: no document to index in {empty} (text, Markdown, code, HTML, PDF, DOCX)\n"
    )
    not_an_index = tmp_path / "not.db"
    not_an_index.write_text("hello")
    assert main(["index", str(tmp_path), "--db", str(not_an_index)]) == 2
    assert "is not a documents index SpecChat can read" in capsys.readouterr().err


def test_an_embedding_model_gives_the_index_its_vectors_and_a_chat_model_is_refused(
    tiny_models, library, tmp_path, capsys
):
    """`index --embedding FILE` reads every passage with the model (the no-embedding note is gone), `generate
    --docs --embedding` finds the right passage with it, and a chat model given as one is refused in a sentence."""
    from app.documents.index import DocumentIndex
    from app.testing.synthetic_embedding import write_tiny_embedding_model

    model = write_tiny_embedding_model(tmp_path / "tiny-embed.gguf")
    db = tmp_path / "docs.db"
    assert main(["index", str(library), "--db", str(db), "--embedding", str(model)]) == 0
    assert NO_EMBEDDER_SENTENCE not in capsys.readouterr().err
    with DocumentIndex(db) as index:
        assert len(index.vectors()[0]) == index.passage_count() > 0
        assert index.embedder_name() == model.name

    code = generate(
        tiny_models, "--chat", "lighthouse keeper?", "--docs", str(library), "--docs-db", str(db),
        "--embedding", str(model), "--json",
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert json.loads(out)["sources"][0]["path"] == str(library / "keeper.md")

    assert main(["index", str(library), "--db", str(db), "--embedding", str(tiny_models.target)]) == 2
    err = capsys.readouterr().err
    assert "is a chat model, not an embedding model" in err and err.count("\n") == 1
