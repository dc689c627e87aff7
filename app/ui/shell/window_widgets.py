"""Small widgets of the main window: the error banner, the legend row above the composer and the status footer.

GUI thread only.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)
from superqt import QFlowLayout

from app.replies.status_words import StatusWords
from app.ui.widgets import style
from app.ui.widgets.elided_label import ElidedLabel
from app.ui.widgets.toggle_switch import ToggleSwitch

# The context gauge turns to its "full" look above this share of the context.
GAUGE_FULL_SHARE = 0.85
# The status line keeps at least this much of its row before the indicators move to a row of their own.
STATUS_ROOM = 240


class ErrorBanner(QFrame):
    """A dismissable banner with one message the user should read."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("ErrorBanner")
        row = QHBoxLayout(self)
        row.setContentsMargins(10, 4, 4, 4)
        self._label = QLabel()
        self._label.setTextFormat(Qt.TextFormat.PlainText)  # messages quote servers and files: never markup
        self._label.setWordWrap(True)
        self._label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # A wrapped label's minimum is its longest word: an address or file name quoted whole would hold the window
        # wider than the screen. The label may clip such a word instead; the text stays selectable and in the tooltip.
        self._label.setMinimumWidth(1)
        row.addWidget(self._label, 1)
        dismiss = QPushButton("Dismiss")
        dismiss.setObjectName("FlatButton")
        dismiss.clicked.connect(self.hide)
        row.addWidget(dismiss, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_message(self, message: str) -> None:
        self._label.setText(message)
        self.setToolTip(message)
        self.show()

    def text(self) -> str:
        """The message shown (or last shown)."""
        return self._label.text()


class LegendRow(QWidget):
    """What the token highlights mean, the switches for them and for refused proposals, and the live readout of
    the streaming reply."""

    def __init__(self, highlighting: bool, show_refused: bool = False, parent=None):
        super().__init__(parent)
        row = QFlowLayout(self)  # wraps on a narrow window rather than widening it (issue 36)
        row.setContentsMargins(28, 2, 28, 0)
        row.setHorizontalSpacing(12)
        row.setVerticalSpacing(2)
        self.legend = QLabel()
        self.plain_legend = QLabel()
        self.plain_legend.setObjectName("StatusLine")
        self.show_legend()
        self.legend.setObjectName("StatusLine")
        self.legend.setToolTip(
            "Speculative decoding: a drafter proposes tokens and the model checks them all in one batch.\n"
            "Blue: proposed by the draft model and kept. Amber: copied from earlier text by n-gram lookup and kept.\n"
            "Green: drafted from how your earlier replies went on (any chat) and kept.\n"
            "The rest the model wrote itself. Hover a token to see its round: what was proposed and refused."
        )
        row.addWidget(self.legend)
        row.addWidget(self.plain_legend)
        self.highlight_switch = self._switch(
            row, "Highlight", highlighting, "Show or hide the highlighting of kept draft tokens"
        )
        self.refused_switch = self._switch(
            row, "Refused", show_refused, "Show the proposals the model refused, struck through, where it disagreed"
        )
        self.live_stats = QLabel("")
        self.live_stats.setObjectName("LiveStats")
        row.addWidget(self.live_stats)

    def show_legend(self) -> None:
        """The swatches in the current theme's colours (again after a theme switch)."""
        draft, ngram = style.swatch_css(style.draft_color()), style.swatch_css(style.ngram_color())
        history = style.swatch_css(style.history_color())
        self.legend.setText(
            f'<span style="background:{draft}">&nbsp;draft model&nbsp;</span>&nbsp;&nbsp;'
            f'<span style="background:{ngram}">&nbsp;n-gram copy&nbsp;</span>&nbsp;&nbsp;'
            f'<span style="background:{history}">&nbsp;history&nbsp;</span>'
        )
        self.plain_legend.setText(f'<span style="color:{style.TEXT_MUTED}">plain: written by the model itself</span>')

    @staticmethod
    def _switch(row: QFlowLayout, label: str, checked: bool, tooltip: str) -> ToggleSwitch:
        switch = ToggleSwitch()
        switch.setChecked(checked)
        switch.setToolTip(tooltip)
        switch.setFixedSize(34, 20)  # a 28x14 pill and its focus ring
        text = QLabel(label)
        text.setObjectName("StatusLine")
        text.setToolTip(tooltip)
        text.setBuddy(switch)
        box = QWidget()
        pair = QHBoxLayout(box)
        pair.setContentsMargins(0, 0, 0, 0)
        pair.setSpacing(4)
        pair.addWidget(switch)
        pair.addWidget(text)
        row.addWidget(box)
        return switch

    def set_live_stats(self, text: str) -> None:
        self.live_stats.setText(text)


class StatusFooter(QWidget):
    """The line under the composer: why the drafter chose its draft length, and the context gauge."""

    def __init__(self, parent=None):
        super().__init__(parent)
        # Two rows where one would not fit (a narrow window): the status line and its offer above, the indicators
        # and the gauge below, right-aligned.
        rows = self._rows = QVBoxLayout(self)
        rows.setContentsMargins(28, 0, 28, 8)
        rows.setSpacing(2)
        self._top = QHBoxLayout()
        self._bottom = QHBoxLayout()
        self._bottom.addStretch(1)
        rows.addLayout(self._top)
        rows.addLayout(self._bottom)
        self.status_line = ElidedLabel("")
        self.status_line.setObjectName("StatusLine")
        self._top.addWidget(self.status_line, 1)
        self.indicators = QWidget()  # moved between the rows by resizeEvent
        row = QHBoxLayout(self.indicators)
        row.setContentsMargins(16, 0, 0, 0)
        self.context_label = QLabel("")
        self.context_label.setObjectName("StatusLine")
        row.addWidget(self.context_label)
        row.addSpacing(6)
        self.context_gauge = QProgressBar()
        self.context_gauge.setObjectName("ContextGauge")
        self.context_gauge.setTextVisible(False)
        self.context_gauge.setFixedWidth(120)
        self.context_gauge.setRange(0, 1)
        self.context_gauge.setValue(0)
        row.addWidget(self.context_gauge)
        self._top.addWidget(self.indicators)
        self._used = self._n_ctx = self._pending = 0
        self._pending_exact = False

    def add_indicator(self, widget: QWidget) -> None:
        """A feature's own word in the footer (such as the API server's), before the context gauge."""
        row = self.indicators.layout()
        row.insertWidget(row.indexOf(self.context_label), widget)
        row.insertSpacing(row.indexOf(self.context_label), 16)

    def add_beside_status(self, widget: QWidget) -> None:
        """Put a feature's widget right after the status line (e.g. the offer to speculate anyway)."""
        self._top.insertWidget(1, widget)

    def minimumSizeHint(self) -> QSize:
        # As narrow as the wider of the two rows, since the indicators move below when they do not fit beside.
        hint = super().minimumSizeHint()
        margins = self._rows.contentsMargins()
        beside = sum(
            self._top.itemAt(n).widget().sizeHint().width()
            for n in range(1, self._top.count())
            if self._top.itemAt(n).widget() not in (None, self.indicators)
            and not self._top.itemAt(n).widget().isHidden()
        )
        width = max(self.indicators.minimumSizeHint().width(), beside + 80) + margins.left() + margins.right()
        return QSize(min(hint.width(), width), hint.height())

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._place_indicators()

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:  # a word beside the status line appeared or changed
            self._place_indicators()
        return super().event(event)

    def _place_indicators(self) -> None:
        margins = self._rows.contentsMargins()
        room = self.width() - margins.left() - margins.right()
        beside = sum(
            self._top.itemAt(n).widget().sizeHint().width()
            for n in range(1, self._top.count())
            if self._top.itemAt(n).widget() not in (None, self.indicators)
            and not self._top.itemAt(n).widget().isHidden()
        )
        below = room < STATUS_ROOM + beside + self.indicators.sizeHint().width()
        if below and self._bottom.indexOf(self.indicators) < 0:
            self._top.removeWidget(self.indicators)
            self._bottom.addWidget(self.indicators)
        elif not below and self._top.indexOf(self.indicators) < 0:
            self._bottom.removeWidget(self.indicators)
            self._top.addWidget(self.indicators)

    def show_status(self, words: Optional[StatusWords]) -> None:
        """What speculation is doing (app.replies.status_words), or a sentence of the window's; None clears it. The
        whole of it and its details are the tooltip."""
        words = words or StatusWords("", "")
        self.status_line.setText(words.line)
        self.status_line.setToolTip(words.details)

    def show_context_usage(self, used: int, n_ctx: int) -> None:
        self._used, self._n_ctx = used, n_ctx
        self._show_gauge()

    def show_pending_tokens(self, tokens: int, exact: bool = False) -> None:
        """How many tokens the files attached to the next message will add (0: none attached); `exact`: counted
        (pictures with the loaded projector), else about."""
        self._pending, self._pending_exact = tokens, exact
        self._show_gauge()

    def _show_gauge(self) -> None:
        used, n_ctx, pending = self._used, self._n_ctx, self._pending
        gauge = self.context_gauge
        about = "" if self._pending_exact else "about "
        if n_ctx <= 0:
            self.context_label.setText(f"Attached: {about}{pending:,} tokens" if pending else "")
            gauge.setRange(0, 1)
            gauge.setValue(0)
            return
        gauge.setRange(0, n_ctx)
        gauge.setValue(min(used + pending, n_ctx))
        tip = (
            f"{used:,} of {n_ctx:,} tokens of context in use. When a conversation outgrows the context, "
            "the oldest messages are left out of the prompt (you are told when that happens)."
        )
        if pending:
            self.context_label.setText(f"Context {used:,} + {'~' if about else ''}{pending:,} attached / {n_ctx:,}")
            tip += (
                f"\nThe attached pictures take {pending:,} tokens, as this model's projector reads them, when the "
                "message is sent."
                if not about
                else f"\nThe attached files and pictures add about {pending:,} tokens (an estimate: a picture "
                "counts 256, as Gemma 3's do, where this model's projector cannot count it) when the message is sent."
            )
            if used + pending > n_ctx:
                tip += " That is more than the context holds: older messages, or the files' ends, will not fit."
        else:
            self.context_label.setText(f"Context {used:,} / {n_ctx:,}")
        gauge.setToolTip(tip)
        full = used + pending > GAUGE_FULL_SHARE * n_ctx
        if gauge.property("full") != full:
            gauge.setProperty("full", full)
            gauge.style().unpolish(gauge)
            gauge.style().polish(gauge)


def confirm_destructive(parent: QWidget, title: str, text: str, action: str) -> bool:
    """Ask before something that cannot be undone: True when the user chose `action`."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text, parent=parent)
    ok = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    return box.clickedButton() is ok
