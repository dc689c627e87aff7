"""What a request decoded side by side is told about its sequence, beyond the reply itself (a DecodeRequest)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional


@dataclass(frozen=True)
class SequenceHooks:
    """Called with the sequence a request is given, before its prompt is matched against what it holds (a kept
    conversation state is restored into it there), and with the same sequence when it ends, before another request
    may take it (its state is saved there)."""

    on_admit: Optional[Callable[[int], None]] = None
    on_end: Optional[Callable[[int], None]] = None
