"""Put SpecChat in this user's application menu on Linux (freedesktop), and take it out again.

Writes `applications/specchat.desktop` and the icon in every hicolor size under `$XDG_DATA_HOME` (normally
~/.local/share), nothing system-wide and nothing that needs root. The entry starts whatever is running this code:
the bundle's executable when frozen by PyInstaller, otherwise the `specchat` script of this Python environment, so
`SpecChat --install-desktop` and `specchat-cli desktop install` each register their own installation (the last one
wins). No Qt here: it runs from the command line, before any window exists.

The icon files are package data (app/data/icons, copied from resources/ by packaging/render_icons.py), so a pip
install, an editable install and the bundle all find them next to this module.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from app.common.atomic_write import write_atomic

APP_ID = "specchat"  # the .desktop file's and the icon's name
DESKTOP_FILE = f"{APP_ID}.desktop"
ICON_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)
# Qt's X11 windows carry the application name as WM_CLASS; the menu uses it to match windows to the entry.
WM_CLASS = "SpecChat"
# Characters that oblige quoting an Exec argument (Desktop Entry Specification, "The Exec key").
_EXEC_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def icon_dir() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / "icons"


def icon_png(size: int) -> Path:
    return icon_dir() / f"{APP_ID}-{size}.png"


def icon_svg() -> Path:
    return icon_dir() / f"{APP_ID}.svg"


def window_icon_files() -> list[Path]:
    """The PNGs to build the window's QIcon from, smallest first (PNG, so no SVG plugin is needed)."""
    return [icon_png(size) for size in ICON_SIZES if icon_png(size).is_file()]


def data_home(environ: Mapping[str, str] = os.environ) -> Path:
    """$XDG_DATA_HOME, or ~/.local/share when it is unset, empty or relative (as the XDG spec says)."""
    value = environ.get("XDG_DATA_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / ".local" / "share"


def launch_command() -> list[str]:
    """The command that starts this installation of SpecChat."""
    if getattr(sys, "frozen", False):  # the PyInstaller bundle
        return [os.path.abspath(sys.executable)]
    # The gui-script of the environment this Python belongs to, even when that environment is not on PATH.
    script_name = "specchat.exe" if os.name == "nt" else "specchat"
    beside = Path(sys.executable).parent / script_name
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("specchat")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "app.ui.shell.main"]


def quote_exec_argument(argument: str) -> str:
    """One argument as the Exec key wants it: quoted when needed, then escaped as a desktop-file string."""
    argument = argument.replace("%", "%%")  # a lone % would start a field code
    if any(char in _EXEC_RESERVED for char in argument):
        escaped = "".join("\\" + char if char in '"`$\\' else char for char in argument)
        argument = f'"{escaped}"'
    return argument.replace("\\", "\\\\")  # the string type's own escaping, applied on top


def desktop_entry_text(command: Sequence[str]) -> str:
    exec_line = " ".join(quote_exec_argument(argument) for argument in command)
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        "Version=1.4",
        "Name=SpecChat",
        "GenericName=Local AI Chat",
        "Comment=Chat with local GGUF models, sped up by speculative decoding",
        f"Exec={exec_line}",
        f"TryExec={command[0].replace(chr(92), chr(92) * 2)}",
        f"Icon={APP_ID}",
        "Terminal=false",
        "Categories=Utility;",
        "Keywords=LLM;AI;chat;GGUF;llama;speculative;",
        "StartupNotify=true",
        f"StartupWMClass={WM_CLASS}",
    ]
    return "\n".join(lines) + "\n"


@dataclass
class DesktopFiles:
    """Where the entry and its icons go under one data home."""

    home: Path

    @property
    def entry(self) -> Path:
        return self.home / "applications" / DESKTOP_FILE

    @property
    def hicolor(self) -> Path:
        return self.home / "icons" / "hicolor"

    def png(self, size: int) -> Path:
        return self.hicolor / f"{size}x{size}" / "apps" / f"{APP_ID}.png"

    @property
    def svg(self) -> Path:
        return self.hicolor / "scalable" / "apps" / f"{APP_ID}.svg"

    def all_paths(self) -> list[Path]:
        return [self.entry, *(self.png(size) for size in ICON_SIZES), self.svg]


