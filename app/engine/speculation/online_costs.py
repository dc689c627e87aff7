"""What forward passes cost on this machine now: the measured cost table, kept true by what rounds actually cost.

Used by the speculation controller (app.engine.speculation.auto_controller); a cost it compares is always measured at
the current thread count and close in time (issue 21).
"""

from __future__ import annotations

import statistics
from typing import Optional

from app.engine.speculation.costs import CostTable

# A timing this many times off what it should be is a busy moment, dropped; BUSY_STREAK of them in a row are the
# machine's speed now. The level is the median of the last LEVEL_WINDOW single-token rounds.
BUSY_FACTOR = 3.0
BUSY_STREAK = 3
LEVEL_WINDOW = 5
# A batch's shape (its cost against one token's) learns only from timings within this factor of what it expects:
# a busy machine's timings scatter far more than a batch's shape can move.
SHAPE_TOLERANCE = 1.5


class OnlineCosts:
    """The measured cost table, kept true by what rounds actually cost on this machine now.

    Every cost compared is measured at the same thread count and close in time: one level, the median of the
    last few single-token rounds at the current thread count, scales every cost; each batch size keeps how far it
    is off the table as a ratio to that level (the table is a fastest-of-three measurement on a quiet, warm machine;
    between a reply's rounds larger batches cost more against one token than it says, docs/performance.md), and so
    does the draft model's cost per token. A timing far off what it should be is a busy moment (another program
    took the CPU for it) and is dropped, unless several come in a row: then the machine is that much slower now.
    When the thread count changes (app.engine.local.thread_governor), the level starts over from the next single
    token, and each count keeps its own batch ratios. No batch costs less than one token, so no draft of k can
    promise more than k + 1 tokens' worth.
    """

    def __init__(self, table: CostTable):
        self.table = table
        self._threads = 0
        self._singles: list[float] = []  # recent single-token times / the table's, at the current count
        self._off_levels: list[float] = []  # the levels timings far off the current one implied, in a row
        self._bias: dict[int, dict[int, float]] = {}  # threads -> batch size -> its cost / (table's x level)
        self._bias_busy: dict[int, int] = {}  # batch size -> busy moments in a row
        self._draft_scale = 1.0  # the draft's cost per token / (table's x level)
        self._draft_busy = 0
        self._draft_seen = False
        # An estimated table's absolute figures are placeholders: the first timing of a batch size replaces its
        # ratio instead of being averaged in. Until a single token is timed there is no level to take a batch's
        # ratio against (the placeholder's would stand in for it, and every batch then looked 1.5x dearer than it
        # is: an F16 target never drafted again), so such timings wait here, against the table alone.
        self._estimated = table.estimated
        self._waiting_batches: dict[int, float] = {}  # batch size -> its time / the table's
        self._waiting_draft: Optional[float] = None  # the draft's time per token / the table's

    def note_threads(self, threads: int) -> None:
        """The next rounds run on `threads` CPU threads."""
        if threads != self._threads:
            self._threads = threads
            self._singles.clear()
            self._off_levels.clear()
            self._bias_busy.clear()

    @property
    def threads(self) -> int:
        return self._threads

    @property
    def _level(self) -> float:
        return statistics.median(self._singles) if self._singles else 1.0

    @property
    def has_level(self) -> bool:
        """Whether a single token was timed at the current thread count: until then every cost is the table's."""
        return bool(self._singles)

    @property
    def table_stale(self) -> bool:
        """Whether single tokens run far faster than the measured table says: it was measured while another
        program held the CPU (every try of it waited), so its shape is as wrong as its level. Another program can
        only make passes slower, and fewer threads than the table's are never that much faster."""
        return not self._estimated and bool(self._singles) and self._level * BUSY_FACTOR < 1.0

    def _biases(self) -> dict[int, float]:
        return self._bias.setdefault(self._threads, {})

    def _size_bias(self, n: int) -> float:
        biases = self._biases()
        if n in biases:
            return biases[n]
        # Not used yet: the table is most likely off the way it was for the sizes that were.
        return sum(biases.values()) / len(biases) if biases else 1.0

    def verify(self, n: int) -> float:
        single = self.table.verify(1) * self._level
        if n == 1:
            return single
        return max(single, self.table.verify(n) * self._level * self._size_bias(n))

    def draft(self, k: int) -> float:
        return k * self.table.draft_per_token * self._draft_scale * self._level

    def observe(self, drafted: int, verify_s: float, model_draft_s: float = 0.0, rows: int = 0) -> None:
        """A round verified `drafted` + 1 tokens in `verify_s` (in a pass of `rows` rows when it held other
        requests' too); a draft model spent `model_draft_s` drafting."""
        size = rows or drafted + 1
        expected = self.table.verify(size)
        unlevelled = self._estimated and not self._singles
        if expected > 0 and verify_s > 0:
            if rows > 1:
                # A batch's pass (app.engine.local.batch) holds other requests' rows: it tells the machine's
                # level through the table's shape, and no single token may be timed while the batch is full.
                self._observe_single(verify_s / expected)
            elif size == 1:
                self._observe_single(verify_s / expected)
            elif unlevelled:
                self._waiting_batches[size] = verify_s / expected
            else:
                self._observe_batch(size, verify_s / (expected * self._level))
        if drafted and self.table.draft_per_token > 0 and model_draft_s > 0:
            # The draft time includes catching up on the last accepted tokens: one or two extra passes, close
            # enough.
            if unlevelled:
                self._waiting_draft = model_draft_s / (drafted * self.table.draft_per_token)
                return
            self._observe_draft(model_draft_s / (drafted * self.table.draft_per_token * self._level))

    def _observe_draft(self, ratio: float) -> None:
        if not self._draft_seen:
            self._draft_seen = True
            self._draft_scale = ratio
        elif _busy(ratio, self._draft_scale):
            self._draft_busy += 1
            if self._draft_busy >= BUSY_STREAK:
                self._draft_scale, self._draft_busy = ratio, 0
        else:
            self._draft_busy = 0
            self._draft_scale = 0.9 * self._draft_scale + 0.1 * ratio

    def _observe_single(self, ratio: float) -> None:
        if self._singles and _busy(ratio, self._level):
            self._off_level(ratio)
            return
        self._off_levels.clear()
        self._singles.append(ratio)
        del self._singles[:-LEVEL_WINDOW]
        # The first level: what waited for it is taken against it now.
        for size, unlevelled in self._waiting_batches.items():
            self._observe_batch(size, unlevelled / self._level)
        self._waiting_batches.clear()
        if self._waiting_draft is not None:
            self._observe_draft(self._waiting_draft / self._level)
            self._waiting_draft = None

    def _observe_batch(self, size: int, ratio: float) -> None:
        biases = self._biases()
        if size not in biases:
            if not self._singles or not _busy(ratio, 1.0) or self._estimated:
                biases[size] = ratio if self._estimated else 0.7 + 0.3 * ratio
            return
        if not _busy(ratio, biases[size]):
            self._off_levels.clear()
            self._bias_busy[size] = 0
            # Against a level timed on this machine, a timing well off the shape is a noisy moment: no lesson.
            if not (self._singles and _busy(ratio, biases[size], SHAPE_TOLERANCE)):
                biases[size] = 0.7 * biases[size] + 0.3 * ratio
        elif self._singles:
            # Far off a shape learned against single tokens: the machine's speed moved, not the batch's shape.
            self._off_level(self._level * ratio / biases[size])
        else:
            # No single token timed at this count yet: the table's level is all there is, so the shape is off.
            self._bias_busy[size] = self._bias_busy.get(size, 0) + 1
            if self._bias_busy[size] >= BUSY_STREAK:
                biases[size], self._bias_busy[size] = ratio, 0

    def _off_level(self, level: float) -> None:
        """A timing that puts the level far from where it is: a busy moment, or several in a row, the machine's
        speed now."""
        self._off_levels.append(level)
        if len(self._off_levels) >= BUSY_STREAK:
            self._singles = self._off_levels
            self._off_levels = []


def _busy(observed: float, expected: float, factor: float = BUSY_FACTOR) -> bool:
    """Whether a timing is `factor` or more off what it should be (either way: a batch timed against a level from
    a busy moment looks far too cheap)."""
    return observed > factor * expected or observed * factor < expected
