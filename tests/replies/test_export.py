"""Exporting a chat: Markdown a person reads, JSON with every token and round, and `specchat-cli export`."""

from __future__ import annotations

import json

import pytest

from app.cli import main
from app.engine.events import GenerationStats
from app.replies.export import EXPORT_FORMAT, chat_markdown, export_text, format_for_path, load_chat, write_export
from app.store.provenance import RoundRecord
from app.store import ChatStore, NotFoundError

ROUNDS = [
    RoundRecord(
        "model",
        3,
        [5, 6, 7],
        ["def", " add", " x"],
        kept=2,
        own=8,
        own_text="(",
        reason="r1",
        time_s=0.25,
        kind="draft",
        expected=2.4,
    ),
    RoundRecord("ngram", 2, [9, 10], ["a", "\ud83d"], kept=1, own=11, own_text=")", reason="r2", time_s=0.5),
]
TOKENS = [
    ("```python\n", "target"),
    ("def", "draft"),
    (" add", "draft"),
    ("(", "target"),
    ("a", "ngram"),
    (")", "target"),
]
STATS = GenerationStats(
    tokens=6, tokens_per_second=12.5, drafted=5, accepted=3, acceptance_rate=0.6, stop_reason="cancelled"
)


@pytest.fixture
def chat_id() -> int:
    """A chat with a user message, a reply stopped inside a code block (with rounds and a comparison) and an
    older reply saved before rounds were kept."""
    with ChatStore() as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "Write add()\nplease")
        reply = store.add_message(
            chat.id,
            "assistant",
            "".join(t for t, _ in TOKENS),
            stats=STATS,
            tokens=TOKENS,
            token_rounds=[-1, 0, 0, 0, 1, 1],
            rounds=ROUNDS,
            target_name="big.gguf",
            draft_name="small.gguf",
        )
        store.set_comparison(reply.id, {"identical": True, "plain_tokens_per_second": 9.0})
        store.add_message(
            chat.id, "assistant", "Old.", tokens=[("Old", "draft"), (".", "target")], target_name="big.gguf"
        )
        return chat.id


def test_markdown_reads_as_a_transcript(chat_id):
    with ChatStore() as store:
        text = chat_markdown(*load_chat(store, chat_id))
    assert text.startswith("# Write add() please\n")
    sections = text.split("\n## ")[1:]
    assert [s.split("\n", 1)[0] for s in sections] == ["You", "big.gguf + small.gguf", "big.gguf"]
    assert "Write add()\nplease" in sections[0]
    reply = sections[1]
    # The stopped reply's open code block is closed, so it does not swallow the next message.
    assert "```python\ndef add(a)\n```\n" in reply
    assert "*12.5 tok/s  ·  6 tokens  ·  60% accepted (3/5 drafted by the draft model)" in reply and "stopped*" in reply


def test_json_holds_every_token_round_and_comparison(chat_id):
    with ChatStore() as store:
        document = json.loads(export_text(store, chat_id, "json"))
    assert document["format"] == EXPORT_FORMAT
    assert document["chat"]["id"] == chat_id and document["chat"]["settings"]["temperature"] == 0.0
    user, reply, old = document["messages"]
    assert user["role"] == "user" and user["tokens"] is None and user["rounds"] is None
    assert [(t["text"], t["origin"], t["round"]) for t in reply["tokens"]] == [
        ("```python\n", "target", -1),
        ("def", "draft", 0),
        (" add", "draft", 0),
        ("(", "target", 0),
        ("a", "ngram", 1),
        (")", "target", 1),
    ]
    assert reply["rounds"][0] == {
        "drafter": "model",
        "k": 3,
        "proposed": [5, 6, 7],
        "proposed_text": ["def", " add", " x"],
        "kept": 2,
        "own": 8,
        "own_text": "(",
        "reason": "r1",
        "time_s": 0.25,
        "threads": 0,
        "kind": "draft",
        "expected": 2.4,
    }
    assert (reply["rounds"][1]["kind"], reply["rounds"][1]["expected"]) == ("", 0.0)  # not recorded
    assert reply["rounds"][1]["proposed_text"] == ["a", "\ud83d"]  # half a character, kept exactly
    assert reply["comparison"] == {"identical": True, "plain_tokens_per_second": 9.0}
    assert (reply["stats"], reply["target_name"], reply["draft_name"]) == (STATS.to_dict(), "big.gguf", "small.gguf")
    # A reply saved before rounds were kept: its tokens, no rounds.
    assert [(t["origin"], t["round"]) for t in old["tokens"]] == [("draft", -1), ("target", -1)]
    assert old["rounds"] is None and old["comparison"] is None


