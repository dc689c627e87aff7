"""CPU threads that follow the machine's load: fewer while another program keeps a core busy, all again when the
machine is quiet.

llama.cpp's worker threads spin at every barrier of a forward pass, waiting for the slowest of them. When another
program holds one of the cores they run on (a program started from another login session gets its own scheduler
group, so it gets its share whatever its priority), each pass waits for a thread that lost its core and runs 50-100
times slower; one thread fewer runs at nearly full speed (issue 21, docs/performance.md). So:

- Each forward pass is compared with the fastest pass of that size seen so far. A pass far slower, or two in a row
  that are clearly slower, start a trial of one thread fewer; the count whose passes are faster is kept.
- Where /proc tells how much CPU other programs use (Linux), that decides before a reply's first pass, and every
  half second of passes: a busy core means one thread fewer to try, cores freed again mean one more to try. Elsewhere
  the timing alone decides, with a trial of one thread fewer early on and trials of one more now and then, the gaps
  between them doubling while they fail.
- The count changes between passes with llama_set_n_threads (no reload), for the target and the draft at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Protocol

# A pass this many times the fastest of its size is a busy moment.
SLOW = 2.5
# A pass this many times the fastest is not a moment: one is enough to try fewer threads.
VERY_SLOW = 8.0
# A count tried is kept when its passes take at most this share of the time the count it replaces took.
FASTER = 0.9
TRIAL_PASSES = 2
# Passes between trials of one thread more when nothing tells how busy the machine is; doubled after each that
# failed, up to MAX_PROBE_GAP.
PROBE_GAP = 32
MAX_PROBE_GAP = 1024
HINT_EVERY_S = 0.5  # seconds of passes between looks at other programs' CPU use
# Before a reply, other programs' CPU use counts only when measured over at most this long: the time since the
# last reply may hold a program that has finished since (in the bench, llama.cpp's own run; on a desktop, a build).
RECENT_BUSY_S = 1.0
FIRST_HINT_S = 0.15  # the first look in a reply, sooner: a pass that waits for a lost core costs seconds
# Timings of a count older than this many passes say nothing about now.
FRESH_PASSES = 16

BUSY = "another program is busy"
QUIET = "the machine is quiet again"


class LoadHint(Protocol):
    @property
    def available(self) -> bool: ...

    def others_busy(self, within_s: Optional[float] = None) -> Optional[float]: ...

    def others_running(self) -> Optional[int]: ...

    def others_busy_now(self) -> Optional[float]: ...


@dataclass(frozen=True)
class ThreadChange:
    before: int
    after: int
    reason: str


@dataclass
class _Trial:
    origin: int
    passes_left: int
    reason: str
    upward: bool
    trusted: bool  # kept whatever its timing: /proc said before a reply that other programs want the CPUs


class ThreadGovernor:
    """Chooses the CPU thread count between forward passes. Call from the inference thread only."""

    def __init__(self, ceiling: int, apply: Callable[[int], None], load: Optional[LoadHint] = None, cpus: int = 1):
        self.ceiling = max(1, ceiling)
        self.threads = self.ceiling
        self._apply = apply
        self._load = load if load is not None and load.available else None
        self._cpus = max(cpus, self.ceiling)
        self._fastest: dict[int, float] = {}  # tokens in a pass -> its fastest time at any count
        self._slowness: dict[int, tuple[float, int]] = {}  # threads -> (recent time / fastest, pass index)
        self._passes = 0
        self._slow_streak = 0
        self._trial: Optional[_Trial] = None
        self._since_change = 0
        self._gap = PROBE_GAP
        self._explored = self._load is not None  # without a hint, one early trial of one thread fewer
        self._hint_s = 0.0
        self._cooldown_until = 0  # after a trial that failed, no other before this pass

    # -- what the decoder calls ---------------------------------------------------------------------------------

    def before_reply(self) -> Optional[ThreadChange]:
        """Before a reply's prompt: how many other programs want a CPU now."""
        if self._load is None or self._trial is not None:
            return None
        # Programs running now, and the CPU others used since the last look if that was recent (a reply that just
        # ended): either can miss a busy program, rarely both. A busy spell that ended before this reply does not
        # count: the reply's first pass, often its longest (a long prompt), would run on threads it does not need.
        running = self._load.others_running()
        busy = self._load.others_busy(within_s=RECENT_BUSY_S)
        self._hint_s = HINT_EVERY_S - FIRST_HINT_S
        if running is None and busy is None:
            return None
        free = self._cpus - max(running or 0, int((busy or 0.0) + 0.5))
        if free < self.threads and self.threads > 1:
            # Both looks also catch work that is over by now: the client that encoded this request and waits for
            # it, serve's server thread handing it over, the kernel writing the last reply's saved state. A short
            # look now tells whether a program still wants a core: halving the threads for a long prompt's pass
            # doubles its first token's time (docs/performance-log.md, 2026-12-07).
            now = self._load.others_busy_now()
            if now is not None:
                free = int(self._cpus - now + 0.5)
            if free < self.threads:
                self._switch(max(1, free), BUSY, trusted=True)
            return None
        if free > self.threads and self.threads < self.ceiling:
            self._switch(min(self.ceiling, self.threads + 1), QUIET, upward=True)
            return None
        return None

    def machine_busy(self) -> bool:
        """Whether another program holds a CPU the models' threads would want now (measuring costs waits)."""
        if self.threads < self.ceiling:
            return True
        running = self._load.others_running() if self._load is not None else None
        return running is not None and running > self._cpus - self.ceiling

    def observe(self, tokens: int, seconds: float) -> Optional[ThreadChange]:
        """A forward pass of `tokens` tokens took `seconds` at the current count; the change made, if any."""
        if tokens < 1 or seconds <= 0:
            return None
        self._passes += 1
        fastest = self._fastest.get(tokens)
        if fastest is None:
            single = self._fastest.get(1)
            fastest = single * tokens if single is not None and tokens > 1 else seconds
        slowness = seconds / fastest
        self._fastest[tokens] = min(fastest, seconds)
        earlier = self._fresh(self.threads)
        blended = slowness if earlier is None else 0.5 * earlier + 0.5 * slowness
        self._slowness[self.threads] = (blended, self._passes)

        if self._trial is not None:
            return self._judge_trial()
        self._slow_streak = self._slow_streak + 1 if slowness > SLOW else 0
        self._hint_s += seconds
        self._since_change += 1
        if self._passes < self._cooldown_until:
            return None
        slow = slowness > VERY_SLOW or self._slow_streak >= 2
        if self.threads > 1 and (slow or (not self._explored and self._passes >= 2)):
            self._explored = True
            self._switch(self.threads - 1, BUSY)
            return None
        if self._load is not None and self._hint_s >= HINT_EVERY_S:
            self._hint_s = 0.0
            return self._follow_hint()
        if self._load is None and self.threads < self.ceiling and self._since_change >= self._gap:
            self._switch(self.threads + 1, QUIET, upward=True)
            return None
        return None

    # -- decisions ----------------------------------------------------------------------------------------------

    def _follow_hint(self) -> Optional[ThreadChange]:
        others = self._load.others_busy() if self._load is not None else None
        if others is None:
            return None
        free = int(self._cpus - others + 0.5)
        if free < self.threads and self.threads > 1:
            self._switch(self.threads - 1, BUSY)
            return None
        if free > self.threads and self.threads < self.ceiling:
            self._switch(self.threads + 1, QUIET, upward=True)
            return None
        return None

    def _switch(self, threads: int, reason: str, *, upward: bool = False, trusted: bool = False) -> None:
        """Start a trial of `threads`; the change is announced once the trial keeps it (so: nothing to say now)."""
        self._trial = _Trial(self.threads, TRIAL_PASSES, reason, upward, trusted)
        self._set(threads)

    def _judge_trial(self) -> Optional[ThreadChange]:
        trial = self._trial
        assert trial is not None
        trial.passes_left -= 1
        if trial.passes_left > 0:
            return None
        self._trial = None
        now = self._fresh(self.threads)
        # The origin's last timing, however old: the count tried was measured just now, and a count's speed on a
        # quiet machine is what a trial of one more thread is measured against.
        earlier = self._slowness.get(trial.origin)
        if trial.trusted or earlier is None:
            keep = trial.trusted or not trial.upward
        else:
            keep = now is not None and now <= FASTER * earlier[0]
        if keep:
            self._since_change = 0
            if trial.upward:
                self._gap = PROBE_GAP
            return ThreadChange(trial.origin, self.threads, trial.reason)
        self._cooldown_until = self._passes + self._gap
        self._gap = min(2 * self._gap, MAX_PROBE_GAP)
        self._since_change = 0
        self._set(trial.origin)
        return None

    def settle(self) -> Optional[ThreadChange]:
        """End a trial still running when a reply ends: what a trust-worthy trial chose is kept and said."""
        trial = self._trial
        if trial is None:
            return None
        self._trial = None
        if trial.trusted:
            return ThreadChange(trial.origin, self.threads, trial.reason)
        self._set(trial.origin)
        return None

    def _fresh(self, threads: int) -> Optional[float]:
        entry = self._slowness.get(threads)
        if entry is None or self._passes - entry[1] > FRESH_PASSES:
            return None
        return entry[0]

    def _set(self, threads: int) -> None:
        if threads != self.threads:
            self.threads = threads
            self._apply(threads)
