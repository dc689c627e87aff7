"""An HTML page's readable text with the standard library's parser: scripts and styles left out, headings as
Markdown headings, blocks as paragraphs, `<pre>` kept as written."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_SKIPPED = frozenset({"script", "style", "noscript", "template", "head", "svg"})
_BLOCKS = frozenset(
    "p div section article main aside header footer nav ul ol dl table tr blockquote figure form hr br dd dt "
    "li pre h1 h2 h3 h4 h5 h6 title".split()
)


class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0
        self._pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIPPED:
            self._skipping += 1
        elif tag in _BLOCKS:
            self.parts.append("\n\n")
            if len(tag) == 2 and tag[0] == "h" and tag[1].isdigit():
                self.parts.append("#" * int(tag[1]) + " ")
            elif tag == "li":
                self.parts.append("- ")
            if tag == "pre":
                self._pre += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skipping = max(0, self._skipping - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n\n")
            if tag == "pre":
                self._pre = max(0, self._pre - 1)

    def handle_data(self, data: str) -> None:
        if self._skipping:
            return
        self.parts.append(data if self._pre else re.sub(r"\s+", " ", data))


def html_to_text(html: str) -> str:
    """The page's text, paragraphs separated by a blank line."""
    collector = _TextCollector()
    collector.feed(html)
    collector.close()
    text = "".join(collector.parts)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n (?=\S)", "\n", text)  # the space a collapsed run left after a block
    return re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
