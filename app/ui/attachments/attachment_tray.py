"""The files and pictures waiting to be sent with the next message: one chip each (a picture's thumbnail, the name,
its size in tokens, a remove button) above the composer. They come from the Attach button, a drop on the window or a paste (a pasted
picture's data too); each is read at once, so one that cannot be attached is refused with its reason before
anything is sent. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QMimeData, Qt, Signal
from PySide6.QtGui import QImage, QPixmap
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from app.engine.image_files import MAX_IMAGES, PICTURE_TOKENS_ESTIMATE
from app.store.attachments import (
    MAX_MESSAGE_ATTACHMENTS,
    Attachment,
    AttachmentError,
    Picture,
    check_total,
    looks_like_picture,
    picture_from_bytes,
    read_attachment,
    read_picture,
)

THUMBNAIL_HEIGHT = 32
# A picture's chip where the chosen model cannot see: its tooltip says why and what to do.
CANNOT_SEE = "this model cannot see it"


def thumbnail(data: bytes, height: int) -> QPixmap:
    """A picture scaled to `height` pixels (an empty pixmap when Qt cannot decode it)."""
    pixmap = QPixmap()
    pixmap.loadFromData(data)
    return pixmap.scaledToHeight(height, Qt.TransformationMode.SmoothTransformation) if not pixmap.isNull() else pixmap


def png_bytes(image: QImage) -> bytes:
    """A pasted picture as a PNG file's bytes (what is stored and sent)."""
    buffer = QBuffer()
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # the stubs say bytes; the binding takes str
    return bytes(QByteArray(buffer.data()).data())


def local_files(mime: QMimeData) -> list[str]:
    """The local files a drop or a paste carries ([] for text, images, or links elsewhere)."""
    if not mime.hasUrls():
        return []
    urls = mime.urls()
    return [url.toLocalFile() for url in urls] if urls and all(url.isLocalFile() for url in urls) else []


