"""Speculate anyway: where the speculation controller pauses the draft because it does not pay on this machine,
the status line offers to draft regardless, so the user can still see what the draft gets accepted.

Taking the offer fixes the chat's draft length (ChatSettings.draft_max), from the next reply on; the status line
then says so, and this label holds only the link back to automatic. The offer is read from the round's kind
(app.replies.status_words), never from the controller's words, and goes as soon as a round drafts again, so the
footer never offers drafting while it says it is drafting. GUI thread only.
"""

from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtCore import QObject, Qt

from app.replies.status_words import FIXED, StatusWords, offers_anyway, sentence
from app.store import ChatSettings
from app.ui.chat.settings_binding import ChatSettingsBinding
from app.ui.widgets.link_label import LinkLabel

FIXED_DRAFT_LENGTH = 4
# The offer says what a click changes before it is clicked: the chat's draft length, fixed until Back to automatic.
OFFER = f"Show draft acceptance anyway (fixes this chat's draft length at {FIXED_DRAFT_LENGTH}; slower here)"
AUTO = "Back to automatic"
FIXED_NOTE = "Draft length fixed at {} for this chat"
ANYWAY_LINK = "specchat:speculate-anyway"
AUTO_LINK = "specchat:draft-auto"


class SpeculateAnyway(QObject):
    """The offer and the fixed-length note, in one label of the status footer. GUI thread only."""

    def __init__(self, binding: ChatSettingsBinding, show_status: Callable[[Optional[StatusWords]], None], parent=None):
        """`show_status`: the footer's status line, which says the fixed length when the offer is taken."""
        super().__init__(parent)
        self.binding = binding
        self.show_status = show_status
        self.label = LinkLabel("")
        self.label.setObjectName("StatusLine")
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setTextInteractionFlags(
            Qt.TextInteractionFlag.LinksAccessibleByMouse | Qt.TextInteractionFlag.LinksAccessibleByKeyboard
        )
        self.label.linkActivated.connect(self._on_link)
        self.label.hide()
        binding.sig_changed.connect(self.show_for)

    def offered(self) -> bool:
        return not self.label.isHidden() and ANYWAY_LINK in self.label.text()

    def on_status(self, words: StatusWords) -> None:
        """The status line changed: a round that did not draft because it would not pay is the moment to offer
        drafting anyway; a round that drafts (or any other round) takes the offer back."""
        settings = self.binding.current()
        if settings.draft_max or not words.kind:
            return  # the link back to automatic stays; a sentence of the window's changes nothing
        if offers_anyway(words) and settings.speculative:
            self._show(f'<a href="{ANYWAY_LINK}">{OFFER}</a>')
        else:
            self._show(None)

    def show_for(self, settings: ChatSettings) -> None:
        """A chat was shown or its settings changed: the link back to automatic while the length is fixed, and the
        offer is reset."""
        if settings.speculative and settings.draft_max:
            # It names what it undoes: the status line beside it may say something else by then (a change of
            # threads), and a bare "· Back to automatic" read as the end of that sentence.
            self._show(f'{FIXED_NOTE.format(settings.draft_max)}: <a href="{AUTO_LINK}">{AUTO}</a>')
        else:
            self._show(None)

    def speculate_anyway(self) -> None:
        """Take the offer: this chat drafts FIXED_DRAFT_LENGTH tokens every round from its next reply."""
        self.binding.update(draft_max=FIXED_DRAFT_LENGTH)
        self.show_status(sentence(FIXED))  # the pause it offered against no longer holds

    def back_to_auto(self) -> None:
        self.binding.update(draft_max=None)
        self.show_status(None)

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
            if html
            else ""
        )
        self.label.setVisible(bool(html))


def attach(window) -> SpeculateAnyway:
    """Give `window` (MainWindow) the offer in its status footer, next to the controller's reasons."""
    offer = SpeculateAnyway(window.chat_settings, window.footer.show_status, window)
    window.footer.add_beside_status(offer.label)
    window.conversation.sig_status.connect(offer.on_status)
    return offer
