"""The exact size in tokens of each picture waiting in the composer, asked of the engine process, which holds the
target's projector (mtmd tokenizes the picture there); the chips and the context gauge show it once it comes, the
estimate until then and wherever it cannot be counted (a server's model, a model that cannot see). GUI thread only.

The engine answers after any reply running now (app.engine.host.errands), so counting never holds a reply up. A
count is for the models loaded when it was asked: when they change, every count is asked again.
"""

from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtCore import QObject

from app.engine.host.wire import PictureCounted
from app.engine.image_files import ImageInput
from app.ui.attachments.attachment_tray import AttachmentTray
from app.ui.engine_link.engine_process import EngineProcess


class PictureCounts(QObject):
    """Asks for each new picture's count and shows the answers on `tray`; `on_change` updates the gauge."""

    def __init__(
        self,
        engine: EngineProcess,
        tray: AttachmentTray,
        on_change: Callable[[], None],
        blocker: Callable[[], str] = lambda: "",
        parent=None,
    ):
        """`blocker`: why the chosen model cannot see pictures ("" when it can; ModelSession.picture_blocker)."""
        super().__init__(parent)
        self._engine = engine
        self._blocker = blocker
        self._tray = tray
        self._on_change = on_change
        self._answers: dict[str, Optional[int]] = {}  # SHA-256 -> tokens (None: cannot be counted with these models)
        self._asked: dict[int, str] = {}  # request id -> SHA-256, while unanswered
        engine.sig_picture_counted.connect(self._on_counted)
        engine.sig_models_loaded.connect(self._models_changed)
        engine.sig_worker_died.connect(self._models_changed)
        tray.sig_changed.connect(self.ask)

    def ask(self) -> None:
        """Ask for the count of every waiting picture not counted or asked for yet."""
        waiting = set(self._asked.values())
        for picture in self._tray.pictures():
            if picture.digest not in self._answers and picture.digest not in waiting:
                request_id = self._engine.count_picture(ImageInput(picture.data, picture.name, picture.digest))
                self._asked[request_id] = picture.digest
                waiting.add(picture.digest)

    def _on_counted(self, answer: PictureCounted) -> None:
        digest = self._asked.pop(answer.request_id, None)
        if digest is None:
            return  # asked of the models before the last load
        self._answers[digest] = answer.tokens
        self._show()

    def _models_changed(self, *_args) -> None:
        self._answers.clear()
        self._asked.clear()
        self._show()
        self.ask()

    def _show(self) -> None:
        self._tray.show_picture_tokens({d: n for d, n in self._answers.items() if n is not None}, self._blocker())
        self._on_change()
