"""The sources a question was sent with (documents whole, or passages numbered [1], [2]...), stored with the question
(the `sources` column of its message) so that the reply's citations still lead to them after a restart and a
regenerated reply reads what the first one read.

One JSON list per message, like tool_calls: read, branched and deleted with the message. `Source` is the one record
of a source: app.documents makes them, the store keeps them, the window links a reply's [1] to them.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import asdict, dataclass
from typing import Optional, Sequence

from app.store import _fields

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Source:
    """A passage given to the model, numbered as the prompt numbers it ([1] is `number` 1), with its score (the
    fused reciprocal-rank score): characters [start, end) of the document at `path`, as indexed. `whole`: the
    document was given whole (it fit), not as a passage. `by_meaning`: passages were ranked by an embedding model's
    vectors as well as by their words."""

    number: int
    path: str
    start: int
    end: int
    score: float
    text: str
    heading: str = ""
    page: Optional[int] = None
    whole: bool = False
    by_meaning: bool = False

    def to_dict(self) -> dict[str, object]:
        """As `generate --json` lists it in "sources"."""
        return {"path": self.path, "start": self.start, "end": self.end, "score": self.score, "text": self.text}


def encode_sources(sources: Sequence[Source]) -> Optional[str]:
    """The column's text (NULL for a message sent without documents)."""
    return json.dumps([asdict(source) for source in sources], ensure_ascii=False) if sources else None


def decode_sources(text: Optional[str]) -> tuple[Source, ...]:
    """Raises ValueError or TypeError for text that is not such a list (the caller shows the message without it)."""
    if not text:
        return ()
    value = json.loads(text)
    if not isinstance(value, list):
        raise TypeError("sources is not a list")
    return tuple(_fields.from_dict(Source, item)[0] for item in value if isinstance(item, dict))


def row_sources(row: sqlite3.Row) -> tuple[Source, ...]:
    try:
        return decode_sources(row["sources"])
    except (ValueError, TypeError, KeyError):
        log.warning("message %s: sources unreadable, shown without them", row["id"])
        return ()


def sources_by_message(conn: sqlite3.Connection, chat_id: int) -> dict[int, tuple[Source, ...]]:
    """Each question's sources, and each reply's: those of the last question before it. Messages without any are
    left out."""
    found: dict[int, tuple[Source, ...]] = {}
    asked: tuple[Source, ...] = ()
    rows = conn.execute("SELECT id, role, sources FROM messages WHERE chat_id = ? ORDER BY id", (chat_id,))
    for row in rows.fetchall():
        if row["role"] == "user":
            asked = row_sources(row)
        if asked and row["role"] != "system":
            found[row["id"]] = asked
    return found
