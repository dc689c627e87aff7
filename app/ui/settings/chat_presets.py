"""A chat's preset in the window: chosen in the chat's header or in the chat settings dialog, from the presets of
Settings > Presets. A preset chosen either way (or by apply_preset) copies its values into the chat and shows at once
on the Speculative switch and the draft picker, which the next request is sent with. GUI thread only."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox

from app.store import ChatSettings
from app.store.presets import Preset, find, read_presets
from app.ui.models.library_model import NGRAM_KEY

# A chat with no preset chosen keeps settings of its own; "Default" is a preset (ChatSettings' defaults), so the
# two are told apart by name and by the tooltip below.
NO_PRESET = "Own settings"
PRESETS_EXPLAINED = (
    f'"{NO_PRESET}": no preset chosen, the chat keeps the settings it has. "Default": the built-in settings a new '
    "chat starts with. Choosing a preset copies its system prompt, sampling and draft setting into the chat. "
    "Presets are edited in Settings > Presets."
)


def fill(combo: QComboBox, presets: list[Preset], chosen: str | None) -> None:
    """The header's combo: every preset, the chat's own selected. A chat with no preset, or one whose preset was
    deleted since, shows that first, as an item that applies nothing."""
    current = find(presets, chosen)
    combo.blockSignals(True)
    combo.clear()
    if current is None:
        combo.addItem(chosen or NO_PRESET, None)
    for preset in presets:
        combo.addItem(preset.name, preset.name)
    combo.setCurrentIndex(max(0, combo.findData(current.name)) if current is not None else 0)
    combo.blockSignals(False)


def attach(window) -> None:
    """Give `window` (MainWindow) its presets in the header and the chat settings, and keep its switches in step."""
    binding = window.chat_settings
    binding.presets_source = lambda: read_presets(window.settings.presets)[0]
    combo = window.chat_header.header.preset
    combo.setToolTip(PRESETS_EXPLAINED)

    def show(settings: ChatSettings) -> None:
        if settings.speculative != window.model_bar.speculative():
            window.model_bar.set_speculative(settings.speculative)
        if settings.draft_ngram and window.session.draft_key != NGRAM_KEY and window.drafts.row_of(NGRAM_KEY) >= 0:
            window.choose_draft(NGRAM_KEY)

    def chosen(index: int) -> None:
        preset = find(binding.presets_source(), combo.itemData(index))
        if preset is not None:
            binding.apply_preset(preset)  # sig_changed: the switches follow, and the header fills the combo again

    binding.sig_changed.connect(show)
    combo.activated.connect(chosen)
    # Presets edited in Settings since the header was last filled are offered the next time it opens.
    combo.sig_opening.connect(lambda: fill(combo, binding.presets_source(), binding.current().preset))
