"""OpenAI's `image_url` content parts read into pictures (app.engine.image_files.ImageInput), bad ones refused.

data: URLs are read (data:image/png;base64,...). A server that fetched an http(s) URL a client named would reach
whatever that client points it at, on this machine's network, so those are refused with a sentence unless whoever
runs the server allows it (serve --fetch-image-urls): then the part holds a PictureUrl, which fetch.py
fetches on the event loop once the request is read (reading runs in a thread pool that a slow host must not hold),
and its bytes are checked here as a data: URL's are.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from app.engine.errors import PromptFormatError
from app.engine.image_files import ImageInput, check_picture
from app.serve.errors import BadRequest


@dataclass(frozen=True)
class PictureUrl:
    """A picture named by an http(s) URL, not fetched yet; `where` names its message for the sentences."""

    url: str
    where: str

    @property
    def shown(self) -> str:
        """The URL as a sentence shows it: shortened past 80 characters."""
        return self.url if len(self.url) <= 80 else self.url[:77] + "..."


def image_part(part: dict[str, Any], index: int, fetch_urls: bool = False) -> dict[str, Any]:
    """An {"type": "image_url", "image_url": {"url": ...}} part as the engine's {"type": "image", "image": ...};
    `fetch_urls`: an http(s) URL becomes a PictureUrl to fetch (fetch.py) rather than a refusal. Raises
    BadRequest with one sentence."""
    where = f"messages[{index}].content"
    spec = part.get("image_url")
    url = spec.get("url") if isinstance(spec, dict) else spec
    if not isinstance(url, str) or not url:
        raise BadRequest(f'{where} has an image_url part without a "url" string.')
    if url[:8].lower().startswith(("http://", "https://")):
        if not fetch_urls:
            raise BadRequest(
                f"{where} names a picture by an http(s) URL, which this server does not fetch (serve "
                "--fetch-image-urls allows it); send the picture itself as a data: URL (data:image/png;base64,...)."
            )
        return {"type": "image", "image": PictureUrl(url, where)}
    head, comma, payload = url.partition(",")
    if not url[:5].lower() == "data:" or not comma or not head.lower().endswith(";base64"):
        raise BadRequest(f"{where} has an image_url that is not a base64 data: URL (data:image/png;base64,...).")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{where} has an image_url whose base64 data is damaged.") from None
    return picture_part(data, where)


def picture_part(data: bytes, where: str) -> dict[str, Any]:
    """The engine's picture part for `data`, checked. Raises BadRequest with one sentence."""
    try:
        check_picture(data, "The picture")
    except PromptFormatError as exc:
        raise BadRequest(f"{where}: {exc}") from None
    return {"type": "image", "image": ImageInput(data, "The picture")}
