"""The pictures of a user's message in the transcript: a thumbnail each, in a row under its text. GUI thread only.

The document keeps each thumbnail as a resource named by the picture's file, so the transcript never holds more
than the small scaled copies, and a chat reopened after a restart shows them from the files under the data folder.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QImage, QTextBlockFormat, QTextCursor, QTextDocument, QTextImageFormat

from app.store.attachments import PictureFile

THUMBNAIL_HEIGHT = 160
URL_SCHEME = "specchat-picture"


def picture_url(picture: PictureFile) -> QUrl:
    return QUrl(f"{URL_SCHEME}:{picture.path.name}")


def insert_pictures(cursor: QTextCursor, pictures: Sequence[PictureFile]) -> None:
    """A block of thumbnails; a picture whose file is gone shows as its name in brackets."""
    if not pictures:
        return
    block_format = QTextBlockFormat()
    block_format.setTopMargin(6)
    cursor.insertBlock(block_format)
    document = cursor.document()
    for n, picture in enumerate(pictures):
        if n:
            cursor.insertText("  ")
        image = QImage(str(picture.path))
        if image.isNull():
            cursor.insertText(f"[{picture.name}: the picture's file is missing]")
            continue
        if image.height() > THUMBNAIL_HEIGHT:
            image = image.scaledToHeight(THUMBNAIL_HEIGHT, Qt.TransformationMode.SmoothTransformation)
        url = picture_url(picture)
        document.addResource(QTextDocument.ResourceType.ImageResource, url, image)
        shown = QTextImageFormat()
        shown.setName(url.toString())
        shown.setWidth(image.width())
        shown.setHeight(image.height())
        shown.setToolTip(picture.name)
        cursor.insertImage(shown)
