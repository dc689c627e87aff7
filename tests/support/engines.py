"""The local engine with the tiny synthetic pair loaded, as the engine-level tests use it."""

from __future__ import annotations

from app.engine.config import LoadSettings
from app.engine.local.engine import SpecEngine


def tiny_pair_engine(tiny_models, n_ctx: int = 1024, **load) -> SpecEngine:
    """A SpecEngine on one thread with the tiny target and draft loaded; the caller closes it. `load`: more
    LoadSettings fields."""
    engine = SpecEngine(LoadSettings(n_ctx=n_ctx, n_threads=1, **load))
    engine.load_target(tiny_models.target)
    engine.load_draft(tiny_models.draft)
    return engine
