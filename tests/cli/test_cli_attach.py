"""`specchat-cli generate --chat ... --attach FILE`: files go with the message as the window sends them (name and a
fenced block after the text); a file that cannot be attached is one line on stderr and exit 2."""

from __future__ import annotations

import pytest

from app.cli import generate_cmd, main
from app.store.attachments import MAX_ATTACHMENT_BYTES

from tests.cli.test_cli_validation import cli, one_line_error


def test_attached_files_follow_the_message_in_fenced_blocks(tiny_models, tmp_path, monkeypatch, capsys):
    first, second = tmp_path / "mean.py", tmp_path / "notes.md"
    first.write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    second.write_text("Use `mean`.\n")
    sent = []
    build = generate_cmd.build_engine

    def recording_engine(args):
        engine = build(args)  # the real engine on the synthetic models
        chat = engine.chat

        def recording_chat(messages, config, **kwargs):
            sent.append(messages)
            return chat(messages, config, **kwargs)

        engine.chat = recording_chat
        return engine

    monkeypatch.setattr(generate_cmd, "build_engine", recording_engine)
    code = main(
        [
            "generate",
            "--target",
            str(tiny_models.target),
            "--ngram",
            "--chat",
            "Add a docstring.",
            "--attach",
            str(first),
            "--attach",
            str(second),
            "--max-tokens",
            "4",
            "--threads",
            "1",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert sent == [
        [
            {
                "role": "user",
                "content": (
                    "Add a docstring.\n\nmean.py\n```py\ndef mean(xs):\n    return sum(xs) / len(xs)\n```"
                    "\n\nnotes.md\n```md\nUse `mean`.\n```"
                ),
            }
        ]
    ]


@pytest.mark.slow
def test_files_that_cannot_be_attached_are_refused_in_one_line(tiny_models, tmp_path):
    image, big = tmp_path / "logo.png", tmp_path / "huge.txt"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    big.write_text("x" * 2 * MAX_ATTACHMENT_BYTES)
    base = ("generate", "--target", tiny_models.target, "--chat", "What is this?")
    assert (
        one_line_error(cli(*base, "--attach", image))
        == "error: --attach: logo.png is a binary file; only text and code files can be attached."
    )
    assert (
        one_line_error(cli(*base, "--attach", big))
        == "error: --attach: huge.txt is 512 KB; files up to 256 KB can be attached."
    )
    assert (
        one_line_error(cli(*base, "--attach", tmp_path / "missing.py"))
        == f"error: --attach: {tmp_path / 'missing.py'} is not a file; only files can be attached."
    )
    assert (
        one_line_error(cli("generate", "--target", tiny_models.target, "--prompt", "Hi", "--attach", image))
        == "error: --attach goes with --chat MESSAGE (attachments are part of a chat message)"
    )
