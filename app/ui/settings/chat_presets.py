"""A chat's preset in the window: the chat settings dialog offers the presets of Settings > Presets, and a preset
chosen there (or by apply_preset) shows at once on the Speculative switch and the draft picker, which the next
request is sent with. GUI thread only."""

from __future__ import annotations

from app.store import ChatSettings
from app.store.presets import read_presets
from app.ui.models.library_model import NGRAM_KEY


def attach(window) -> None:
    """Give `window` (MainWindow) its presets in the chat settings, and keep its switches in step with them."""
    binding = window.chat_settings
    binding.presets_source = lambda: read_presets(window.settings.presets)[0]

    def show(settings: ChatSettings) -> None:
        if settings.speculative != window.model_bar.speculative():
            window.model_bar.set_speculative(settings.speculative)
        if settings.draft_ngram and window.session.draft_key != NGRAM_KEY and window.drafts.row_of(NGRAM_KEY) >= 0:
            window.choose_draft(NGRAM_KEY)

    binding.sig_changed.connect(show)
