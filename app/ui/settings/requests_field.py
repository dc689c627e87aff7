"""Settings' "Requests at once" on the Loading page: the count, and the context each chat really gets with it.
GUI thread only."""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QFormLayout, QLabel, QSpinBox

from app.engine.config import MAX_PARALLEL, PARALLEL_AUTO
from app.engine.gguf.memory import capped_context


class RequestsAtOnceField:
    """The "Requests at once" box and the line under it, added to `form`. `context_box`: the Context size box the
    line follows; `trained_context`: what the chosen model was trained on (None: no model chosen, or unknown)."""

    def __init__(self, form: QFormLayout, value: int, context_box: QSpinBox, trained_context: Optional[int]):
        self._context_box = context_box
        self._trained = trained_context
        self.box = QSpinBox()
        self.box.setRange(PARALLEL_AUTO, MAX_PARALLEL)
        self.box.setSpecialValueText("Auto (from memory, up to 4)")
        self.box.setValue(value)
        self.box.setToolTip(
            "Requests answered side by side in one batch: your chat goes on while the local API answers an agent, "
            "and speculation is decided for the whole batch. Each takes a context's KV cache of its own. At 1, "
            "requests take turns, and recent conversations are kept between them."
        )
        form.addRow("Requests at once", self.box)
        self.cost = QLabel()
        self.cost.setObjectName("Muted")
        self.cost.setWordWrap(True)
        form.addRow("", self.cost)
        for box in (self.box, context_box):
            box.valueChanged.connect(self.update)
        self.update()

    def value(self) -> int:
        return self.box.value()

    def update(self, *_args) -> None:
        """Say what the count gives each chat: the context size, capped at what the model was trained on."""
        count = self.box.value()
        asked = self._context_box.value()
        context = capped_context(asked, self._trained)
        each = f"{context:,} tokens" + (
            f" (the most this model was trained on, not the {asked:,} asked)" if context < asked else ""
        )
        self.cost.setText(
            f"One request at a time, with {each}; recent conversations are kept between them."
            if count == 1
            else f"{'Up to 4' if count == PARALLEL_AUTO else count} requests at once, each chat with {each} of "
            "KV cache of its own; conversations are not kept between requests."
        )
