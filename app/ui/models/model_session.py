"""The model session: which target and draft are chosen, loading them in the engine process, and readiness.

It answers the engine process's load and death signals, and asks the library thread which drafts fit a target
(cached per target until the next scan). GUI thread only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QObject, Signal

from app.engine.config import DrafterChoice, LoadSettings
from app.store.model_defaults import ModelDefaults, projector_of, with_load_defaults
from app.engine.host.wire import LoadFailed, ModelsLoaded, ReplyEnded
from app.engine.targets import LocalModel, ServerModel, Target
from app.common.file_identity import file_identity
from app.store.unusable_models import mark_unusable
from app.ui.engine_link.engine_process import EngineProcess
from app.ui.engine_link.worker_death import WorkerDeath
from app.ui.models.library_model import NGRAM_KEY, DraftListModel, LibraryModel
from app.ui.models.library_worker import LibraryThread
from app.ui.models.model_bar import ModelBar


class ModelSession(QObject):
    """Target and draft choice, loads and readiness. GUI thread only."""

    sig_error = Signal(str)
    """Something about the models the user should read."""
    sig_target_chosen = Signal(object)
    """(Target) The user chose this target (it belongs in the open chat's settings)."""
    sig_draft_chosen = Signal(str)
    """The user chose this draft: a file path or NGRAM_KEY."""
    sig_draft_selected = Signal(str)
    """The bar selected this draft for a target the user chose (their draft where it can still draft, else the best
    one offered): it belongs in the open chat's settings, as the target does."""
    sig_selection_changed = Signal()
    """The target or draft shown changed (chosen, its drafts checked, a chat's restored, or dropped): what names them
    (the chat's header, the template notice) reads them again now, not at the next load."""
    sig_target_loaded = Signal(object)
    """(Target) A target the user chose has loaded: it may be remembered as the last one."""
    sig_context_size = Signal(int)
    """The loaded models' context size."""
    sig_model_crashed = Signal(str)
    """(path): this file crashed the engine while loading and was marked unusable."""
    sig_model_changed = Signal(str, str)
    """(path, sentence): this loaded file changed on disk (size or time) while in use; the library marks it."""
    sig_draft_let_go = Signal(str)
    """(path): the loaded draft's file is gone or was replaced; the engine drafts from earlier text, n-gram lookup is
    chosen, and the library is read again, so the draft list offers only what is on disk now."""

    def __init__(
        self,
        library: LibraryModel,
        drafts: DraftListModel,
        bar: ModelBar,
        engine_process: EngineProcess,
        library_thread: LibraryThread,
        load_settings: LoadSettings,
        wanted_draft: Optional[str],
        parent=None,
    ):
        super().__init__(parent)
        self.library = library
        self.drafts = drafts
        self.bar = bar
        self.engine_process = engine_process
        self.library_thread = library_thread
        self._load_settings = load_settings
        # The target file's own defaults (app.store.model_defaults), applied over load_settings at each load.
        self.defaults_for: Callable[[Optional[str]], ModelDefaults] = lambda _path: ModelDefaults()
        self.target: Optional[Target] = None
        self.draft_key: str = ""
        self._wanted_draft = wanted_draft
        self._remember_target = False  # remember the target as the last one once it has loaded
        self._draft_cache: dict[Target, list] = {}
        self._draft_check_id = 0
        self._load_id = 0
        self._loaded: tuple[Optional[Target], Optional[str]] = (None, None)
        self._loaded_identity: dict[str, Optional[list]] = {}  # each loaded file's size and time when it loaded
        self._load_error = ""
        engine_process.sig_models_loaded.connect(self._on_models_loaded)
        engine_process.sig_load_failed.connect(self._on_load_failed)
        engine_process.sig_worker_died.connect(self._on_worker_died)
        engine_process.sig_generation_ended.connect(self._on_reply_ended)
        library_thread.sig_drafts_checked.connect(self._on_drafts_checked)

    # ----- state

    def models_ready(self) -> bool:
        return self.target is not None and self._loaded == (self.target, self.draft_path())

    def loaded_target(self) -> Optional[Target]:
        """The target the engine process has loaded now (it answers the local API), None while none is."""
        return self._loaded[0]

    def target_key(self) -> Optional[str]:
        """The chosen target as the chat settings and the model defaults keep it (its key), None while none is."""
        return self.target.key if self.target is not None else None

    def draft_path(self) -> Optional[str]:
        return None if self.draft_key in ("", NGRAM_KEY) else self.draft_key

    def drafter(self) -> DrafterChoice:
        return "ngram" if self.draft_key == NGRAM_KEY else "auto"

    def send_blocker(self, library_scanned: bool) -> str:
        """Why a message cannot be sent now ("" when it can)."""
        if self.target is None:
            if library_scanned and not self.library.usable_entries():
                return "There is no model to chat with yet. Add a folder of GGUF files or download a model."
            return "Choose a model in the bar above first."
        if isinstance(self.target, LocalModel) and not self.target.path.exists():
            return f"The model file {self.target} is missing. Scan again or choose another model."
        if self._load_error:
            return f"The model could not be loaded: {self._load_error}"
        # A draft that changed is no reason to refuse: the engine drafts without it and says so in the reply.
        changed = [path for path in self.changed_files() if path != self._loaded[1]]
        if changed:
            return (
                f"The model file {changed[0]} changed on disk since it was loaded. Rescan the library and "
                "choose it again once the file is complete."
            )
        return ""

    def changed_files(self) -> list[str]:
        """Loaded model files whose size or modification time is no longer what it was when they loaded (a
        download or copy still writing them, a truncation): reading them can kill the engine (SIGBUS)."""
        return [path for path, identity in self._loaded_identity.items() if file_identity(path) != identity]

    def picture_blocker(self) -> str:
        """Why pictures cannot be sent to the chosen target ("" when it can see: it has a projector, beside it or
        chosen in its Model settings, or it is a server's model, whose server decides and says why it refuses them)."""
        if isinstance(self.target, ServerModel):
            return ""
        if isinstance(self.target, LocalModel) and self.projector() is not None:
            return ""
        name = self.target.path.name if isinstance(self.target, LocalModel) else str(self.target)
        return (
            f"{name} cannot see pictures (no mmproj-*.gguf projector lies beside it or is chosen in its Model "
            "settings): choose a vision model, or remove the pictures from the message to send its text."
        )

    def projector(self) -> Optional[Path]:
        """The projector the chosen target reads pictures with (None: it cannot see, or none is chosen)."""
        if not isinstance(self.target, LocalModel):
            return None
        return projector_of(self.target.key, self.defaults_for(self.target.key))

    def names(self) -> tuple[str, Optional[str]]:
        """(target name, draft name or None) as the transcript labels a reply."""
        entry = self.library.entry_for(self.target)
        target_name = entry.name if entry else Path(self.target_key() or "").stem
        if not self.bar.speculative():
            return target_name, None
        if isinstance(self.target, ServerModel):
            return target_name, "the server's speculation"
        if self.draft_key == NGRAM_KEY or not self.draft_key:
            return target_name, "n-gram drafts"
        draft = self.library.entry_for(self.draft_key)
        return target_name, draft.name if draft else Path(self.draft_key).stem

    # ----- choices

    def choose_target(self, path: str | Target, remember: bool = True) -> None:
        """Use `path` (a target or its key) as the target: filter the drafts for it (cached when seen before) and
        load it."""
        entry = self.library.entry_for(path)
        if entry is None or not entry.usable:
            self.sig_error.emit(entry.problem if entry else f"{path} is not in the model library.")
            return
        target = entry.target
        self.target = target
        self._remember_target = remember
        self.bar.select_target(entry.path)
        if remember:
            self.sig_target_chosen.emit(target)
        self.sig_selection_changed.emit()
        cached = self._draft_cache.get(target)
        if cached is not None:
            self._show_drafts(target, cached)
            return
        self._draft_check_id += 1
        self.drafts.set_checking()
        self.bar.refresh_enabled()
        self.bar.set_load_state("Checking drafts…")
        self.library_thread.request_draft_check(self._draft_check_id, target, self.library.entries())

    def _on_drafts_checked(self, request_id: int, target: Target, choices: list) -> None:
        self._draft_cache[target] = choices
        if request_id == self._draft_check_id and target == self.target:
            self._show_drafts(target, choices)

    def _show_drafts(self, target: Target, choices: list) -> None:
        self.drafts.set_choices(choices, self.library)
        self.draft_key = self.bar.select_draft(self._wanted_draft)
        if self._remember_target:
            self.sig_draft_selected.emit(self.draft_key or NGRAM_KEY)
        self.bar.refresh_enabled()
        self.sig_selection_changed.emit()
        self.request_load()

    def choose_draft(self, key: str) -> None:
        """Use a draft file, or NGRAM_KEY for n-gram lookup; takes effect from the next message."""
        if self.drafts.row_of(key) < 0:
            return
        self.bar.select_draft(key, picked=True)
        self.draft_key = key
        self._wanted_draft = key
        self.sig_draft_chosen.emit(key)
        self.sig_selection_changed.emit()
        self.request_load()

    def clear_target(self) -> None:
        self.target = None
        self.bar.select_target(None)
        self.drafts.set_no_target()
        self.sig_selection_changed.emit()

    def show_chat_models(self, target: Optional[Target], draft_key: str) -> None:
        """Select an opened chat's target and draft (a file or NGRAM_KEY); a different one is loaded."""
        if draft_key:
            self._wanted_draft = draft_key
        entry = self.library.entry_for(target)
        if entry is not None and entry.usable and entry.target != self.target:
            self.choose_target(entry.path, remember=False)
        elif self.target and draft_key and draft_key != self.draft_key:
            if self.drafts.row_of(draft_key, suggested_only=True) >= 0:
                self.draft_key = self.bar.select_draft(draft_key)
                self.sig_selection_changed.emit()
                self.request_load()

    def library_rescanned(self, wanted_target: Optional[str | Target], wanted_draft: Optional[str] = None) -> None:
        """The library changed: drop cached draft checks and choose `wanted_target` again if it is usable."""
        self._draft_cache.clear()
        if wanted_draft is not None:
            self._wanted_draft = wanted_draft
        entry = self.library.entry_for(wanted_target)
        if entry is not None and entry.usable:
            self.choose_target(entry.path, remember=False)
        elif self.target is not None:
            self.clear_target()
        else:
            self.bar.select_target(None)

    # ----- loading

    def load_settings_differ(self, load_settings: LoadSettings) -> bool:
        """Whether these settings would load the chosen target differently from how it is loaded or asked for."""
        return load_settings != self._load_settings

    def set_load_settings(self, load_settings: LoadSettings, reload: bool = True) -> None:
        """New app-wide load settings (context size, threads, GPU layers, batch, KV cache...): the target is loaded
        again with them when they differ and `reload`; otherwise they apply at the next load."""
        if load_settings != self._load_settings:
            self._load_settings = load_settings
            if reload:
                self.request_load()

    def request_load(self) -> None:
        if self.target is None:
            return
        self._load_id += 1
        self._load_error = ""
        entry = self.library.entry_for(self.target)
        self.bar.set_load_state("Loading…", f"Loading {entry.name if entry else ''}")
        draft = self.draft_path()
        defaults = self.defaults_for(self.target.key)
        self.engine_process.request_load(
            self._load_id,
            self.target,
            Path(draft) if draft else None,
            with_load_defaults(self._load_settings, defaults),
            Path(defaults.projector) if defaults.projector else None,
        )

    def _on_models_loaded(self, loaded: ModelsLoaded) -> None:
        if loaded.request_id != self._load_id:
            return
        target, note = loaded.target, loaded.placement_note
        self._loaded = (target, str(loaded.draft) if loaded.draft else None)
        self.library.set_loaded(target.key if target is not None else None, self._loaded[1])
        files = [target.key if isinstance(target, LocalModel) else None, self._loaded[1]]
        self._loaded_identity = {path: file_identity(path) for path in files if path}
        self.sig_context_size.emit(loaded.n_ctx)
        self.bar.set_load_state("Ready", "The models are loaded." + (f" {note}" if note else ""), "ready")
        # Remembered only once loaded: a file that crashes the engine must not be loaded again at every start. A
        # load of the target chosen before this one, ending while this one's drafts are checked, leaves this one's
        # remembering alone: its chat must still be told the draft chosen for it (sig_draft_selected).
        if target != self.target:
            return
        if self._remember_target and target:
            self.sig_target_loaded.emit(target)
        self._remember_target = False

    def _on_reply_ended(self, _ended: ReplyEnded) -> None:
        """After each reply: a loaded draft whose file is gone or was replaced (the engine let go of it and the
        reply said why) is no longer chosen, so the draft list and the next load follow the files on disk."""
        draft = self._loaded[1]
        if draft is None or draft not in self.changed_files():
            return
        self._loaded_identity.pop(draft, None)
        self._loaded = (self._loaded[0], None)
        self._wanted_draft = NGRAM_KEY
        if self.draft_key == draft:
            self.draft_key = self.bar.select_draft(NGRAM_KEY)
            self.sig_selection_changed.emit()
        self._draft_cache.clear()
        self.sig_draft_let_go.emit(draft)

    def _on_load_failed(self, failed: LoadFailed) -> None:
        if failed.request_id == self._load_id:
            self._fail(failed.message)

    def _fail(self, message: str) -> None:
        self._load_error = message
        self.bar.set_load_state("Not loaded", message, "failed")
        self.sig_error.emit(message)

    def _on_worker_died(self, death: WorkerDeath) -> None:
        """The engine process crashed or hung and a fresh one runs: say so, and never load a guilty file again."""
        self._loaded = (None, None)
        self.library.set_loaded(None, None)
        changed, self._loaded_identity = self.changed_files(), {}
        said = f" llama.cpp said: {death.detail}" if death.detail else ""
        if death.build_fault:
            # The build, not a file: nothing is marked unusable, and nothing is loaded again only to crash again.
            self._fail(death.message)
            return
        if changed and not death.loading_path:
            # Not llama.cpp's fault: the file was cut or rewritten under it. Not loaded again until rescanned.
            name = Path(changed[0]).name
            sentence = (
                f"The model file {name} changed on disk while it was in use (its size or time changed), "
                "which stopped the engine; your chats are safe. Rescan the library and choose it again "
                "once the file is complete."
            )
            self._fail(sentence)
            for path in changed:
                self.sig_model_changed.emit(path, sentence)
            return
        if death.loading_path:
            mark_unusable(death.loading_path, f"llama.cpp crashed loading it ({death.detail or death.message})")
            name = Path(death.loading_path).name
            self._fail(
                f"{name} crashed the engine while loading, so SpecChat will not load it again. {death.message}{said}"
            )
            self._draft_cache.clear()
            self.sig_model_crashed.emit(death.loading_path)
            if death.loading_path == self.target_key():
                self.clear_target()
            elif self.target is not None:
                if death.loading_path == self.draft_key:
                    self.draft_key = NGRAM_KEY
                self.choose_target(self.target, remember=False)
            return
        if death.load_request_id is not None:
            # It died measuring or setting up, not reading a file: loading it again would likely crash again.
            self._fail(death.message + said)
            return
        if death.generate_request_id is None:  # a reply's death is said where the reply ends, once
            self.sig_error.emit(death.message + said)
        self.request_load()  # the models were fine; the fresh engine needs them again
