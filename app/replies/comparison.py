"""Compare with plain: a finished reply run again without speculation, and what the two runs say side by side.

The result is kept with the reply as a small JSON document (ChatStore.set_comparison). While a comparison runs or
after it failed, the window shows a record that is never stored: ComparisonRunning or ComparisonFailed. No Qt and
no engine here, so export and the CLI can read the stored result too.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional, Sequence, Union

from app.common.units import plural

COMPARISON_FORMAT = 1
# Within this share of each other two speeds read as about the same: one run against one run, on a machine doing
# other work, moves by a few percent (docs/performance.md), so a 1% difference is no verdict.
SAME_SPEED = 0.03


@dataclass(frozen=True)
class PlainComparison:
    """A reply's speed against the same request decoded plainly (no draft), and whether the texts agree."""

    speculative_tokens_per_second: float
    plain_tokens_per_second: float
    identical: bool  # the plain run wrote exactly the reply's text
    sampled: bool  # temperature > 0: the two runs draw from the random generator differently
    plain_tokens: int = 0
    target_name: str = ""  # the model both runs used
    load_note: str = ""  # when the machine's load changed between or during the runs, that, in words

    @property
    def ratio(self) -> float:
        """Speculative speed over plain speed (0 when either could not be timed)."""
        if self.plain_tokens_per_second <= 0 or self.speculative_tokens_per_second <= 0:
            return 0.0
        return self.speculative_tokens_per_second / self.plain_tokens_per_second

    def to_dict(self) -> dict:
        return {"v": COMPARISON_FORMAT, **asdict(self)}

    @classmethod
    def from_dict(cls, data: object) -> Optional[PlainComparison]:
        """The stored result, or None for a document this version cannot read."""
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                speculative_tokens_per_second=float(data["speculative_tokens_per_second"]),
                plain_tokens_per_second=float(data["plain_tokens_per_second"]),
                identical=bool(data["identical"]),
                sampled=bool(data.get("sampled", False)),
                plain_tokens=int(data.get("plain_tokens", 0)),
                target_name=str(data.get("target_name", "")),
                load_note=str(data.get("load_note", "")),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class ComparisonRunning:
    """The plain run is under way (shown, never stored): `tokens` written so far of the `of` it will write (0 where
    it stops where the model does, so nobody knows how many: no share of a total is shown then); `reply_tokens`:
    the speculative reply's, to set them against."""

    tokens: int = 0
    of: int = 0
    reply_tokens: int = 0


@dataclass(frozen=True)
class ComparisonFailed:
    """The comparison could not be made (shown, never stored); `message` is for a person."""

    message: str


# What the line under a reply shows: a result, a pending state, or a stored document (a dict) to read first.
ShownComparison = Union[PlainComparison, ComparisonRunning, ComparisonFailed]


def _shown(data: Union[ShownComparison, dict, None]) -> Optional[ShownComparison]:
    if isinstance(data, (PlainComparison, ComparisonRunning, ComparisonFailed)):
        return data
    return PlainComparison.from_dict(data)


def compare_runs(
    reply_text: str,
    speculative_tps: float,
    plain_text: str,
    plain_tps: float,
    plain_tokens: int,
    temperature: float,
    target_name: str = "",
    reply_threads: Sequence[int] = (),
    plain_threads: Sequence[int] = (),
) -> PlainComparison:
    """`reply_threads` and `plain_threads`: the CPU threads each run's rounds used, in order (0: not known)."""
    return PlainComparison(
        speculative_tps,
        plain_tps,
        reply_text == plain_text,
        temperature > 0,
        plain_tokens,
        target_name,
        load_note(reply_threads, plain_threads),
    )


def load_note(reply_threads: Sequence[int], plain_threads: Sequence[int]) -> str:
    """ "" when both runs used one and the same thread count all along; else how the threads followed the load
    (app.engine.local.thread_governor), since then the two speeds were not measured alike."""

    def changes(threads: Sequence[int]) -> list[str]:
        path: list[str] = []
        for n in threads:
            if n and (not path or path[-1] != str(n)):
                path.append(str(n))
        return path

    reply, plain = changes(reply_threads), changes(plain_threads)
    if not reply or not plain or (len(reply) == 1 and reply == plain):
        return ""
    return (
        f"another program's load changed the CPU threads: the reply ran on {' → '.join(reply)}, "
        f"plain decoding on {' → '.join(plain)}"
    )


def speed_verdict(ratio: float) -> str:
    """ "1.42x faster", "0.91x, slower" or "0.99x, about the same speed"."""
    if ratio >= 1 + SAME_SPEED:
        return f"{ratio:.2f}x faster"
    if ratio <= 1 - SAME_SPEED:
        return f"{ratio:.2f}x, slower"
    return f"{ratio:.2f}x, about the same speed"


def text_verdict(comparison: PlainComparison) -> str:
    if comparison.identical:
        return "same text"
    if comparison.sampled:
        # Speculative sampling draws its acceptance tests from the same generator as the samples, so even with a
        # fixed seed the two runs take different draws: each text is a fair sample, not the same one.
        return "texts differ (sampling)"
    # Under greedy decoding the texts agree unless a near-tie between two tokens was decided differently by the
    # batched verification, or the chat's settings changed since the reply was written.
    return "texts differ (a near-tie, or the settings changed since)"


def comparison_text(data: Union[ShownComparison, dict, None]) -> str:
    """The line under a reply: the result, "Comparing with plain decoding…", or why it failed ("" for none)."""
    comparison = _shown(data)
    if isinstance(comparison, ComparisonRunning):
        if not comparison.tokens:
            return "Comparing with plain decoding… reading the prompt"
        if comparison.of:
            return (
                f"Comparing with plain decoding… {comparison.tokens:,} of {comparison.of:,} tokens "
                f"({100 * comparison.tokens // comparison.of}%)"
            )
        reply = f" (the reply has {comparison.reply_tokens:,})" if comparison.reply_tokens else ""
        return f"Comparing with plain decoding… {plural(comparison.tokens, 'token')} so far{reply}"
    if isinstance(comparison, ComparisonFailed):
        return comparison.message
    if comparison is None:
        return ""
    speeds = (
        f"Plain decoding {comparison.plain_tokens_per_second:.1f} tok/s, "
        f"speculative {comparison.speculative_tokens_per_second:.1f} tok/s"
    )
    ratio = comparison.ratio
    verdict = speed_verdict(ratio) if ratio else "too short to time"
    text = f"{speeds}: {verdict}  ·  {text_verdict(comparison)}"
    return f"{text}  ·  {comparison.load_note}" if comparison.load_note else text


def compare_link_label(data: Union[ShownComparison, dict, None]) -> str:
    """The reply's link: start a comparison, run it again, or cancel the one running."""
    comparison = _shown(data)
    if isinstance(comparison, ComparisonRunning):
        return "Cancel comparison"
    return "Compare again" if isinstance(comparison, PlainComparison) else "Compare with plain"


def running_state(tokens: int = 0, of: int = 0, reply_tokens: int = 0) -> ComparisonRunning:
    return ComparisonRunning(tokens, of, reply_tokens)


def failed_state(message: str) -> ComparisonFailed:
    return ComparisonFailed(message)
