#!/usr/bin/env python3
"""Sets SpecChat up in ./.venv with a llama.cpp that runs on the machine that builds it.

Why this script rather than a bare `pip install`: llama-cpp-python ships as source, and llama.cpp's default
(`GGML_NATIVE=ON`) compiles for every extension the CPU reports, AMX included. On Sapphire-Rapids-class Xeons in a
virtual machine the AMX kernels die with SIGILL (`tilezero`) on the first real prompt although the CPU reports AMX
as usable (llama.cpp #28756). So on x86 Linux this builds with `GGML_NATIVE=OFF` and turns on the vector extensions
the CPU has one by one, AMX left off. pip caches a built wheel under the source's name whatever `CMAKE_ARGS` was, so
a wheel from a native build would be reused; this script keeps its own wheels, one per set of build options, and
installs the one that matches.

Usage: python3 packaging/install.py [--extras test] [--rebuild]
Extra CMake options (a GPU build, say) come from CMAKE_ARGS: CMAKE_ARGS="-DGGML_CUDA=on" python3 packaging/install.py
Offline, from a source archive, into the Python running it (app/bench/gpu_check.py does this on a GPU machine):
python3 packaging/install.py --source llama_cpp_python-X.tar.gz --llama-only (scikit-build-core and cmake
installed already: nothing is downloaded).
Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
# The build options of the llama-cpp-python installed in the venv, so a changed option set reinstalls it.
BUILD_MARK = VENV / "specchat-llama-build.txt"

# CMake option -> the /proc/cpuinfo flag that allows it. AMX stays off (see the module docstring).
_CPU_OPTIONS = {
    "GGML_AVX": "avx",
    "GGML_AVX2": "avx2",
    "GGML_FMA": "fma",
    "GGML_F16C": "f16c",
    "GGML_BMI2": "bmi2",
    "GGML_AVX_VNNI": "avx_vnni",
    "GGML_AVX512": "avx512f",
    "GGML_AVX512_VBMI": "avx512vbmi",
    "GGML_AVX512_VNNI": "avx512_vnni",
    "GGML_AVX512_BF16": "avx512_bf16",
}
_AMX_OFF = ["-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"]


def cpu_cmake_args(cpuinfo: str | None = None) -> list[str]:
    """CMake options for this CPU without AMX; none where llama.cpp's own defaults are safe (not x86 Linux)."""
    if cpuinfo is None:
        if platform.system() != "Linux" or platform.machine().lower() not in ("x86_64", "amd64"):
            return []
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return []
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags = set(line.partition(":")[2].split())
            break
    if not flags:
        return []
    options = [f"-D{name}={'ON' if flag in flags else 'OFF'}" for name, flag in _CPU_OPTIONS.items()]
    return ["-DGGML_NATIVE=OFF", *options, *_AMX_OFF]


def build_options(user_args: str) -> list[str]:
    # The RPC backend lets a model's layers run on other machines (Settings -> Devices); user options come last
    # so they win.
    return ["-DGGML_RPC=ON", *cpu_cmake_args(), *user_args.split()]


def pinned_llama_version() -> str:
    for line in (ROOT / "pyproject.toml").read_text().splitlines():
        if '"llama-cpp-python==' in line:
            return line.split("==", 1)[1].split('"', 1)[0]
    raise SystemExit("pyproject.toml pins no llama-cpp-python version")


def wheel_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "specchat" / "llama-wheels"


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def run(cmd: list[str], **kwargs: object) -> None:
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[arg-type]


def built_wheel(
    version: str, options: list[str], rebuild: bool, python: Path | None = None, source: Path | None = None
) -> Path:
    """The llama-cpp-python wheel for these options, built once (about 10 minutes on 2 cores) and kept. `source`:
    build from this source archive with the build tools `python` has, offline, instead of fetching it."""
    python = python or venv_python()
    py = subprocess.run(
        [str(python), "-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}')"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    origin = [source.name] if source else []
    key = hashlib.sha256(" ".join([version, py, platform.machine(), *options, *origin]).encode()).hexdigest()[:16]
    folder = wheel_cache() / key
    wheels = sorted(folder.glob("llama_cpp_python-*.whl")) if folder.is_dir() else []
    if wheels and not rebuild:
        print(f"using the llama.cpp build in {folder}")
        return wheels[0]
    print(f"building llama-cpp-python {version} with {' '.join(options)} (about 10 minutes on 2 cores)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, CMAKE_ARGS=" ".join(options))
        if source:
            run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "wheel",
                    "--no-deps",
                    "--no-cache-dir",
                    "--no-index",
                    "--no-build-isolation",
                    "-w",
                    tmp,
                    str(source),
                ],
                env=env,
            )
        else:
            run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "wheel",
                    "--no-deps",
                    "--no-cache-dir",
                    "--no-binary",
                    "llama-cpp-python",
                    "-w",
                    tmp,
                    f"llama-cpp-python=={version}",
                ],
                env=env,
            )
        built = sorted(Path(tmp).glob("llama_cpp_python-*.whl"))
        if not built:
            raise SystemExit("pip built no llama-cpp-python wheel")
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.whl"):
            old.unlink()
        (folder / "options.txt").write_text(" ".join(options) + "\n")
        target = folder / built[0].name
        shutil.move(str(built[0]), target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extras", default="", help="optional dependencies to install too, e.g. 'test'")
    parser.add_argument("--rebuild", action="store_true", help="compile llama.cpp again even if a build is kept")
    parser.add_argument("--source", type=Path, help="build llama-cpp-python from this source archive, offline")
    parser.add_argument(
        "--llama-only",
        action="store_true",
        help="only build llama-cpp-python and install it into the Python running this script",
    )
    args = parser.parse_args(argv)
    if sys.version_info < (3, 10):
        raise SystemExit("SpecChat needs Python 3.10 or newer")
    if args.source and not args.source.is_file():
        raise SystemExit(f"--source {args.source}: no such file")
    if args.llama_only:
        here = Path(sys.executable)
        wheel = built_wheel(
            pinned_llama_version(),
            build_options(os.environ.get("CMAKE_ARGS", "")),
            args.rebuild,
            here,
            args.source.resolve() if args.source else None,
        )
        run([str(here), "-m", "pip", "install", "--no-deps", "--no-index", "--force-reinstall", str(wheel)])
        return 0
    if not venv_python().exists():
        run([sys.executable, "-m", "venv", str(VENV)])
    version = pinned_llama_version()
    options = build_options(os.environ.get("CMAKE_ARGS", ""))
    wheel = built_wheel(version, options, args.rebuild, source=args.source.resolve() if args.source else None)
    mark = f"{wheel}\n"
    if args.rebuild or not BUILD_MARK.exists() or BUILD_MARK.read_text() != mark:
        # --force-reinstall: the same version built with other options is otherwise "already satisfied".
        run([str(venv_python()), "-m", "pip", "install", "--no-deps", "--force-reinstall", str(wheel)])
        BUILD_MARK.write_text(mark)
    project = f".[{args.extras}]" if args.extras else "."
    # pip sees llama-cpp-python==<pin> installed and never touches it again here.
    run([str(venv_python()), "-m", "pip", "install", "-e", project], cwd=ROOT)
    info = subprocess.run(
        [str(venv_python()), "-c", "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"],
        capture_output=True,
        text=True,
    )
    print("llama.cpp build:", info.stdout.strip() or info.stderr.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
