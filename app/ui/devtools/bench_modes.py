"""The two modes of the GUI overhead benchmark (app/ui/devtools/bench_gui.py): the engine alone on a thread of its own,
and the real window; plus the heartbeat that measures event-loop stalls. GUI thread only, except where said.
"""

from __future__ import annotations

import shutil
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from app.engine.events import GenerationStats

HEARTBEAT_MS = 5
TARGET_STALL_MS = 50.0


@dataclass
class RunRecord:
    """One request in one mode."""

    tokens_per_second: float
    tokens: int
    acceptance_rate: float
    wall_s: float  # request to FinishedEvent (engine) or Send to the stored reply (window)
    text: str
    stall_ms: float = 0.0  # the longest gap of the GUI thread's 5 ms heartbeat during the request
    stalls_over_target: int = 0
    stall_phase: str = ""  # when the longest gap ended: "send", "streaming", "finish" or "engine alone"
    gui_cpu_s: float = 0.0  # CPU time the GUI thread used during the request (it competes with llama.cpp's)
    draft_len_histogram: dict = field(default_factory=dict)


@dataclass
class ModeRuns:
    runs: list[RunRecord] = field(default_factory=list)

    def median(self, name: str) -> float:
        values = [getattr(r, name) for r in self.runs]
        return statistics.median(values) if values else 0.0

    def to_dict(self) -> dict:
        return {
            "tokens_per_second": round(self.median("tokens_per_second"), 2),
            "runs_tokens_per_second": [round(r.tokens_per_second, 2) for r in self.runs],
            "tokens": [r.tokens for r in self.runs],
            "acceptance_rate": round(self.median("acceptance_rate"), 3),
            "wall_s": round(self.median("wall_s"), 3),
            "gui_cpu_s": round(self.median("gui_cpu_s"), 3),
            "draft_len_histogram": self.histogram(),
            "longest_stall_ms": round(self.longest_stall_ms(), 1),
            "runs_longest_stall_ms": [round(r.stall_ms, 1) for r in self.runs],
            "runs_stall_phase": [r.stall_phase for r in self.runs],
            "stalls_over_50ms": sum(r.stalls_over_target for r in self.runs),
        }

    def histogram(self) -> dict[int, int]:
        total: dict[int, int] = {}
        for run in self.runs:
            for size, count in run.draft_len_histogram.items():
                total[int(size)] = total.get(int(size), 0) + count
        return dict(sorted(total.items()))

    def longest_stall_ms(self) -> float:
        return max((r.stall_ms for r in self.runs), default=0.0)


class StallProbe:
    """The longest gap between ticks of a 5 ms timer while running: how long the GUI thread was ever busy.

    The approach of app.ui.devtools.screenshot.StallProbe, with start/stop so only one request is measured, and the phase
    the longest gap ended in (`phase()` is asked at each tick). GUI thread only.
    """

    def __init__(self, interval_ms: int = HEARTBEAT_MS, threshold_ms: float = TARGET_STALL_MS):
        from PySide6.QtCore import QElapsedTimer, Qt, QTimer

        self.threshold_ms = threshold_ms
        self.longest_ms = 0.0
        self.longest_phase = ""
        self.over_threshold = 0
        self.phase: Callable[[], str] = lambda: ""
        self._clock = QElapsedTimer()
        self._timer = QTimer()
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._tick)

    def start(self, phase: Callable[[], str] = lambda: "") -> None:
        self.longest_ms = 0.0
        self.longest_phase = ""
        self.over_threshold = 0
        self.phase = phase
        self._clock.start()
        self._timer.start()

    def stop(self) -> None:
        self._tick()  # the gap up to now counts too (a stall at the very end)
        self._timer.stop()

    def _tick(self) -> None:
        gap = float(self._clock.nsecsElapsed()) / 1e6
        self._clock.restart()
        if gap > self.longest_ms:
            self.longest_ms = gap
            self.longest_phase = self.phase()
        self.over_threshold += gap > self.threshold_ms


