"""A cited source shown in its document: the document's text, the passage highlighted and scrolled to.

The document is read again when the source is clicked (it may be long; only this one is read). Where it changed
since the question was asked, the passage is looked for by its text; where it is gone, the passage kept with the
question is shown alone, with one sentence saying why. GUI thread only.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QTextEdit, QVBoxLayout

from app.documents.formats import DocumentError, read_document
from app.store.projects.sources import Source
from app.ui.transcript.source_links import source_label
from app.ui.widgets import style


def passage_in(text: str, source: Source) -> Optional[tuple[int, int]]:
    """Where the source's passage is in `text` (the document as read now): at its offsets when they still hold it,
    else where its text is found; None when it is no longer there."""
    if text[source.start : source.end] == source.text:
        return source.start, source.end
    at = text.find(source.text.strip()) if source.text.strip() else -1
    return (at, at + len(source.text.strip())) if at >= 0 else None


class SourceDialog(QDialog):
    """One source: its label, a sentence when the document changed, and the text with the passage highlighted."""

    def __init__(self, source: Source, parent=None):
        super().__init__(parent)
        self.source = source
        self.setWindowTitle(source_label(source))
        self.resize(720, 560)
        layout = QVBoxLayout(self)
        self.where = QLabel(source.path)
        self.note = QLabel()
        for label in (self.where, self.note):
            label.setWordWrap(True)
            label.setTextFormat(Qt.TextFormat.PlainText)  # a path as written, never markup
        self.note.hide()
        self.text = QPlainTextEdit()
        self.text.setReadOnly(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(self.where)
        layout.addWidget(self.note)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.passage: Optional[tuple[int, int]] = None
        self._fill()

    def _fill(self) -> None:
        source = self.source
        try:
            document, _ = read_document(source.path)
            text = document.text
        except DocumentError as exc:
            text = ""
            self._say(f"{exc} The passage as it was given to the model is shown.")
        found = passage_in(text, source) if text else None
        if found is None:
            if text:
                self._say("The document changed since the question was asked; the passage as given is shown.")
            text, found = source.text, (0, len(source.text))
        self.text.setPlainText(text)
        self.passage = found
        cursor = QTextCursor(self.text.document())
        cursor.setPosition(found[0])
        cursor.setPosition(found[1], QTextCursor.MoveMode.KeepAnchor)
        mark = QTextEdit.ExtraSelection()
        mark.cursor = cursor
        fmt = QTextCharFormat()
        # The selection's colour, made for the theme's text: a lightened accent was near white, and the dark
        # theme's light text on it could not be read.
        fmt.setBackground(QColor(style.ACCENT_SOFT))
        fmt.setForeground(QColor(style.TEXT))
        mark.format = fmt
        self.text.setExtraSelections([mark])
        end = QTextCursor(self.text.document())
        end.setPosition(found[1])
        self.text.setTextCursor(end)
        self.text.ensureCursorVisible()  # the passage's end in view, then its start: the whole of it when it fits
        start = QTextCursor(self.text.document())
        start.setPosition(found[0])
        self.text.setTextCursor(start)
        self.text.ensureCursorVisible()

    def _say(self, sentence: str) -> None:
        self.note.setText(sentence)
        self.note.show()

    def highlighted_text(self) -> str:
        """The passage as highlighted (tests)."""
        if self.passage is None:
            return ""
        return self.text.toPlainText()[self.passage[0] : self.passage[1]]
