"""Token bytes to text without ever showing half a character.

Byte-level vocabularies split multi-byte characters across tokens (an emoji is often 2-4 tokens). Decoding each
token on its own would print replacement characters; instead bytes are held until a character is complete.
"""

from __future__ import annotations

import codecs


class TextStream:
    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes) -> str:
        """The text completed by `data` ("" while a character is still incomplete)."""
        return self._decoder.decode(data)

    def flush(self) -> str:
        """Whatever is left at the end; bytes that never formed a character become U+FFFD."""
        return self._decoder.decode(b"", final=True)
