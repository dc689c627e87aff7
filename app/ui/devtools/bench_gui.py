"""GUI overhead benchmark: the same request decoded by the engine alone and streamed through the real window.

    python -m app.ui.devtools.bench_gui --target T [--draft D | --ngram] [--draft-max auto|K] [--max-tokens N]
                               [--repeats R] [--prompt TEXT] [--threads N] [--ctx N] [--json]

Each repetition runs both modes once, in alternating order, so drift in machine load hits both alike; medians are
reported, and what matters is their ratio (window / engine), measured side by side in one run:

  engine  SpecEngine.reply() iterated on a plain thread of its own; tok/s from its FinishedEvent. The GUI thread
          meanwhile idles in its event loop under the same heartbeat, which gives the baseline stall (what the
          machine itself causes: scheduling, the GIL).
  window  MainWindow with the same files loaded by its engine process, the message typed into the composer and
          sent with its button, the reply streamed into the transcript and stored; tok/s from the stats the
          window stores with the reply (the same FinishedEvent numbers). A 5 ms heartbeat timer on the GUI thread
          measures the longest event-loop stall from Send until the reply is stored, and in which phase it ended.

The GUI thread's CPU time per request is reported too: where llama.cpp uses every core, each millisecond the GUI
works takes a core from it, so that number explains most of a ratio below 1.

Both modes get the same prompt, the same GenerationConfig (the window's own, greedy) and the same load settings
(threads, context). Each mode has its own engine with its own models, so the speculation controller of one never
learns from the other's requests. Without --draft or --ngram both decode plainly (Speculative off).
Targets: window >= 0.97x the engine alone, no stall over 50 ms. Runs in a private, temporary SpecChat home, so
the user's chats, settings and cost tables are never touched; offscreen unless a display exists.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional, cast

from app.bench.args import add_model_arguments, parse_draft_max
from app.ui.devtools.bench_modes import (
    TARGET_STALL_MS,
    EngineAlone,
    ModeRuns,
    RunRecord,
    StallProbe,
    WindowMode,
    private_model_folder,
)

DEFAULT_PROMPT = "Write a Python function that checks whether a string is a palindrome, ignoring case and spaces."
TARGET_RATIO = 0.97


def run_benchmark(args: argparse.Namespace, progress=lambda line: None) -> dict:
    """Both modes, interleaved; returns the report. Needs a QApplication and the private SpecChat home."""
    from app.engine.config import LoadSettings, default_threads
    from app.store import AppSettings, save_settings
    from app.ui.models.library_model import NGRAM_KEY

    draft_max = parse_draft_max(args.draft_max)
    threads = args.threads or default_threads()
    home = Path(os.environ["SPECCHAT_HOME"])
    target_src, draft_src = Path(args.target), Path(args.draft) if args.draft else None
    folder = private_model_folder(home, [p for p in (target_src, draft_src) if p is not None])
    target = folder / target_src.name
    draft = folder / draft_src.name if draft_src else None
    speculative = bool(draft or args.ngram)
    drafter = "model" if draft else ("ngram" if args.ngram else "none")

    save_settings(AppSettings(model_folders=[str(folder)], scan_hf_cache=False, threads=threads, context_size=args.ctx))
    progress(
        f"loading {target.name}{f' + {draft.name}' if draft else ''} in the window and for the engine "
        f"({threads} threads)"
    )
    engine_mode: Optional[EngineAlone] = None
    window_mode: Optional[WindowMode] = None
    try:
        # The engine alone first: it measures the costs, which the window's engine process then finds on disk.
        engine_mode = EngineAlone(target, draft, LoadSettings(n_ctx=args.ctx, n_threads=threads))
        window_mode = WindowMode(target, str(draft) if draft else NGRAM_KEY, speculative, args.max_tokens, draft_max)
        results = {"engine": ModeRuns(), "window": ModeRuns()}

        probe = StallProbe()

        def run(mode: str, config) -> RunRecord:
            if mode == "engine":
                return engine_mode.chat(args.prompt, config, probe)
            return window_mode.chat(args.prompt, probe)

        for rep in range(-args.warmup, args.repeats):
            # The window's own config, used for both modes: same sampling, length, drafter and k.
            config = window_mode.prepare()
            order = ("engine", "window") if rep % 2 == 0 else ("window", "engine")
            for mode in order:
                record = run(mode, config)
                label = "warm-up" if rep < 0 else f"rep {rep + 1}/{args.repeats}"
                stall = f"  longest stall {record.stall_ms:5.1f} ms ({record.stall_phase})"
                progress(
                    f"{label:<9} {mode:<6} {record.tokens_per_second:7.1f} tok/s  {record.tokens} tokens"
                    f"  acceptance {record.acceptance_rate:4.0%}{stall}"
                )
                if rep >= 0:
                    results[mode].runs.append(record)
    finally:
        if engine_mode is not None:
            engine_mode.close()
        if window_mode is not None:
            window_mode.close()

    engine_runs, window_runs = results["engine"], results["window"]
    engine_tps = engine_runs.median("tokens_per_second")
    ratio = window_runs.median("tokens_per_second") / engine_tps if engine_tps else 0.0
    longest_stall = window_runs.longest_stall_ms()
    return {
        "target": str(target_src),
        "draft": str(draft_src) if draft_src else None,
        "drafter": drafter,
        "draft_max": args.draft_max,
        "max_tokens": args.max_tokens,
        "repeats": args.repeats,
        "threads": threads,
        "ctx": args.ctx,
        "qt_platform": _qt_platform(),
        "engine": engine_runs.to_dict(),
        "window": window_runs.to_dict(),
        "ratio": round(ratio, 3),
        "longest_stall_ms": round(longest_stall, 1),
        "baseline_stall_ms": round(engine_runs.longest_stall_ms(), 1),  # the GUI idle, the engine decoding
        "same_tokens": [r.tokens for r in engine_runs.runs] == [r.tokens for r in window_runs.runs],
        "same_text": {r.text for r in engine_runs.runs} == {r.text for r in window_runs.runs}
        and len({r.text for r in engine_runs.runs}) == 1,
        "targets": {"ratio": TARGET_RATIO, "stall_ms": TARGET_STALL_MS},
        "meets_targets": {"ratio": ratio >= TARGET_RATIO, "stall": longest_stall <= TARGET_STALL_MS},
    }


def _qt_platform() -> str:
    from PySide6.QtGui import QGuiApplication

    return QGuiApplication.platformName()


def format_report(report: dict) -> str:
    engine, window = report["engine"], report["window"]
    met = report["meets_targets"]
    lines = [
        f"target {Path(report['target']).name}, drafter {report['drafter']}"
        f"{' ' + Path(report['draft']).name if report['draft'] else ''}, draft-max {report['draft_max']}, "
        f"{report['max_tokens']} max tokens, {report['repeats']} repeats, {report['threads']} threads, "
        f"Qt platform {report['qt_platform']}",
        f"engine alone  {engine['tokens_per_second']:7.1f} tok/s (median; runs {engine['runs_tokens_per_second']})"
        f"  acceptance {engine['acceptance_rate']:.0%}",
        f"window        {window['tokens_per_second']:7.1f} tok/s (median; runs {window['runs_tokens_per_second']})"
        f"  acceptance {window['acceptance_rate']:.0%}",
        f"ratio window/engine {report['ratio']:.3f}  (target >= {report['targets']['ratio']}: "
        f"{'met' if met['ratio'] else 'NOT met'})",
        f"longest GUI stall while streaming {report['longest_stall_ms']:.1f} ms  (target <= "
        f"{report['targets']['stall_ms']:.0f} ms: {'met' if met['stall'] else 'NOT met'}; "
        f"{window['stalls_over_50ms']} stalls over 50 ms; per run {window['runs_longest_stall_ms']} "
        f"in {window['runs_stall_phase']})",
        f"GUI thread CPU per request: window {window['gui_cpu_s']:.2f} s, engine alone (idle GUI) "
        f"{engine['gui_cpu_s']:.2f} s; draft lengths window {window['draft_len_histogram']}, "
        f"engine {engine['draft_len_histogram']}",
        f"baseline: longest stall of the idle GUI while the engine alone decoded {report['baseline_stall_ms']:.1f} ms"
        f"  ({engine['stalls_over_50ms']} over 50 ms; per run {engine['runs_longest_stall_ms']})",
        f"same tokens in both modes: {report['same_tokens']}; same text: {report['same_text']}",
    ]
    return "\n".join(lines)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_model_arguments(parser)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=3, help="repetitions per mode; the median is reported")
    parser.add_argument("--warmup", type=int, default=1, help="unrecorded requests per mode first (default 1)")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: all cores)")
    parser.add_argument("--ctx", type=int, default=4096, help="context size in tokens (default 4096)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    args = parser.parse_args(argv)
    try:
        parse_draft_max(args.draft_max)
    except ValueError as exc:
        parser.error(str(exc))
    if args.repeats < 1 or args.warmup < 0 or args.max_tokens < 1:
        parser.error("--repeats and --max-tokens must be >= 1, --warmup >= 0")
    for name in ("target", "draft"):
        value = getattr(args, name)
        if value and not Path(value).is_file():
            parser.error(f"--{name}: no such file: {value}")
    return args


def _has_display() -> bool:
    if not sys.platform.startswith("linux"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(argv=None) -> int:
    args = parse_args(argv)
    home = Path(tempfile.mkdtemp(prefix="specchat-bench-gui-"))
    os.environ["SPECCHAT_HOME"] = str(home)
    if not _has_display():
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from app.ui.shell.qt_check import pyside_problem

    problem = pyside_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 1

    from PySide6.QtWidgets import QApplication

    from app.ui.widgets.style import apply_style

    app = cast(QApplication, QApplication.instance()) or QApplication(sys.argv[:1])
    app.setApplicationName("SpecChat")
    apply_style(app)
    try:
        report = run_benchmark(args, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.json:
        print(json.dumps(report))
    else:
        print(format_report(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
