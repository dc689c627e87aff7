"""The app's own links in the transcript (Copy, Edit, Regenerate, a code block's Copy, Retry...): hrefs that reply
text cannot forge.

A reply is text a model or a server wrote, and its Markdown links land in the same document as the app's links. So
every app link carries a random key made when the transcript is made, `specchat:<key>:<action>/<argument>`, and a
click acts only when the key is this transcript's. A reply cannot know the key: it is never sent to an engine, never
stored, and differs on every run. Anything else, `specchat:regenerate/5` written by a model included, is an
ordinary reply link: it is shown for what it is and never opened. GUI thread only.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from typing import Optional

SCHEME = "specchat"


@dataclass(frozen=True)
class Action:
    """A click on an app link: what to do, and to what (a message id or a code block's index, as written)."""

    name: str
    argument: str

    def number(self) -> Optional[int]:
        """The argument as a whole number that fits a Qt int (a reply the store refused has a negative key),
        or None when it is not one."""
        digits = self.argument[1:] if self.argument.startswith("-") else self.argument
        if not (digits.isascii() and digits.isdigit() and len(digits) < 10):
            return None
        return int(self.argument)


class ActionLinks:
    """Writes and reads the hrefs of one transcript's app links."""

    def __init__(self) -> None:
        self._prefix = f"{SCHEME}:{secrets.token_hex(16)}:"

    def href(self, action: str, argument: object = "") -> str:
        return f"{self._prefix}{action}/{argument}"

    def prefix(self, action: str) -> str:
        """The start shared by every href of this action (to find or remove its links)."""
        return f"{self._prefix}{action}/"

    def parse(self, href: str) -> Optional[Action]:
        """The action of an href this transcript wrote; None for any other (a reply's link, a forged key)."""
        head = href[: len(self._prefix)]
        if not hmac.compare_digest(head.encode("utf-8", "replace"), self._prefix.encode()):
            return None
        name, _, argument = href[len(self._prefix) :].partition("/")
        return Action(name, argument)

    def owns(self, href: str) -> bool:
        return self.parse(href) is not None
