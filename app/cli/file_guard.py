"""A model file that changes while the CLI reads it: one sentence and exit status 1, never a silent SIGBUS.

llama.cpp maps model files into memory. When a mapped file is truncated (a download restarted over it, a disk
tidied), the next read of a page past its new end raises SIGBUS, which kills the process with no word. A Python
handler alone cannot help: the faulting read is in llama.cpp's C code, so the handler never gets to run, and the
read faults again as soon as the C-level handler returns. But CPython's C-level handler also writes the signal's
number to the wakeup fd (signal.set_wakeup_fd); a thread of ours waiting on that fd says which file changed and
ends the process with os._exit(1). A file whose contents change without shrinking gives no signal: its size and
mtime are compared after the run (ModelFileGuard.changed).
"""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any, Optional, Sequence

from app.cli.terminal import printable


def _stamp(path: Path) -> Optional[tuple[int, int]]:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class ModelFileGuard:
    """Context manager around a run that reads `paths` mapped into memory. Main thread only (signal handlers)."""

    def __init__(self, paths: Sequence[str | os.PathLike], stopped: str = "the reply stopped"):
        """`stopped`: what the sentence says ended with the process ("the reply stopped")."""
        self._paths = [Path(p) for p in paths if p]
        self._stopped = stopped
        self._stamps = {p: _stamp(p) for p in self._paths}
        self._pipe: Optional[tuple[int, int]] = None
        self._old_wakeup = -1
        self._old_handler: Any = None
        self._thread: Optional[threading.Thread] = None

    def changed(self) -> Optional[str]:
        """What changed: the first file whose size or mtime differs from the start (a clause), else None."""
        for path in self._paths:
            now = _stamp(path)
            if now != self._stamps[path]:
                was = self._stamps[path]
                if now is None:
                    state = "it is gone"
                elif was is not None and now[0] < was[0]:
                    state = f"it shrank from {was[0]:,} to {now[0]:,} bytes"
                else:
                    state = "it was rewritten"
                return f"the model file {path} changed while it was in use ({state})"
        return None

    def __enter__(self) -> "ModelFileGuard":
        bus = getattr(signal, "SIGBUS", None)
        if bus is None or threading.current_thread() is not threading.main_thread():
            return self  # Windows has no SIGBUS; a handler can only be set from the main thread
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        self._pipe = (read_end, write_end)
        self._old_wakeup = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
        # Runs only when the fault happened in Python code; the watcher covers faults in llama.cpp's code.
        self._old_handler = signal.signal(bus, lambda signum, frame: self._die())
        self._thread = threading.Thread(target=self._watch, args=(read_end, bus), name="SIGBUS watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._pipe is None:
            return
        bus = signal.SIGBUS
        signal.signal(bus, self._old_handler if self._old_handler is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(self._old_wakeup)
        read_end, write_end = self._pipe
        os.close(write_end)  # the watcher reads the end of the pipe and returns
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        os.close(read_end)
        self._pipe = None

    def _watch(self, read_end: int, bus: int) -> None:
        while True:
            try:
                received = os.read(read_end, 512)
            except OSError:
                return
            if not received:
                return
            if bus in received:
                self._die()

    def _die(self) -> None:
        reason = f"{self.changed() or 'a model file changed while it was in use (SIGBUS)'}; {self._stopped}"
        # No flush of sys.stdout: its lock may be held by the thread that faulted. Each token was flushed already.
        os.write(2, f"\nerror: {printable(reason)}\n".encode("utf-8", "replace"))
        os._exit(1)
