"""GGUF files a person already has: the Hugging Face cache, LM Studio's models folder, their own folders.

Everything is listed where it is, never copied: a path in the HF cache is the snapshot link huggingface_hub made
(llama.cpp follows it), an LM Studio model stays under LM Studio's folder. Split models are one entry whose path
is the first part. Plain Python; walking big folders takes a moment, so the window calls it off the GUI thread.
Any thread may call these functions; they keep no state.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from app.platform import paths
from app.hub import environment
from app.hub.repo_files import SPLIT_RE

SOURCE_APP = "app"
SOURCE_FOLDER = "folder"
SOURCE_HF_CACHE = "hf-cache"
SOURCE_LM_STUDIO = "lm-studio"


@dataclass(frozen=True)
class ModelFolder:
    """A folder that holds models, and which tool keeps it (the library scans these)."""

    path: Path
    source: str  # "hf-cache", "lm-studio", "folder", "app"


@dataclass(frozen=True)
class FoundModel:
    """One model on disk, in place. `path` is what to load (the first part of a split model)."""

    path: Path
    source: str
    size: int  # all parts together
    parts: tuple[Path, ...]
    repo_id: Optional[str] = None  # known for the HF cache ("owner/name"), and for LM Studio's owner/name folders

    @property
    def name(self) -> str:
        return self.path.name


def lm_studio_model_dirs(home: Optional[Path] = None) -> list[Path]:
    """LM Studio's models folders that exist on this machine (current and older layouts, and a custom one)."""
    home = Path(home) if home is not None else Path.home()
    candidates = [home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"]
    # LM Studio lets people move its models folder; its settings file then names the new place.
    for settings in (home / ".lmstudio" / "settings.json", home / ".cache" / "lm-studio" / "settings.json"):
        custom = _read_json_key(settings, "downloadsFolder")
        if custom:
            candidates.insert(0, Path(custom).expanduser())
    found: list[Path] = []
    for folder in candidates:
        if folder.is_dir() and folder not in found:
            found.append(folder)
    return found


def discover_model_folders(home: Optional[Path] = None, include_hf_cache: bool = True) -> list[ModelFolder]:
    """Folders other tools keep models in, present on this machine: the HF cache, then LM Studio's."""
    folders: list[ModelFolder] = []
    if include_hf_cache:
        cache = environment.hub_cache_dir()
        if cache.is_dir():
            folders.append(ModelFolder(cache, SOURCE_HF_CACHE))
    folders += [ModelFolder(path, SOURCE_LM_STUDIO) for path in lm_studio_model_dirs(home)]
    return folders


def find_in_hf_cache(cache_dir: Optional[Path] = None) -> list[FoundModel]:
    """GGUF files in huggingface_hub's cache, found with its own cache scan (scan_cache_dir)."""
    cache_dir = Path(cache_dir) if cache_dir is not None else environment.hub_cache_dir()
    if not cache_dir.is_dir():
        return []
    try:
        hf = environment.import_huggingface_hub()
        info = hf.scan_cache_dir(cache_dir)
    except Exception:  # no huggingface_hub, or a cache it cannot read: there is simply nothing to offer
        return []
    files_by_repo: dict[str, list[tuple[Path, int]]] = {}
    seen_blobs: set[Path] = set()
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        # Newest revision first, so a file present in several snapshots is listed from the newest one.
        for revision in sorted(repo.revisions, key=lambda r: r.last_modified, reverse=True):
            for cached in revision.files:
                if not cached.file_name.lower().endswith(".gguf") or cached.blob_path in seen_blobs:
                    continue
                seen_blobs.add(cached.blob_path)
                files_by_repo.setdefault(repo.repo_id, []).append((Path(cached.file_path), cached.size_on_disk))
    found: list[FoundModel] = []
    for repo_id, files in files_by_repo.items():
        found += _as_models(files, SOURCE_HF_CACHE, repo_id)
    return found


def find_in_folder(folder: Path, source: str = SOURCE_FOLDER) -> list[FoundModel]:
    """GGUF files under `folder`, recursively. Unfinished downloads (.part) and hidden folders are skipped."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        return []
    files: list[tuple[Path, int]] = []
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.lower().endswith(".gguf"):
                path = Path(root) / name
                try:
                    files.append((path, path.stat().st_size))
                except OSError:
                    continue
    models = _as_models(files, source, None)
    if source == SOURCE_LM_STUDIO:
        # LM Studio keeps models as <models>/<publisher>/<repo>/<file>.gguf: that is the Hub repo they came from.
        models = [_with_repo_from_layout(m, folder) for m in models]
    return models


def discover_models(
    user_folders: Iterable[Path] = (),
    *,
    home: Optional[Path] = None,
    include_app: bool = True,
    include_hf_cache: bool = True,
    include_lm_studio: bool = True,
) -> list[FoundModel]:
    """Every GGUF model found: the app's folder, the person's folders, the HF cache, LM Studio. Each file once."""
    found: list[FoundModel] = []
    if include_app:
        found += find_in_folder(paths.models_dir(), SOURCE_APP)
    for folder in user_folders:
        found += find_in_folder(Path(folder), SOURCE_FOLDER)
    if include_hf_cache:
        found += find_in_hf_cache()
    if include_lm_studio:
        for folder in lm_studio_model_dirs(home):
            found += find_in_folder(folder, SOURCE_LM_STUDIO)
    return paths.unique_by_path(found, lambda model: model.path)


def _as_models(files: list[tuple[Path, int]], source: str, repo_id: Optional[str]) -> list[FoundModel]:
    """Single files as they are; the parts of a split model merged into one entry (only when part 1 is there)."""
    singles: list[FoundModel] = []
    splits: dict[tuple[Path, str], list[tuple[int, Path, int]]] = {}
    for path, size in files:
        match = SPLIT_RE.search(path.name)
        if match is None:
            singles.append(FoundModel(path, source, size, (path,), repo_id))
        else:
            key = (path.parent, SPLIT_RE.sub("", path.name))
            splits.setdefault(key, []).append((int(match.group(1)), path, size))
    for parts in splits.values():
        parts.sort()
        if parts[0][0] != 1:
            continue  # without its first part a split model cannot be loaded
        singles.append(FoundModel(parts[0][1], source, sum(p[2] for p in parts), tuple(p[1] for p in parts), repo_id))
    return sorted(singles, key=lambda m: str(m.path).lower())


def _with_repo_from_layout(model: FoundModel, root: Path) -> FoundModel:
    try:
        relative = model.path.relative_to(root).parts
    except ValueError:
        return model
    if len(relative) >= 3:
        return FoundModel(model.path, model.source, model.size, model.parts, f"{relative[0]}/{relative[1]}")
    return model


def _read_json_key(path: Path, key: str) -> Optional[str]:
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value.strip() else None
