"""The desktop bundle: built with PyInstaller from this checkout, it starts offscreen, opens the window, loads the
synthetic model pair and generates with speculation; it resolves the same folders as a pip install; without a
display it explains instead of crashing.

Building takes a minute or two (PyInstaller is installed into the running environment first if missing). A bundle
built from the same sources and packages is reused from build/test-bundle/, and SPECCHAT_BUNDLE=path/to/SpecChat
tests an existing bundle instead of building one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_CACHE = ROOT / "build" / "test-bundle"
EXECUTABLE = "SpecChat.exe" if os.name == "nt" else "SpecChat"
# What the bundle is made of besides the sources: a change in any of these makes a new build.
BUNDLED_DISTRIBUTIONS = (
    "llama_cpp_python",
    "PySide6_Essentials",
    "numpy",
    "huggingface_hub",
    "platformdirs",
    "gguf",
    "Jinja2",
    "pyqtgraph",
    "pyinstaller",
    "pyinstaller-hooks-contrib",
)


def sources_fingerprint() -> str:
    """A hash of everything a build reads: app/, packaging/, the Python version and the bundled packages' versions."""
    digest = hashlib.sha256(sys.version.encode())
    for name in BUNDLED_DISTRIBUTIONS:
        try:
            digest.update(f"{name}=={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name} missing".encode())
    for folder in ("app", "packaging"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def environment_for_bundle(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("XDG_", "SPECCHAT_"))}
    env.update(HOME=str(tmp_path / "home"), SPECCHAT_HOME=str(tmp_path / "specchat-home"), HF_HUB_OFFLINE="1")
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def bundle() -> Path:
    """dist/SpecChat/SpecChat built from this checkout (or reused, or given by SPECCHAT_BUNDLE)."""
    given = os.environ.get("SPECCHAT_BUNDLE")
    if given:
        return Path(given)
    fingerprint = sources_fingerprint()
    folder = BUILD_CACHE / fingerprint
    executable = folder / "dist" / "SpecChat" / EXECUTABLE
    if (folder / "complete").is_file() and executable.is_file():
        return executable
    if BUILD_CACHE.is_dir():  # builds of other sources: keep only PyInstaller's work cache, which speeds this one
        for old in BUILD_CACHE.iterdir():
            if old.name != "work":
                shutil.rmtree(old, ignore_errors=True)
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "packaging" / "build.py"),
            "--dist",
            str(folder / "dist"),
            "--work",
            str(BUILD_CACHE / "work"),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, f"the bundle did not build:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    (folder / "complete").write_text(fingerprint)
    return executable


def run_bundle(executable: Path, *args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(executable), *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_bundle_self_test_opens_window_and_generates_with_speculation(bundle, tmp_path):
    # One OpenMP thread: on a busy 2-core machine, llama.cpp's OpenMP barrier sometimes never returns with 2 threads
    # (pip install and bundle alike; an engine matter, reported). Remove once that is fixed.
    env = environment_for_bundle(tmp_path, QT_QPA_PLATFORM="offscreen")
    result = run_bundle(bundle, "--self-test", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "self-test: ok" in result.stdout
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_bundle_collected_what_the_app_loads_on_demand(bundle, tmp_path):
    result = run_bundle(bundle, "--check-bundle", env=environment_for_bundle(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "check-bundle: ok" in result.stdout


@pytest.mark.slow
def test_bundle_uses_the_same_folders_as_a_pip_install(bundle, tmp_path):
    """Chats, settings and models are found wherever a pip install keeps them (platformdirs, no SPECCHAT_HOME)."""
    env = environment_for_bundle(tmp_path)
    del env["SPECCHAT_HOME"]
    from_bundle = json.loads(run_bundle(bundle, "--print-paths", env=env).stdout)
    from_pip = json.loads(
        subprocess.run(
            [sys.executable, str(ROOT / "packaging" / "launcher.py"), "--print-paths"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert from_bundle == from_pip
    home = str(tmp_path / "home")
    assert all(path.startswith(home) for path in from_bundle.values()), from_bundle


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11/Wayland displays are a Linux matter")
def test_bundle_without_a_display_explains_instead_of_crashing(bundle, tmp_path):
    env = environment_for_bundle(tmp_path)
    for variable in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(variable, None)
    result = run_bundle(bundle, env=env, timeout=60)
    assert result.returncode == 1
    assert "needs a graphical display" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="freedesktop menus are a Linux matter")
def test_bundle_installs_its_own_desktop_entry(bundle, tmp_path):
    data_home = tmp_path / "xdg-data"
    env = environment_for_bundle(tmp_path, XDG_DATA_HOME=str(data_home))
    assert run_bundle(bundle, "--install-desktop", env=env).returncode == 0
    entry = (data_home / "applications" / "specchat.desktop").read_text(encoding="utf-8")
    assert f"TryExec={bundle}\n" in entry
    assert (data_home / "icons" / "hicolor" / "256x256" / "apps" / "specchat.png").is_file()
    assert run_bundle(bundle, "--uninstall-desktop", env=env).returncode == 0
    assert not [p for p in data_home.rglob("specchat*") if p.is_file()]


def test_platform_icons_are_made_from_the_pngs(tmp_path):
    """The .ico (Windows) and .icns (macOS) the build makes hold the icon at the sizes those systems use."""
    image = pytest.importorskip("PIL.Image", reason="Pillow is a build-only dependency")
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        from render_icons import ICO_SIZES, write_platform_icons
    finally:
        sys.path.remove(str(ROOT / "packaging"))
    ico, icns = write_platform_icons(tmp_path)
    with image.open(ico) as opened:
        assert {size[0] for size in opened.info["sizes"]} == set(ICO_SIZES)
    with image.open(icns) as opened:
        assert {(16, 16, 2), (128, 128, 1), (256, 256, 1), (512, 512, 1)} <= set(opened.info["sizes"])
