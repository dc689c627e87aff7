"""The model library: which GGUF files the app can offer, found without loading any weights.

Plain Python (no Qt), so the window, the CLI and tests share it. Scanning reads only GGUF headers through
`app.engine.gguf.info.inspect_gguf`; it may take a while on a slow disk, so the window runs it off the GUI thread.
Any thread may call these functions; they keep no state.
"""

from __future__ import annotations

import dataclasses
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from app.platform import paths
from app.engine.gguf.compat import check_pair
from app.engine.gguf.compat_cache import CompatCache, default_cache, file_key
from app.engine.errors import ModelFileError
from app.engine.config import KvType
from app.engine.targets import LocalModel, ServerModel, Target
from app.engine.gguf.info import inspect_gguf
from app.engine.gguf.kind import ModelKind, not_chat_sentence
from app.engine.gguf.memory import MemoryCost, kv_values_per_token, memory_cost
from app.engine.gguf.mmproj import is_mmproj, mmproj_beside
from app.common.units import format_bytes, format_parameter_count


@dataclass(frozen=True)
class ModelEntry:
    """One .gguf file in the library, usable or not (then `problem` says why, in words a person can act on)."""

    path: str
    name: str  # the file name without .gguf: unique, unlike general.name, which two quantizations share
    file_size: int
    folder: str
    source: str = "folder"  # "app", "folder", "hf-cache", "lm-studio"
    architecture: str = ""
    parameter_count: Optional[int] = None
    quantization: str = ""
    context_length: Optional[int] = None
    vocab_size: Optional[int] = None
    usable: bool = True
    problem: str = ""
    model_name: str = ""  # general.name from the header, as its publisher wrote it
    # The file carries tokenizer.chat_template; without one (a base model) the user chooses how chats are formatted.
    has_chat_template: bool = True
    # What the chat template lets a chat choose about thinking: it reads `enable_thinking` (Qwen3 and others) or
    # `reasoning_effort` (gpt-oss). The chat settings offer those controls where it does.
    thinking_switch: bool = False
    effort_switch: bool = False
    server: Optional[ServerModel] = None  # a server's model (then `path` is its key), None for a file
    # Key and value elements per token of context, all layers (app.engine.gguf.memory): 0 when not known.
    kv_values: int = 0
    # The projector beside the model (mmproj-*.gguf, app.engine.gguf.mmproj): the model can see pictures.
    projector: str = ""
    # What the model is for (app.engine.gguf.kind). An embedding model or a reranker is listed but not usable as a
    # chat model: `problem` says what it is for instead.
    kind: ModelKind = "chat"

    @property
    def target(self) -> Target:
        """What loading this row asks the engine for."""
        return self.server if self.server is not None else LocalModel(Path(self.path))

    def memory(self, n_ctx: int, kv_type: KvType = "f16") -> Optional[MemoryCost]:
        """What this file takes once loaded at that context and KV-cache type; None when that cannot be told (a
        server's model, a file whose header could not be read)."""
        if self.server is not None or not self.usable or not self.kv_values:
            return None
        return memory_cost(self.file_size, self.kv_values, n_ctx, kv_type, self.context_length)

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path)

    @property
    def size_label(self) -> str:
        return format_bytes(self.file_size)

    @property
    def parameters_label(self) -> str:
        return format_parameter_count(self.parameter_count)

    @property
    def context_label(self) -> str:
        if not self.context_length:
            return ""
        if self.context_length >= 1024 and self.context_length % 1024 == 0:
            return f"{self.context_length // 1024}K ctx"
        return f"{self.context_length:,} ctx"

    @property
    def summary(self) -> str:
        """One line of facts: "qwen2 · 1.5B · Q4_K_M · 32K ctx · 1.0 GB"."""
        if self.source == "server":
            return f"On the server {self.folder}"
        parts = [
            self.architecture,
            self.parameters_label,
            self.quantization,
            self.context_label,
            self.size_label,
            "sees pictures" if self.projector else "",
        ]
        return " · ".join(p for p in parts if p)


@dataclass(frozen=True)
class LibraryFolder:
    """A folder the library scans, and where it came from (for the label in Settings)."""

    path: Path
    source: str  # "app", "folder", "hf-cache", "lm-studio"


def library_folders(user_folders: Iterable[str | Path] = (), scan_hf_cache: bool = True) -> list[LibraryFolder]:
    """The folders to scan: the app's own models folder first, then the user's, then other tools' model folders
    (the Hugging Face cache, LM Studio) when `scan_hf_cache` is on."""
    folders = [LibraryFolder(paths.models_dir(), "app")]
    folders += [LibraryFolder(Path(f).expanduser(), "folder") for f in user_folders]
    if scan_hf_cache:
        from app.hub.discovery import discover_model_folders

        folders += [LibraryFolder(f.path, f.source) for f in discover_model_folders()]
    return paths.unique_by_path(folders, lambda folder: folder.path)


