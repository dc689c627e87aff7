"""Speculate anyway: where the speculation controller pauses the draft because it does not pay on this machine,
the status line offers to draft regardless, so the user can still see what the draft gets accepted.

Taking the offer fixes the chat's draft length (ChatSettings.draft_max), from the next reply on; the status line
then says so, with a link back to automatic. GUI thread only.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QLabel

from app.store import ChatSettings
from app.ui.chat.settings_binding import ChatSettingsBinding

# The controller's reason for a round it did not draft because drafting costs more than it saves
# (app.engine.speculation.auto_controller: "speculation paused: ...").
PAUSED_PREFIX = "speculation paused"
FIXED_DRAFT_LENGTH = 4
OFFER = "Show draft acceptance anyway (slower on this machine)"
ANYWAY_LINK = "specchat:speculate-anyway"
AUTO_LINK = "specchat:draft-auto"


def fixed_text(draft_max: int) -> str:
    # Beside the controller's own reason ("Fixed draft length 4"), so it says what that means rather than repeat it.
    return f"Drafting {draft_max} tokens every round, even where that is slower."


class SpeculateAnyway(QObject):
    """The offer and the fixed-length note, in one label of the status footer. GUI thread only."""

    def __init__(self, binding: ChatSettingsBinding, parent=None):
        super().__init__(parent)
        self.binding = binding
        self.label = QLabel("")
        self.label.setObjectName("StatusLine")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.LinksAccessibleByMouse
                                           | Qt.TextInteractionFlag.LinksAccessibleByKeyboard)
        self.label.linkActivated.connect(self._on_link)
        self.label.hide()
        binding.sig_changed.connect(self.show_for)

    def offered(self) -> bool:
        return not self.label.isHidden() and ANYWAY_LINK in self.label.text()

    def on_round_reason(self, reason: str) -> None:
        """The controller explained a round; a pause is the moment to offer drafting anyway."""
        settings = self.binding.current()
        if reason.lower().startswith(PAUSED_PREFIX) and settings.speculative and settings.draft_max is None:
            self._show(f'<a href="{ANYWAY_LINK}">{OFFER}</a>')

    def show_for(self, settings: ChatSettings) -> None:
        """A chat was shown or its settings changed: the fixed length is said while it holds, the offer is reset."""
        if settings.speculative and settings.draft_max:
            self._show(f'{fixed_text(settings.draft_max)} '
                       f'<a href="{AUTO_LINK}">Auto</a>')
        else:
            self._show(None)

    def speculate_anyway(self) -> None:
        """Take the offer: this chat drafts FIXED_DRAFT_LENGTH tokens every round from its next reply."""
        self.binding.update(draft_max=FIXED_DRAFT_LENGTH)

    def back_to_auto(self) -> None:
        self.binding.update(draft_max=None)

    def _on_link(self, href: str) -> None:
        if href == ANYWAY_LINK:
            self.speculate_anyway()
        elif href == AUTO_LINK:
            self.back_to_auto()

    def _show(self, html: Optional[str]) -> None:
        self.label.setText(html or "")
        self.label.setToolTip(
            "The speculation controller pauses the draft where verifying its tokens costs more time than it saves. "
            "A fixed draft length makes it draft every round, so you can see what gets accepted."
            if html else "")
        self.label.setVisible(bool(html))


def attach(window) -> SpeculateAnyway:
    """Give `window` (MainWindow) the offer in its status footer, next to the controller's reasons."""
    offer = SpeculateAnyway(window.chat_settings, window)
    window.footer.add_beside_status(offer.label)
    window.conversation.sig_round_reason.connect(offer.on_round_reason)
    return offer
