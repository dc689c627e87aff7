"""Per-model defaults: what one model file loads and answers with, whatever the app-wide settings say.

The load settings (batch, flash attention, KV-cache type, mmap, mlock) are per-model too, and so is the projector
a vision model reads pictures with. Kept in AppSettings.model_defaults by the file's path, as
AppSettings.chat_formats keeps the template override of a file without a chat template (that choice is the fourth
default, and stays where it is). Applied each time the file is loaded as the target. No Qt.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from app.engine.gguf.mmproj import mmproj_beside
from app.engine.config import FLASH_ATTN_CHOICES, KV_TYPES, GenerationConfig, LoadSettings
from app.platform.machine_defaults import BATCH_AUTO, GPU_LAYERS_ALL, GPU_LAYERS_AUTO

# The largest batch Settings offers (tokens per forward pass).
MAX_BATCH = 8192


@dataclass(frozen=True)
class ModelDefaults:
    """None: the app-wide setting applies."""

    context_size: Optional[int] = None
    gpu_layers: Optional[int] = None  # the target's layers on the GPU (GPU_LAYERS_AUTO, 0.., GPU_LAYERS_ALL)
    thinking: Optional[bool] = None  # a thinking model thinks (True) or answers at once (False)
    # The load settings (app.store.settings.AppSettings has the app-wide ones and their meaning).
    batch_size: Optional[int] = None
    flash_attention: Optional[str] = None
    kv_cache_type: Optional[str] = None
    use_mmap: Optional[bool] = None
    use_mlock: Optional[bool] = None
    # The model's projector (an mmproj file) chosen in Model settings; None: the one beside it (app.engine.gguf.mmproj).
    projector: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def read_defaults(data: Any) -> Optional[ModelDefaults]:
    """One file's defaults as stored, values out of range left out; None when nothing in it is usable."""
    if not isinstance(data, dict):
        return None
    defaults = ModelDefaults(
        context_size=_int_in(data.get("context_size"), 1, 1 << 24),
        gpu_layers=_int_in(data.get("gpu_layers"), GPU_LAYERS_AUTO, GPU_LAYERS_ALL),
        thinking=_bool(data.get("thinking")),
        batch_size=_int_in(data.get("batch_size"), BATCH_AUTO, MAX_BATCH),
        flash_attention=_choice(data.get("flash_attention"), FLASH_ATTN_CHOICES),
        kv_cache_type=_choice(data.get("kv_cache_type"), KV_TYPES),
        use_mmap=_bool(data.get("use_mmap")),
        use_mlock=_bool(data.get("use_mlock")),
        projector=_text(data.get("projector")),
    )
    return defaults if defaults.to_dict() else None


def _int_in(value: Any, low: int, high: int) -> Optional[int]:
    """The whole number `value` when it lies in [low, high] (the ranges Settings offers); None otherwise."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    return None


def _bool(value: Any) -> Optional[bool]:
    return value if isinstance(value, bool) else None


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


def _choice(value: Any, choices: tuple[str, ...]) -> Optional[str]:
    return value if value in choices else None


def for_model(model_defaults: dict[str, dict], path: Optional[str]) -> ModelDefaults:
    return (read_defaults(model_defaults.get(path)) if path else None) or ModelDefaults()


def with_model(model_defaults: dict[str, dict], path: str, defaults: ModelDefaults) -> dict[str, dict]:
    """A copy of `model_defaults` with this file's defaults set (removed when they set nothing)."""
    changed = {k: v for k, v in model_defaults.items() if k != path}
    if defaults.to_dict():
        changed[path] = defaults.to_dict()
    return changed


def projector_of(model: str, defaults: ModelDefaults) -> Optional[Path]:
    """The projector `model` reads pictures with: the one chosen in its settings, else the one beside it (None:
    it cannot see)."""
    return Path(defaults.projector) if defaults.projector else mmproj_beside(Path(model))


def with_load_defaults(load: LoadSettings, defaults: ModelDefaults) -> LoadSettings:
    """The load settings for a file with these defaults (each one it sets replaces the app-wide one)."""
    changes: dict[str, Any] = {}
    if defaults.context_size is not None:
        changes["n_ctx"] = defaults.context_size
    if defaults.gpu_layers is not None:
        changes["target_gpu_layers"] = defaults.gpu_layers
    for field, load_field in (
        ("batch_size", "n_batch"),
        ("flash_attention", "flash_attn"),
        ("kv_cache_type", "kv_type"),
        ("use_mmap", "mmap"),
        ("use_mlock", "mlock"),
    ):
        if getattr(defaults, field) is not None:
            changes[load_field] = getattr(defaults, field)
    return dataclasses.replace(load, **changes) if changes else load


def with_reply_defaults(config: GenerationConfig, defaults: ModelDefaults) -> GenerationConfig:
    """A request to a file with these defaults: its thinking choice where the request leaves it open."""
    if defaults.thinking is None or config.thinking is not None:
        return config
    return dataclasses.replace(config, thinking=defaults.thinking)
