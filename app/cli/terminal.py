"""What the CLI prints of text it did not write (a server's reply, error texts and model ids, a stored chat): no
control characters, no credentials.

A terminal obeys escape sequences in what it prints: a reply or an error text carrying ESC can clear the screen,
set the window title or rewrite earlier lines. Newlines and tabs stay; every other C0/C1 control character and the
bidi overrides that reorder what is shown are dropped. A URL's user:password@ is removed wherever it appears.
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

# C0 controls but \t and \n, DEL, C1 controls; the bidi embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# The same characters, for JSON output (where \t and \n are escaped already): written as \u escapes instead.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s\"']+@")


def printable(text: str) -> str:
    """`text` without control characters (newlines and tabs kept) and without URL credentials."""
    return _URL_CREDENTIALS.sub(r"\1", _CONTROL.sub("", text))


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
