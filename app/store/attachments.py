"""Files attached to a message: read with limits, stored with the message, and sent to the model as its name and
content in a fenced block after the message's text. Plain Python: the window and `generate --attach` share it.

Pictures sent with a message are kept as files under the data folder, one folder per chat beside the chat database
(pictures/chat-<id>/<sha256>.<kind>), named in the message's `attachments` column as {"name", "picture"}, and
deleted with their chat. The database holds no picture bytes: a chat of screenshots stays a small file to back up,
and the files are the pictures as sent, which export links to.

Only text is attached (UTF-8, no NUL bytes): a model reads text, and a binary file pasted as text would fill the
context with noise. Attached text is also what the n-gram drafter copies from best: a reply that edits an attached
file repeats most of it, and those tokens come from the attachment at the cost of one verification each.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.common.atomic_write import write_atomic
from app.common.bounded_read import FileReadError, read_bounded
from app.common.units import format_bytes
from app.engine.errors import PromptFormatError
from app.engine.image_files import MAX_IMAGE_BYTES, ImageInput, check_picture, picture_kind

# Per file and for one message's files together: a few thousand lines of code, well inside a local model's context.
MAX_ATTACHMENT_BYTES = 256_000
MAX_MESSAGE_ATTACHMENT_BYTES = 512_000
# Files one message carries; a drop of thousands of files reads no more than twice as many before it stops, so the
# window never freezes reading files it could not send anyway.
MAX_MESSAGE_ATTACHMENTS = 32
# Bytes read to decide whether a file is text: a NUL among them means binary (what git and grep decide by too).
_SNIFF_BYTES = 8192


class AttachmentError(ValueError):
    """A file that cannot be attached; the message says which file and why, in one sentence."""


@dataclass(frozen=True)
class Attachment:
    """One attached text file: its name (no folder) and its content."""

    name: str
    content: str

    @property
    def size(self) -> int:
        """Its size in bytes, as UTF-8."""
        return len(self.content.encode("utf-8"))

    @property
    def label(self) -> str:
        """What its chip says: "stats.py · 1.2 KB"."""
        return f"{self.name} · {format_bytes(self.size)}"

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "content": self.content}


def attachment_from_bytes(name: str, data: bytes) -> Attachment:
    """An attachment of `data` called `name`; AttachmentError when it is too large or not text."""
    if len(data) > MAX_ATTACHMENT_BYTES:
        raise AttachmentError(
            f"{name} is {format_bytes(len(data))}; files up to {format_bytes(MAX_ATTACHMENT_BYTES)} can be attached."
        )
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise AttachmentError(f"{name} is a binary file; only text and code files can be attached.")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AttachmentError(
            f"{name} is not UTF-8 text (it may be binary); only text and code files can be attached."
        ) from None
    return Attachment(name, text.replace("\r\n", "\n"))


def read_attachment(path: str | os.PathLike) -> Attachment:
    """Read the file at `path` as an attachment; AttachmentError when it cannot be read, is too large or not text.
    A device or a FIFO is no file: it is never read (app.common.bounded_read)."""
    path = Path(path)
    try:
        size = path.stat().st_size if path.is_file() else 0
        if size > MAX_ATTACHMENT_BYTES:  # said before reading a large file at all
            raise AttachmentError(
                f"{path.name} is {format_bytes(size)}; files up to "
                f"{format_bytes(MAX_ATTACHMENT_BYTES)} can be attached."
            )
        data = read_bounded(path, MAX_ATTACHMENT_BYTES)
    except OSError as e:
        raise AttachmentError(f"{path} could not be read: {e.strerror or e}.") from e
    except FileReadError as e:
        if e.reason == "does not exist" or "not a" in e.reason:
            raise AttachmentError(f"{path} is not a file; only files can be attached.") from None
        raise AttachmentError(f"{e}.") from None
    return attachment_from_bytes(path.name, data)


def check_total(attachments: list[Attachment]) -> None:
    """AttachmentError when one message's attachments together pass MAX_MESSAGE_ATTACHMENT_BYTES."""
    total = sum(a.size for a in attachments)
    if total > MAX_MESSAGE_ATTACHMENT_BYTES:
        raise AttachmentError(
            f"These attachments are {format_bytes(total)} together; one message can carry up to "
            f"{format_bytes(MAX_MESSAGE_ATTACHMENT_BYTES)}."
        )


