"""Dialogs for the chat's generation settings and for the app's settings. GUI thread only."""

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
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QLabel,
    QListWidget,
    QPlainTextEdit,
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
    MAX_DRAFT,
    THREADS_AUTO,
    default_threads,
)
from app.engine.local.kv_states.conversation_cache import memory_budget
from app.engine.local.kv_states.saved_states import saved_states_line
from app.engine.placement.devices import DeviceReport
from app.store import AppSettings, ChatSettings
from app.ui.widgets.layouts import button_row
from app.ui.settings.chat_presets import NO_PRESET, PRESETS_EXPLAINED
from app.ui.settings.pages import TOOLS_CHECK, SettingsPages, fitted_size, hint
from app.ui.settings.api_server_page import ApiServerChoice, ApiServerPage
from app.ui.settings.load_form import LoadSettingsFields, MemoryLine, app_load_fields, app_load_values
from app.ui.settings.presets_page import PresetsPage
from app.ui.settings.remote_settings import RemoteSettingsSection
from app.ui.settings.requests_field import RequestsAtOnceField
from app.store.presets import Preset, read_presets, stored
from app.store.presets import applied as presets_applied
from app.ui.settings.thinking_group import TemplateSwitches, ThinkingGroup
from app.ui.tools.tools_page import ToolsPage
from app.ui.widgets.themes import THEME_CHOICES, THEME_LABELS

AUTO_PENALTY = 0.95  # the repeat penalty box's least value, shown as "Auto" (ChatSettings.repeat_penalty None)
LISTING_DEVICES = "Listing devices…"  # until the engine process answers (AppSettingsDialog.set_devices)


