"""What the CLI prints of text it did not write (a server's reply, error texts and model ids, a stored chat, a
tool server's names, results and stderr): through app.common.text.printable, the one gate, so no control character
reaches the terminal and no credential is shown. JSON output escapes the same characters as \\u escapes.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

from app.common.text import printable

__all__ = ["json_printable", "make_output_safe", "printable", "say_error"]

# The characters printable escapes, for JSON output (where \t and \n are escaped already): written as \u escapes instead.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def json_printable(text: str) -> str:
    """Serialized JSON with the characters a terminal would obey but JSON leaves raw (C1, bidi) as \\u escapes."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def say_error(message: object, stream: TextIO | None = None) -> None:
    """Print "error: MESSAGE" on stderr, made printable."""
    print(f"error: {printable(str(message))}", file=stream or sys.stderr)


def make_output_safe() -> None:
    """Stdout and stderr replace what their encoding cannot write (a lone surrogate, a character a non-UTF-8
    terminal lacks) instead of raising in the middle of a reply."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):
                pass
