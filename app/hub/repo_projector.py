"""The picture projector that comes with a model chosen from a searched repository (issue 46).

A vision model's repository holds its projector files (mmproj-*.gguf) beside the weights: without one the model
cannot see, and on its own a projector is no chat model. So Get models lists the models only, and a model's download
brings one projector along, saved under the name that pairs it with that model (app.engine.gguf.mmproj.name_beside),
where the engine and the library find it. Plain Python, no network.
"""

from __future__ import annotations

from typing import Optional, Sequence

from app.engine.gguf.mmproj import name_beside
from app.hub.client import RepoListing
from app.hub.download_plan import DownloadItem
from app.hub.repo_files import RemoteModel

_F16 = ("F16", "FP16")


def preferred_projector(projectors: Sequence[RemoteModel]) -> Optional[RemoteModel]:
    """The projector to fetch among a repository's: the F16 one where there are several, else the smallest.

    F16 is the type llama.cpp's converter writes a projector in by default and the one llama.cpp's own multimodal
    guide points at (ggml-org's mmproj-model-f16.gguf): the projector the model is known to read pictures with. A
    projector is small beside its model (about 0.85 GB for Gemma 3's, beside 2.5-16 GB of weights), so a quantized one
    saves little and may read pictures worse, while BF16 and F32 cost more for nothing a person sees. Without an F16
    the smallest is the cheapest that works. A split projector is never chosen: llama.cpp loads one from one file.
    """
    whole = [p for p in projectors if not p.is_split]
    f16 = [p for p in whole if p.quant.upper() in _F16]
    candidates = f16 or whole
    if not candidates:
        return None
    return min(candidates, key=lambda p: (p.size is None, p.size or 0, p.name.lower()))


def projector_for(listing: RepoListing, model: RemoteModel) -> Optional[RemoteModel]:
    """The projector that comes with `model` from `listing`'s repository; None where it holds none."""
    return None if model.is_projector else preferred_projector(listing.projectors)


def projector_item(listing: RepoListing, model: RemoteModel, revision: Optional[str] = None) -> Optional[DownloadItem]:
    """The projector's download, saved under the name that pairs it with `model` (its first part, for a split one:
    the file llama.cpp and the library are pointed at)."""
    projector = projector_for(listing, model)
    if projector is None:
        return None
    saved = name_beside(model.first_file.name, projector.first_file.name)
    return DownloadItem(listing.repo_id, projector.first_file.path, revision, saved)


def download_items(listing: RepoListing, model: RemoteModel, revision: Optional[str] = None) -> list[DownloadItem]:
    """What downloading `model` fetches (at `revision`, None for the main branch): every part of it, then its
    projector where the repository has one."""
    items = [DownloadItem(listing.repo_id, f.path, revision) for f in model.files]
    projector = projector_item(listing, model, revision)
    return items + ([projector] if projector is not None else [])