class ChatSettingsDialog(QDialog):
    """System prompt and sampling settings of one chat; they apply from the next message."""

    def _update_sampling(self) -> None:
        """Top-p and Top-k only matter when sampling: temperature 0 always takes the likeliest token."""
        sampling = self.temperature.value() > 0
        tip = (
            ""
            if sampling
            else "Temperature 0 always takes the likeliest token, so Top-p and Top-k change "
            "nothing; raise the temperature to use them."
        )
        for box, what in (
            (self.top_p, "Keep the likeliest tokens whose chances add up to this share"),
            (self.top_k, "Keep only this many of the likeliest tokens"),
        ):
            box.setEnabled(sampling)
            box.setToolTip(tip or what)

    def __init__(
        self,
        settings: ChatSettings,
        parent=None,
        switches: TemplateSwitches | None = None,
        presets: Sequence[Preset] = (),
    ):
        super().__init__(parent)
        self.setWindowTitle("Chat settings")
        self.setMinimumWidth(460)
        self._original = settings
        self._presets = list(presets)
        self._chosen: Optional[Preset] = None
        layout = QVBoxLayout(self)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)

        # Choosing a preset fills the fields below (and, on OK, the chat's speculation and drafter) with its values.
        self.preset = QComboBox()
        self.preset.addItem(settings.preset or NO_PRESET, None)  # said as the chat's header says it
        for preset in self._presets:
            self.preset.addItem(preset.name, preset.name)
        self.preset.setToolTip(PRESETS_EXPLAINED)
        self.preset.activated.connect(self._on_preset)
        form.addRow("Preset", self.preset)

        self.system_prompt = QPlainTextEdit(settings.system_prompt)
        self.system_prompt.setPlaceholderText("You are a helpful assistant.")
        self.system_prompt.setFixedHeight(90)
        form.addRow("System prompt", self.system_prompt)

        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.05)
        self.temperature.setDecimals(2)
        self.temperature.setValue(settings.temperature)
        self.temperature.setToolTip("0 is greedy: the same reply with or without speculation, only faster")
        form.addRow("Temperature", self.temperature)

        self.top_p = QDoubleSpinBox()
        self.top_p.setRange(0.0, 1.0)
        self.top_p.setSingleStep(0.05)
        self.top_p.setDecimals(2)
        self.top_p.setValue(settings.top_p)
        form.addRow("Top-p", self.top_p)

        self.top_k = QSpinBox()
        self.top_k.setRange(0, 1000)
        self.top_k.setSpecialValueText("Off")
        self.top_k.setValue(settings.top_k)
        form.addRow("Top-k", self.top_k)
        self.temperature.valueChanged.connect(self._update_sampling)
        self._update_sampling()

        self.seed = QSpinBox()
        self.seed.setRange(-1, 2**31 - 1)
        self.seed.setSpecialValueText("Random")
        self.seed.setValue(-1 if settings.seed is None else settings.seed)
        form.addRow("Seed", self.seed)

        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 131072)
        self.max_tokens.setSingleStep(128)
        self.max_tokens.setValue(settings.max_tokens)
        self.max_tokens.setToolTip(
            "A reply stops here even mid-sentence (Continue under it writes on); raise it for "
            "long answers such as whole files"
        )
        form.addRow("Max tokens", self.max_tokens)

        self.repeat_penalty = QDoubleSpinBox()
        self.repeat_penalty.setRange(AUTO_PENALTY, 2.0)  # its least value is Auto; one step up is 1.00 (off)
        self.repeat_penalty.setSingleStep(0.05)
        self.repeat_penalty.setDecimals(2)
        self.repeat_penalty.setSpecialValueText("Auto")
        self.repeat_penalty.setValue(settings.repeat_penalty or AUTO_PENALTY)
        self.repeat_penalty.setToolTip(
            "Makes tokens already written less likely (1.00: off). Auto is off, but 1.10 "
            "for a model without a chat template written as raw completion, which would "
            "otherwise repeat itself"
        )
        form.addRow("Repeat penalty", self.repeat_penalty)

        self.draft_max = QSpinBox()
        self.draft_max.setRange(0, MAX_DRAFT)
        self.draft_max.setSpecialValueText("Auto")
        self.draft_max.setValue(settings.draft_max or 0)
        self.draft_max.setToolTip(
            "How many tokens the drafter proposes per round. Auto lets SpecChat adapt it each round, "
            "and pause speculation where verifying costs more than it saves."
        )
        form.addRow("Draft max tokens", self.draft_max)
        self.tools = QCheckBox(TOOLS_CHECK)
        self.tools.setChecked(settings.tools)
        self.tools.setToolTip("Their descriptions go into every prompt of this chat; other chats are not offered them")
        form.addRow("Tools", self.tools)
        layout.addLayout(form)
        self.thinking = ThinkingGroup(settings, switches or TemplateSwitches())
        layout.addWidget(self.thinking)
        layout.addWidget(hint("Changes apply from the next message. Models are not reloaded."))

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _accept(self) -> None:
        if not self.thinking.check():
            self.accept()

    def markers(self) -> tuple[str, ...]:
        """The thinking markers set for the chat's model file ((): its template's own)."""
        return self.thinking.markers()

    def choose_preset(self, name: str) -> None:
        self._on_preset(self.preset.findData(name))

    def _on_preset(self, index: int) -> None:
        preset = next((p for p in self._presets if p.name == self.preset.itemData(index)), None)
        if preset is None:
            return
        self.preset.setCurrentIndex(index)
        self._chosen = preset
        self.system_prompt.setPlainText(preset.system_prompt)
        self.temperature.setValue(preset.temperature)
        self.top_p.setValue(preset.top_p)
        self.top_k.setValue(preset.top_k)
        self.max_tokens.setValue(preset.max_tokens)
        self.tools.setChecked(preset.tools)

    def settings(self) -> ChatSettings:
        chosen = self._chosen
        return self.thinking.apply(
            dataclasses.replace(
                presets_applied(self._original, chosen) if chosen is not None else self._original,
                preset=chosen.name if chosen is not None else self._original.preset,
                system_prompt=self.system_prompt.toPlainText().strip(),
                temperature=round(self.temperature.value(), 2),
                top_p=round(self.top_p.value(), 2),
                top_k=self.top_k.value(),
                seed=None if self.seed.value() < 0 else self.seed.value(),
                max_tokens=self.max_tokens.value(),
                repeat_penalty=(
                    None if self.repeat_penalty.value() <= AUTO_PENALTY else round(self.repeat_penalty.value(), 2)
                ),
                draft_max=self.draft_max.value() or None,
                tools=self.tools.isChecked(),
            )
        )


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
    ):
        """`memory_line`: what the chosen model would take at a context and KV type, for the Loading page;
        `tools_page`: the window's MCP servers, edited in place and applied by the window when accepted;
        `kept_state`: the kept conversations' memory as the last reply left it, in words ("" shows nothing);
        `trained_context`: the chosen model's trained context, which caps what each chat gets (None: unknown)."""
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self._original = settings
        layout = QVBoxLayout(self)
        self.pages = SettingsPages()
        layout.addWidget(self.pages, 1)

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

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
        self.resize(fitted_size(screen.availableGeometry().size()))

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
        )


__all__ = ["AppSettingsDialog", "ChatSettingsDialog", "GpuLayersSpinBox"]
