"""The first-run page: shown instead of an empty conversation while the library has no usable model."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from app.platform import paths


BODY_WIDTH, MIN_BODY_WIDTH = 560, 240


class EmptyLibraryPage(QWidget):
    """Says how to add models, with buttons that do it. GUI thread only."""

    sig_add_folder = Signal()
    """The user wants to add a folder of GGUF files."""
    sig_get_models = Signal()
    """The user wants to download models."""
    sig_open_models_folder = Signal()
    """The user wants to open SpecChat's own models folder."""
    sig_rescan = Signal()
    """The user wants the folders scanned again."""

    def __init__(self, parent=None):
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.addStretch(2)
        column = QVBoxLayout()
        column.setSpacing(12)
        title = QLabel("Add a model to start chatting")
        title.setObjectName("EmptyTitle")
        title.setAlignment(Qt.AlignmentFlag.AlignCenter)
        column.addWidget(title)
        self.body = QLabel()
        self.body.setObjectName("EmptyBody")
        self.body.setWordWrap(True)
        self.body.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # As wide as the page allows up to BODY_WIDTH, centred by the stretches beside it (a centred wrapped label
        # would shrink to a sliver; a fixed width would widen a narrow window).
        self.body.setMinimumWidth(MIN_BODY_WIDTH)
        self.body.setMaximumWidth(BODY_WIDTH)
        self.body.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        body_row = QHBoxLayout()
        body_row.addStretch(1)
        body_row.addWidget(self.body, 100)
        body_row.addStretch(1)
        column.addLayout(body_row)
        self.set_details(0)

        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.add_folder_button = QPushButton("Add a folder of models…")
        self.add_folder_button.setObjectName("PrimaryButton")
        self.add_folder_button.clicked.connect(self.sig_add_folder)
        buttons.addWidget(self.add_folder_button)
        self.get_models_button = QPushButton("Get models…")  # the sidebar's and the user guide's name for it
        self.get_models_button.clicked.connect(self.sig_get_models)
        buttons.addWidget(self.get_models_button)
        buttons.addStretch(1)
        column.addLayout(buttons)

        links = QHBoxLayout()
        links.addStretch(1)
        open_folder = QPushButton("Open SpecChat's models folder")
        open_folder.setObjectName("FlatButton")
        open_folder.clicked.connect(self.sig_open_models_folder)
        links.addWidget(open_folder)
        rescan = QPushButton("Scan again")
        rescan.setObjectName("FlatButton")
        rescan.clicked.connect(self.sig_rescan)
        links.addWidget(rescan)
        links.addStretch(1)
        column.addLayout(links)
        outer.addLayout(column)
        outer.addStretch(3)

    def set_details(self, unusable_files: int) -> None:
        text = (
            "SpecChat chats with GGUF model files on your own computer. Add a folder that holds .gguf files, "
            f"copy them into {paths.models_dir()}, or download one. For speculative decoding, add a small "
            "model of the same family as the draft, such as Qwen2.5-Coder 0.5B for Qwen2.5-Coder 1.5B."
        )
        if unusable_files:
            noun = "file was" if unusable_files == 1 else "files were"
            text += f"\n\n{unusable_files} .gguf {noun} found but cannot be used; the model library says why."
        self.body.setText(text)
        self._fit_body()

    def _fit_body(self) -> None:
        # Layouts do not ask a wrapped label for its height at its width; give it that height.
        width = max(MIN_BODY_WIDTH, min(BODY_WIDTH, self.width() - 48))
        self.body.setFixedHeight(self.body.heightForWidth(width))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_body()
