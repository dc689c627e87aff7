"""`specchat-cli bench --under-load`: plain decoding while another program keeps a core busy, against the same on a
quiet machine and against llama.cpp's llama-completion, interleaved in one run.

The busy program is `python3 -c 'while 1: pass'` started in a session of its own (setsid), as a program started
from another login would be: on a Linux desktop it then gets its own scheduler group and its share of the CPU
whatever its priority (issue 21). It is stopped after the loaded runs of each repetition, and always on the way
out (an error, Ctrl-C or SIGTERM). A run that would take longer than the limit is stopped there: ours reports the
speed of the tokens it wrote; llama-completion reports nothing until it ends, so its speed is given as at most
what finishing at the limit would have been.
"""

from __future__ import annotations

import os
import contextlib
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional

from app.bench.native import GENERATION_PROMPT, run_llama_completion
from app.bench.suite import paired_median
from app.engine.config import GenerationConfig, LoadSettings, THREADS_AUTO
from app.engine.events import FinishedEvent, RoundEvent
from app.platform.machine_defaults import default_threads

RUN_LIMIT_S = 45.0
CONDITIONS = ("quiet", "busy")


class BusyProgram:
    """A busy loop in a session of its own, while the `with` block runs (and stopped on every way out)."""

    def __init__(self) -> None:
        self._proc: Optional[subprocess.Popen] = None

    def __enter__(self) -> BusyProgram:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", "while 1: pass"],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(0.5)  # let the scheduler see it
        return self

    @property
    def pid(self) -> Optional[int]:
        """The busy program's process id while it runs; None once stopped."""
        return self._proc.pid if self._proc is not None else None

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session and group: only it
        except (ProcessLookupError, PermissionError):
            proc.kill()
        proc.wait(timeout=10)


def _ours(
    target: Path, draft: Optional[Path], n_threads: int, speculative: bool, max_tokens: int, n_ctx: int
) -> tuple[float, list[str]]:
    """(decode tok/s, thread changes said) of one reply from a freshly loaded engine, as `specchat-cli generate`
    runs it; stopped at RUN_LIMIT_S."""
    from app.engine.local.engine import SpecEngine
    from app.engine.events import ThreadsEvent

    engine = SpecEngine(LoadSettings(n_ctx=n_ctx, n_threads=n_threads))
    cancel = threading.Event()
    timer = threading.Timer(RUN_LIMIT_S, cancel.set)
    try:
        engine.load_target(target, planned_draft=draft)
        if draft is not None:
            engine.load_draft(draft)
        # history=False: the same prompt's earlier replies would make every repetition after the first a copy of
        # one, and a bench never reads or adds to the user's history.
        config = GenerationConfig(
            max_tokens=max_tokens, speculative=speculative, ignore_eos=True, drafter="auto", history=False
        )
        timer.start()
        said: list[str] = []
        for event in engine.complete(GENERATION_PROMPT, config, cancel=cancel):
            if isinstance(event, ThreadsEvent):
                said.append(event.describe())
            elif isinstance(event, RoundEvent) and "expected" in event.reason:
                said.append(event.reason)
            elif isinstance(event, FinishedEvent):
                return event.stats.tokens_per_second, said
        raise RuntimeError("the engine ended without a result")
    finally:
        timer.cancel()
        engine.close()


def _llama(binary: str, target: Path, threads: Optional[int], max_tokens: int, n_ctx: int) -> tuple[float, bool]:
    """(tok/s, whether it is an upper bound: the run passed RUN_LIMIT_S and was stopped)."""
    try:
        return run_llama_completion(
            binary, target, GENERATION_PROMPT, n_predict=max_tokens, threads=threads, n_ctx=n_ctx, timeout_s=RUN_LIMIT_S
        ).tokens_per_second, False
    except subprocess.TimeoutExpired:
        return max_tokens / RUN_LIMIT_S, True


def contenders(draft: Optional[Path], ceiling: int, binary: Optional[str]) -> list[str]:
    names = ["ours auto threads"] + [f"ours {n} thread{'s' if n > 1 else ''}" for n in range(1, ceiling + 1)]
    if draft is not None:
        names.append("ours speculative")
    if binary:
        names += ["llama-completion default", "llama-completion 1 thread"]
    return names


