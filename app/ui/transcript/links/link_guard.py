"""Links and resources of replies. A reply is text a model wrote: its links open in the system browser only after
the user has read and confirmed the full URL, and nothing it names (an image, a style sheet) is ever fetched,
since a fetch would tell a server that the reply was read.

GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox, QWidget

# Links handed to the system: web pages and mail. Others (file:, custom schemes) could start programs.
OPENABLE_SCHEMES = frozenset({"http", "https", "mailto"})


def allowed_resource(url: QUrl) -> bool:
    """Only resources compiled into the app may be loaded by the transcript."""
    return url.scheme() == "qrc"


# A dialog lays its text out at once: a reply's megabyte-long link is shown by its start (scheme and host first).
SHOWN_URL_CHARS = 2_000


def shown_url(url: QUrl) -> str:
    """The URL as it will be opened: percent-encoded, with an international host in its ASCII form, so that a
    look-alike address cannot pass for another; a very long one is cut, and says how much is left out."""
    text = url.toString(QUrl.ComponentFormattingOption.FullyEncoded)
    if len(text) <= SHOWN_URL_CHARS:
        return text
    return f"{text[:SHOWN_URL_CHARS]}… ({len(text) - SHOWN_URL_CHARS:,} more characters)"


def open_link_after_confirming(parent: QWidget, url: QUrl) -> bool:
    """Ask the user to confirm the full URL, then open it in the system browser. True when it was opened."""
    if url.scheme().lower() not in OPENABLE_SCHEMES:
        QMessageBox.information(
            parent,
            "Link not opened",
            f"SpecChat opens only web and mail links from replies. This link is:\n\n{shown_url(url)}",
        )
        return False
    answer = QMessageBox.question(
        parent,
        "Open link?",
        f"Open this link from the reply in your browser?\n\n{shown_url(url)}",
        QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Cancel,
        QMessageBox.StandardButton.Cancel,
    )
    if answer != QMessageBox.StandardButton.Open:
        return False
    return QDesktopServices.openUrl(url)
