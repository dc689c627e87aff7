"""How sizes and counts read on every screen and in every command: one convention each.

Bytes use decimal units (1 GB = 10^9 bytes), the units the Hugging Face Hub and disk makers give sizes in, so a
file shows the same size in the library, the downloads, `inspect` and the device list.
"""

from __future__ import annotations

from typing import Optional


def format_bytes(n: float) -> str:
    """ "4.7 GB", "491 MB", "512 B": one decimal below 100 of a unit, none above."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            value = n / scale
            return f"{value:.1f} {unit}" if abs(value) < 100 else f"{value:.0f} {unit}"
    return f"{int(n)} B"


def format_parameter_count(count: Optional[int]) -> str:
    """1543714304 -> "1.54B", 135000000 -> "135M"; "" when unknown."""
    if not count:
        return ""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if count >= scale:
            value = count / scale
            return f"{value:.3g}{suffix}" if value < 100 else f"{value:.0f}{suffix}"
    return str(count)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """'1 token', '2 tokens', '1,024 tokens': the one way a count and its noun are written."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"
