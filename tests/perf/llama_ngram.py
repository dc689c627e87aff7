"""llama.cpp's two long-copy n-gram modes, replayed over a recording (tests/perf/replay.py) with its batch costs.

Written from a reading of llama.cpp's common/ngram-map.cpp and common/speculative.cpp (the version vendored by
llama-cpp-python 0.3.36), with their default settings; a model of their drafting, not their code:

- `ngram-map-k`: the last 12 tokens are looked up among earlier text that has at least 48 more tokens after it; a
  hit drafts those 48 tokens. Each key remembers how many of its last draft were accepted and drafts no more
  than that next time (so a key refused at its first token never drafts again).
- `ngram-mod`: a table from every 24 tokens to the token after them (the newest wins), filled from the prompt and,
  32 tokens at a time, from the reply; a draft follows the table up to 64 tokens and is made only when it reaches
  48. Five rounds in a row with under a quarter of the draft accepted empty the table.

Both draft the whole match from their first round, which is what issue 43 set Auto against: on the replies that
explain before they copy, the live bench showed them ahead of Auto.
"""

from __future__ import annotations

from typing import Callable, Sequence

from app.engine.speculation.policy import agreement

MAP_KEY, MAP_VALUE = 12, 48
MOD_MATCH, MOD_MAX, MOD_MIN = 24, 64, 48
MOD_CHUNK = 32
MOD_LOW_RATE, MOD_LOW_ROUNDS = 0.25, 5

Drafter = Callable[[Sequence[int]], list[int]]
Observer = Callable[[int, int], None]


def map_k() -> tuple[Drafter, Observer]:
    keys: dict[tuple[int, ...], int] = {}  # key -> tokens of its last draft that were accepted
    last: list[tuple[int, ...]] = []

    def draft(history: Sequence[int]) -> list[int]:
        last.clear()
        n = len(history)
        key = tuple(history[n - MAP_KEY :])
        if n < 2 * MAP_KEY + MAP_VALUE:
            return []
        for start in range(n - MAP_KEY - MAP_VALUE - 1, -1, -1):
            if tuple(history[start : start + MAP_KEY]) == key:
                last.append(key)
                length = min(MAP_VALUE, keys.setdefault(key, MAP_VALUE))
                return list(history[start + MAP_KEY : start + MAP_KEY + length])
        return []

    def observe(drafted: int, accepted: int) -> None:
        if last:
            keys[last[0]] = accepted

    return draft, observe


def mod(prompt_len: int) -> tuple[Drafter, Observer]:
    table: dict[tuple[int, ...], int] = {}
    state = {"added": 0, "low": 0, "drafted": 0}

    def add(history: Sequence[int], upto: int) -> None:
        for i in range(state["added"], upto):
            table[tuple(history[i : i + MOD_MATCH])] = history[i + MOD_MATCH]
        state["added"] = max(state["added"], upto)

    def draft(history: Sequence[int]) -> list[int]:
        n = len(history)
        state["drafted"] = 0
        if n < MOD_MATCH:
            return []
        if state["added"] == 0 and n >= prompt_len:
            add(history, prompt_len - MOD_MATCH)
        if state["added"] + MOD_CHUNK < n:
            add(history, n - MOD_MATCH)
        window = list(history[n - MOD_MATCH :])
        out: list[int] = []
        while len(out) < MOD_MAX:
            token = table.get(tuple(window[len(window) - MOD_MATCH :]))
            if token is None:
                break
            out.append(token)
            window.append(token)
        if len(out) < MOD_MIN:
            return []
        state["drafted"] = len(out)
        return out

    def observe(drafted: int, accepted: int) -> None:
        if not state["drafted"]:
            return
        if accepted / state["drafted"] < MOD_LOW_RATE:
            state["low"] += 1
            if state["low"] >= MOD_LOW_ROUNDS:
                table.clear()
                state["low"] = state["added"] = 0
        else:
            state["low"] = 0

    return draft, observe


def replay_llama(prompt: Sequence[int], reply: Sequence[int], kind: str, cost: Callable[[int], float]) -> float:
    """The mode's ratio over plain decoding for one recorded reply, at the recording's batch costs."""
    draft, observe = map_k() if kind == "ngram-map-k" else mod(len(prompt))
    history = list(prompt)
    emitted, spent = 0, 0.0
    while emitted < len(reply):
        proposal = draft(history)[: len(reply) - emitted]
        accepted = agreement(proposal, reply[emitted:])
        spent += cost(len(proposal) + 1)
        observe(len(proposal), accepted)
        kept = reply[emitted : emitted + accepted + 1]
        history.extend(kept)
        emitted += len(kept)
    return len(reply) * cost(1) / spent
