"""OpenAI's `image_url` content parts read into pictures (app.engine.image_files.ImageInput), bad ones refused.

Only data: URLs are read (data:image/png;base64,...): a server that fetched an http(s) URL a client named would
reach whatever that client points it at, on this machine's network, so those are refused with a sentence.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from app.engine.errors import PromptFormatError
from app.engine.image_files import ImageInput, check_picture
from app.serve.errors import BadRequest


def image_part(part: dict[str, Any], index: int) -> dict[str, Any]:
    """An {"type": "image_url", "image_url": {"url": ...}} part as the engine's {"type": "image", "image": ...}.
    Raises BadRequest with one sentence."""
    where = f"messages[{index}].content"
    spec = part.get("image_url")
    url = spec.get("url") if isinstance(spec, dict) else spec
    if not isinstance(url, str) or not url:
        raise BadRequest(f'{where} has an image_url part without a "url" string.')
    if url[:8].lower().startswith(("http://", "https://")):
        raise BadRequest(
            f"{where} names a picture by an http(s) URL, which this server does not fetch; send the "
            "picture itself as a data: URL (data:image/png;base64,...)."
        )
    head, comma, payload = url.partition(",")
    if not url[:5].lower() == "data:" or not comma or not head.lower().endswith(";base64"):
        raise BadRequest(f"{where} has an image_url that is not a base64 data: URL (data:image/png;base64,...).")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(f"{where} has an image_url whose base64 data is damaged.") from None
    image = ImageInput(data, "The picture")
    try:
        check_picture(data, "The picture")
    except PromptFormatError as exc:
        raise BadRequest(f"{where}: {exc}") from None
    return {"type": "image", "image": image}
