"""The architecture holds: layers (import-linter contracts in pyproject.toml) and rooms of a navigable size."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> str:
    """A command of the test extra, from this Python's environment first."""
    exe = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert exe, f"{name} is part of the test extra (pip install -e '.[test]')"
    return exe


def test_layers_and_qt_contracts_are_kept():
    result = subprocess.run([_tool("lint-imports")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Layers: the window and the CLI on top, the engine near the bottom KEPT" in result.stdout
    assert "Only the window imports Qt KEPT" in result.stdout


def test_every_package_is_a_small_room_with_a_map():
    """At most 15 modules a folder (8 loose in app/), and an __init__ that names each of its modules."""
    for init in (ROOT / "app").rglob("__init__.py"):
        folder = init.parent
        modules = [p.name for p in folder.glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
        limit = 8 if folder == ROOT / "app" else 15
        assert len(modules) <= limit, f"{folder.relative_to(ROOT)} holds {len(modules)} modules"
        text = init.read_text()
        subpackages = [p.name for p in folder.iterdir() if (p / "__init__.py").exists()]
        if folder != ROOT / "app":
            missing = [m for m in modules if m not in text] + [f"{s}/" for s in subpackages if f"{s}/" not in text]
            assert not missing, f"{init.relative_to(ROOT)} does not map {missing}"


# The rule has no exceptions: a file past it is split where its second idea starts, never by line count.
MAX_FILE_LINES = 450


def test_no_file_of_the_app_is_a_giant():
    """A module holds one idea, and stays within 450 lines: one past it is split where its second idea starts."""
    sizes = {
        path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "app").rglob("*.py")
    }
    giants = {name: lines for name, lines in sizes.items() if lines > MAX_FILE_LINES}
    assert giants == {}, f"split these by idea: {giants}"


def _named_paths(text: str) -> set[str]:
    """The file and folder paths a text names in backquotes: "app/engine/", "local/decoder.py", "main_window.py"."""
    return set(re.findall(r"`([\w./-]+(?:\.py|/))`", text))


def _missing(names: set[str], under: list[Path]) -> list[str]:
    """The names that are no file or folder of the project: a full path as it is, a partial one as the end of one."""
    known = {
        p.relative_to(ROOT).as_posix() + ("/" if p.is_dir() else "")
        for folder in under
        for p in folder.rglob("*")
        if "__pycache__" not in p.parts
    }
    known |= {f"{folder.relative_to(ROOT).as_posix()}/" for folder in under}
    return sorted(n for n in names if n not in known and not any(k.endswith("/" + n) for k in known))


def test_the_architecture_page_and_the_app_s_map_name_only_what_exists():
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    under = [ROOT / "app", ROOT / "packaging", ROOT / "resources", ROOT / "tests"]
    assert _missing(_named_paths(architecture), under) == []
    app_map = (ROOT / "app" / "__init__.py").read_text()
    folders = set(re.findall(r"^- ([\w/ |.]+):", app_map, re.M))
    named = {name.strip() for line in folders for name in line.split("|")}
    assert _missing({f"app/{n}" for n in named}, [ROOT / "app"]) == []
    rooms = {p.name + "/" for p in (ROOT / "app").iterdir() if (p / "__init__.py").exists()}
    assert rooms <= named, f"app/__init__.py does not map {sorted(rooms - named)}"
    assert _missing({"app/engine/local/no_such_module.py"}, [ROOT / "app"]) == ["app/engine/local/no_such_module.py"]


def test_the_linter_passes():
    """ruff with the rule set in pyproject.toml: pyflakes, bugbear and the syntax errors, over the app and the tests."""
    result = subprocess.run(
        [_tool("ruff"), "check", "--no-cache", "app", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_code_is_formatted():
    """`ruff format` (line length 120, pyproject.toml) over the app, the tests and the packaging: one layout, so a
    diff shows what changed and not how someone wraps lines."""
    result = subprocess.run(
        [_tool("ruff"), "format", "--check", "--no-cache", "app", "tests", "packaging"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, "run `.venv/bin/ruff format app tests packaging`:\n" + result.stdout


@pytest.mark.slow
def test_the_type_checker_passes():
    """mypy over all of app/ (pyproject.toml): the wire and the protocol strictly, every engine against the
    ChatEngine protocol (the local, the remote, the dispatching and the tests' scripted one), and the rest but for
    the modules on the exceptions list, which is to shrink."""
    result = subprocess.run(
        [_tool("mypy"), "--python-executable", sys.executable, "--no-incremental"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_architecture_page_names_every_package():
    """A newcomer finds every room of app/ on the map, by its full path."""
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    packages = sorted(
        init.parent.relative_to(ROOT).as_posix()
        for init in (ROOT / "app").rglob("__init__.py")
        if init.parent != ROOT / "app"
    )
    unnamed = [p for p in packages if f"`{p}/`" not in architecture and f"`{p}`" not in architecture]
    assert unnamed == [], f"docs/architecture.md does not name {unnamed}"


def test_every_app_path_in_the_docs_exists():
    """A path into app/ that a doc names, backquoted or in a heading, leads to a file, module or folder that is there."""
    dead = []
    for doc in sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]:
        for path in set(re.findall(r"(?<![\w/])app/[\w./-]*[\w/]", doc.read_text())):
            if not (ROOT / path).exists() and not (ROOT / f"{path}.py").exists():
                dead.append(f"{doc.name}: {path}")
    assert dead == [], dead
