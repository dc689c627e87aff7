"""The app's settings dialog: model folders, loading and devices, presets, servers, the API, tools, appearance
and history, a page each. GUI thread only (the chat's own settings: app.ui.settings.chat_dialog)."""

from __future__ import annotations

import dataclasses
import os
from typing import Optional, Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QListWidget,
    QSpinBox,
    QVBoxLayout,
)

from app.ui.widgets.dialog_folders import remember_folder, start_folder
from app.platform import paths
from app.serve.key_store import saved_key
from app.common.units import format_bytes
from app.engine.config import (
    GPU_LAYERS_ALL,
    GPU_LAYERS_AUTO,
    THREADS_AUTO,
    default_threads,
)
from app.engine.local.kv_states.conversation_cache import memory_budget
from app.engine.local.kv_states.saved_states import saved_states_line
from app.engine.placement.devices import DeviceReport
from app.store import AppSettings
from app.ui.widgets.layouts import button_row
from app.ui.settings.pages import SettingsPages, fitted_size, hint
from app.ui.settings.api_server_page import ApiServerChoice, ApiServerPage
from app.ui.settings.load_form import LoadSettingsFields, MemoryLine, app_load_fields, app_load_values
from app.ui.settings.presets_page import PresetsPage
from app.ui.settings.documents_page import DocumentsPage
from app.ui.settings.remote_settings import RemoteSettingsSection
from app.ui.settings.requests_field import RequestsAtOnceField
from app.store.presets import read_presets, stored
from app.ui.tools.tools_page import ToolsPage
from app.ui.widgets.themes import THEME_CHOICES, THEME_LABELS

LISTING_DEVICES = "Listing devices…"  # until the engine process answers (AppSettingsDialog.set_devices)


class GpuLayersSpinBox(QSpinBox):
    """GPU layers: "Auto" (what fits in free device memory), a number, or "All"."""

    def __init__(self, value: int):
        super().__init__()
        self.setRange(GPU_LAYERS_AUTO, GPU_LAYERS_ALL)
        self.setSpecialValueText("Auto")
        self.setValue(value)
        self.setToolTip(
            "Layers to offload to the GPU. Auto offloads what fits in the free GPU memory, the draft "
            "first; 0 runs on the CPU; All offloads every layer."
        )

    def textFromValue(self, value: int) -> str:
        return "All" if value >= GPU_LAYERS_ALL else super().textFromValue(value)

    def valueFromText(self, text: str) -> int:
        return GPU_LAYERS_ALL if text.strip().lower() == "all" else super().valueFromText(text)

    def validate(self, text: str, pos: int):
        typed = text.strip().lower()
        if typed and "all".startswith(typed):
            state = QValidator.State.Acceptable if typed == "all" else QValidator.State.Intermediate
            return state, text, pos
        return super().validate(text, pos)


