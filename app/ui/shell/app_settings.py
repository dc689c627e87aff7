"""The app's settings as the window applies them: what models load with, the Settings dialog, what a change takes
effect on at once, and the transcript's view options, remembered. GUI thread only."""

from __future__ import annotations

from typing import Callable, cast

from PySide6.QtWidgets import QAbstractButton, QDialog

from app.engine.config import FlashAttn, KvType, LoadSettings
from app.engine.local.kv_states.conversation_cache import kept_line_of
from app.store import AppSettings
from app.ui.engine_link.settings_answers import settings_linked
from app.ui.settings.dialog import AppSettingsDialog

# `window`: the MainWindow (untyped, as in appearance.py: importing its class here would import round a circle).


def load_settings_of(s: AppSettings) -> LoadSettings:
    """What models load with under the app's settings `s` (a model's own defaults come on top)."""
    return LoadSettings(
        n_ctx=s.context_size,
        n_threads=s.threads,
        target_gpu_layers=s.target_gpu_layers,
        draft_gpu_layers=s.draft_gpu_layers,
        rpc_servers=tuple(s.rpc_workers),
        kept_states_mib=s.kept_conversations_mib,
        n_batch=s.batch_size,
        flash_attn=cast(FlashAttn, s.flash_attention),
        kv_type=cast(KvType, s.kv_cache_type),
        mmap=s.use_mmap,
        mlock=s.use_mlock,
        n_parallel=s.parallel_requests,
    )


def apply_load_settings(window) -> None:
    """The settings models load with, after a change: the loaded model is loaded again only when the person says so
    (a reply being written finishes first: the engine takes requests in order); otherwise they apply at the next
    load."""
    load = load_settings_of(window.settings)
    session = window.session
    if not session.load_settings_differ(load):
        return
    reload = bool(session.loaded_target()) and window.confirm(
        "Reload the model?",
        "The model's load settings changed. Loading it again with them takes a moment; "
        "a reply being written finishes first. Not now: they apply the next time a model loads.",
        "Reload now",
    )
    session.set_load_settings(load, reload=reload)


def open_dialog(window) -> None:
    """The Settings dialog; what it says on OK applies at once (the tools page and the API server's switch too)."""
    tools_page = window.tools.settings_page()
    session, model_actions = window.session, window.model_actions
    dialog = AppSettingsDialog(
        window.settings,
        window,
        devices=window.engine_process.devices,
        api_state=window.api_server.state_text(),
        tools_page=tools_page,
        memory_line=lambda ctx, kv: model_actions.memory_line(session.target_key(), ctx, kv, app_wide=True),
        kept_state=kept_line_of(window.conversation.last_stats),
        trained_context=model_actions.trained_context(session.target_key()),
        embedding_models=[entry.path for entry in window.library.entries() if entry.kind == "embedding"],
    )
    with settings_linked(dialog, window.engine_process):
        accepted = dialog.exec() == QDialog.DialogCode.Accepted
    if accepted:
        # Compared with the choice before OK: the settings applied next already hold the page's switch, so the
        # server would never hear of it. set_choice is the footer dialog's path too.
        api_before = window.api_server.choice()
        apply(window, dialog.settings())
        window.tools.apply_page(tools_page)
        try:
            if dialog.api_page.choice() != api_before:
                window.api_server.set_choice(dialog.api_page.choice())
        except (OSError, ValueError) as exc:
            window.show_error(f"The API server's key could not be saved: {exc}")


def apply(window, new: AppSettings) -> None:
    """Keep `new` as the app's settings and apply what changed: folders rescanned, load settings, memory figures,
    servers' models, the theme and the thinking sections."""
    old = window.settings
    window.settings = new
    window.save_app_settings()
    if (old.model_folders, old.scan_hf_cache) != (new.model_folders, new.scan_hf_cache):
        window.library_ctl.rescan()
    apply_load_settings(window)
    window.library.set_model_settings(new.context_size, cast(KvType, new.kv_cache_type), new.model_defaults)
    if old.servers != new.servers:
        window.server_models.refresh(new.servers)
    window.appearance.set_choice(new.theme)
    window.chat_view.set_keep_thinking_open(new.keep_thinking_open)
    window.documents.set_embedding(new.documents_embedding)


def view_option(window, setting: str, apply_to_view: Callable[[bool], None], switch: QAbstractButton, on: bool) -> None:
    """A view option of the transcript (`setting`, an AppSettings switch) turned `on` or off: shown at once, its
    switch kept in step, and remembered."""
    apply_to_view(on)
    if switch.isChecked() != on:
        switch.setChecked(on)
    if getattr(window.settings, setting) != on:
        setattr(window.settings, setting, on)
        window.save_app_settings()