class AttachmentTray(QWidget):
    """The chips of the files to send; hidden while there are none. GUI thread only."""

    sig_changed = Signal()
    """Files were added or removed."""
    sig_refused = Signal(str)
    """Files could not be attached: one sentence per file, saying why."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._attachments: list[Attachment] = []
        self._pictures: list[Picture] = []
        self._exact: dict[
            str, int
        ] = {}  # a picture's exact tokens with the loaded projector (app.ui.attachments.picture_counts)
        self._blind = ""  # why the chosen model cannot see pictures ("" when it can: show_picture_tokens)
        self._token_labels: dict[str, QLabel] = {}
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.setSpacing(6)
        self._row.addStretch(1)
        self.hide()

    def attachments(self) -> tuple[Attachment, ...]:
        return tuple(self._attachments)

    def pictures(self) -> tuple[Picture, ...]:
        return tuple(self._pictures)

    def picture_tokens(self) -> tuple[int, bool]:
        """The tokens the waiting pictures take, and whether that is exact (else some are estimated)."""
        counts = [self._exact.get(p.digest) for p in self._pictures]
        return sum(PICTURE_TOKENS_ESTIMATE if n is None else n for n in counts), None not in counts

    def show_picture_tokens(self, exact: dict[str, int], blind: str = "") -> None:
        """The exact tokens of the pictures counted (by SHA-256); the others show the estimate, marked "about".
        `blind`: why the chosen model cannot see them ("" when it can), said on each chip instead of a count, so the
        picture is not taken for accepted until Send refuses it."""
        self._exact = dict(exact)
        self._blind = blind
        for digest, label in self._token_labels.items():
            _show_tokens(label, self._exact.get(digest), blind)

    def add_image(self, image: QImage) -> None:
        """A pasted picture (its data, not a file): kept as a PNG named "pasted picture N.png"."""
        taken = {p.name for p in self._pictures}
        name = next(
            f"pasted picture{f' {n}' if n > 1 else ''}.png"
            for n in range(1, MAX_IMAGES + 2)
            if f"pasted picture{f' {n}' if n > 1 else ''}.png" not in taken
        )
        self._add_picture(partial(picture_from_bytes, name, png_bytes(image)))
        self._show()

    def _add_picture(self, read: Callable[[], Picture]) -> str:
        """Add the picture `read()` gives; the sentence saying why it was not added, or ""."""
        if len(self._pictures) >= MAX_IMAGES:
            return f"One message carries at most {MAX_IMAGES} pictures."
        try:
            picture = read()
        except AttachmentError as exc:
            return str(exc)
        self._pictures = [*(p for p in self._pictures if p.digest != picture.digest), picture]
        return ""

    def add_paths(self, paths: Iterable[str]) -> None:
        """Attach these files; those that cannot be (too large, binary, unreadable) are refused with a reason, at
        most a few sentences however many files were dropped."""
        paths = list(paths)
        problems: list[str] = []
        left_out = ""
        for tried, path in enumerate(paths):
            if len(self._attachments) >= MAX_MESSAGE_ATTACHMENTS or tried >= 2 * MAX_MESSAGE_ATTACHMENTS:
                left_out = (
                    f"{len(paths) - tried} more files were not attached: one message carries at most "
                    f"{MAX_MESSAGE_ATTACHMENTS} files."
                )
                break
            if looks_like_picture(path):
                problem = self._add_picture(partial(read_picture, path))
                if problem:
                    problems.append(problem)
                continue
            try:
                attachment = read_attachment(path)
                kept = [a for a in self._attachments if a.name != attachment.name]  # the same file again replaces it
                check_total([*kept, attachment])
            except AttachmentError as exc:
                problems.append(str(exc))
                continue
            self._attachments = [*kept, attachment]
        self._show()
        if len(problems) > 4:
            problems = [*problems[:3], f"{len(problems) - 3} more files could not be attached."]
        if problems or left_out:
            self.sig_refused.emit(" ".join([*problems, left_out]).strip())

    def set_attachments(self, attachments: Iterable[Attachment]) -> None:
        self._attachments = list(attachments)
        self._show()

    def set_pictures(self, pictures: Iterable[Picture]) -> None:
        self._pictures = list(pictures)
        self._show()

    def clear(self) -> None:
        self._pictures = []
        self.set_attachments(())

    def remove_picture(self, digest: str) -> None:
        self.set_pictures(p for p in self._pictures if p.digest != digest)

    def remove(self, name: str) -> None:
        self.set_attachments(a for a in self._attachments if a.name != name)

    def _show(self) -> None:
        self._token_labels = {}
        while self._row.count() > 1:  # every chip; the stretch stays last
            item = self._row.takeAt(0)
            item.widget().deleteLater()
        for n, picture in enumerate(self._pictures):
            self._row.insertWidget(n, self._picture_chip(picture))
        for n, attachment in enumerate(self._attachments, start=len(self._pictures)):
            self._row.insertWidget(n, self._chip(attachment))
        self.setVisible(bool(self._attachments or self._pictures))
        self.sig_changed.emit()

    def _chip(self, attachment: Attachment) -> QFrame:
        chip = QFrame()
        chip.setObjectName("AttachmentChip")
        row = QHBoxLayout(chip)
        row.setContentsMargins(8, 2, 2, 2)
        row.setSpacing(2)
        label = QLabel(attachment.label)
        label.setToolTip(f"Sent with the message as {attachment.name} in a fenced block")
        row.addWidget(label)
        row.addWidget(_remove_button(attachment.name, lambda: self.remove(attachment.name)))
        return chip

    def _picture_chip(self, picture: Picture) -> QFrame:
        chip = QFrame()
        chip.setObjectName("AttachmentChip")
        chip.setAccessibleName(f"Picture {picture.name}")
        row = QHBoxLayout(chip)
        row.setContentsMargins(2, 2, 2, 2)
        row.setSpacing(4)
        image = QLabel()
        image.setObjectName("PictureThumbnail")
        image.setPixmap(thumbnail(picture.data, THUMBNAIL_HEIGHT))
        row.addWidget(image)
        label = QLabel(picture.name)
        label.setToolTip(f"Sent with the message as a picture ({picture.name})")
        row.addWidget(label)
        tokens = QLabel()
        tokens.setObjectName("PictureTokens")
        _show_tokens(tokens, self._exact.get(picture.digest), self._blind)
        self._token_labels[picture.digest] = tokens
        row.addWidget(tokens)
        row.addWidget(_remove_button(picture.name, lambda: self.remove_picture(picture.digest)))
        return chip


def _remove_button(name: str, remove: Callable[[], None]) -> QPushButton:
    """A chip's x, which takes `name` out of the message."""
    button = QPushButton("\N{MULTIPLICATION SIGN}")
    button.setObjectName("FlatButton")
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    button.setToolTip(f"Remove {name}")
    button.setAccessibleName(f"Remove {name}")
    button.clicked.connect(remove)
    return button


def _show_tokens(label: QLabel, exact: int | None, blind: str = "") -> None:
    if blind:
        label.setText(CANNOT_SEE)
        label.setToolTip(blind)
    elif exact is not None:
        label.setText(f"{exact:,} tokens")
        label.setToolTip(f"The picture takes {exact:,} tokens of the context, as this model's projector reads it.")
    else:
        label.setText(f"about {PICTURE_TOKENS_ESTIMATE} tokens")
        label.setToolTip(
            f"An estimate ({PICTURE_TOKENS_ESTIMATE} tokens, as a Gemma 3 picture takes): the exact count needs a "
            "local model that sees, with its projector loaded."
        )
