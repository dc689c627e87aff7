"""What the transcript shows, read back character by character for the provenance checks."""

from __future__ import annotations

from app.ui.transcript.chat_view import ChatView
from app.ui.transcript.format import PROVENANCE_PROPERTY
from app.ui.transcript.marks import fragments


def shown_with_origins(view: ChatView) -> list[tuple[str, str]]:
    """Every shown character that carries a provenance, with it, in document order."""
    out = []
    for fragment in fragments(view.document()):
        origin = fragment.charFormat().stringProperty(PROVENANCE_PROPERTY)
        if origin:
            out.extend((ch, origin) for ch in fragment.text().replace("\u2028", "\n"))
    return out
