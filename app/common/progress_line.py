"""One progress line for every long job the CLI shows (downloads, indexing): redrawn in place on a terminal, a
line every few seconds (and the last) when stderr is a file or a pipe, so a log holds no carriage returns."""

from __future__ import annotations

import time
from typing import Optional, TextIO

BAR_WIDTH = 20


def bar(fraction: float) -> str:
    """ "[#####---------------]  25%"."""
    fraction = min(max(fraction, 0.0), 1.0)
    filled = int(fraction * BAR_WIDTH)
    return f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {int(fraction * 100):3d}%"


class ProgressLine:
    """Writes progress lines to `out`; `show(line, last=True)` for a line that must reach a log."""

    def __init__(self, out: TextIO, is_tty: Optional[bool] = None, log_every_s: float = 5.0):
        self.out = out
        self.is_tty = out.isatty() if is_tty is None else is_tty
        self.log_every_s = log_every_s
        self._last_log = 0.0
        self._drawn = False
        self._width = 0

    def show(self, line: str, last: bool = False) -> None:
        if self.is_tty:
            pad = max(0, self._width - len(line))
            self.out.write("\r" + line + " " * pad)
            self.out.flush()
            self._width = len(line)
            self._drawn = True
            return
        now = time.monotonic()
        if last or now - self._last_log >= self.log_every_s:
            self._last_log = now
            print(line, file=self.out, flush=True)

    def finish(self) -> None:
        """Ends a line drawn in place, so what is printed next starts on its own line."""
        if self.is_tty and self._drawn:
            self.out.write("\n")
            self.out.flush()
            self._drawn = False
