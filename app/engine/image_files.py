"""Pictures in a chat message: what a message carries (ImageInput), the checks every picture passes before a
vision model's projector decodes it, and the data: URLs that carry it to a server (OpenAI's image_url parts).

Decoding itself is llama.cpp's (mtmd's loader, stb_image: PNG, JPEG, BMP, GIF's first frame); this module only reads
a file's header and checks its data against it (app.engine.picture_formats), so a picture of 20,000 x 20,000 pixels, a
drawing (SVG), a file that is no picture, a cut-short one or a decompression bomb gets a sentence before anything
allocates memory for its pixels. Pure Python, over the plain records below it.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from app.engine.errors import PromptFormatError
from app.engine.picture_formats import CUT_SHORT, data_problem, gif_frames, picture_size

# A picture's longest side and its pixels, and the pixels of one request's pictures together. mtmd scales every
# picture down to what its projector takes (Gemma 3: 896 x 896; Qwen2.5-VL: at most about 1,000 x 1,000), so larger
# ones only cost memory and time while being decoded and scaled, some projectors padding a picture to a square first;
# that time holds every other request of a batch (docs/images.md). A 12-megapixel phone photo is read.
MAX_SIDE = 4096
MAX_PIXELS = 16_000_000
MAX_REQUEST_PIXELS = 32_000_000
MAX_IMAGE_BYTES = 20 * 1024 * 1024
MAX_IMAGES = 16  # in one request: each costs hundreds of tokens of a real model's context
# About how many tokens a picture takes while the oldest turns of a long chat are dropped to fit, and in the window's
# gauge before sending; the exact count of the fitted prompt checks it (a Gemma 3 picture is 256, a LLaVA 1.5 one 576).
PICTURE_TOKENS_ESTIMATE = 256
# Where each picture stands in a message's text while the chat template formats it: a private-use character, which
# nobody types, so a message's own text can never stand for a picture.
IMAGE_MARKER = "\U000f0046"
# A picture's kind (picture_kind) as the MIME type of its data: URL.
MIME_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "BMP": "image/bmp"}


@dataclass(frozen=True)
class ImageInput:
    """One picture of a message, as the file's bytes. `digest` (SHA-256 of the bytes) names it in the KV cache's
    mirror, so a prompt with another picture never reuses this one's cache."""

    data: bytes = field(repr=False)
    name: str = "image"  # the file's name or "image": for messages only
    digest: str = ""

    def __post_init__(self) -> None:
        if not self.digest:
            object.__setattr__(self, "digest", hashlib.sha256(self.data).hexdigest())