def _fence(content: str) -> str:
    """A backtick fence longer than any run of backticks in `content`, so the file cannot close it (CommonMark)."""
    longest = run = 0
    for char in content:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _language(name: str) -> str:
    """The fence's info string: the file's extension ("py", "rs"), which Markdown renderers take as the language."""
    suffix = Path(name).suffix.lstrip(".").lower()
    return suffix if suffix.isalnum() else ""


def with_attachments(text: str, attachments: list[Attachment] | tuple[Attachment, ...]) -> str:
    """What the model reads for a message: its text, then each attachment as its name and a fenced block."""
    parts = [text.rstrip()] if text.strip() else []
    for attachment in attachments:
        fence = _fence(attachment.content)
        body = attachment.content if attachment.content.endswith("\n") else attachment.content + "\n"
        parts.append(f"{attachment.name}\n{fence}{_language(attachment.name)}\n{body}{fence}")
    return "\n\n".join(parts)


def encode_attachments(
    attachments: list[Attachment] | tuple[Attachment, ...], pictures: list[dict[str, str]] | None = None
) -> str | None:
    """The `attachments` column's JSON, with the entries of the message's pictures (below); None for a
    message without any."""
    entries = [a.to_dict() for a in attachments] + (pictures or [])
    return json.dumps(entries, ensure_ascii=False) if entries else None


def decode_attachments(encoded: str | None) -> tuple[Attachment, ...]:
    """The attachments of a stored message; entries that are not {name, content} are skipped."""
    if not encoded:
        return ()
    data: Any = json.loads(encoded)
    if not isinstance(data, list):
        raise ValueError("attachments: not a list")
    return tuple(
        Attachment(item["name"], item["content"])
        for item in data
        if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("content"), str)
    )


# Characters per token for the gauge's estimate before sending: Qwen2.5's tokenizer gives 3.1 to 4.6 on this
# project's code and docs (docs/performance.md); the low side, so the gauge warns early rather than late.
CHARS_PER_TOKEN = 3.5


def estimate_tokens(attachments: list[Attachment] | tuple[Attachment, ...]) -> int:
    """About how many tokens the attachments add to a prompt (the exact count needs the model's tokenizer, which
    the window's process does not load)."""
    if not attachments:
        return 0
    return round(len(with_attachments("", attachments)) / CHARS_PER_TOKEN)


# -- pictures ----------------------------------------------------------------------------------------------------------

PICTURES_FOLDER = "pictures"


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
    return (
        picture_kind(head) is not None
        or head.lstrip().lower().startswith((b"<svg", b"<?xml"))
        and Path(path).suffix.lower() == ".svg"
    )


def chat_folder(database: Path, chat_id: int) -> Path:
    """The folder of a chat's pictures, beside the chat database."""
    return database.parent / PICTURES_FOLDER / f"chat-{chat_id}"


def write_pictures(folder: Path, pictures: tuple[Picture, ...] | list[Picture]) -> None:
    """Write each picture into `folder` atomically, so a crash never leaves half a picture."""
    for picture in pictures:
        target = folder / picture.file_name
        if not target.exists():
            write_atomic(target, picture.data)


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
    return tuple(
        PictureFile(item["name"], folder / item["picture"])
        for item in data
        if isinstance(item, dict)
        and isinstance(item.get("name"), str)
        and isinstance(item.get("picture"), str)
        and Path(item["picture"]).name == item["picture"]
        and item["picture"] not in ("", ".", "..")
    )