def run_event_loop_until(done: Callable[[], bool], timeout_s: float) -> bool:
    """Run the Qt event loop (no polling with sleeps) until `done()`, checked every 5 ms; False on timeout."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    check = QTimer()
    check.setInterval(HEARTBEAT_MS)
    check.timeout.connect(lambda: loop.quit() if done() else None)
    deadline = QTimer()
    deadline.setSingleShot(True)
    deadline.timeout.connect(loop.quit)
    check.start()
    deadline.start(int(timeout_s * 1000))
    if not done():
        loop.exec()
    check.stop()
    deadline.stop()
    return done()


class EngineAlone:
    """A SpecEngine of its own, driven from one plain (non-Qt) thread that owns it, as the engine requires."""

    def __init__(self, target: Path, draft: Optional[Path], load):
        from app.engine.local.engine import SpecEngine

        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="SpecChat bench engine")
        self._cancel = threading.Event()  # set when a request overruns, so close() need not wait for it
        self.engine = self._call(SpecEngine, load)
        self._call(self.engine.load_target, target)
        if draft is not None:
            self._call(self.engine.load_draft, draft)
        # Measured now, so the window's engine process finds the costs on disk and spends no idle time measuring
        # them while the other mode is being timed.
        self._call(self.engine.measure_costs, draft is not None)

    def _call(self, function, *args):
        return self._executor.submit(function, *args).result()

    def chat(self, prompt: str, config, probe: StallProbe, timeout_s: float = 900) -> RunRecord:
        """One request on the engine's thread while the GUI thread idles in its event loop, probed like the
        window, so the stall this reports is the baseline the machine itself causes (scheduling, the GIL)."""
        probe.start(lambda: "engine alone")
        gui_cpu = time.thread_time()
        future = self._executor.submit(self._chat, prompt, config)
        if not run_event_loop_until(future.done, timeout_s):
            self._cancel.set()
            raise RuntimeError(f"the engine gave no reply within {timeout_s:.0f} s")
        probe.stop()
        record = future.result()
        record.gui_cpu_s = time.thread_time() - gui_cpu
        record.stall_ms, record.stalls_over_target = probe.longest_ms, probe.over_threshold
        record.stall_phase = probe.longest_phase
        return record

    def _chat(self, prompt: str, config) -> RunRecord:  # the engine's thread
        from app.engine.events import FinishedEvent

        started = time.perf_counter()
        finished = None
        for event in self.engine.reply([{"role": "user", "content": prompt}], config, cancel=self._cancel):
            if isinstance(event, FinishedEvent):
                finished = event
        wall = time.perf_counter() - started
        if finished is None:
            raise RuntimeError("the engine ended without a finished event")
        stats = finished.stats
        return RunRecord(
            stats.tokens_per_second,
            stats.tokens,
            stats.acceptance_rate,
            wall,
            finished.text,
            draft_len_histogram=dict(stats.draft_len_histogram),
        )

    def close(self) -> None:
        try:
            self._call(self.engine.close)
        finally:
            self._executor.shutdown(wait=True)


class WindowMode:
    """The real window with the pair loaded by its worker; each request is a new chat sent from the composer.
    GUI thread only."""

    def __init__(self, target: Path, draft_key: str, speculative: bool, max_tokens: int, draft_max: Optional[int]):
        from app.ui.widgets import automation
        from app.ui.shell.main_window import MainWindow

        self.window = MainWindow()
        self.window.resize(1180, 780)
        self.window.show()
        self.speculative = speculative
        self.max_tokens = max_tokens
        self.draft_max = draft_max
        try:
            automation.choose_pair(self.window, str(target), draft_key)
        except BaseException:
            self.close()  # its threads must end before the interpreter does
            raise

    def prepare(self):
        """A fresh chat with the benchmark's settings; returns the GenerationConfig the window will send."""
        window = self.window
        window.new_chat()
        window.update_chat_settings(max_tokens=self.max_tokens, draft_max=self.draft_max)
        if not self.speculative:
            window.set_speculative(False)
        return window.generation_config()

    def chat(self, prompt: str, probe: StallProbe, timeout_s: float = 900) -> RunRecord:
        """Type `prompt`, press Send and run the event loop until the reply is stored."""
        window = self.window
        finished: list[int] = []
        window.conversation.sig_reply_finished.connect(finished.append)  # emitted on this (the GUI) thread
        try:
            window.composer.set_text(prompt)
            gui_cpu = time.thread_time()
            started = time.perf_counter()
            window.composer.button.click()  # Send, as a user would; storing the message runs in this call
            send_ms = (time.perf_counter() - started) * 1000
            if not window.conversation.is_busy():
                raise RuntimeError(window.error_banner.text() or "the window did not send the message")
            probe.start(lambda: "streaming" if window.conversation.is_busy() else "finish")
            if not run_event_loop_until(lambda: bool(finished), timeout_s):
                raise RuntimeError(f"no reply within {timeout_s:.0f} s")
            probe.stop()
            wall = time.perf_counter() - started
            gui_cpu = time.thread_time() - gui_cpu
        finally:
            window.conversation.sig_reply_finished.disconnect(finished.append)
        message = window.store.get_message(finished[0])
        if message is None:
            raise RuntimeError("the finished reply was not stored")
        stats = message.stats or GenerationStats()
        if window.error_banner.isVisible() or stats.stop_reason in ("error", "cancelled"):
            raise RuntimeError(window.error_banner.text() or f"the reply ended: {stats.stop_reason}")
        stall_ms, phase = max((probe.longest_ms, probe.longest_phase), (send_ms, "send"))
        return RunRecord(
            stats.tokens_per_second,
            stats.tokens,
            stats.acceptance_rate,
            wall,
            message.content,
            stall_ms,
            probe.over_threshold + (send_ms > probe.threshold_ms),
            phase,
            gui_cpu,
            stats.draft_len_histogram,
        )

    def close(self) -> None:
        self.window.close()


def private_model_folder(home: Path, files: list[Path]) -> Path:
    """A folder holding links to exactly the benchmarked files, so the window's library scans nothing else."""
    folder = home / "bench-models"
    folder.mkdir(parents=True, exist_ok=True)
    for path in files:
        link = folder / path.name
        try:
            link.symlink_to(path.resolve())
        except OSError:  # no symlinks (some Windows setups): copy instead
            shutil.copy2(path, link)
    return folder
