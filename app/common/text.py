"""Text that can be stored, shown and written anywhere: valid Unicode.

Python strings may hold lone surrogates ("\\ud800"): JSON's \\u escapes and undecodable bytes make them, and a
reply's tokens can each hold half of a character. Such a string cannot be encoded as UTF-8, so SQLite, a file or
Qt would refuse it. Whatever crosses into storage passes through `valid_text` once.
"""

from __future__ import annotations


def valid_text(text: str) -> str:
    """`text` as valid Unicode: a surrogate pair split over two code points becomes its character, and a lone
    surrogate becomes U+FFFD. Text that is already valid is returned as it is (the common case costs one encode)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
