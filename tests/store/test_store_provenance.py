"""A reply's provenance in the store: each token's origin and round, the rounds with their refused proposals, and
the comparison with plain decoding; older documents still open, damaged ones cost only the highlighting."""

from __future__ import annotations

import json
import sqlite3

import pytest

from app.store.provenance import RoundRecord
from app.store import ChatStore, NotFoundError
from app.store.provenance_doc import StoredProvenance, decode_provenance, encode_provenance

ROUNDS = [
    RoundRecord(
        "model",
        4,
        [11, 12, 13, 14],
        ["def", " add", "(x", "\ud83d"],
        kept=2,
        own=15,
        own_text="(a",
        reason="speculating: drafts pay off here",
        time_s=0.031,
    ),
    RoundRecord(
        "ngram",
        3,
        [21, 22, 23],
        [",", " b", ")"],
        kept=3,
        own=24,
        own_text=":",
        reason="copying from earlier text",
        time_s=0.0125,
    ),
    RoundRecord("none", 0, [], [], kept=0, own=25, own_text="\n", reason="speculation is paused", time_s=0.008),
]
TOKENS = [
    ("def", "draft"),
    (" add", "draft"),
    ("(a", "target"),
    (",", "ngram"),
    (" b", "ngram"),
    (")", "ngram"),
    (":", "target"),
    ("\n", "target"),
    ("", "target"),
]
TOKEN_ROUNDS = [0, 0, 0, 1, 1, 1, 1, 2, -1]
CONTENT = "".join(text for text, _ in TOKENS)


@pytest.fixture
def store():
    with ChatStore() as s:
        yield s


def test_origins_rounds_and_refused_proposals_survive_a_reopen(store):
    chat = store.create_chat()
    added = store.add_message(
        chat.id,
        "assistant",
        CONTENT,
        tokens=TOKENS,
        token_rounds=TOKEN_ROUNDS,
        rounds=ROUNDS,
        target_name="t.gguf",
        draft_name="d.gguf",
    )
    assert (added.tokens, added.token_rounds, added.rounds) == (TOKENS, TOKEN_ROUNDS, ROUNDS)
    store.close()
    with ChatStore() as reopened:
        [stored] = reopened.messages(chat.id)
    assert stored == added
    assert stored.rounds[0].refused_text == "(x\ud83d"  # a lone surrogate (half a character) kept exactly
    assert [stored.rounds[r].drafter for r in stored.token_rounds if r >= 0] == ["model"] * 3 + ["ngram"] * 4 + ["none"]


def test_a_chat_saved_before_rounds_were_kept_opens_unchanged(store):
    chat = store.create_chat()
    message = store.add_message(chat.id, "assistant", "Hi there")
    old_document = json.dumps({"v": 1, "texts": ["Hi", " there"], "sources": "dt"})
    with sqlite3.connect(store.path) as raw:
        raw.execute("UPDATE messages SET tokens = ? WHERE id = ?", (old_document, message.id))
    stored = store.get_message(message.id)
    assert stored.tokens == [("Hi", "draft"), (" there", "target")]  # the old "d": a draft-model token
    assert (stored.token_rounds, stored.rounds, stored.comparison) == (None, None, None)
    # Editing it to the same text keeps the highlighting, as before.
    assert store.update_message_content(message.id, "Hi there").tokens == stored.tokens


def test_comparison_is_kept_and_dropped_with_the_text_it_compared(store):
    chat = store.create_chat()
    reply = store.add_message(chat.id, "assistant", CONTENT, tokens=TOKENS, token_rounds=TOKEN_ROUNDS, rounds=ROUNDS)
    comparison = {"plain_tokens_per_second": 10.5, "speculative_tokens_per_second": 14.0, "identical": True}
    updated = store.set_comparison(reply.id, comparison)
    assert updated.comparison == comparison and updated.rounds == ROUNDS
    assert store.messages(chat.id)[0].comparison == comparison
    assert store.update_message_content(reply.id, CONTENT).comparison == comparison  # same text: still valid

    edited = store.update_message_content(reply.id, CONTENT + " edited")
    assert (edited.tokens, edited.token_rounds, edited.rounds, edited.comparison) == (None, None, None, None)

    # A comparison on a reply without tokens, forgotten again.
    plain = store.add_message(chat.id, "assistant", "text only")
    assert store.set_comparison(plain.id, {"identical": False}).comparison == {"identical": False}
    assert store.set_comparison(plain.id, None).comparison is None
    with pytest.raises(NotFoundError):
        store.set_comparison(9999, comparison)


