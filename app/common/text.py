"""Text that can be stored, shown and written anywhere: valid Unicode, and nothing a terminal or a person's eye
would take for something else.

Python strings may hold lone surrogates ("\\ud800"): JSON's \\u escapes and undecodable bytes make them, and a
reply's tokens can each hold half of a character. Such a string cannot be encoded as UTF-8, so SQLite, a file or
Qt would refuse it. Whatever crosses into storage passes through `valid_text` once.

Text SpecChat did not write (a model's reply, a tool server's names, arguments, results and stderr, a server's
messages) is shown through `printable`, the one gate: a terminal obeys escape sequences in what it prints (ESC can
clear the screen, set the title, recolour or repaint the question a person is asked), a carriage return or a
backspace overwrites what was written, and the bidi overrides reorder what is shown. Each such character is shown
escaped, visibly (`\\x1b`, `\\u202e`), never obeyed, so what is shown is what is there.
"""

from __future__ import annotations

import re

# C0 controls but \t, \n and \r, DEL, C1 controls; the bidi embeddings, overrides and isolates; the invisible
# spaces and joiners that no prose needs (zero-width space, word joiner and its kin, the BOM). The zero-width
# (non-)joiners and the direction marks stay: emoji sequences and right-to-left scripts need them.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s\"']+@")


def valid_text(text: str) -> str:
    """`text` as valid Unicode: a surrogate pair split over two code points becomes its character, and a lone
    surrogate becomes U+FFFD. Text that is already valid is returned as it is (the common case costs one encode)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, name: bool = False) -> str:
    """`text` as it may be shown: control characters and bidi overrides written as visible escapes (new lines and
    tabs kept; a carriage return, another system's line end or a way to overwrite a line, left out), URL
    credentials (user:password@) left out. `name`: a name or a label (a tool's, a server's), shown on one line as
    exactly what it is: every character that prints nothing (new lines, tabs, carriage returns, zero-width and
    format characters included) is escaped."""
    if name:
        shown = "".join(c if c.isprintable() else _escaped(c) for c in text)
    else:
        shown = _CONTROL.sub(lambda m: _escaped(m.group()), text.replace("\r", ""))
    return _URL_CREDENTIALS.sub(r"\1", shown)
