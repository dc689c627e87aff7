"""A saved conversation state with an impossible header is set aside, and the request still succeeds.

Issue 44, class 11: a saved conversation state whose header is impossible (a token count of 10^12 or 10^30, a
negative one, a header nested past the JSON reader's depth, a checksum that is text, a file cut in its tokens) is
set aside with one notice, and the conversation is read afresh: the request succeeds, and so does the next."""

from __future__ import annotations

import json
import shutil

import pytest

from app.engine.local.kv_states.saved_states import MAGIC, states_root
from tests.engine.local.test_conversation_cache import _chat, _continued, _engine, _reply


def _header(path) -> tuple[dict, int]:
    data = path.read_bytes()
    end = data.index(b"\n", len(MAGIC))
    return json.loads(data[len(MAGIC) : end]), end + 1


def _with_header(data: bytes, end: int, line: bytes) -> bytes:
    return MAGIC + line + b"\n" + data[end:]


DAMAGE = {
    "huge token count": lambda head, data, end: _with_header(
        data, end, json.dumps({**head, "n_tokens": 10**12}).encode()
    ),
    "token count of 1e30": lambda head, data, end: _with_header(
        data, end, json.dumps({**head, "n_tokens": 1e30}).encode()
    ),
    "negative token count": lambda head, data, end: _with_header(
        data, end, json.dumps({**head, "n_tokens": -7}).encode()
    ),
    "deeply nested header": lambda head, data, end: _with_header(data, end, b"[" * 4000 + b"]" * 4000),
    "checksum that is text": lambda head, data, end: _with_header(
        data, end, json.dumps({**head, "crc32": "x"}).encode()
    ),
    "cut in its tokens": lambda head, data, end: data[: end + 40],
}


@pytest.fixture
def saved(tiny_models, tmp_path):
    """A long chat replied to once (its states written to disk by a real request), and copies of the files."""
    long_chat = _chat("fjord", 6)[:-1]
    engine = _engine(tiny_models)
    try:
        first, _ = _reply(engine, long_chat, "chat-h")
    finally:
        engine.close()
    files = sorted(states_root().glob("*/*.kv"))
    assert files
    keep = tmp_path / "kept-states"
    keep.mkdir()
    copies = [(file, shutil.copy2(file, keep / f"{i}.kv")) for i, file in enumerate(files)]
    return _continued(long_chat, first.text, "Go on."), copies


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_state_with_an_impossible_header_is_set_aside_and_the_chat_read_afresh(tiny_models, saved, damage):
    again, copies = saved
    damaged = []
    for file, copy in copies:
        head, end = _header(copy)
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(DAMAGE[damage](head, copy.read_bytes(), end))
        damaged.append((file, file.read_bytes()))
    engine = _engine(tiny_models)
    try:
        reply, notices = _reply(engine, again, "chat-h")
        assert len(notices) == 1 and "damaged" in notices[0], notices
        assert reply.stats.prompt_cached < 0.1 * reply.stats.prompt_tokens  # read again
        # Set aside: gone, or replaced by the state of the reply just read.
        assert not any(file.exists() and file.read_bytes() == bad for file, bad in damaged), "a damaged file was kept"
        again_reply, notices = _reply(engine, again, "chat-h")  # and the conversation goes on
        assert not notices and again_reply.text == reply.text
    finally:
        engine.close()
