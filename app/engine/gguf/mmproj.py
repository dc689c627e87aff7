"""A vision model's projector file (mmproj) found beside the model, by llama.cpp's naming: `mmproj-*.gguf`.

Converters (llama.cpp's convert_hf_to_gguf.py --mmproj, and the GGUFs published from it) write the projector as its
own file named mmproj-<model>-<type>.gguf, and folders of published vision models hold one beside the weights.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

PREFIX = "mmproj"


def is_mmproj(path: Path) -> bool:
    """Whether a file is named as a projector (it is then never offered as a model of its own)."""
    return path.name.lower().startswith(PREFIX) and path.suffix.lower() == ".gguf"


def mmproj_beside(model: Path) -> Optional[Path]:
    """The projector for `model`: the one mmproj-*.gguf in its folder, or among several the one whose name holds the
    model's name without its quantization (Gemma-3-4B-Q4_K_M.gguf: mmproj-Gemma-3-4B-F16.gguf); None otherwise."""
    try:
        found = sorted(p for p in model.parent.iterdir() if p.is_file() and is_mmproj(p))
    except OSError:
        return None
    if len(found) == 1:
        return found[0]
    stem = model.stem.lower()
    named = [p for p in found if _base(p.stem[len(PREFIX):].strip("-_.").lower()) and
             stem.startswith(_base(p.stem[len(PREFIX):].strip("-_.").lower()))]
    return named[0] if len(named) == 1 else None


def _base(name: str) -> str:
    """A file name without its last dash-separated part (the quantization or float type)."""
    return name.rsplit("-", 1)[0] if "-" in name else name
