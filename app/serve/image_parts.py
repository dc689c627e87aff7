"""OpenAI's `image_url` content parts read into pictures (app.engine.image_files.ImageInput), bad ones refused.

data: URLs are read (data:image/png;base64,...). A server that fetched an http(s) URL a client named would reach
whatever that client points it at, on this machine's network, so those are refused with a sentence unless whoever
runs the server allows it (serve --fetch-image-urls): then the picture is fetched, within FETCH_TIMEOUT_S and
MAX_IMAGE_BYTES, and checked as a data: URL's is.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from app.common.http_client import http_client
from app.engine.errors import PromptFormatError
from app.engine.image_files import MAX_IMAGE_BYTES, ImageInput, check_picture
from app.serve.errors import BadRequest

FETCH_TIMEOUT_S = 15.0  # seconds each connect and read of a fetch may wait: the client's request waits for it


def image_part(part: dict[str, Any], index: int, fetch_urls: bool = False) -> dict[str, Any]:
    """An {"type": "image_url", "image_url": {"url": ...}} part as the engine's {"type": "image", "image": ...};
    `fetch_urls`: an http(s) URL is fetched rather than refused. Raises BadRequest with one sentence."""
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
        return _picture(_fetch(url, where), where)
    head, comma, payload = url.partition(",")
    if not url[:5].lower() == "data:" or not comma or not head.lower().endswith(";base64"):
        raise BadRequest(f"{where} has an image_url that is not a base64 data: URL (data:image/png;base64,...).")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{where} has an image_url whose base64 data is damaged.") from None
    return _picture(data, where)


def _picture(data: bytes, where: str) -> dict[str, Any]:
    try:
        check_picture(data, "The picture")
    except PromptFormatError as exc:
        raise BadRequest(f"{where}: {exc}") from None
    return {"type": "image", "image": ImageInput(data, "The picture")}


def _fetch(url: str, where: str) -> bytes:
    """The bytes at `url`, at most MAX_IMAGE_BYTES of them. Raises BadRequest with one sentence."""
    httpx = http_client()
    shown = url if len(url) <= 80 else url[:77] + "..."
    try:
        with httpx.Client(timeout=FETCH_TIMEOUT_S, follow_redirects=True) as client:
            with client.stream("GET", url) as response:
                if response.status_code != 200:
                    raise BadRequest(f"{where} names a picture at {shown}, which answered HTTP {response.status_code}.")
                data = bytearray()
                for chunk in response.iter_bytes():
                    data += chunk
                    if len(data) > MAX_IMAGE_BYTES:
                        raise BadRequest(
                            f"{where} names a picture at {shown} of over {MAX_IMAGE_BYTES // 2**20} MiB; "
                            "pictures of up to that are read."
                        )
                return bytes(data)
    except (httpx.HTTPError, httpx.InvalidURL, OSError) as exc:
        why = "it did not answer in time" if isinstance(exc, httpx.TimeoutException) else type(exc).__name__
        raise BadRequest(f"{where} names a picture at {shown}, which could not be fetched ({why}).") from None
