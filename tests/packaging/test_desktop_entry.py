"""The Linux desktop entry: install writes a valid .desktop file and every icon under XDG_DATA_HOME, the entry
starts this installation, and uninstall removes exactly what install wrote."""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.platform import desktop_entry
from app.cli import desktop_cmd

pytestmark = pytest.mark.skipif(not desktop_entry.supported(), reason="freedesktop menus are a Linux/BSD thing")


@pytest.fixture
def data_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def parse_desktop_file(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if line and not line.startswith("#"))


def cli(*argv: str) -> int:
    """`specchat-cli desktop ...`: the sub-command registered on a parser the way app/cli/__init__.py does it."""
    parser = argparse.ArgumentParser(prog="specchat-cli")
    desktop_cmd.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_install_writes_entry_and_every_icon_then_uninstall_removes_them(data_home, capsys):
    assert cli("desktop", "install") == 0
    entry = data_home / "applications" / "specchat.desktop"
    keys = parse_desktop_file(entry)
    assert keys["Type"] == "Application"
    assert keys["Name"] == "SpecChat"
    assert keys["Icon"] == "specchat"
    assert keys["Terminal"] == "false"
    hicolor = data_home / "icons" / "hicolor"
    for size in desktop_entry.ICON_SIZES:
        png = hicolor / f"{size}x{size}" / "apps" / "specchat.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png_size(png) == (size, size)
    assert (hicolor / "scalable" / "apps" / "specchat.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")
    assert str(entry) in capsys.readouterr().out

    assert cli("desktop", "uninstall") == 0
    left = [p for p in data_home.rglob("*") if p.is_file() and "specchat" in p.name]
    assert left == []
    assert "Removed" in capsys.readouterr().out


def test_entry_starts_this_installation(data_home):
    desktop_entry.install()
    keys = parse_desktop_file(data_home / "applications" / "specchat.desktop")
    command = desktop_entry.launch_command()
    # The gui-script of this environment, found beside its Python even when the venv is not on PATH.
    if (Path(sys.executable).parent / "specchat").is_file():
        assert command == [str(Path(sys.executable).parent / "specchat")]
    assert keys["TryExec"] == command[0]
    assert Path(keys["TryExec"]).is_file()


def test_entry_passes_desktop_file_validate(data_home):
    validator = shutil.which("desktop-file-validate")
    if not validator:
        pytest.skip("desktop-file-validate not installed (apt-get install desktop-file-utils)")
    desktop_entry.install(command=["/opt/Spec Chat $1/SpecChat", "--flag"])  # a path that needs quoting
    result = subprocess.run(
        [validator, str(data_home / "applications" / "specchat.desktop")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""  # no warnings either


@pytest.mark.parametrize(
    "argument, expected",
    [
        ("/usr/bin/specchat", "/usr/bin/specchat"),
        ("/home/a b/SpecChat", '"/home/a b/SpecChat"'),
        ('/x/"q"$`\\y', '"/x/\\\\"q\\\\"\\\\$\\\\`\\\\\\\\y"'),
        ("/x/100%", "/x/100%%"),
    ],
)
def test_exec_arguments_are_quoted_by_the_spec(argument, expected):
    assert desktop_entry.quote_exec_argument(argument) == expected


def test_uninstall_without_install_is_harmless_and_keeps_other_apps_icons(data_home, capsys):
    other = data_home / "icons" / "hicolor" / "48x48" / "apps" / "other.png"
    other.parent.mkdir(parents=True)
    other.write_bytes(b"x")
    assert cli("desktop", "uninstall") == 0
    assert "nothing to remove" in capsys.readouterr().out
    desktop_entry.install()
    desktop_entry.uninstall()
    assert other.read_bytes() == b"x"


def test_relative_xdg_data_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_DATA_HOME", "relative/path")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert desktop_entry.data_home() == tmp_path / ".local" / "share"


def test_package_icons_match_resources():
    """app/data/icons is a copy of resources/ (packaging/render_icons.py writes both); they must not drift."""
    root = Path(__file__).resolve().parents[2]
    resources = root / "resources"
    if not resources.is_dir():
        pytest.skip("not a source checkout")
    assert desktop_entry.icon_svg().read_bytes() == (resources / "specchat.svg").read_bytes()
    for size in desktop_entry.ICON_SIZES:
        assert desktop_entry.icon_png(size).read_bytes() == (resources / "icons" / f"specchat-{size}.png").read_bytes()


def png_size(path: Path) -> tuple[int, int]:
    header = path.read_bytes()[16:24]  # the IHDR chunk's width and height
    return int.from_bytes(header[:4], "big"), int.from_bytes(header[4:], "big")