@dataclass
class Result:
    """What install or uninstall did, for the command to report."""

    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    command: list[str] = field(default_factory=list)


def _write_atomically(path: Path, data: bytes) -> None:
    write_atomic(path, data, mode=0o644)  # the desktop reads entries and icons as another process


def install(home: Optional[Path] = None, command: Optional[Sequence[str]] = None) -> Result:
    """Write the .desktop entry and the icons for the current user; replaces an earlier installation's."""
    files = DesktopFiles(home or data_home())
    command = list(command or launch_command())
    result = Result(command=command)
    sources = {files.png(size): icon_png(size) for size in ICON_SIZES}
    sources[files.svg] = icon_svg()
    missing = [str(source) for source in sources.values() if not source.is_file()]
    if missing:
        raise FileNotFoundError(f"SpecChat's icon files are missing from this installation: {', '.join(missing)}")
    # Icons first, so a menu that notices the entry finds its icon.
    for target, source in sources.items():
        _write_atomically(target, source.read_bytes())
        result.written.append(target)
    _write_atomically(files.entry, desktop_entry_text(command).encode("utf-8"))
    result.written.append(files.entry)
    refresh_caches(files)
    return result


def uninstall(home: Optional[Path] = None) -> Result:
    """Remove the entry and icons that install() wrote; other applications' files are left alone."""
    files = DesktopFiles(home or data_home())
    result = Result()
    for path in files.all_paths():
        if path.is_file() or path.is_symlink():
            path.unlink()
            result.removed.append(path)
    if result.removed:
        refresh_caches(files)
    return result


def refresh_caches(files: DesktopFiles) -> None:
    """Tell menus and icon themes about the change, with whatever tools this system has (none is required)."""
    quiet: dict[str, Any] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "timeout": 60, "check": False}
    tool = shutil.which("update-desktop-database")
    if tool and files.entry.parent.is_dir():
        subprocess.run([tool, "-q", str(files.entry.parent)], **quiet)
    if not files.hicolor.is_dir():
        return
    tool = shutil.which("gtk-update-icon-cache")
    if tool and (files.hicolor / "icon-theme.cache").is_file():
        # Only refresh a cache that is already there: a new one would hide icons other programs add later
        # without updating it.
        subprocess.run([tool, "-f", "-t", "-q", str(files.hicolor)], **quiet)
    else:
        os.utime(files.hicolor)  # icon themes notice a changed folder time


def supported() -> bool:
    """Freedesktop menus exist on Linux and the BSDs, not on Windows or macOS."""
    return os.name == "posix" and sys.platform != "darwin"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=("install", "uninstall"),
        help="install: add SpecChat to the application menu; uninstall: remove it",
    )


def run(args: argparse.Namespace) -> int:
    if not supported():
        print(
            "The desktop entry is for Linux desktops. On Windows and macOS, pin or drag the SpecChat "
            "application from its folder instead.",
            file=sys.stderr,
        )
        return 2
    files = DesktopFiles(data_home())
    try:
        if args.action == "install":
            result = install(files.home)
        else:
            result = uninstall(files.home)
    except OSError as exc:
        print(f"Could not {args.action} the desktop entry: {exc}", file=sys.stderr)
        return 1
    if args.action == "install":
        print(
            f"SpecChat is in your application menu (it may take a moment to appear).\n"
            f"  entry: {files.entry}\n"
            f"  starts: {' '.join(result.command)}\n"
            f"  icons: {len(result.written) - 1} files under {files.hicolor}"
        )
    elif result.removed:
        print(f"Removed SpecChat from your application menu ({len(result.removed)} files).")
    else:
        print("SpecChat was not in your application menu; nothing to remove.")
    return 0


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="specchat-desktop", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
