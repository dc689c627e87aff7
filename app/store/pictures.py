"""Pictures sent with a message: kept as files under the data folder, one folder per chat beside the chat database
(pictures/chat-<id>/<sha256>.<kind>), named in the message's `attachments` column as {"name", "picture"}, and
deleted with their chat. The database holds no picture bytes: a chat of screenshots stays a small file to back up,
and the files are the pictures as sent, which export links to. Plain Python, no Qt.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.common.bounded_read import FileReadError, read_bounded
from app.engine.errors import PromptFormatError
from app.engine.image_files import MAX_IMAGE_BYTES, ImageInput, check_picture, picture_kind
from app.store.attachments import AttachmentError

FOLDER = "pictures"


@dataclass(frozen=True)
class Picture:
    """A picture about to be sent: what the person called it ("shot.png", "pasted picture.png") and its bytes."""

    name: str
    data: bytes = field(repr=False)

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def file_name(self) -> str:
        """Its file in the chat's folder: named by its content, so the same picture sent twice is one file."""
        return f"{self.digest}.{(picture_kind(self.data) or 'bin').lower()}"


@dataclass(frozen=True)
class PictureFile:
    """A picture stored with a message: its name as sent, and its file under the data folder."""

    name: str
    path: Path

    def read(self) -> bytes:
        return self.path.read_bytes()

    def picture(self) -> Picture:
        """The picture to send again (a message put back into the composer to be edited)."""
        return Picture(self.name, self.read())

    def image_input(self) -> ImageInput:
        """The picture as the engine reads it in a message's content."""
        return ImageInput(self.read(), self.name)


def picture_from_bytes(name: str, data: bytes) -> Picture:
    """A picture to send; AttachmentError with one sentence when it is none a vision model can read."""
    try:
        check_picture(data, name)
    except PromptFormatError as exc:
        raise AttachmentError(str(exc)) from None
    return Picture(name, data)


def read_picture(path: str | os.PathLike) -> Picture:
    """The picture in the file at `path`; AttachmentError when it cannot be read or is no picture."""
    path = Path(path)
    try:
        data = read_bounded(path, MAX_IMAGE_BYTES + 1)
    except (OSError, FileReadError) as exc:
        raise AttachmentError(f"{path.name} could not be read: {exc}.") from None
    return picture_from_bytes(path.name, data)


def looks_like_picture(path: str | os.PathLike) -> bool:
    """Whether a file starts as a picture (or an SVG) does: it is attached as a picture, not as text."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return False
    return picture_kind(head) is not None or head.lstrip().lower().startswith((b"<svg", b"<?xml")) and \
        Path(path).suffix.lower() == ".svg"


def chat_folder(database: Path, chat_id: int) -> Path:
    """The folder of a chat's pictures, beside the chat database."""
    return database.parent / FOLDER / f"chat-{chat_id}"


def write_pictures(folder: Path, pictures: tuple[Picture, ...] | list[Picture]) -> None:
    """Write each picture into `folder` (through a temporary file, so a crash never leaves half a picture)."""
    if not pictures:
        return
    folder.mkdir(parents=True, exist_ok=True)
    for picture in pictures:
        target = folder / picture.file_name
        if target.exists():
            continue
        partial = target.with_suffix(target.suffix + ".partial")
        partial.write_bytes(picture.data)
        os.replace(partial, target)


def delete_chat_pictures(database: Path, chat_id: int) -> None:
    shutil.rmtree(chat_folder(database, chat_id), ignore_errors=True)


def picture_entries(pictures: tuple[Picture, ...] | list[Picture]) -> list[dict[str, str]]:
    """The entries the `attachments` column holds for pictures (text files' entries have "content" instead)."""
    return [{"name": p.name, "picture": p.file_name} for p in pictures]


def decode_pictures(encoded: str | None, folder: Path) -> tuple[PictureFile, ...]:
    """The pictures a stored message names; entries that are no picture's, or name a path, are skipped."""
    if not encoded:
        return ()
    data: Any = json.loads(encoded)
    if not isinstance(data, list):
        raise ValueError("attachments: not a list")
    return tuple(PictureFile(item["name"], folder / item["picture"]) for item in data
                 if isinstance(item, dict) and isinstance(item.get("name"), str)
                 and isinstance(item.get("picture"), str) and Path(item["picture"]).name == item["picture"]
                 and item["picture"] not in ("", ".", ".."))