def test_a_continued_reply_saved_again_drops_its_old_comparison(store):
    chat = store.create_chat()
    reply = store.add_message(chat.id, "assistant", "def", tokens=TOKENS[:1], token_rounds=[0], rounds=ROUNDS[:1])
    store.set_comparison(reply.id, {"identical": True})
    store.update_reply(reply.id, CONTENT, tokens=TOKENS, token_rounds=TOKEN_ROUNDS, rounds=ROUNDS)
    stored = store.get_message(reply.id)
    assert (stored.content, stored.rounds, stored.comparison) == (CONTENT, ROUNDS, None)


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["rounds"]["kept"].pop(),  # a column shorter than the others
        lambda d: d.update(token_rounds=[0, 3, 1, 4, 7, 2]),  # a round index past the rounds
        lambda d: d.update(token_rounds=[0, 3, 1, 4]),  # fewer indices than tokens
        lambda d: d["rounds"]["proposed"].__setitem__(0, ["x"]),  # a proposed id that is not an int
        lambda d: d["rounds"].update(reasons=[]),  # a reason index pointing nowhere
        lambda d: d.update(sources="tdnq" * 2 + "t"),  # an unknown origin letter
        lambda d: d.update(comparison=[1, 2]),
    ],
)
def test_a_damaged_document_opens_the_message_without_provenance(store, change):
    chat = store.create_chat()
    message = store.add_message(chat.id, "assistant", CONTENT, tokens=TOKENS, token_rounds=TOKEN_ROUNDS, rounds=ROUNDS)
    document = json.loads(encode_provenance(StoredProvenance(TOKENS, TOKEN_ROUNDS, ROUNDS)))
    change(document)
    with sqlite3.connect(store.path) as raw:
        raw.execute("UPDATE messages SET tokens = ? WHERE id = ?", (json.dumps(document), message.id))
    [stored] = store.messages(chat.id)
    assert stored.content == CONTENT
    assert (stored.tokens, stored.token_rounds, stored.rounds, stored.comparison) == (None, None, None, None)
    # Keeping a comparison on it still works, and replaces what could not be read.
    assert store.set_comparison(message.id, {"identical": True}).comparison == {"identical": True}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tokens": TOKENS, "token_rounds": TOKEN_ROUNDS[:-1], "rounds": ROUNDS},  # one index short
        {"tokens": TOKENS, "token_rounds": [5] * len(TOKENS), "rounds": ROUNDS},  # no round 5
        {"tokens": TOKENS, "token_rounds": TOKEN_ROUNDS, "rounds": [RoundRecord("oracle", 1)] * 3},
        {"tokens": [("x", "telepathy")]},
        {"token_rounds": [0]},  # round indices without tokens
    ],
)
def test_bad_provenance_is_refused_before_anything_is_written(store, kwargs):
    chat = store.create_chat()
    with pytest.raises(ValueError):
        store.add_message(chat.id, "assistant", CONTENT, **kwargs)
    assert store.messages(chat.id) == []


def test_a_long_plain_reply_stays_compact():
    # Plain decoding: one round per token, each with the same reason.
    n = 5000
    tokens = [(f"tok{i} ", "target") for i in range(n)]
    rounds = [
        RoundRecord(
            "none",
            0,
            own=1000 + i,
            own_text=f"tok{i} ",
            reason="speculation is paused: the draft costs more than it saves here",
            time_s=0.0123456789,
        )
        for i in range(n)
    ]
    encoded = encode_provenance(StoredProvenance(tokens, list(range(n)), rounds))
    decoded = decode_provenance(encoded)
    assert decoded.tokens == tokens and decoded.token_rounds == list(range(n))
    assert decoded.rounds[0].time_s == 0.012346  # kept to the microsecond
    assert decoded.rounds[-1].reason == rounds[-1].reason
    # The reason is stored once, not per round; a token and its round cost a few dozen bytes, not an object each
    # (named fields alone would take twice that).
    assert encoded.count("costs more") == 1
    assert len(encoded) < n * 64
