"""Start-up time to a shown window, bundle against pip install, measured in one run: `python packaging/measure_startup.py`.

Each command is started on a private X server (Xvfb) with a fresh SpecChat home seeded by one warm-up start, and the
clock stops when a window of class SpecChat is mapped (xdotool). Runs alternate between the two commands so that
whatever else the machine is doing hits both alike; medians and their ratio are printed, with the bundle's size.
Needs Xvfb and xdotool (Debian: apt install xvfb xdotool) and Qt's X11 libraries.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def start_x_server() -> tuple[subprocess.Popen, str]:
    """A private Xvfb on a random display number (low numbers are often taken by desktops or other tests).

    -noreset: by default Xvfb resets whenever its last client leaves, and a start that connects during the reset
    fails; the polling here connects and leaves all the time.
    """
    xvfb = shutil.which("Xvfb")
    if not xvfb or not shutil.which("xdotool"):
        raise SystemExit("needs Xvfb and xdotool: apt install xvfb xdotool")
    for number in random.sample(range(200, 900), 10):
        socket = Path(f"/tmp/.X11-unix/X{number}")
        if socket.exists() or Path(f"/tmp/.X{number}-lock").exists():
            continue
        server = subprocess.Popen(
            [xvfb, f":{number}", "-screen", "0", "1280x800x24", "-nolisten", "tcp", "-noreset"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and server.poll() is None and not socket.exists():
            time.sleep(0.05)
        if socket.exists():
            return server, f":{number}"
        server.kill()
        server.wait()
    raise SystemExit("could not start Xvfb")


def window_shown(display: str, pid: int) -> bool:
    found = subprocess.run(
        ["xdotool", "search", "--onlyvisible", "--pid", str(pid), "--class", "SpecChat"],
        env=dict(os.environ, DISPLAY=display),
        capture_output=True,
        text=True,
    )
    return bool(found.stdout.strip())


def time_to_window(command: list[str], display: str, home: Path, timeout_s: float = 120.0) -> float:
    env = dict(os.environ, DISPLAY=display, QT_QPA_PLATFORM="xcb", SPECCHAT_HOME=str(home), HF_HUB_OFFLINE="1")
    env.pop("WAYLAND_DISPLAY", None)
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        while time.perf_counter() - started < timeout_s:
            if window_shown(display, process.pid):
                return time.perf_counter() - started
            if process.poll() is not None:
                raise SystemExit(
                    f"{command[0]} exited {process.returncode} before showing a window:\n"
                    f"{process.stderr.read().decode(errors='replace')}"
                )
            time.sleep(0.01)
        raise SystemExit(f"{command[0]} showed no window in {timeout_s:.0f} s")
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file() and not path.is_symlink())


def pip_install_bytes(distribution: str = "specchat") -> int:
    """What the pip install's runtime dependencies occupy in site-packages (the app's own source excluded; not
    counting the Python interpreter, which the bundle carries and a pip install borrows)."""
    from importlib import metadata

    from packaging.requirements import Requirement  # the PyPI library (this script's folder is not a package)

    seen: set[str] = set()
    todo = [Requirement(spec) for spec in metadata.requires(distribution) or []]
    total = 0
    while todo:
        requirement = todo.pop()
        name = requirement.name.lower().replace("_", "-")
        if name in seen or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue
        total += sum(
            Path(dist.locate_file(f)).stat().st_size for f in dist.files or [] if Path(dist.locate_file(f)).is_file()
        )
        todo += [Requirement(spec) for spec in dist.requires or []]
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", type=Path, default=ROOT / "dist" / "SpecChat" / "SpecChat")
    parser.add_argument(
        "--pip",
        type=Path,
        default=Path(sys.executable).parent / "specchat",
        help="the pip-installed `specchat` (default: beside this Python)",
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    commands = {"bundle": [str(args.bundle)], "pip": [str(args.pip)]}
    server, display = start_x_server()
    times: dict[str, list[float]] = {name: [] for name in commands}
    try:
        with tempfile.TemporaryDirectory(prefix="specchat-startup-") as tmp:
            homes = {name: Path(tmp) / name for name in commands}
            for name, command in commands.items():  # warm-up: creates the database, fills the disk cache
                time_to_window(command, display, homes[name])
            for _ in range(args.runs):
                for name, command in commands.items():
                    times[name].append(time_to_window(command, display, homes[name]))
    finally:
        server.terminate()
        server.wait()
    medians = {name: statistics.median(values) for name, values in times.items()}
    bundle_folder = args.bundle.resolve().parent
    report = {
        "runs": args.runs,
        "seconds": times,
        "median_s": medians,
        "bundle_over_pip": medians["bundle"] / medians["pip"],
        "bundle_bytes": folder_size(bundle_folder),
        "pip_dependencies_bytes": pip_install_bytes(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for name in commands:
            print(f"{name:7} median {medians[name]:.2f} s  ({', '.join(f'{t:.2f}' for t in times[name])})")
        print(f"bundle / pip start-up: {report['bundle_over_pip']:.2f}x")
        print(
            f"bundle size {report['bundle_bytes'] / 2**20:.0f} MiB ({bundle_folder}); the pip install's runtime "
            f"dependencies {report['pip_dependencies_bytes'] / 2**20:.0f} MiB "
            f"({report['bundle_bytes'] / report['pip_dependencies_bytes']:.2f}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
