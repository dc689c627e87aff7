"""A vision model's projector file (mmproj): found beside the model by llama.cpp's naming (`mmproj-*.gguf`), and
checked against the model from the two files' headers.

Converters (llama.cpp's convert_hf_to_gguf.py --mmproj, and the GGUFs published from it) write the projector as its
own file, mmproj-<model>-<float type>.gguf, and folders of published vision models hold it beside the weights.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from app.engine.errors import ModelFileError
from app.engine.gguf.info import inspect_gguf
from app.engine.gguf.reader import open_map, read_header

PREFIX = "mmproj"
# The float or quantization type a converter appends to a file name (F16, BF16, Q8_0, IQ4_XS, ...).
_TYPE = re.compile(r"(b?f(16|32)|q\d\w*|iq\d\w*)", re.IGNORECASE)


def is_mmproj(path: Path) -> bool:
    """Whether a file is named as a projector (it is then never offered as a model of its own)."""
    return path.name.lower().startswith(PREFIX) and path.suffix.lower() == ".gguf"


def mmproj_beside(model: Path) -> Optional[Path]:
    """The projector for `model` in its folder: the mmproj whose name, without its type, starts the model's name
    (Gemma-3-4B-it-Q4_K_M.gguf: mmproj-Gemma-3-4B-it-F16.gguf), the longest such; else, in a folder of one model
    and one projector (LM Studio's layout), that one. None when no projector is found."""
    try:
        files = [p for p in model.parent.iterdir() if p.is_file() and p.suffix.lower() == ".gguf"]
    except OSError:
        return None
    projectors = sorted(p for p in files if is_mmproj(p))
    stem = model.stem.lower()
    named = [p for p in projectors if _starts(stem, _model_part(p.stem))]
    if named:
        return max(named, key=lambda p: len(_model_part(p.stem)))
    models = [p for p in files if not is_mmproj(p)]
    return projectors[0] if len(projectors) == 1 and len(models) == 1 and models[0].name == model.name else None


def name_beside(model_name: str, projector_name: str) -> str:
    """The file name under which the projector `projector_name` pairs with the model file `model_name` by
    `mmproj_beside`'s rule, in a folder shared with other models: its own name where that already starts the model's
    (mmproj-google_gemma-3-4b-it-f16.gguf beside google_gemma-3-4b-it-Q4_K_M.gguf), else mmproj-<model's stem>-<its
    type>.gguf (ggml-org's generic mmproj-model-f16.gguf beside gemma-3-4b-it-Q4_K_M.gguf becomes
    mmproj-gemma-3-4b-it-Q4_K_M-f16.gguf). The model's full stem keeps two quantizations of one model, each with
    its projector, apart."""
    model_stem, projector_stem = Path(model_name).stem, Path(projector_name).stem
    if _starts(model_stem.lower(), _model_part(projector_stem)):
        return projector_name
    tail = projector_stem[len(PREFIX) :].strip("-_. ").rpartition("-")[2]
    kind = f"-{tail}" if _TYPE.fullmatch(tail) else ""
    return f"{PREFIX}-{model_stem}{kind}.gguf"


def _model_part(stem: str) -> str:
    name = stem[len(PREFIX) :].strip("-_. ").lower()
    head, _, tail = name.rpartition("-")
    return head if head and _TYPE.fullmatch(tail) else name


def _starts(stem: str, name: str) -> bool:
    return bool(name) and stem.startswith(name) and (len(stem) == len(name) or stem[len(name)] in "-_. ")


def projector_problem(mmproj: Path, model: Path) -> str:
    """Why `mmproj` cannot be `model`'s projector, in one sentence ("" when its header fits): not a GGUF, not a
    projector, one for sound only, or one made for a model of another embedding size. mtmd checks the rest (and
    this again) when it loads the file: a file that passes here may still be refused there."""
    try:
        buf, size = open_map(mmproj)
        try:
            header = read_header(mmproj, buf, size)
        finally:
            buf.close()
    except ModelFileError as exc:
        return f"{mmproj.name} cannot be read as a projector: {str(exc).removeprefix(f'{mmproj}: ')}."
    meta = header.metadata
    if meta.get("general.architecture") != "clip":
        return f"{mmproj.name} is not a projector (an mmproj file) but a model of its own."
    if meta.get("clip.has_vision_encoder") is not True:
        return f"{mmproj.name} is a projector for sound, not pictures."
    try:
        info = inspect_gguf(model)
    except ModelFileError:
        return ""  # the model's own problem, said where the model is listed
    # The projector's last layers write the model's embeddings: one of their tensors has that width. (Its
    # clip.vision.projection_dim is no proof: older LLaVA converters wrote CLIP's own projection width there.)
    n_embd = info.metadata.get(f"{info.architecture}.embedding_length")
    projection = [dims for name, dims, _type, _offset in header.tensors if not name.startswith("v.")]
    if not isinstance(n_embd, int) or not projection or any(n_embd in dims for dims in projection):
        return ""
    width = meta.get("clip.vision.projection_dim")
    sizes = f"{width}, and {model.stem}'s is {n_embd}" if isinstance(width, int) else f"not {model.stem}'s {n_embd}"
    return f"{mmproj.name} is the projector of another model: its embedding size is {sizes}."
