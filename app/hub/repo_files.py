"""A Hub repository's GGUF files as a person thinks of them: models, grouped by quantization.

A split model (name-00001-of-00003.gguf ...) is one model whose parts download together and land side by side;
llama.cpp loads it through its first part. Plain Python, no network: the listing itself is in client.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Optional

# "-00001-of-00003.gguf": llama.cpp's gguf-split naming.
SPLIT_RE = re.compile(r"-(\d{5})-of-(\d{5})\.gguf$", re.IGNORECASE)

# Quantization names as llama.cpp and the usual publishers write them: Q4_K_M, IQ3_XXS, Q4_0_4_4, Q8_0, BF16,
# TQ1_0, MXFP4, UD-Q4_K_XL (unsloth's dynamic quants keep the UD- prefix)...
_QUANT_RE = re.compile(
    r"(?:^|[-_.\s])((?:UD-)?(?:I?Q\d(?:_[A-Z0-9]{1,3})*|TQ\d_\d|BF16|F16|FP16|F32|FP32|MXFP4(?:_MOE)?))(?=$|[-_.\s])",
    re.IGNORECASE,
)

# Multimodal projectors ship next to the language model but cannot be chatted with on their own.
_PROJECTOR_RE = re.compile(r"(^|[-_./])mmproj([-_.]|$)", re.IGNORECASE)

# Order quantization groups from small to large, the way people choose: smaller first is a cheaper download.
_QUANT_ORDER = (
    "IQ1",
    "TQ1",
    "IQ2",
    "Q2",
    "TQ2",
    "IQ3",
    "Q3",
    "IQ4",
    "Q4",
    "MXFP4",
    "Q5",
    "Q6",
    "Q8",
    "BF16",
    "F16",
    "FP16",
    "F32",
    "FP32",
)


@dataclass(frozen=True)
class RemoteFile:
    """One file in a Hub repository, with what the Hub says about it."""

    path: str  # path inside the repo, "Q4_K_M/model-00001-of-00002.gguf"
    size: Optional[int] = None
    sha256: Optional[str] = None  # LFS files only; the Hub's own checksum

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class RemoteModel:
    """One usable model in a repo: a single .gguf file, or every part of a split one (in part order)."""

    name: str  # display name: the file name, without the -0000k-of-0000n part for a split model
    quant: str  # "Q4_K_M", or "" when the name does not say
    files: tuple[RemoteFile, ...]
    is_projector: bool = False

    @property
    def size(self) -> Optional[int]:
        sizes = [f.size for f in self.files]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)

    @property
    def is_split(self) -> bool:
        return len(self.files) > 1

    @property
    def first_file(self) -> RemoteFile:
        """The file llama.cpp is pointed at (the first part of a split model)."""
        return self.files[0]

    @property
    def complete(self) -> bool:
        """False when a split model's listing lacks some of its parts."""
        match = SPLIT_RE.search(self.files[0].name)
        return match is None or len(self.files) == int(match.group(2))


@dataclass(frozen=True)
class QuantGroup:
    """The models of one quantization level (usually one, sometimes several variants)."""

    quant: str  # "" for files whose name says no quantization
    models: tuple[RemoteModel, ...]

    @property
    def size(self) -> Optional[int]:
        sizes = [m.size for m in self.models]
        return None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)


def quant_of(path: str) -> str:
    """The quantization named in a GGUF file's path ("Q4_K_M"), or "" when it names none."""
    name = SPLIT_RE.sub(".gguf", path.rsplit("/", 1)[-1])
    stem = re.sub(r"\.gguf$", "", name, flags=re.IGNORECASE)
    matches = _QUANT_RE.findall(stem)
    if not matches and "/" in path:
        # Some repos keep each quantization in its own folder: "Q8_0/model-00001-of-00002.gguf".
        matches = _QUANT_RE.findall(path.rsplit("/", 1)[0].rsplit("/", 1)[-1])
    return matches[-1].upper() if matches else ""


def split_info(path: str) -> Optional[tuple[int, int]]:
    """(part, count) for a split part's name, None for a whole file."""
    match = SPLIT_RE.search(path)
    return (int(match.group(1)), int(match.group(2))) if match else None


def is_gguf(path: str) -> bool:
    return path.lower().endswith(".gguf")


def group_gguf_files(files: Iterable[RemoteFile]) -> list[QuantGroup]:
    """Models from a repo listing: parts of a split model merged, grouped by quantization, small quants first.

    Non-GGUF files are ignored. Projector (mmproj) files form their own models, listed after the others.
    """
    models_by_key: dict[str, list[RemoteFile]] = {}
    for remote in files:
        if not is_gguf(remote.path):
            continue
        key = SPLIT_RE.sub("", remote.path) if split_info(remote.path) else remote.path
        models_by_key.setdefault(key, []).append(remote)

    models: list[RemoteModel] = []
    for key, parts in models_by_key.items():
        parts.sort(key=lambda f: (split_info(f.path) or (0, 0))[0])
        display = parts[0].name if len(parts) == 1 and not split_info(parts[0].path) else key.rsplit("/", 1)[-1]
        if not display.lower().endswith(".gguf"):
            display += ".gguf"
        models.append(
            RemoteModel(
                name=display,
                quant=quant_of(parts[0].path),
                files=tuple(parts),
                is_projector=bool(_PROJECTOR_RE.search(parts[0].path)),
            )
        )

    groups: dict[tuple[bool, str], list[RemoteModel]] = {}
    for model in models:
        groups.setdefault((model.is_projector, model.quant), []).append(model)
    ordered = sorted(groups.items(), key=lambda item: (item[0][0], _quant_rank(item[0][1]), item[0][1]))
    return [
        QuantGroup(
            quant=("mmproj " + quant).strip() if is_projector else quant,
            models=tuple(sorted(group, key=lambda m: m.name.lower())),
        )
        for (is_projector, quant), group in ordered
    ]


def _quant_rank(quant: str) -> int:
    if not quant:
        return len(_QUANT_ORDER) + 1
    bare = quant.upper().removeprefix("UD-")
    for rank, prefix in enumerate(_QUANT_ORDER):
        if bare.startswith(prefix):
            return rank
    return len(_QUANT_ORDER)
