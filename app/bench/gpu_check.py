"""`python -m app.bench.gpu_check`: SpecChat's GPU path measured in one run, on a machine with nothing to download.

What it does, in order (the whole run is meant to fit in 10 minutes on an H200):
1. builds llama-cpp-python with CUDA through packaging/install.py, from a trimmed source archive carried with the
   working tree (SOURCE_DIR); the same build's CMake tree also yields llama.cpp's llama-completion and
   llama-speculative-simple, the references;
2. writes synthetic models of real shapes (app.testing.shaped): a 1.5B-class and a 7B-class target with random
   16-bit weights, and a 0.5B-class draft that agrees with both by construction;
3. measures, per target: our plain decoding against llama-completion (`bench --plain-vs-native`), speculation with
   the draft at k=8 against llama-speculative-simple and Auto against plain (`bench`), where Auto GPU layers
   put each model (app.engine.placement.gpu_fit), and 1, 2 and 4 requests at once in one batch, plain and Auto
   (app.bench.concurrent).
Each step's result, or why it failed, goes to OUT/gpu-check.json and a table on stdout; a failed step does not stop
the later ones.

Preparing the source (here, with network; the archive is never committed: .gitignore lists SOURCE_DIR):
    python -m app.bench.gpu_check --prepare-source
downloads the pinned llama-cpp-python source (pip download), drops what a CUDA build does not read (llama.cpp's
test vocabularies, docs, web UI, other backends) and writes SOURCE_DIR/llama_cpp_python-<version>.tar.gz, under
MAX_SOURCE_BYTES. On the GPU machine (the device tool: carry ["gpu-src"]):
    python -m app.bench.gpu_check --out OUT
The machine needs the CUDA toolkit (nvcc), cmake, a C++ compiler and, in the Python running this, the project's
runtime dependencies and scikit-build-core; it says which are missing before building anything.

`--dry-run` (CI, any CPU): no build, the installed llama-cpp-python, the tiny shapes, a few tokens; the references
where found on this machine, skipped otherwise. It checks that every step runs and reports, not any speed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parent.parent.parent
SOURCE_DIR = ROOT / "gpu-src"
MAX_SOURCE_BYTES = 60 * 1024 * 1024  # the device tool carries 64 MiB with the working tree
# Parts of the llama-cpp-python source a CUDA build never reads (paths inside its top folder).
TRIMMED = (
    ".git",
    ".github",
    "docs",
    "docker",
    "examples",
    "tests",
    "vendor/llama.cpp/models",
    "vendor/llama.cpp/docs",
    "vendor/llama.cpp/media",
    "vendor/llama.cpp/benches",
    "vendor/llama.cpp/tests",
    "vendor/llama.cpp/gguf-py",
    "vendor/llama.cpp/tools/ui",
    "vendor/llama.cpp/tools/server/public",
    "vendor/llama.cpp/tools/server/webui",
    "vendor/llama.cpp/.github",
    "vendor/llama.cpp/ggml/src/ggml-sycl",
    "vendor/llama.cpp/ggml/src/ggml-vulkan",
    "vendor/llama.cpp/ggml/src/ggml-opencl",
    "vendor/llama.cpp/ggml/src/ggml-metal",
    "vendor/llama.cpp/ggml/src/ggml-hexagon",
    "vendor/llama.cpp/ggml/src/ggml-cann",
    "vendor/llama.cpp/ggml/src/ggml-webgpu",
    "vendor/llama.cpp/ggml/src/ggml-zdnn",
    "vendor/llama.cpp/ggml/src/ggml-et",
    "vendor/llama.cpp/ggml/src/ggml-kompute",
    "vendor/llama.cpp/ggml/src/ggml-openvino",
    "vendor/llama.cpp/ggml/src/ggml-virtgpu",
)
# The CUDA build: this GPU's architecture only (all of them would take several times longer), and llama.cpp's
# tools and examples in the same CMake tree, which scikit-build-core keeps in SKBUILD_BUILD_DIR. llama-cpp-python's
# own copy of tools/mtmd (image input: this check measures text only) is off: llama.cpp's tools add that folder
# too, and CMake refuses one folder added twice.
CUDA_CMAKE_ARGS = (
    "-DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=native -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=ON "
    "-DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF"
)
REFERENCES = ("llama-completion", "llama-speculative-simple")
# (target shape, draft shape) per run; app.testing.shaped.SHAPES.
PAIRS = {"1.5b": ("1.5b", "0.5b"), "7b": ("7b", "0.5b")}
DRY_PAIRS = {"tiny": ("tiny-target", "tiny-draft")}
STEP_TIMEOUT_S = 240


def _install_script():
    spec = importlib.util.spec_from_file_location("specchat_install", ROOT / "packaging" / "install.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare_source(dest: Path = SOURCE_DIR, log: Callable[[str], None] = print) -> Path:
    """Download the pinned llama-cpp-python source, trim it and write it to `dest` (needs the network)."""
    version = _install_script().pinned_llama_version()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                "-d",
                tmp,
                f"llama-cpp-python=={version}",
            ],
            check=True,
        )
        archive = next(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        top = next(p for p in Path(tmp).iterdir() if p.is_dir())
        for part in TRIMMED:
            shutil.rmtree(top / part, ignore_errors=True)
        dest.mkdir(parents=True, exist_ok=True)
        out = dest / archive.name
        with tarfile.open(out, "w:gz") as tar:
            tar.add(top, arcname=top.name)
    size = out.stat().st_size
    if size > MAX_SOURCE_BYTES:
        raise SystemExit(f"the trimmed source is {size / 2**20:.0f} MiB, over {MAX_SOURCE_BYTES / 2**20:.0f} MiB")
    log(f"wrote {out} ({size / 2**20:.1f} MiB)")
    return out


def missing_prerequisites(build: bool) -> list[str]:
    """What this machine lacks for the run, one sentence each."""
    problems = []
    needed = ["numpy", "gguf", "jinja2"] + (["scikit_build_core"] if build else ["llama_cpp"])
    for module in needed:
        if importlib.util.find_spec(module) is None:
            problems.append(f"the Python module {module} is not installed for {sys.executable}")
    if build:
        for tool in ("nvcc", "cmake"):
            if shutil.which(tool) is None:
                problems.append(f"{tool} is not on PATH")
        if not sorted(SOURCE_DIR.glob("llama_cpp_python-*.tar.gz")):
            problems.append(
                f"no source archive in {SOURCE_DIR}: run `python -m app.bench.gpu_check "
                "--prepare-source` where there is network, and carry that folder"
            )
    return problems


def build(work: Path, log: Callable[[str], None]) -> dict[str, str]:
    """Build and install llama-cpp-python with CUDA; the references' paths from the same build tree."""
    archive = sorted(SOURCE_DIR.glob("llama_cpp_python-*.tar.gz"))[-1]
    tree = work / "build"
    env = dict(
        os.environ,
        CMAKE_ARGS=CUDA_CMAKE_ARGS,
        SKBUILD_BUILD_DIR=str(tree),
        CMAKE_BUILD_PARALLEL_LEVEL=str(os.cpu_count() or 4),
    )
    started = time.monotonic()
    subprocess.run(
        [sys.executable, str(ROOT / "packaging" / "install.py"), "--source", str(archive), "--llama-only", "--rebuild"],
        check=True,
        env=env,
    )
    log(f"built llama-cpp-python with CUDA in {time.monotonic() - started:.0f} s")
    return {name: str(found[0]) for name in REFERENCES if (found := sorted(tree.rglob(f"bin/{name}")))}