def find_gguf_files(folder: Path, cancel=None) -> list[Path]:
    """Every .gguf file under `folder` (following the HF cache's snapshot symlinks), sorted by path.

    Each folder is read once however many links lead to it, so a link back up the tree cannot loop. `cancel` (a
    threading.Event) is checked before each folder; a cancelled walk returns what it found so far.
    """
    found: list[Path] = []
    visited: set[tuple[int, int]] = set()
    pending = [Path(folder)]
    while pending:
        if cancel is not None and cancel.is_set():
            break
        current = pending.pop()
        try:
            info = os.stat(current)
            if not stat.S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) in visited:
                continue
            visited.add((info.st_dev, info.st_ino))
            with os.scandir(current) as listing:
                entries = list(listing)
        except OSError:
            continue  # unreadable or vanished: the rest of the library still counts
        subfolders = []
        for entry in entries:
            if _is_folder(entry):
                # The HF cache keeps real files under blobs/ without an extension; snapshots/ link to them by name.
                if not entry.name.startswith(".") and entry.name != "blobs":
                    subfolders.append(current / entry.name)
            elif entry.name.lower().endswith(".gguf"):
                found.append(current / entry.name)
        pending.extend(sorted(subfolders, reverse=True))
    return sorted(found)


def _is_folder(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()  # follows symlinks
    except OSError:
        return False


def inspect_entry(path: Path, folder: LibraryFolder | None = None) -> ModelEntry:
    """One library entry from the file's GGUF header; never raises for a bad file, it reports the problem."""
    folder_path = str(folder.path) if folder else str(path.parent)
    source = folder.source if folder else "folder"
    try:
        file_size = path.stat().st_size
    except OSError as exc:
        return ModelEntry(str(path), path.stem, 0, folder_path, source, usable=False, problem=f"Cannot read: {exc}")

    try:
        info = inspect_gguf(path)
    except ModelFileError as exc:
        return ModelEntry(
            str(path), path.stem, file_size, folder_path, source, usable=False, problem=_without_path(str(exc), path)
        )
    except Exception as exc:  # a header we did not foresee must not take the whole library down
        return ModelEntry(
            str(path),
            path.stem,
            file_size,
            folder_path,
            source,
            usable=False,
            problem=f"Could not read the GGUF header: {exc}",
        )
    return ModelEntry(
        path=str(path),
        name=path.stem,
        model_name=info.name,
        file_size=info.file_size or file_size,
        folder=folder_path,
        source=source,
        architecture=info.architecture,
        parameter_count=info.parameter_count,
        quantization=_quant_label(info),
        context_length=info.context_length,
        vocab_size=info.vocab_size,
        has_chat_template=info.chat_template is not None,
        thinking_switch="enable_thinking" in (info.chat_template or ""),
        effort_switch="reasoning_effort" in (info.chat_template or ""),
        kv_values=sum(kv_values_per_token(info.metadata)),
        projector=str(mmproj_beside(path) or ""),
        kind=info.kind,
        usable=info.usable and info.kind == "chat",
        problem=_without_path(info.problem or "", path) or not_chat_sentence(info.kind),
    )


def _quant_label(info) -> str:
    return "" if info.quantization in ("", "unknown") else info.quantization


def _without_path(message: str, path: Path) -> str:
    """The entry already shows its file; a message that starts by naming it again reads better without."""
    prefix = f"{path}: "
    message = message[len(prefix) :] if message.startswith(prefix) else message
    return message[:1].upper() + message[1:]


def scan_library(folders: Sequence[LibraryFolder], cancel=None) -> list[ModelEntry]:
    """Inspect every .gguf under `folders`, each file once. `cancel` (a threading.Event) stops early.

    Usable models come first, by name; files that cannot be used follow, so the reason is always visible.
    """
    entries: list[ModelEntry] = []
    seen: set[Path] = set()
    for folder in folders:
        for path in find_gguf_files(folder.path, cancel):
            if cancel is not None and cancel.is_set():
                return _sorted(entries)
            if is_mmproj(path):
                continue  # a projector is no model of its own: its model's entry names it
            key = paths.resolved(path)
            if key in seen:
                continue
            seen.add(key)
            entries.append(inspect_entry(path, folder))
    return _sorted(entries)


def _sorted(entries: list[ModelEntry]) -> list[ModelEntry]:
    return sorted(entries, key=lambda e: (not e.usable, e.name.lower(), e.path))


# suggest_drafts: a draft at most this fraction of the target's parameters is worth speculating with, and one
# around IDEAL_DRAFT_RATIO (between 1/10 and 1/4) balances acceptance against the draft's own cost.
SMALL_DRAFT_RATIO = 0.5
IDEAL_DRAFT_RATIO = 0.16


@dataclass(frozen=True)
class DraftSuggestion:
    """One candidate draft for a target, as the model picker lists it (incompatible ones shown disabled)."""

    path: Path
    compatible: bool
    recommended: bool  # compatible and much smaller than the target
    reason: str  # why it is not usable, or how it compares with the target
    size_ratio: Optional[float]  # draft parameters / target parameters, None when unknown


def suggest_drafts(
    target: Path, candidates: Iterable[Path], *, cache: Optional[CompatCache] = None
) -> list[DraftSuggestion]:
    """Rank candidate drafts for `target`: good ones (compatible, much smaller) best first, then compatible ones
    that are not much smaller, then incompatible or unreadable ones with their reason. The target itself is left out.
    Raises ModelFileError when the target is unreadable.
    """
    cache = cache or default_cache()
    target = Path(target)
    target_key = file_key(target)
    target_facts = cache.facts(target, target_key)
    seen = {target_key[0]}
    good: list[tuple[float, DraftSuggestion]] = []
    fallback: list[tuple[float, DraftSuggestion]] = []
    refused: list[DraftSuggestion] = []
    for candidate in candidates:
        candidate = Path(candidate)
        resolved = str(candidate.resolve())
        if resolved in seen:
            continue
        seen.add(resolved)
        try:
            result = check_pair(target, candidate, cache)
            facts = cache.facts(candidate, file_key(candidate))
        except ModelFileError as exc:
            refused.append(DraftSuggestion(candidate, False, False, str(exc), None))
            continue
        ratio = facts.parameter_count / target_facts.parameter_count if target_facts.parameter_count else None
        if not result.compatible:
            refused.append(DraftSuggestion(candidate, False, False, result.reason, ratio))
        elif ratio is not None and ratio <= SMALL_DRAFT_RATIO:
            closeness = abs(math.log(max(ratio, 1e-9) / IDEAL_DRAFT_RATIO))
            good.append((closeness, DraftSuggestion(candidate, True, True, _relative_size(ratio), ratio)))
        else:
            reason = f"compatible, but {_relative_size(ratio)}: too big to speed it up" if ratio else "compatible"
            order = ratio if ratio is not None else math.inf
            fallback.append((order, DraftSuggestion(candidate, True, False, reason, ratio)))
    cache.save()
    good.sort(key=lambda item: item[0])
    fallback.sort(key=lambda item: item[0])
    return [s for _, s in good] + [s for _, s in fallback] + refused


# A draft within 5% of the target's parameter count is "the same size"; above that it is larger. Either way it is
# not smaller, so it cannot be faster (a same-size F16 beside a Q4 is only slower to run).
SAME_SIZE_RATIO = 1.05


def _relative_size(ratio: float) -> str:
    if 2 - SAME_SIZE_RATIO <= ratio <= SAME_SIZE_RATIO:
        return "the same size as the target"
    if ratio > 1:
        return f"{ratio:.1f}× the target's size"
    if ratio >= 0.5:
        return f"{ratio:.0%} of the target's size"
    return f"about 1/{round(1 / ratio)} of the target's size" if ratio > 0 else "a tiny fraction of the target's size"


@dataclass(frozen=True)
class DraftChoice:
    """A library file judged as a draft for one target: usable or not, and why."""

    path: str
    compatible: bool
    reason: str = ""
    recommended: bool = False
    # As many parameters as the target, or more: it can only slow the replies, so it is never suggested (listed,
    # marked).
    not_smaller: bool = False


SERVER_SPECULATION = "server-speculation"
"""The one draft choice of a server's model: whatever the server was started with."""


def server_entries(url: str, model_ids: Sequence[str]) -> list[ModelEntry]:
    """Library rows for a server's models: their path is the engine's target key, their folder the server."""
    from app.engine.remote.server_errors import display_url

    # The folder is shown: without the URL's user:password@ (the target keeps them for the requests).
    servers = [ServerModel.at(url, model_id) for model_id in model_ids]
    return [
        ModelEntry(
            path=server.key,
            name=os.path.basename(server.model.rstrip("/")) or server.model,
            file_size=0,
            folder=display_url(url),
            source="server",
            model_name=server.model,
            server=server,
        )
        for server in servers
    ]


def draft_choices(target: Target, candidates: Sequence[ModelEntry]) -> list[DraftChoice]:
    """Every other library file judged as a draft for `target`: compatible ones best first, then the rest.

    Uses the engine's cached compatibility checks, so asking again for a target seen before costs almost nothing.
    """
    if isinstance(target, ServerModel):
        # A server speculates with the draft it was started with; no local file can draft for it.
        return [DraftChoice(SERVER_SPECULATION, True, "Speculation is set up on the server (llama-server -md DRAFT)")]
    target_path = target.path
    target_key = paths.resolved(target_path)
    usable = [e for e in candidates if e.usable and paths.resolved(Path(e.path)) != target_key]
    unusable = [e for e in candidates if not e.usable and paths.resolved(Path(e.path)) != target_key]
    choices = [
        DraftChoice(
            str(s.path),
            s.compatible,
            s.reason,
            recommended=s.recommended,
            not_smaller=s.size_ratio is not None and s.size_ratio >= 2 - SAME_SIZE_RATIO,
        )
        for s in suggest_drafts(target_path, [Path(e.path) for e in usable])
    ]
    compatible = [c for c in choices if c.compatible]
    # Only the best suggestion is called "recommended", so the label points at one choice.
    compatible = [c if n == 0 else dataclasses.replace(c, recommended=False) for n, c in enumerate(compatible)]
    rest = [c for c in choices if not c.compatible]
    rest += [DraftChoice(e.path, False, e.problem or "This file cannot be used.") for e in unusable]
    return compatible + rest
