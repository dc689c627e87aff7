"""The Get-models panel's download row: the running download's progress, Cancel while it runs, and Resume after a
cancel or a network failure (its partial files are kept). GUI thread only."""

from __future__ import annotations

from typing import Callable, Sequence

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from app.hub.download import DownloadProgress

FULL = 1000  # the bar's scale


class DownloadRow(QWidget):
    """Hidden until the first download starts; `on_cancel` and `on_resume` answer its buttons."""

    def __init__(self, on_cancel: Callable[[], None], on_resume: Callable[[], None]):
        super().__init__()
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        column = QVBoxLayout()
        self.bar = QProgressBar()
        self.bar.setRange(0, FULL)
        self.bar.setTextVisible(False)
        column.addWidget(self.bar)
        self.label = QLabel()
        self.label.setObjectName("Muted")
        column.addWidget(self.label)
        layout.addLayout(column, 1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(on_cancel)
        layout.addWidget(self.cancel_button)
        self.resume_button = QPushButton("Resume")
        self.resume_button.setToolTip("Continue the last download where it stopped")
        self.resume_button.clicked.connect(on_resume)
        self.resume_button.hide()
        layout.addWidget(self.resume_button)
        self.hide()

    def preparing(self, label: str) -> None:
        """A download of `label` starts: its sizes and the free space are checked first."""
        self.show()
        self.bar.setValue(0)
        self.label.setText(f"Preparing {label}: checking sizes and free space…")
        self.cancel_button.setVisible(True)
        self.cancel_button.setEnabled(True)
        self.resume_button.hide()

    def ended(self) -> None:
        """No download runs: no Cancel (and no Resume until a stopped one offers it)."""
        self.cancel_button.setVisible(False)
        self.cancel_button.setEnabled(False)
        self.resume_button.hide()

    def cancelling(self) -> None:
        self.cancel_button.setEnabled(False)
        self.label.setText("Cancelling…")

    def progress(self, progress: DownloadProgress) -> None:
        self.bar.setValue(int(progress.fraction * FULL))
        if progress.phase != "checking":
            self.label.setText(" · ".join(progress.facts()))

    def landed(self, names: Sequence[str]) -> None:
        """The download finished: the files' names."""
        self.bar.setValue(FULL)
        self.label.setText("Downloaded: " + ", ".join(names))

    def stopped(self, cancelled: bool, resumable: bool) -> None:
        """The download stopped (cancelled, or it failed); Resume where its partial files can go on."""
        self.resume_button.setVisible(resumable)
        self.label.setText("Cancelled." if cancelled else "Download stopped.")
