"""The README and docs/ stay true to the project: every relative link reaches a file (and heading), every command the
README names runs, and every option the CLI page shows is one `specchat-cli` takes. Markdown is read by
markdown-it-py, the renderer the window already uses, so code spans and fenced blocks are told apart as GitHub does.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from tests.support.processes import cli_command

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
# Each line naming a command ends its command at a shell comment, and several commands share a line with `&&`.
COMMENT = re.compile(r"\s+#\s.*$")


def _tokens(path: Path) -> list[Token]:
    return MarkdownIt("commonmark").enable("table").parse(path.read_text(encoding="utf-8"))


def _inline_children(tokens: list[Token]):
    for token in tokens:
        yield from token.children or ()


def github_anchor(title: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation dropped (hyphens and underscores kept), spaces as
    hyphens."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


@lru_cache(maxsize=None)
def anchors(path: Path) -> frozenset[str]:
    """The heading anchors of a Markdown file, a repeated heading numbered as GitHub numbers it ("x", "x-1")."""
    tokens = _tokens(path)
    seen: dict[str, int] = {}
    out = set()
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type != "heading_open":
            continue
        text = "".join(child.content for child in inline.children or () if child.type in ("text", "code_inline"))
        slug = github_anchor(text)
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return frozenset(out)


def relative_links(path: Path) -> list[str]:
    """Every link and image target of a Markdown file that is not a web address."""
    targets = []
    for child in _inline_children(_tokens(path)):
        target = child.attrs.get("href") if child.type == "link_open" else child.attrs.get("src")
        if isinstance(target, str) and not re.match(r"^[a-z][a-z0-9+.-]*:", target):
            targets.append(target)
    return targets


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in relative_links(path):
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / file_part).resolve() if file_part else path
        if not destination.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
            broken.append(f"{target} (no such heading)")
    return broken


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_heading(path):
    assert broken_links(path) == []


def test_a_broken_link_or_heading_is_found(tmp_path):
    (tmp_path / "other.md").write_text("# Load settings\n\n## Tools in the window\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text(
        "[a](other.md#load-settings) [b](other.md#tools-in-the-window) [c](missing.md) "
        "[d](other.md#nowhere) ![e](gone.png) [f](https://example.com) `[g](not-a-link.md)`\n",
        encoding="utf-8",
    )
    assert broken_links(page) == [
        "missing.md (no such file)",
        "other.md#nowhere (no such heading)",
        "gone.png (no such file)",
    ]


def test_the_readme_fits_on_a_screen_and_opens_with_its_two_commands():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200
    # .ci/run runs the line ending in "# run the tests"; the app's line comes first.
    assert lines[3].endswith("# run the app") and lines[4].endswith("# run the tests")


def _commands(path: Path) -> list[str]:
    """The commands a Markdown file names: each line of a shell block (split at `&&`, comments dropped), and each
    code span that starts like a command."""
    found = []
    for token in _tokens(path):
        if token.type == "fence" and token.info.strip() in ("", "bash", "sh", "shell", "console"):
            for line in token.content.splitlines():
                found += [part.strip() for part in COMMENT.sub("", line).split("&&") if part.strip()]
    for child in _inline_children(_tokens(path)):
        if child.type == "code_inline" and re.match(
            r"(\S*/)?(specchat-cli|python3? -m|python3? \S+\.py)\b", child.content
        ):
            found.append(child.content)
    return found


def _options(command: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])(--[a-z][\w-]*)", command))


def _words(command: str) -> list[str]:
    """A command's words, with the optional parts' brackets dropped."""
    text = command.replace("[", " ").replace("]", " ")
    try:
        return shlex.split(text)
    except ValueError:  # a quote left open in a shortened example: the words still name the command
        return text.split()


def _help_command(command: str) -> list[str] | None:
    """The `--help` run that shows a command exists, or None for the two commands CI itself runs."""
    words = _words(command)
    program = Path(words[0]).name
    if program == "specchat-cli":
        return cli_command(*words[1:2], "--help")
    if program in ("python", "python3") and words[1] == "-m":
        return None if words[2] == "pytest" else [sys.executable, "-m", words[2], "--help"]
    if program in ("python", "python3") and words[1].endswith(".py"):
        return [sys.executable, str(ROOT / words[1]), "--help"]
    if program == "specchat":
        return None
    raise AssertionError(f"the README names a command this test cannot check: {command}")


def test_every_command_the_readme_names_runs():
    commands = _commands(README)
    assert any("packaging/install.py" in c for c in commands) and any("specchat" in c for c in commands)
    runs: dict[tuple[str, ...], set[str]] = {}
    for command in commands:
        argv = _help_command(command)
        if argv is not None:
            runs.setdefault(tuple(argv), set()).update(_options(command))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Started together: each is a fresh interpreter importing the app, and the machine may be busy.
    started = {
        argv: subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for argv in runs
    }
    try:
        for argv, process in started.items():
            out, _ = process.communicate(timeout=120)
            assert process.returncode == 0, f"{' '.join(argv)} failed:\n{out}"
            assert "usage:" in out
            assert {o for o in runs[argv] if o not in out} == set(), f"{' '.join(argv)} lacks options the README names"
    finally:
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


def _cli_help(subcommand: str) -> str:
    from app.cli import build_parser

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        build_parser().parse_args([subcommand, "--help"])
    assert exit_.value.code == 0
    return out.getvalue()


@pytest.mark.parametrize("page", ["cli.md", "api.md", "user-guide.md", "benchmarks.md"])
def test_every_specchat_cli_command_the_docs_show_takes_its_options(page):
    commands = [
        c for c in _commands(ROOT / "docs" / page) if _words(c)[0].endswith("specchat-cli") and len(_words(c)) > 1
    ]
    problems = []
    for command in commands:
        words = _words(command)
        subcommand = words[1]
        text = _cli_help(subcommand)
        problems += [f"{subcommand} {o}" for o in sorted(_options(command)) if o not in text]
    assert commands and problems == []


def test_an_option_no_command_takes_is_found():
    assert "--no-such-option" not in _cli_help("generate") and "--draft-max" in _cli_help("generate")
