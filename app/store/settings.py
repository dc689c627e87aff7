"""Application settings: one JSON file, read forgivingly and written atomically.

Reading never fails: a missing file gives the defaults; an unreadable one gives the defaults plus a warning the
window can show, and the broken file is moved aside as settings.json.broken (not lost, not overwritten by the next
save). Writing goes to a temporary file in the same folder that is synced and then renamed over the old one, so a
crash or a full disk leaves either the old settings or the new, never half of each (git-cola settings.py).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.platform import paths
from app.common.atomic_write import write_atomic
from app.common.bounded_read import FileReadError, read_bounded
from app.common.text import valid_text
from app.common.http_client import listen_host_problem
from app.engine.config import FLASH_ATTN_CHOICES, KV_TYPES, MAX_PARALLEL, PARALLEL_AUTO
from app.engine.targets import normalize_url, server_url_problem
from app.platform.machine_defaults import BATCH_AUTO, GPU_LAYERS_ALL, GPU_LAYERS_AUTO, THREADS_AUTO
from app.store import _fields
from app.store.errors import StoreError
from app.store.model_defaults import MAX_BATCH, read_defaults
from app.store.presets import MAX_PRESETS, presets_left_out, read_presets, stored


# The appearance choices the window offers (app/ui/widgets/themes.py has the colours).
THEME_CHOICES = ("system", "light", "dark")

# Far more than any settings file holds (a thousand presets are under 1 MB): a larger one is not read into memory.
MAX_SETTINGS_BYTES = 32 << 20
# Set by load_settings for the window to show; never written to the file.
_NOT_SAVED = ("load_warning",)
# The ranges the settings dialog offers (app.ui.settings.dialog); a file's number outside them is not used.
_INT_RANGES = {
    "threads": (THREADS_AUTO, 1024),
    "context_size": (1, 1 << 24),
    "target_gpu_layers": (GPU_LAYERS_AUTO, GPU_LAYERS_ALL),
    "draft_gpu_layers": (GPU_LAYERS_AUTO, GPU_LAYERS_ALL),
    "api_port": (1, 65535),
    "kept_conversations_mib": (0, 1 << 20),
    "batch_size": (BATCH_AUTO, MAX_BATCH),
    "parallel_requests": (PARALLEL_AUTO, MAX_PARALLEL),
}
# Text settings with a fixed set of choices; a file's other text falls back to the default.
_CHOICES = {"flash_attention": FLASH_ATTN_CHOICES, "kv_cache_type": KV_TYPES}


@dataclass
class AppSettings:
    """Settings of the app as a whole (per-chat generation settings live with each chat in the database)."""

    model_folders: list[str] = field(
        default_factory=list
    )  # besides app.platform.paths.models_dir(), which is always scanned
    threads: int = THREADS_AUTO  # 0: Auto (app.platform.machine_defaults.default_threads, following the load)
    context_size: int = 4096
    # GPU_LAYERS_AUTO for new installs; a file saved by an older version keeps the number it holds (0 was the
    # old default), since that may be a choice.
    target_gpu_layers: int = GPU_LAYERS_AUTO
    draft_gpu_layers: int = GPU_LAYERS_AUTO
    # The memory recent conversations' KV caches are kept in, MiB (0: Auto; app.engine.local.kv_states.conversation_cache).
    kept_conversations_mib: int = 0
    # Requests answered side by side, the window's chat and its API's clients (LoadSettings.n_parallel): 1 to
    # MAX_PARALLEL, or 0 (Auto, from memory), the default for new installs as llama-server's slots are; a file saved
    # by an older version keeps the number it holds. 1: one at a time, with conversations kept between requests.
    parallel_requests: int = PARALLEL_AUTO
    # How models load (app.engine.config.LoadSettings): the batch (0: Auto), flash attention ("auto", "on",
    # "off"), the KV cache's type ("f16", "q8_0", "q4_0"), and whether the weights are mapped and locked in RAM.
    batch_size: int = BATCH_AUTO
    flash_attention: str = "auto"
    kv_cache_type: str = "f16"
    use_mmap: bool = True
    use_mlock: bool = False
    last_target: str | None = None
    last_draft: str | None = None
    last_chat_id: int | None = None  # the chat open when the app closed; it opens first next time
    show_highlighting: bool = True
    show_refused: bool = False  # refused draft proposals shown inline in the transcript
    # OpenAI-compatible servers (base URLs) whose models the Model picker lists; their API keys are kept apart,
    # in an owner-only file (app.engine.remote.server_keys).
    servers: list[str] = field(default_factory=list)
    # llama.cpp RPC workers ("host:port") the target is spread over; no authentication, trusted networks only.
    rpc_workers: list[str] = field(default_factory=list)
    scan_hf_cache: bool = True
    theme: str = "system"  # "system" (follow the OS colour scheme), "light" or "dark"
    # The local OpenAI-compatible API (app.serve): on or off, and where it listens. Its key is kept apart, in an
    # owner-only file (app.serve.key_store).
    api_server: bool = False
    api_host: str = "127.0.0.1"
    api_port: int = 1234
    # API clients draft from a history of their own (history-api.sqlite3); never from the person's chats.
    api_own_history: bool = False
    # Draft from earlier prompts and replies across chats, and add each reply to them (the history drafter).
    history_drafting: bool = True
    # How chats are formatted for each model file without a chat template of its own, by path: "raw", "chatml" or
    # "template:" and a template file's path (app.ui.chat.chat_format_choice).
    chat_formats: dict[str, str] = field(default_factory=dict)
    # Where each model file's thinking starts and ends, when the user set it (LM Studio's start/end strings), by
    # path: [start, end]. Without one, the template's markers, else <think>...</think> (app.engine.reasoning).
    reasoning_markers: dict[str, list[str]] = field(default_factory=dict)
    # A reply's Thinking section stays open when its answer starts (it folds otherwise).
    keep_thinking_open: bool = False
    # The mcp.json listing the tool servers whose tools the chats offer the model ("" for none; app.ui.tools).
    mcp_file: str = ""
    # Each model file's own defaults, by path (app.store.model_defaults): context size, GPU layers, thinking.
    model_defaults: dict[str, dict] = field(default_factory=dict)
    # Files taken off the library list (Forget in the Model library); the files themselves are kept.
    forgotten_models: list[str] = field(default_factory=list)
    # Named presets of a chat's system prompt, sampling and draft setting (app.store.presets), the built-in
    # "Default" left out.
    presets: list[dict] = field(default_factory=list)
    # The GGUF embedding model a project's documents are indexed and searched with in the window, by path ("":
    # none, passages found by their words alone; app.ui.projects.embedding).
    documents_embedding: str = ""
    # Why the file could not be used as it was, in words for the user; None when it loaded cleanly.
    load_warning: str | None = field(default=None, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return _fields.to_dict(self, skip=_NOT_SAVED)


def load_settings(path: Path | None = None) -> AppSettings:
    """The saved settings, or defaults. Never raises; problems are described in `load_warning`."""
    path = Path(path) if path is not None else paths.settings_path()
    try:
        raw = read_bounded(path, MAX_SETTINGS_BYTES)
    except FileReadError as e:
        if e.reason == "does not exist":
            return AppSettings()
        # Not moved aside: the file may be fine and only unreadable to us right now.
        return AppSettings(load_warning=f"The settings file {e}; using the default settings.")
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
    except ValueError as e:  # includes JSONDecodeError and UnicodeDecodeError
        return AppSettings(load_warning=_set_aside(path, str(e)))
    except RecursionError:  # JSON nested deeper than Python's parser goes: no settings file is written so
        return AppSettings(load_warning=_set_aside(path, "it is nested too deeply to be settings"))

    settings, rejected = _fields.from_dict(AppSettings, data, skip=_NOT_SAVED)
    defaults = AppSettings()
    # Numbers outside what the settings dialog offers (a hand-edited or damaged file) fall back one by one.
    for name, (low, high) in _INT_RANGES.items():
        if not low <= getattr(settings, name) <= high:
            setattr(settings, name, getattr(defaults, name))
            rejected.append(name)
    for name, choices in _CHOICES.items():
        if getattr(settings, name) not in choices:
            setattr(settings, name, getattr(defaults, name))
            rejected.append(name)
    if listen_host_problem(settings.api_host):  # spaces or shell characters: no address to listen on
        settings.api_host = defaults.api_host
        rejected.append("api_host")
    if settings.theme not in THEME_CHOICES:
        settings.theme = "system"
        rejected.append("theme")
    if settings.last_chat_id is not None and not 0 <= settings.last_chat_id < 2**63:
        settings.last_chat_id = None
        rejected.append("last_chat_id")
    # A path no file system can hold (a NUL, text that is not Unicode) names nothing: it is dropped.
    for name in ("last_target", "last_draft"):
        if getattr(settings, name) is not None and not _usable_path(getattr(settings, name)):
            setattr(settings, name, None)
            rejected.append(name)
    if settings.documents_embedding and not _usable_path(settings.documents_embedding):
        settings.documents_embedding = ""
        rejected.append("documents_embedding")
    formats = {k: v for k, v in settings.chat_formats.items() if isinstance(k, str) and isinstance(v, str)}
    if formats != settings.chat_formats:
        settings.chat_formats = formats
        rejected.append("chat_formats")
    markers = {
        k: list(v)
        for k, v in settings.reasoning_markers.items()
        if isinstance(k, str) and isinstance(v, list) and len(v) == 2 and all(isinstance(m, str) and m for m in v)
    }
    if markers != settings.reasoning_markers:
        settings.reasoning_markers = markers
        rejected.append("reasoning_markers")
    model_defaults = {
        k: read.to_dict()
        for k, v in settings.model_defaults.items()
        if isinstance(k, str) and (read := read_defaults(v)) is not None
    }
    if model_defaults != settings.model_defaults:
        settings.model_defaults = model_defaults
        rejected.append("model_defaults")
    kept_presets, presets_dropped = read_presets(settings.presets)
    left_out = presets_left_out(settings.presets)
    if presets_dropped or left_out:
        settings.presets = stored(kept_presets)
    if presets_dropped:
        rejected.append("presets")
    # A server address that is not one ("not a url") would only be tried, and fail, at every start.
    servers = [url for url in settings.servers if server_url_problem(normalize_url(url)) is None]
    if servers != settings.servers:
        settings.servers = servers
        rejected.append("servers")
    folders = [folder for folder in settings.model_folders if _usable_path(folder)]
    if folders != settings.model_folders:
        settings.model_folders = folders
        rejected.append("model_folders")
    warnings = []
    if rejected:
        warnings.append(
            f"Some settings in {path} had values SpecChat could not use ({', '.join(rejected)}); "
            "those are back to their defaults."
        )
    if left_out:
        warnings.append(
            f"{path} lists {left_out + MAX_PRESETS:,} presets: the first {MAX_PRESETS:,} were loaded, "
            f"and {left_out:,} more presets were not loaded. {_keep_whole(path)}"
        )
    settings.load_warning = " ".join(warnings) or None
    return settings


def _keep_whole(path: Path) -> str:
    """A copy of the file as it was, before a save leaves out what was not loaded: nothing the user wrote is lost."""
    kept = _free_name(path.with_name(path.name + ".all-presets"))
    try:
        shutil.copyfile(path, kept)
    except OSError as e:
        return f"They are left out when the settings are next saved (no copy could be kept: {e.strerror or e})."
    return f"The whole file was kept as {kept}."


def _usable_path(text: str) -> bool:
    return bool(text) and "\0" not in text and valid_text(text) == text


def _set_aside(path: Path, reason: str) -> str:
    broken = _free_name(path.with_name(path.name + ".broken"))
    try:
        os.replace(path, broken)
    except OSError as e:
        return (
            f"The settings file {path} is damaged ({reason}) and could not be moved aside ({e.strerror or e}); "
            "using the default settings."
        )
    return (
        f"The settings file {path} is damaged ({reason}); using the default settings. "
        f"The damaged file was kept as {broken}."
    )


def _free_name(candidate: Path) -> Path:
    # Never overwrite an earlier broken copy: it may hold the settings the user wants back.
    n = 1
    base = candidate
    while candidate.exists():
        candidate = base.with_name(f"{base.name}.{n}")
        n += 1
    return candidate


def save_settings(settings: AppSettings, path: Path | None = None) -> None:
    """Write the settings atomically. Raises StoreError (the old file is then untouched)."""
    path = Path(path) if path is not None else paths.settings_path()
    text = json.dumps(settings.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    try:
        write_atomic(path, text)
    except OSError as e:
        raise StoreError(
            f"The settings could not be saved to {path}: {e.strerror or e}. "
            "Check that the folder is writable and the disk is not full."
        ) from e