def picture_kind(data: bytes) -> Optional[str]:
    """ "PNG", "JPEG", "GIF" or "BMP" by the file's first bytes; None for anything else."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "GIF"
    if data.startswith(b"BM"):
        return "BMP"
    return None


def check_picture(data: bytes, name: str = "The image") -> None:
    """Raise PromptFormatError, with one sentence, for bytes that are no picture a vision model can read."""
    head = data[:512].lstrip().lower()
    if head.startswith(b"<svg") or head.startswith(b"<?xml") and b"<svg" in data[:4096].lower():
        raise PromptFormatError(
            f"{name} is an SVG drawing; a vision model reads pictures (PNG, JPEG, GIF or BMP), "
            "so export it as PNG first."
        )
    if len(data) > MAX_IMAGE_BYTES:
        raise PromptFormatError(
            f"{name} is {len(data) / 2**20:.0f} MiB; pictures of up to {MAX_IMAGE_BYTES // 2**20} MiB are read."
        )
    kind = picture_kind(data)
    if kind is None:
        raise PromptFormatError(f"{name} is not a picture SpecChat can read (PNG, JPEG, GIF or BMP).")
    size = picture_size(data, kind)
    if size is None or min(size) <= 0:
        raise PromptFormatError(f"{name} is a damaged or cut-short {kind} file.")
    width, height = size
    if max(width, height) > MAX_SIDE or width * height > MAX_PIXELS:
        raise PromptFormatError(
            f"{name} is {width} x {height} pixels; pictures of up to {MAX_SIDE} pixels a side "
            f"and {MAX_PIXELS / 1_000_000:g} million pixels are read, so scale it down first."
        )
    problem = data_problem(data, kind, width, height)
    if problem == CUT_SHORT:
        raise PromptFormatError(f"{name} is a damaged or cut-short {kind} file: it ends before its picture does.")
    if problem is not None:
        raise PromptFormatError(f"{name} is not a {kind} picture that can be read: it {problem}.")
    if kind == "GIF" and gif_frames(data) > 1:
        # mtmd reads a GIF's first frame only: a model asked about an animation would answer about one frame.
        raise PromptFormatError(
            f"{name} is an animated GIF, and a vision model reads one still picture; save the frame you mean "
            "as a PNG first."
        )


def with_markers(messages: Sequence[dict]) -> tuple[list[dict], list[ImageInput]]:
    """The messages with each picture part replaced by IMAGE_MARKER in a text content, and the pictures in order.
    A message's content is a string, or a list of parts: {"type": "text", "text": str} and
    {"type": "image", "image": ImageInput}. Messages without pictures are returned as they are."""
    images: list[ImageInput] = []
    out: list[dict] = []
    marked = False  # whether a message's own text holds the marker
    for message in messages:
        content: Any = message.get("content")
        if not isinstance(content, list):
            marked = marked or isinstance(content, str) and IMAGE_MARKER in content
            out.append(message)
            continue
        pieces = []
        for part in content:
            if part.get("type") == "image":
                images.append(part["image"])
                pieces.append(IMAGE_MARKER)
            else:
                pieces.append(str(part.get("text", "")))
                marked = marked or IMAGE_MARKER in pieces[-1]
        out.append({**message, "content": "".join(pieces)})
    check_pictures(images)
    if images and marked:
        raise PromptFormatError(
            f"A message's text holds the character U+{ord(IMAGE_MARKER):X} (a private-use one), which marks where a "
            "picture stands in a prompt; remove it from the text, or send the message without pictures."
        )
    return out, images


def check_pictures(images: Sequence[ImageInput]) -> None:
    """Raise PromptFormatError, with one sentence, for more pictures, or more pixels in all, than one request reads."""
    if len(images) > MAX_IMAGES:
        raise PromptFormatError(f"The request holds {len(images)} pictures; at most {MAX_IMAGES} are read at once.")
    # A picture over MAX_PIXELS is refused on its own, with a sentence naming its size.
    pixels = sum(n for n in (picture_pixels(image.data) for image in images) if n <= MAX_PIXELS)
    if pixels > MAX_REQUEST_PIXELS:
        raise PromptFormatError(
            f"The request's pictures hold {pixels / 1_000_000:.1f} million pixels; at most "
            f"{MAX_REQUEST_PIXELS / 1_000_000:g} million are read in one request, so scale them down or send fewer."
        )


def picture_pixels(data: bytes) -> int:
    """The pixels a picture's header declares (0 for bytes that are no picture: check_picture says why)."""
    kind = picture_kind(data)
    size = picture_size(data, kind) if kind is not None else None
    return size[0] * size[1] if size is not None else 0


def has_images(messages: Sequence[dict]) -> bool:
    return any(
        isinstance(m.get("content"), list) and any(p.get("type") == "image" for p in m["content"]) for m in messages
    )


def message_estimate(message: dict, text_tokens: Callable[[dict], int]) -> int:
    """About how many tokens a message takes: `text_tokens` counts a text message; a picture counts
    PICTURE_TOKENS_ESTIMATE."""
    if not isinstance(message.get("content"), list):
        return text_tokens(message)
    flat, images = with_markers([message])
    return text_tokens(flat[0]) + PICTURE_TOKENS_ESTIMATE * len(images)


def data_url(image: ImageInput) -> str:
    """The picture as OpenAI's image_url takes it: a data: URL of its bytes, typed by its first bytes."""
    kind = MIME_TYPES.get(picture_kind(image.data) or "", "application/octet-stream")
    return f"data:{kind};base64,{base64.b64encode(image.data).decode('ascii')}"


def wire_content(content: Any) -> Any:
    """A message's content as OpenAI's wire carries it: a string as it is; a list of parts with each picture as an
    {"type": "image_url", "image_url": {"url": data: URL}} part and each text as a text part."""
    if not isinstance(content, list):
        return content
    return [
        {"type": "image_url", "image_url": {"url": data_url(part["image"])}}
        if part.get("type") == "image"
        else {"type": "text", "text": str(part.get("text", ""))}
        for part in content
    ]
