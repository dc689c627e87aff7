"""Per-model defaults: what one model file loads and answers with, whatever the app-wide settings say.

Kept in AppSettings.model_defaults by the file's path, as AppSettings.chat_formats keeps the template override of a
file without a chat template (that choice is the fourth default, and stays where it is). Applied each time the
file is loaded as the target. No Qt.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

from app.engine.config import GenerationConfig, LoadSettings
from app.platform.machine_defaults import GPU_LAYERS_ALL, GPU_LAYERS_AUTO


@dataclass(frozen=True)
class ModelDefaults:
    """None: the app-wide setting applies."""

    context_size: Optional[int] = None
    gpu_layers: Optional[int] = None  # the target's layers on the GPU (GPU_LAYERS_AUTO, 0.., GPU_LAYERS_ALL)
    thinking: Optional[bool] = None  # a thinking model thinks (True) or answers at once (False)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def read_defaults(data: Any) -> Optional[ModelDefaults]:
    """One file's defaults as stored, values out of range left out; None when nothing in it is usable."""
    if not isinstance(data, dict):
        return None
    thinking = data.get("thinking")
    defaults = ModelDefaults(
        context_size=_int_in(data.get("context_size"), 1, 1 << 24),
        gpu_layers=_int_in(data.get("gpu_layers"), GPU_LAYERS_AUTO, GPU_LAYERS_ALL),
        thinking=thinking if isinstance(thinking, bool) else None,
    )
    return defaults if defaults.to_dict() else None


def _int_in(value: Any, low: int, high: int) -> Optional[int]:
    """The whole number `value` when it lies in [low, high] (the ranges Settings offers); None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    return None


def for_model(model_defaults: dict[str, dict], path: Optional[str]) -> ModelDefaults:
    return (read_defaults(model_defaults.get(path)) if path else None) or ModelDefaults()


def with_load_defaults(load: LoadSettings, defaults: ModelDefaults) -> LoadSettings:
    """The load settings for a file with these defaults."""
    changes: dict[str, Any] = {}
    if defaults.context_size is not None:
        changes["n_ctx"] = defaults.context_size
    if defaults.gpu_layers is not None:
        changes["target_gpu_layers"] = defaults.gpu_layers
    return dataclasses.replace(load, **changes) if changes else load


def with_reply_defaults(config: GenerationConfig, defaults: ModelDefaults) -> GenerationConfig:
    """A request to a file with these defaults: its thinking choice where the request leaves it open."""
    if defaults.thinking is None or config.thinking is not None:
        return config
    return dataclasses.replace(config, thinking=defaults.thinking)
