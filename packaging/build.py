"""Build SpecChat's self-contained one-folder bundle with PyInstaller: `python packaging/build.py`.

Run it with the Python of the environment SpecChat is installed in (a venv with `pip install -e .`); the bundle
is made from that environment's packages. PyInstaller and Pillow are build-only tools: they are installed into the
same environment when missing. The result is dist/SpecChat/ (and dist/SpecChat.app on macOS); start
dist/SpecChat/SpecChat, or register it in the Linux application menu with `dist/SpecChat/SpecChat --install-desktop`.
"""

from __future__ import annotations

import argparse
import filecmp
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "packaging" / "specchat.spec"
BUILD_TOOLS = ("pyinstaller>=6.10", "pillow>=10")
NAME = "SpecChat"


def ensure_build_tools() -> None:
    missing = [
        requirement
        for requirement, module in zip(BUILD_TOOLS, ("PyInstaller", "PIL"))
        if importlib.util.find_spec(module) is None
    ]
    if missing:
        print(f"installing build tools into {sys.prefix}: {' '.join(missing)}", flush=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *missing], check=True)


def link_duplicate_libraries(bundle: Path) -> int:
    """Replace each llama.cpp library that is a byte-for-byte copy of its sonamed twin by a link to it.

    Wheels cannot hold symbolic links, so libllama.so and libllama.so.0 arrive as two files; Python opens the first,
    the libraries find each other by the second. A link keeps both names for half the space. Returns bytes saved.
    """
    if os.name != "posix":
        return 0
    saved = 0
    for library in bundle.rglob("llama_cpp/lib/lib*.so"):
        versioned = library.with_name(library.name + ".0")
        if library.is_symlink() or not versioned.is_file() or not filecmp.cmp(library, versioned, shallow=False):
            continue
        saved += library.stat().st_size
        library.unlink()
        library.symlink_to(versioned.name)
    return saved


def strip_python_debug_info(bundle: Path) -> int:
    """Remove debug information from the Python runtime's own libraries (libpython, lib-dynload), when it has any.

    Some Python builds (pyenv, self-compiled) carry it: tens of megabytes nobody uses in a bundle. Other packages'
    libraries are left alone; wheels built with auditwheel are edited in ways `strip` can break. Returns bytes saved.
    """
    strip = shutil.which("strip")
    if not strip or not sys.platform.startswith("linux"):
        return 0
    candidates = [*bundle.rglob("libpython*.so*"), *bundle.rglob("lib-dynload/*.so")]
    before = sum(path.stat().st_size for path in candidates)
    debug = [path for path in candidates if not path.is_symlink() and b".debug_info" in path.read_bytes()]
    if debug:
        subprocess.run([strip, "--strip-debug", *map(str, debug)], check=True)
    return before - sum(path.stat().st_size for path in candidates)


def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def build(dist: Path, work: Path) -> Path:
    ensure_build_tools()
    sys.path.insert(0, str(ROOT / "packaging"))
    from render_icons import write_platform_icons

    icons = work / "icons"
    write_platform_icons(icons)
    env = dict(os.environ, SPECCHAT_PLATFORM_ICONS=str(icons))
    command = [
        sys.executable,
        "-m",
        "PyInstaller",
        str(SPEC),
        "--noconfirm",
        "--log-level",
        "WARN",
        "--distpath",
        str(dist),
        "--workpath",
        str(work / "pyinstaller"),
    ]
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, env=env, cwd=ROOT)
    bundle = dist / NAME
    link_duplicate_libraries(bundle)
    strip_python_debug_info(bundle)
    return bundle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the bundle goes (default: dist/)")
    parser.add_argument(
        "--work",
        type=Path,
        default=ROOT / "build",
        help="PyInstaller's cache and the .ico/.icns (default: build/); reusing it makes rebuilds faster",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        bundle = build(args.dist.resolve(), args.work.resolve())
    except subprocess.CalledProcessError as exc:
        print(f"build failed: {' '.join(map(str, exc.cmd))} exited {exc.returncode}", file=sys.stderr)
        return 1
    executable = bundle / (f"{NAME}.exe" if os.name == "nt" else NAME)
    print(f"built {executable} ({folder_size(bundle) / 2**20:.0f} MiB, {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