def run_under_load(
    target: Path,
    draft: Optional[Path],
    binary: Optional[str],
    *,
    max_tokens: int,
    repeats: int,
    n_ctx: int,
    progress: Callable[[str], None],
) -> dict:
    ceiling = default_threads()
    names = contenders(draft, ceiling, binary)
    speeds: dict[str, dict[str, list[float]]] = {c: {n: [] for n in names} for c in CONDITIONS}
    bounded = {c: {n: False for n in names} for c in CONDITIONS}
    said: dict[str, set[str]] = {c: set() for c in CONDITIONS}
    _ours(target, None, 1, False, 4, n_ctx)  # warm the page cache, untimed
    previous = _install_sigterm()
    try:
        for rep in range(repeats):
            for condition in CONDITIONS:
                order = names[rep % len(names) :] + names[: rep % len(names)]
                with BusyProgram() if condition == "busy" else contextlib.nullcontext():
                    for name in order:
                        tps, limit = _one(name, target, draft, binary, max_tokens, n_ctx, said[condition])
                        speeds[condition][name].append(tps)
                        bounded[condition][name] |= limit
                        progress(
                            f"rep {rep + 1}/{repeats} {condition:<5} {name:<26} {'<' if limit else ' '}{tps:6.2f} tok/s"
                        )
    finally:
        signal.signal(signal.SIGTERM, previous)
    medians = {c: {n: statistics.median(v) for n, v in speeds[c].items()} for c in CONDITIONS}
    return {
        "threads_auto": ceiling,
        "max_tokens": max_tokens,
        "repeats": repeats,
        "n_ctx": n_ctx,
        "tokens_per_second": speeds,
        "median": medians,
        "upper_bound": bounded,
        "said": {c: sorted(v) for c, v in said.items()},
        "ratios": _ratios(speeds, ceiling),
    }


def _one(
    name: str, target: Path, draft: Optional[Path], binary: Optional[str], max_tokens: int, n_ctx: int, said: set[str]
) -> tuple[float, bool]:
    if name.startswith("llama-completion"):
        assert binary is not None
        return _llama(binary, target, None if name.endswith("default") else 1, max_tokens, n_ctx)
    if name == "ours speculative":
        tps, words = _ours(target, draft, THREADS_AUTO, True, max_tokens, n_ctx)
    elif name == "ours auto threads":
        tps, words = _ours(target, None, THREADS_AUTO, False, max_tokens, n_ctx)
    else:
        tps, words = _ours(target, None, int(name.split()[1]), False, max_tokens, n_ctx)
    said.update(words)
    return tps, False


def _ratios(speeds: dict[str, dict[str, list[float]]], ceiling: int) -> dict[str, float]:
    """Medians of ratios paired per repetition (both runs of a pair saw the same moment's load)."""
    fixed = [f"ours {n} thread{'s' if n > 1 else ''}" for n in range(1, ceiling + 1)]
    ratios: dict[str, float] = {}
    for condition in CONDITIONS:
        runs = speeds[condition]
        auto = runs["ours auto threads"]
        bottoms = {"ours auto / ours best fixed": [max(runs[name][i] for name in fixed) for i in range(len(auto))]}
        if "llama-completion default" in runs:
            default, single = runs["llama-completion default"], runs["llama-completion 1 thread"]
            bottoms["ours auto / llama-completion default"] = default
            bottoms["ours auto / llama-completion best fixed"] = [max(d, s) for d, s in zip(default, single)]
        for label, bottom in bottoms.items():
            ratios[f"{condition}: {label}"] = paired_median(auto, bottom)
        if "ours speculative" in runs:
            ratios[f"{condition}: speculative (auto) / plain"] = paired_median(runs["ours speculative"], auto)
    return {k: round(v, 3) for k, v in ratios.items()}


def print_under_load_report(report: dict) -> None:
    print(
        f"Plain greedy decoding, {report['max_tokens']} tokens, threads on Auto = {report['threads_auto']}, "
        f"median of {report['repeats']} interleaved runs (tok/s; '<' a run stopped at {RUN_LIMIT_S:.0f} s):"
    )
    names = list(report["median"]["quiet"])
    print(f"  {'':<28}" + "".join(f"{c:>12}" for c in CONDITIONS))
    for name in names:
        cells = "".join(f"{_speed(report, c, name):>12}" for c in CONDITIONS)
        print(f"  {name:<28}{cells}")
    print("Ratios (median of the ratios paired per repetition, measured side by side in this run):")
    for label, value in report["ratios"].items():
        print(f"  {label:<52} {value:.3f}x")
    for condition in CONDITIONS:
        if report["said"][condition]:
            print(f"What the engine said ({condition}): " + "; ".join(report["said"][condition][:8]))


def _speed(report: dict, condition: str, name: str) -> str:
    """A median tok/s, with "<" when a run of it was stopped at the limit."""
    return ("<" if report["upper_bound"][condition][name] else "") + f"{report['median'][condition][name]:.2f}"


def _install_sigterm():
    """SIGTERM ends the run through the `finally` clauses (the busy program is stopped), as Ctrl-C does."""

    def handler(signum, frame):
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, handler)