class AppSettingsDialog(QDialog):
    """The app's settings as pages (PAGES), each scrolling on its own so the dialog fits a 1366x768 screen.
    Changing how models load reloads them; the appearance switches live when the dialog is accepted."""

    PAGES = (
        "Models",
        "Loading and devices",
        "Presets",
        "Servers and RPC",
        "API server",
        "Tools",
        "Documents",
        "Appearance",
        "History",
    )

    def __init__(
        self,
        settings: AppSettings,
        parent=None,
        devices: DeviceReport | None = None,
        api_state: str = "",
        memory_line: Optional[MemoryLine] = None,
        tools_page: Optional[ToolsPage] = None,
        kept_state: str = "",
        trained_context: Optional[int] = None,
        embedding_models: Sequence[str] = (),
    ):
        """`memory_line`: what the chosen model would take at a context and KV type, for the Loading page;
        `tools_page`: the window's MCP servers, edited in place and applied by the window when accepted;
        `kept_state`: the kept conversations' memory as the last reply left it, in words ("" shows nothing);
        `trained_context`: the chosen model's trained context, which caps what each chat gets (None: unknown);
        `embedding_models`: the library's embedding models (paths), for the Documents page."""
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self._original = settings
        layout = QVBoxLayout(self)
        self.pages = SettingsPages()
        layout.addWidget(self.pages, 1)

        self._add_models_page(settings)
        self._add_loading_page(settings, memory_line, kept_state, trained_context)
        self.presets_page = PresetsPage(read_presets(settings.presets)[0])
        self.pages.add_page("Presets", self.presets_page)

        self.remote = RemoteSettingsSection(settings.servers, settings.rpc_workers, self)
        self.pages.add_page("Servers and RPC", self.remote)

        self.api_page = ApiServerPage(
            ApiServerChoice(
                settings.api_server, settings.api_host, settings.api_port, saved_key(), settings.api_own_history
            )
        )
        self.api_page.set_state(api_state)
        self.api_page.show_requests_at_once(self.requests_at_once.box)
        if devices is not None:
            self.set_devices(devices)
        self.pages.add_page("API server", self.api_page)
        # The window's tool servers and the open chat's tools (app.ui.tools); a dialog made without them says where.
        self.tools_page = tools_page
        self.pages.add_page("Tools", tools_page or hint("Tool servers are chosen from the chat window's Settings."))

        self.documents_page = DocumentsPage(settings.documents_embedding, embedding_models)
        self.pages.add_page("Documents", self.documents_page)
        self._add_appearance_page(settings)
        self._add_history_page(settings)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
        self.resize(fitted_size(screen.availableGeometry().size()))

    def _add_models_page(self, settings: AppSettings) -> None:
        """Where models are found: the folders scanned, and other apps' folders."""
        self.folders = QListWidget()
        self.folders.addItems(settings.model_folders)
        self.folders.setMinimumHeight(96)
        self.folders.setMaximumHeight(180)
        self.scan_hf_cache = QCheckBox("Also list models in the Hugging Face cache and other apps' model folders")
        self.scan_hf_cache.setChecked(settings.scan_hf_cache)
        self.pages.add_page(
            "Models",
            hint(f"SpecChat always scans its own folder, {paths.models_dir()}, and these:"),
            self.folders,
            button_row([("Add folder…", self._add_folder), ("Remove", self._remove_folder)]),
            self.scan_hf_cache,
        )

    def _add_loading_page(
        self,
        settings: AppSettings,
        memory_line: Optional[MemoryLine],
        kept_state: str,
        trained_context: Optional[int],
    ) -> None:
        """How models load and what they may hold: threads, context, kept conversations, GPU layers, devices."""
        form = QFormLayout()
        self.threads = QSpinBox()
        self.threads.setRange(THREADS_AUTO, max(64, os.cpu_count() or 1))
        # Auto: the physical performance cores, fewer while another program keeps a core busy.
        self.threads.setSpecialValueText(f"Auto ({default_threads()})")
        self.threads.setValue(max(THREADS_AUTO, settings.threads))
        self.threads.setToolTip(
            "Auto uses the physical performance cores, and fewer while another program keeps "
            "a core busy. A number is used as it is, whatever the load."
        )
        form.addRow("CPU threads", self.threads)
        self.context_size = QSpinBox()
        self.context_size.setRange(512, 262144)
        self.context_size.setSingleStep(1024)
        self.context_size.setValue(settings.context_size)
        self.context_size.setSuffix(" tokens")
        form.addRow("Context size", self.context_size)
        self.kept_conversations = QSpinBox()
        self.kept_conversations.setRange(0, 1 << 20)
        self.kept_conversations.setSingleStep(256)
        self.kept_conversations.setSuffix(" MiB")
        self.kept_conversations.setSpecialValueText(f"Auto ({format_bytes(memory_budget(0))})")
        self.kept_conversations.setValue(settings.kept_conversations_mib)
        self.kept_conversations.setToolTip(
            "Recent conversations' caches are kept in this much memory, so going "
            "back to a chat reads only its new message. Auto: a quarter of the free "
            "memory, at most 4 GiB."
        )
        form.addRow("Kept conversations", self.kept_conversations)
        if kept_state:
            self.kept_in_use = QLabel(kept_state)
            self.kept_in_use.setWordWrap(True)
            form.addRow("", self.kept_in_use)
        self.saved_conversations = QLabel(saved_states_line())
        self.saved_conversations.setWordWrap(True)
        form.addRow("", self.saved_conversations)
        self.requests_at_once = RequestsAtOnceField(
            form, settings.parallel_requests, self.context_size, trained_context
        )
        self.target_gpu_layers = GpuLayersSpinBox(settings.target_gpu_layers)
        form.addRow("GPU layers, model", self.target_gpu_layers)
        self.draft_gpu_layers = GpuLayersSpinBox(settings.draft_gpu_layers)
        form.addRow("GPU layers, draft", self.draft_gpu_layers)
        self.load_fields = LoadSettingsFields(
            form, app_load_values(settings), memory_line=memory_line, context_box=self.context_size
        )
        # The engine process lists the devices (the window never loads llama.cpp): until it answers, set_devices.
        self.devices = QLabel(LISTING_DEVICES)
        self.devices.setWordWrap(True)
        self.devices.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.pages.add_page(
            "Loading and devices",
            form,
            hint(
                "The loaded model is loaded again with these when you say so; otherwise they apply "
                "at the next load. A model's own settings (Model library > Model settings) "
                "override them."
            ),
            QLabel("<b>Devices</b>"),
            self.devices,
        )

    def _add_appearance_page(self, settings: AppSettings) -> None:
        """The theme, and whether a reply's thinking stays open."""
        self.theme = QComboBox()
        for choice in THEME_CHOICES:
            self.theme.addItem(THEME_LABELS[choice], choice)
        self.theme.setCurrentIndex(max(0, self.theme.findData(settings.theme)))
        appearance = QFormLayout()
        appearance.addRow("Theme", self.theme)
        self.keep_thinking_open = QCheckBox("Keep a reply's thinking open when its answer starts")
        self.keep_thinking_open.setChecked(settings.keep_thinking_open)
        self.keep_thinking_open.setToolTip(
            "A thinking model's Thinking section folds when the answer starts; checked, it stays open"
        )
        self.pages.add_page(
            "Appearance",
            appearance,
            hint("System follows your desktop's light or dark setting, and switches when it does."),
            self.keep_thinking_open,
        )

    def _add_history_page(self, settings: AppSettings) -> None:
        """Where chats are kept, and whether their text drafts new replies."""
        database = QLabel(str(paths.database_path()))
        database.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        database.setWordWrap(True)
        self.history_drafting = QCheckBox("Draft from the history of earlier replies (all chats)")
        self.history_drafting.setChecked(settings.history_drafting)
        self.history_drafting.setToolTip(
            "Earlier prompts and replies are kept on this computer, within 64 MB, so a reply that repeats one "
            "(Regenerate, the same code again) is written faster. Deleting a chat removes its text. Off: nothing "
            "is read from it or added to it."
        )
        self.pages.add_page(
            "History",
            hint("Every chat is saved as it is written, with each reply's provenance, in:"),
            database,
            hint("Export a chat (Markdown or JSON) from its menu in the sidebar."),
            self.history_drafting,
        )

    def set_devices(self, report: DeviceReport) -> None:
        """Show the engine process's answer to "which devices?" (EngineProcess.sig_devices_listed)."""
        rpc = {True: "supported by this build", False: "not supported by this build", None: "unknown"}[report.rpc]
        self.devices.setText("\n".join(report.lines() + [f"RPC (models on other machines): {rpc}"]))
        self.remote.set_rpc_supported(report.rpc)

    def _accept(self) -> None:
        if self.load_fields.check():
            self.pages.show_page("Loading and devices")
            return
        problem = self.remote.save_keys()
        if problem:
            self.remote.problem.setText(problem)
            return
        problem = self.api_page.problem()
        if problem:
            self.pages.show_page("API server")
            self.api_page.set_state(problem)
            return
        self.accept()

    def _add_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of GGUF models", start_folder("models"))
        if folder:
            remember_folder("models", folder)
            self.add_folder(folder)

    def add_folder(self, folder: str) -> None:
        existing = [self.folders.item(i).text() for i in range(self.folders.count())]
        if folder not in existing:
            self.folders.addItem(folder)

    def _remove_folder(self) -> None:
        for item in self.folders.selectedItems():
            self.folders.takeItem(self.folders.row(item))

    def settings(self) -> AppSettings:
        return dataclasses.replace(
            self._original,
            model_folders=[self.folders.item(i).text() for i in range(self.folders.count())],
            scan_hf_cache=self.scan_hf_cache.isChecked(),
            mcp_file=self.tools_page.path.text().strip() if self.tools_page is not None else self._original.mcp_file,
            history_drafting=self.history_drafting.isChecked(),
            threads=self.threads.value(),
            context_size=self.context_size.value(),
            kept_conversations_mib=self.kept_conversations.value(),
            parallel_requests=self.requests_at_once.value(),
            target_gpu_layers=self.target_gpu_layers.value(),
            draft_gpu_layers=self.draft_gpu_layers.value(),
            **app_load_fields(self.load_fields.values()),
            servers=self.remote.server_urls(),
            rpc_workers=self.remote.rpc_workers(),
            theme=self.theme.currentData(),
            keep_thinking_open=self.keep_thinking_open.isChecked(),
            api_server=self.api_page.choice().enabled,
            api_host=self.api_page.choice().host,
            api_port=self.api_page.choice().port,
            api_own_history=self.api_page.choice().own_history,
            presets=stored(self.presets_page.presets()),
            documents_embedding=self.documents_page.chosen(),
        )


__all__ = ["AppSettingsDialog", "GpuLayersSpinBox"]