def test_write_export_picks_the_format_by_suffix_and_refuses_a_missing_chat(chat_id, tmp_path):
    assert (format_for_path("a.MD"), format_for_path("b.json"), format_for_path("c.txt")) == ("markdown", "json", None)
    with ChatStore() as store:
        assert write_export(store, chat_id, tmp_path / "chat.json") == "json"
        assert json.loads((tmp_path / "chat.json").read_text("utf-8"))["format"] == EXPORT_FORMAT
        assert write_export(store, chat_id, tmp_path / "chat.txt") == "markdown"
        assert (tmp_path / "chat.txt").read_text("utf-8").startswith("# ")
        with pytest.raises(NotFoundError, match="There is no chat 999"):
            write_export(store, 999, tmp_path / "none.md")
    assert not (tmp_path / "none.md").exists()


def test_cli_export_to_stdout_and_to_a_file(chat_id, tmp_path, capsys):
    assert main(["export", "--list"]) == 0
    assert capsys.readouterr().out.strip().endswith("\tWrite add() please")
    assert main(["export", str(chat_id)]) == 0
    assert capsys.readouterr().out.startswith("# Write add() please")
    assert main(["export", str(chat_id), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"][1]["rounds"][1]["kept"] == 1
    out = tmp_path / "export" / "chat.json"
    assert main(["export", str(chat_id), "--output", str(out)]) == 0
    assert json.loads(out.read_text("utf-8"))["chat"]["id"] == chat_id


@pytest.mark.parametrize(
    "args, says",
    [
        (["export", "999"], "There is no chat 999"),
        (["export"], "give a CHAT_ID"),
        (["export", "1", "--db", "{tmp}/nowhere.sqlite3"], "there is no chat database at"),
    ],
)
def test_cli_export_refusals_are_one_line_and_exit_2(chat_id, tmp_path, capsys, args, says):
    assert main([a.replace("{tmp}", str(tmp_path)) for a in args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and says in err[0]
    assert not (tmp_path / "nowhere.sqlite3").exists()  # no empty database is created


def test_cli_export_of_an_unwritable_path_is_one_line(chat_id, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["export", str(chat_id), "--output", str(blocker / "chat.md")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: cannot write {blocker / 'chat.md'}")


def test_attached_files_are_exported_with_their_message():
    from app.store.attachments import Attachment

    with ChatStore() as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "Fix it.", attachments=[Attachment("bug.py", "x = 1 +\n")])
        markdown = export_text(store, chat.id, "markdown")
        document = json.loads(export_text(store, chat.id, "json"))
    assert "Fix it.\n\nbug.py\n```py\nx = 1 +\n```" in markdown
    assert document["messages"][0]["content"] == "Fix it."
    assert document["messages"][0]["attachments"] == [{"name": "bug.py", "content": "x = 1 +\n"}]


THINKING = "221 / 13 = 17.\n\n```\n13 * 17\n"  # a code block left open, and a tag that would close the fold
THINKING_TOKENS = [("", "target"), ("221 / 13", "target"), (" = 17.\n\n```\n13 * 17\n", "draft"), ("", "target")]


def _thinking_chat(store: ChatStore) -> int:
    chat = store.create_chat("Primes")
    store.add_message(chat.id, "user", "Is 221 prime?")
    store.add_message(
        chat.id,
        "assistant",
        "No: 13 × 17.",
        tokens=[("No: 13 × 17.", "target")],
        token_rounds=[0],
        rounds=ROUNDS[:1],
        reasoning=THINKING + "</details> end",
        reasoning_tokens=THINKING_TOKENS[:3] + [(" end", "target")],
        reasoning_token_rounds=[-1, -1, 0, -1],
    )
    return chat.id


def test_markdown_folds_the_thinking_before_the_answer():
    with ChatStore() as store:
        text = chat_markdown(*load_chat(store, _thinking_chat(store)))
    reply = text.split("\n## ")[2]
    fold = reply.index("<details><summary>Thinking</summary>")
    assert fold < reply.index("</details>") < reply.index("No: 13 × 17.")
    inside = reply[fold : reply.index("\n</details>")]
    assert "221 / 13 = 17.\n\n```\n13 * 17\n" in inside and "&lt;/details&gt; end" in inside
    assert inside.endswith("```\n")  # its open code block is closed inside the fold
    assert "<think>" not in text and "Thinking" not in text.split("\n## ")[1]  # the question has none


def test_json_gives_the_thinking_with_its_tokens_and_none_for_messages_without():
    with ChatStore() as store:
        document = json.loads(export_text(store, _thinking_chat(store), "json"))
    question, reply = document["messages"]
    assert question["reasoning"] is None
    assert reply["content"] == "No: 13 × 17." and reply["reasoning"]["text"].startswith("221 / 13 = 17.")
    assert [(t["text"], t["origin"], t["round"]) for t in reply["reasoning"]["tokens"]] == [
        ("", "target", -1),
        ("221 / 13", "target", -1),
        (" = 17.\n\n```\n13 * 17\n", "draft", 0),
        (" end", "target", -1),
    ]


def test_a_chat_without_thinking_exports_as_before(chat_id):
    with ChatStore() as store:
        text = chat_markdown(*load_chat(store, chat_id))
        document = json.loads(export_text(store, chat_id, "json"))
    assert "<details>" not in text
    assert [m["reasoning"] for m in document["messages"]] == [None, None, None]
