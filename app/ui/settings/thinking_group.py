"""The chat settings' "Thinking" group: thinking on or off, its effort and budget, and the model's markers.

What the chat's model lets a chat choose comes in as TemplateSwitches: a control its chat template does not read is
shown disabled with a tooltip saying so, and one nobody can know about (a server's model, no model chosen) stays
enabled with a tooltip saying which models follow it. GUI thread only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel, QLineEdit, QSpinBox

from app.store import ChatSettings

THINKING_CHOICES = (("Model default", None), ("On", True), ("Off", False))
EFFORT_CHOICES = (("Model default", ""), ("Low", "low"), ("Medium", "medium"), ("High", "high"))
MAX_BUDGET = 131072  # the most the Max tokens box offers


@dataclass(frozen=True)
class TemplateSwitches:
    """What the chat's model lets a chat choose about its thinking, and its markers override."""

    thinking: Optional[bool] = None  # its template reads `enable_thinking`; None: not known
    effort: Optional[bool] = None  # its template reads `reasoning_effort`; None: not known
    model_path: Optional[str] = None  # the model file the markers are remembered for (None: none can be set)
    model_name: str = ""
    markers: tuple[str, ...] = ()  # (start, end) set for this model file, () for none


def _switch_tip(known: Optional[bool], variable: str, what: str) -> str:
    if known is None:
        return f"{what} Only models whose chat template has a switch for it ({variable}) follow this."
    if known:
        return f"{what} Passed to this model's chat template as {variable}."
    return f"This model's chat template has no switch for it ({variable}), so it does what it always does."


class ThinkingGroup(QGroupBox):
    """The Thinking controls of one chat, and the markers of its model file."""

    def __init__(self, settings: ChatSettings, switches: TemplateSwitches, parent=None):
        super().__init__("Thinking", parent)
        self._switches = switches
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)

        self.thinking = QComboBox()
        for label, value in THINKING_CHOICES:
            self.thinking.addItem(label, value)
        self.thinking.setCurrentIndex([v for _, v in THINKING_CHOICES].index(settings.thinking))
        self.thinking.setEnabled(switches.thinking is not False)
        self.thinking.setToolTip(
            _switch_tip(switches.thinking, "enable_thinking", "Whether the model thinks before it answers.")
        )
        form.addRow("Thinking", self.thinking)

        self.effort = QComboBox()
        for label, effort in EFFORT_CHOICES:
            self.effort.addItem(label, effort)
        self.effort.setCurrentIndex(max(0, self.effort.findData(settings.reasoning_effort)))
        self.effort.setEnabled(switches.effort is not False)
        self.effort.setToolTip(_switch_tip(switches.effort, "reasoning_effort", "How long the model thinks."))
        form.addRow("Effort", self.effort)

        self.budget = QSpinBox()
        self.budget.setRange(0, MAX_BUDGET)
        self.budget.setSingleStep(256)
        self.budget.setSpecialValueText("Off")
        self.budget.setSuffix(" tokens")
        self.budget.setValue(min(settings.thinking_budget, MAX_BUDGET))
        self.budget.setToolTip(
            "At most this many tokens of thinking: then the thinking is closed with the model's "
            "own end marker and the answer follows. Off: no limit but Max tokens."
        )
        form.addRow("Thinking budget", self.budget)

        start, end = switches.markers if len(switches.markers) == 2 else ("", "")
        self.start_marker = QLineEdit(start)
        self.start_marker.setPlaceholderText("<think>")
        self.end_marker = QLineEdit(end)
        self.end_marker.setPlaceholderText("</think>")
        markers = QHBoxLayout()
        markers.addWidget(self.start_marker)
        markers.addWidget(QLabel("…"))
        markers.addWidget(self.end_marker)
        for box in (self.start_marker, self.end_marker):
            box.setEnabled(switches.model_path is not None)
            box.setToolTip(
                f"Where {switches.model_name or 'this model'}'s thinking starts and ends, for a model whose chat "
                "template does not say. Empty: the template's markers, else <think> … </think>. Remembered for "
                "this model file, in every chat."
                if switches.model_path is not None
                else "Choose a model file first: markers are remembered per model file."
            )
        form.addRow("Markers (this model)", markers)
        self.problem = QLabel("")
        self.problem.setObjectName("Muted")
        self.problem.setWordWrap(True)
        self.problem.hide()
        form.addRow(self.problem)

    def apply(self, settings: ChatSettings) -> ChatSettings:
        """`settings` with the chat's thinking choices as the group shows them."""
        return dataclasses.replace(
            settings,
            thinking=self.thinking.currentData(),
            reasoning_effort=self.effort.currentData(),
            thinking_budget=self.budget.value(),
        )

    def markers(self) -> tuple[str, ...]:
        """(start, end) for the model file, or () for the template's own."""
        start, end = self.start_marker.text(), self.end_marker.text()
        return (start, end) if start.strip() and end.strip() else ()

    def check(self) -> str:
        """Why the group cannot be stored as it is ("" when it can); the sentence is shown under it."""
        filled = [bool(box.text().strip()) for box in (self.start_marker, self.end_marker)]
        problem = (
            "Give both markers, where the thinking starts and where it ends, or neither."
            if any(filled) and not all(filled)
            else ""
        )
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        return problem