def write_models(
    work: Path, pairs: dict[str, tuple[str, str]], log: Callable[[str], None]
) -> dict[str, tuple[Path, Path]]:
    from app.testing.shaped import SHAPES, write_shaped_model

    written: dict[str, Path] = {}
    out = {}
    for name, (target, draft) in pairs.items():
        for shape in (target, draft):
            if shape not in written:
                started = time.monotonic()
                written[shape] = write_shaped_model(work / "models" / f"synthetic-{shape}.gguf", SHAPES[shape])
                log(
                    f"wrote the {shape} model ({written[shape].stat().st_size / 2**30:.2f} GiB) in "
                    f"{time.monotonic() - started:.0f} s"
                )
        out[name] = (written[target], written[draft])
    return out


def _bench(args: list[str], log: Callable[[str], None]) -> dict:
    """One `python -m app bench ... --json` in a process of its own (a llama.cpp abort ends that step only)."""
    cmd = [sys.executable, "-m", "app", "bench", *args, "--json"]
    log("+ " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"bench exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return json.loads(proc.stdout)


def _concurrent(target: Path, draft: Path, tokens: int, threads: int, log: Callable[[str], None]) -> dict:
    """N requests at once through the batch, plain and Auto, every layer on the GPU (a process of its own)."""
    cmd = [
        sys.executable,
        "-m",
        "app.bench.concurrent",
        "--target",
        str(target),
        "--draft",
        str(draft),
        "--tokens",
        str(tokens),
        "--threads",
        str(threads),
        "--gpu-layers",
        "999",
        "--modes",
        "plain,auto",
        "--n",
        "1,2,4",
        "--json",
    ]
    log("+ " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT_S, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"the batch bench exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return {"rows": json.loads(proc.stdout)}


def placement(target: Path, draft: Path, n_ctx: int) -> dict:
    """Where Auto GPU layers put the pair, in the window's own words."""
    from app.engine.config import GPU_LAYERS_AUTO
    from app.engine.placement.devices import list_devices
    from app.engine.placement.gpu_fit import resolve

    report = list_devices()
    chosen = resolve(target, draft, n_ctx, GPU_LAYERS_AUTO, GPU_LAYERS_AUTO, report=report)
    return {
        "target_layers": chosen.target_layers,
        "draft_layers": chosen.draft_layers,
        "explained": chosen.explanation,
        "backends": chosen.backends,
        "devices": [
            f"{d.name} ({d.description}, {d.free_bytes / 2**30:.0f} of {d.total_bytes / 2**30:.0f} GiB free)"
            for d in report.devices
        ],
    }


def measure(
    pair: tuple[Path, Path],
    tools: dict[str, str],
    *,
    tokens: int,
    repeats: int,
    threads: int,
    log: Callable[[str], None],
) -> dict:
    target, draft = pair
    common = ["--target", str(target), "--max-tokens", str(tokens), "--threads", str(threads), "--ctx", "4096"]
    steps: dict[str, Callable[[], dict]] = {
        "placement": lambda: placement(target, draft, 4096),
        "speculation": lambda: _bench(
            common
            + [
                "--draft",
                str(draft),
                "--modes",
                "draft,auto",
                "--k",
                "8",
                "--only",
                "code,code-edit",
                "--repeats",
                str(repeats),
            ]
            + (
                ["--llama-spec", tools["llama-speculative-simple"]]
                if "llama-speculative-simple" in tools
                else ["--no-llama"]
            ),
            log,
        ),
    }
    steps["batch"] = lambda: _concurrent(target, draft, tokens, threads, log)
    if "llama-completion" in tools:
        steps["plain"] = lambda: _bench(
            common
            + [
                "--plain-vs-native",
                "--repeats",
                str(repeats),
                "--long-repeats",
                "1",
                "--llama-completion",
                tools["llama-completion"],
            ],
            log,
        )
    results: dict = {}
    for name, step in steps.items():
        try:
            results[name] = step()
        except Exception as exc:  # one step's failure is its result; the others still run
            results[name] = {"error": f"{type(exc).__name__}: {exc}"}
            log(f"{name} failed: {results[name]['error']}")
    if "llama-completion" not in tools:
        results["plain"] = {"skipped": "llama-completion was not found"}
    return results


def summary_lines(report: dict) -> list[str]:
    """The figures a note quotes, a line each."""
    lines = [f"GPU check ({report['mode']}), {report['tokens']} tokens, {report['repeats']} repetitions"]
    for name, result in report["pairs"].items():
        plain, spec, place = result.get("plain", {}), result.get("speculation", {}), result.get("placement", {})
        if "plain_vs_llama" in plain:
            lines.append(f"  {name}: plain decoding / llama-completion {plain['plain_vs_llama']['median']:.3f}x")
        else:
            lines.append(f"  {name}: plain decoding / llama-completion: {plain.get('error') or plain.get('skipped')}")
        if "overall" in spec:
            overall = spec["overall"]
            for mode in ("draft k=8", "auto"):
                if mode in overall:
                    lines.append(f"  {name}: {mode} / plain {overall[mode]['geomean_ratio_vs_plain']:.3f}x")
            refs = [(p["prompt"], r) for p in spec.get("prompts", []) for r in p.get("llama_cpp", {}).values()]
            for prompt, ref in refs:
                if "ours_vs_llama_cpp" in ref:
                    lines.append(
                        f"  {name}: {prompt}: draft k=8 / llama-speculative-simple {ref['ours_vs_llama_cpp']:.3f}x"
                    )
        else:
            lines.append(f"  {name}: speculation: {spec.get('error')}")
        lines.append(f"  {name}: Auto GPU layers: {place.get('explained') or place.get('error')}")
        batch = result.get("batch", {})
        for row in batch.get("rows", []):
            lines.append(
                f"  {name}: {row['mode']} with {row['n']} requests at once: {row['aggregate']:.1f} tok/s, "
                f"{row['vs_plain_1']:.2f}x one plain stream"
            )
        if "error" in batch:
            lines.append(f"  {name}: requests at once: {batch['error']}")
    return lines


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--prepare-source",
        action="store_true",
        help=f"download and trim the llama-cpp-python source into {SOURCE_DIR.name}/ (needs network)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="no build, tiny models, a few tokens: that every step runs (CI)"
    )
    parser.add_argument("--out", type=Path, help="where the models and gpu-check.json go (default: a new temp dir)")
    args = parser.parse_args(argv)

    def log(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    if args.prepare_source:
        prepare_source(log=log)
        return 0
    problems = missing_prerequisites(build=not args.dry_run)
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    work = args.out or Path(tempfile.mkdtemp(prefix="specchat-gpu-check-"))
    work.mkdir(parents=True, exist_ok=True)
    tokens, repeats = (12, 1) if args.dry_run else (128, 3)
    threads = 1 if args.dry_run else min(8, os.cpu_count() or 1)
    # llama.cpp's tools read -ngl from the environment: every layer on the GPU, as Auto does for a model that fits.
    os.environ.setdefault("LLAMA_ARG_N_GPU_LAYERS", "999")
    os.environ.setdefault("LLAMA_ARG_N_GPU_LAYERS_DRAFT", "999")
    if args.dry_run:
        from app.bench.suite import find_reference_tool

        tools = {name: found for name in REFERENCES if (found := find_reference_tool(name))}
    else:
        tools = build(work, log)
    pairs = write_models(work, DRY_PAIRS if args.dry_run else PAIRS, log)
    measured = {
        name: measure(pair, tools, tokens=tokens, repeats=repeats, threads=threads, log=log)
        for name, pair in pairs.items()
    }
    report = {
        "mode": "dry run" if args.dry_run else "GPU",
        "tokens": tokens,
        "repeats": repeats,
        "references": tools,
        "pairs": measured,
    }
    (work / "gpu-check.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print("\n".join(summary_lines(report)))
    print(f"(the whole report: {work / 'gpu-check.json'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
