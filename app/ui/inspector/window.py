"""The per-reply inspector: a window with one reply's rounds as four charts, which can be saved as one PNG.

A separate, non-modal window rather than a side panel: four readable charts need more room than the transcript can
give up, and the user keeps reading and chatting while it is open. One window is reused; clicking another reply's
stats row shows that reply. GUI thread only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QSize, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.ui.widgets.dialog_folders import remember_folder, start_folder
from app.common.atomic_write import write_atomic
from app.replies.inspector_data import (
    ANY_DRAFTER,
    DRAFTERS,
    NO_ROUNDS_SENTENCE,
    PLAIN,
    ReplyInspection,
    reply_inspection,
)
from app.ui.inspector import charts
from app.ui.transcript.format import TranscriptMessage
from app.ui.transcript.source_links import sources_sentence

# The size it opens at, on a screen with room for it; a smaller screen gets this share of its free area.
PREFERRED_SIZE = QSize(980, 680)
SCREEN_SHARE = 0.9
PANEL_MIN_SIZE = QSize(560, 440)


class ReplyInspector(QDialog):
    """The inspector window. GUI thread only."""

    sig_saved = Signal(str)
    """The charts were saved as a PNG at this path."""

    def __init__(self, parent: Optional[QWidget] = None):
        super().__init__(parent)
        self.setWindowTitle("Reply inspector — SpecChat")
        self.setModal(False)
        self.message_id: Optional[int] = None
        self.inspection = ReplyInspection()
        self.charts: dict[str, charts.Chart] = {}
        self.captions: dict[str, QLabel] = {}

        # What Save writes: the titles, the summary and the charts, not the buttons.
        self.panel = QWidget()
        self.panel.setObjectName("InspectorPanel")
        self.panel.setAutoFillBackground(True)  # the theme's window colour (the app palette) in the saved image too
        self.title = QLabel()
        self.title.setStyleSheet("font-size: 14px; font-weight: 600;")
        self.summary = QLabel()
        self.summary.setObjectName("Muted")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)  # file names are shown as written
        self.notice = QLabel()
        self.notice.setWordWrap(True)
        self.legend = QLabel()
        self.legend.setObjectName("Muted")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.grid = QGridLayout()
        self.grid.setHorizontalSpacing(16)
        self.grid.setVerticalSpacing(4)
        self.grid.setColumnStretch(0, 1)
        self.grid.setColumnStretch(1, 1)
        panel_layout = QVBoxLayout(self.panel)
        panel_layout.setContentsMargins(16, 14, 16, 10)
        for widget in (self.title, self.summary, self.notice, self.legend):
            panel_layout.addWidget(widget)
        panel_layout.addLayout(self.grid, 1)

        self.status = QLabel()
        self.status.setObjectName("Muted")
        self.save_button = QPushButton("Save as PNG…")
        self.save_button.setToolTip("Save the summary and all four charts as one PNG image")
        self.save_button.clicked.connect(self.save_png)
        close_button = QPushButton("Close")
        close_button.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.setContentsMargins(16, 0, 16, 12)
        buttons.addWidget(self.status, 1)
        buttons.addWidget(self.save_button)
        buttons.addWidget(close_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        # On a small screen the charts keep a legible size and the panel scrolls, rather than squeezing them on top
        # of each other; Save still draws the whole panel.
        self.panel.setMinimumSize(PANEL_MIN_SIZE)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(self.panel)
        layout.addWidget(scroll, 1)
        layout.addLayout(buttons)
        screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
        room = screen.availableGeometry().size() * SCREEN_SHARE if screen is not None else PREFERRED_SIZE
        self.resize(PREFERRED_SIZE.boundedTo(room))  # never larger than its screen

    def show_message(self, message: TranscriptMessage, fallback_token_s: Optional[float] = None) -> None:
        """Show this reply's rounds (charts made anew: exactly the rounds recorded, nothing left from another)."""
        self.message_id = message.message_id
        # Tokens that know their rounds count each round's tokens; an older chat's (none known) leave it to the rounds.
        tokens = message.tokens or []
        token_rounds = [token.round for token in tokens] if any(token.round >= 0 for token in tokens) else None
        self.inspection = reply_inspection(message.rounds, token_rounds, message.stats, fallback_token_s)
        self.status.clear()
        self.title.setText(f"Reply by {message.model_label or 'the assistant'}")
        summary = "\n\n".join(part for part in (self.inspection.summary, sources_sentence(message.sources)) if part)
        self.summary.setText(summary)
        self.summary.setVisible(bool(summary))
        self.notice.setText("" if self.inspection.has_rounds else NO_ROUNDS_SENTENCE)
        self.notice.setVisible(not self.inspection.has_rounds)
        self._clear_charts()
        inspection = self.inspection
        shown = {drafter for row in inspection.histogram.values() for drafter in row}
        drafters = [d for d in (*DRAFTERS, PLAIN, ANY_DRAFTER) if d in shown]
        self.legend.setText(charts.legend_html(drafters))
        self.legend.setVisible(bool(drafters))
        if inspection.has_rounds:
            plain = inspection.plain
            time_caption = (
                f"Plain decoding: the plain rounds as they were, the others at {plain.token_s:.3f} s per "
                f"token ({plain.basis}). {plain.load_note}".rstrip()
                if plain
                else inspection.plain_missing
            )
            self._add_chart("rounds", charts.rounds_chart(inspection), 0, 0)
            self._add_chart("positions", charts.positions_chart(inspection), 0, 1)
            self._add_chart("time", charts.time_chart(inspection), 2, 0, time_caption)
            self._add_chart("histogram", charts.histogram_chart(inspection), 2, 1)
        elif inspection.histogram:
            self._add_chart(
                "histogram",
                charts.histogram_chart(inspection),
                0,
                0,
                "From the reply's stats, which do not say who drafted.",
            )
        self.save_button.setEnabled(bool(self.charts))

    def _add_chart(self, key: str, chart: charts.Chart, row: int, column: int, caption: str = "") -> None:
        self.charts[key] = chart
        self.grid.addWidget(chart, row, column)
        self.grid.setRowStretch(row, 1)
        label = QLabel(caption)
        label.setObjectName("Muted")
        label.setWordWrap(True)
        label.setVisible(bool(caption))
        self.captions[key] = label
        self.grid.addWidget(label, row + 1, column)

    def _clear_charts(self) -> None:
        self.charts, self.captions = {}, {}
        while self.grid.count():
            item = self.grid.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.setParent(None)
                widget.deleteLater()
        for row in range(self.grid.rowCount()):
            self.grid.setRowStretch(row, 0)

    # ----- saving

    def save_png(self) -> None:
        """Ask where, then save the summary and the charts as one PNG."""
        suggested = str(Path(start_folder("image")) / f"specchat-reply-{self.message_id}.png")
        path, _ = QFileDialog.getSaveFileName(self, "Save the charts as PNG", suggested, "PNG image (*.png)")
        if path:
            remember_folder("image", path)
            self.write_png(path if path.lower().endswith(".png") else path + ".png")

    def write_png(self, path: str) -> bool:
        """Write the panel as a PNG at `path`; says in the window whether it worked."""
        data = QByteArray()
        buffer = QBuffer(data)
        buffer.open(QIODevice.OpenModeFlag.WriteOnly)
        if not self.panel.grab().save(buffer, "PNG"):
            self.status.setText("The charts could not be drawn into an image.")
            return False
        try:
            write_atomic(path, bytes(data.data()), mode=0o644)
        except OSError as exc:
            self.status.setText(f"Could not save {path}: {exc.strerror or exc}.")
            return False
        self.status.setText(f"Saved {Path(path).name}")
        self.sig_saved.emit(path)
        return True
