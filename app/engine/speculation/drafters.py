"""Draft proposals, and the drafter that needs no model: n-gram lookup of the text itself.

A drafter proposes up to k tokens that would follow `written` (the request's tokens so far, the prompt and every
kept token, whose last the target has not evaluated yet). Proposals are only guesses: the target's verification
decides what is kept. The draft model, which needs a loaded model, drafts in app.engine.local.decoding.model_drafter; the
history drafter is app.engine.speculation.history.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from app.engine.events import DraftSource, Drafter


# A file an agent read comes back with its lines numbered ("12\t" or "    12→" before each line, as Claude Code's
# Read and `cat -n` give it), while the model copies the lines without their numbers into an edit's arguments; so
# the copy the lookup searches leaves the numbers out, or every copied line would break the match at its start.
_LINE_NUMBER = re.compile(r"(?m)^ {0,8}\d{1,7}(?:\t|→)")


def as_tool_argument(text: str) -> str:
    """`text` as a tool call copies it into a JSON string argument: its line numbers left out (_LINE_NUMBER), its
    newlines, quotes and backslashes escaped."""
    return json.dumps(_LINE_NUMBER.sub("", text), ensure_ascii=False)[1:-1]


@dataclass
class Draft:
    tokens: list[int] = field(default_factory=list)
    # The drafter's distribution at each drafted position, when it sampled from one (temperature > 0 with a
    # draft model). None means the proposal is deterministic (greedy, or an n-gram lookup).
    probs: Optional[list[np.ndarray]] = None
    source: Drafter = "none"
    # For n-gram proposals: how many trailing tokens matched. Longer matches are more often right.
    # 0 with tokens: a guess that copying resumes after an edit, not a match of the last tokens.
    match_len: int = 0
    # For history proposals: the product of the shares of past copies that went on with each drafted token.
    confidence: float = 1.0
    # For draft-model proposals: how many tokens the draft model read before drafting (the tokens kept since its
    # last draft; the whole prompt at its first draft of a reply).
    caught_up: int = 0


class NgramDrafter:
    """Prompt lookup: if the last tokens appeared before, propose what followed them then.

    Nearly free (a dict lookup and a short scan), and strong whenever the reply repeats its input: code edits,
    quoting, lists. Of the earlier places that share the last `n_min`..`n_max` tokens, the one whose match extends
    furthest back wins (the newest on a tie), and the proposal reports that length: a reply that has been copying
    the same passage for 40 tokens is far more likely to go on copying it than one that shares two tokens with it
    by chance, and the controller sizes drafts by exactly that.
    """

    name: DraftSource = "ngram"
    MAX_MATCH = 64  # matches are measured up to this many tokens back; longer is no more telling
    CANDIDATES = 32  # earlier places examined per lookup, newest first
    RESUME_BELOW = 4  # a match shorter than this may be a copy that was just interrupted by an edit
    RESUME_AFTER = 8  # ...if the text before the edit had matched at least this many tokens
    SLOT_MATCH = 3  # a lookup this confident that still missed marks a slot
    # Fixed-length drafting has no acceptance estimates to tell a copy from a coincidence; the bench's fixed n-gram
    # mode drafts only where the last FIXED_MIN_MATCH tokens recur unbroken, the evidence llama.cpp's ngram-simple
    # asks for; stopping at slots and control tokens and applying renames then keep at least as much as it does
    # (docs/performance.md).
    FIXED_MIN_MATCH = 12
    # The escaped copy is made of the prompt's newest this many tokens: where an agent's tool results are.
    ESCAPED_PROMPT_MAX = 16384

    def __init__(
        self,
        n_min: int = 2,
        n_max: int = 4,
        is_control: Optional[Callable[[int], bool]] = None,
        escape: Optional[Callable[[Sequence[int]], list[int]]] = None,
    ):
        self.n_min = n_min
        self.n_max = n_max
        # Proposals need an unbroken match of at least this many tokens (GenerationConfig.ngram_min_match with a
        # fixed draft length; always 0 for auto, which scores every proposal and learns which matches pay).
        self.min_match = 0
        self._is_control = is_control or (lambda token: False)
        # Positions a copy stops before:
        # - Control tokens (the chat template's end-of-turn and role markers, which a reply never writes mid-text)
        #   and the text token just before one. That token was split without the text that follows it in a reply:
        #   a prompt ending in "```" then end-of-turn has the token "```", a reply going on with "```\n\n" writes
        #   "``" + "`\n\n". Measured: a 12-token draft there, all refused, cost 8x a single token at the end of
        #   every copied code block.
        # - Slots: places in generated text where a confident lookup was wrong. They vary between copies (the
        #   value in each JSON object, the name in each similar line), so what filled one last time is a poor guess.
        self._stops: set[int] = set()
        # n-gram -> positions just after its occurrences, oldest first.
        self._index: dict[tuple[int, ...], list[int]] = {}
        self._indexed_end = 0
        self._written: list[int] = []
        self._reply_start = 0
        # Edits this reply made to the prompt's text, token -> what replaced it: a renamed variable is renamed
        # everywhere, so later copies of the passage propose the new name instead of the old one. A token replaced
        # by others counts as a rename at once (a rename, a key, a call: in the replay the second place was right
        # every time, docs/performance.md); an insertion (the old token kept, others beside it) only once it was
        # made at two places, since an inserted type hint differs each time.
        self._renames: dict[int, tuple[int, ...]] = {}
        self._edits: dict[tuple[int, tuple[int, ...]], set[int]] = {}
        # The escaped copy: a tool call's arguments are a JSON string, so a file the agent read is copied into them
        # with its newlines, quotes and backslashes escaped, and the prompt's own tokens match only up to the first
        # line's end. `escape` gives the token ids of the prompt's text as a JSON string holds it (empty where
        # escaping changes nothing); a second lookup searches that copy followed by the reply.
        self._escape = escape
        self._escaped: Optional[NgramDrafter] = None
        self._escaped_prompt: list[int] = []
        self._escaped_due = False

    def _sync(self, written: Sequence[int]) -> None:
        # The written tokens only grow within a request, but a new request may share just a prefix with the old one.
        shared = self._indexed_end
        if len(written) < shared or list(written[:shared]) != self._written[:shared]:
            self._index.clear()
            self._indexed_end = 0
            self._written = []
            self._stops.clear()
        for pos in range(len(self._written), len(written)):
            if self._is_control(written[pos]):
                self._stops.update((pos - 1, pos) if pos else (pos,))
        self._written.extend(written[len(self._written) :])
        # Index every n-gram that has a continuation token, so the current suffix never matches itself.
        for end in range(max(self._indexed_end, self.n_min), len(written)):
            if end >= self._reply_start:
                self._note_slot(end)
            for n in range(self.n_min, min(self.n_max, end) + 1):
                self._index.setdefault(tuple(written[end - n : end]), []).append(end)
        self._indexed_end = max(self._indexed_end, len(written))

    def start_reply(self, prompt_len: int) -> None:
        """A reply starts after `prompt_len` tokens. Slots are only learned from generated text: a prompt's
        repeated lines vary too, but a reply that copies the prompt copies each line as it is."""
        self._reply_start = prompt_len
        self._renames.clear()
        self._edits.clear()
        self._escaped = None
        self._escaped_due = self._escape is not None

    def _note_slot(self, end: int) -> None:
        length, source = self._longest(len(self._written) - end)
        if length >= self.SLOT_MATCH and self._written[source] != self._written[end]:
            self._stops.add(end)

    def _note_edit(self, old: int, new: tuple[int, ...], where: int) -> None:
        places = self._edits.setdefault((old, new), set())
        places.add(where)
        if len(places) >= 2 or old not in new:
            self._renames[old] = new

    def _agree(self, a_end: int, b_end: int) -> int:
        """How many tokens before position `a_end` equal those before `b_end` (up to MAX_MATCH)."""
        h = self._written
        limit = min(a_end, b_end, self.MAX_MATCH)
        length = 0
        while length < limit and h[a_end - 1 - length] == h[b_end - 1 - length]:
            length += 1
        return length

    def _longest(self, skip: int = 0) -> tuple[int, int]:
        """(match length, end) of the earlier place that best matches the written tokens but their last `skip`."""
        h = self._written
        n = len(h) - skip
        for size in range(min(self.n_max, n - 1), self.n_min - 1, -1):
            ends = self._index.get(tuple(h[n - size : n]))
            if not ends:
                continue
            best_len, best_end = 0, -1
            for end in reversed(ends[-self.CANDIDATES :]):
                if end >= n:
                    continue
                length = self._agree(end, n)
                if length > best_len:
                    best_len, best_end = length, end
            if best_end >= 0:
                return best_len, best_end
        return 0, -1

    def _resume(self) -> tuple[int, int]:
        """Was the reply copying a passage until a few tokens ago? Then it has just edited it (a renamed variable,
        a fixed operator). Guess that the new tokens replaced one token of the passage and that copying goes on
        after it; tokens written since the edit that agree with the passage confirm the guess.

        Returns (evidence, start): the tokens matched before the edit plus those confirmed after it (0 for an
        unconfirmed guess), and where in the written tokens the copy would go on; (0, -1) if there is nothing to resume.
        """
        h = self._written
        n = len(h)
        for skip in range(1, 5):
            was, at = self._longest(skip)
            if was < self.RESUME_AFTER:
                continue
            for done in range(skip - 1, -1, -1):  # tokens of the passage written again since the edit
                if done == 0 or h[n - done :] == h[at + 1 : at + 1 + done]:
                    start = at + 1 + done
                    if start < n - skip:
                        if done and at < self._reply_start:
                            self._note_edit(h[at], tuple(h[n - skip : n - done]), at)
                        return (was + done if done else 0), start
        return 0, -1

    def _bridged(self, length: int, end: int) -> int:
        """A match of `length` tokens ending at `end` that began just after a small edit of a longer copy (a few
        tokens replaced, inserted or deleted) counts the copy before the edit too: it is the same passage."""
        n = len(self._written)
        best = length
        for written in range(4):  # tokens of the edit in the reply
            for replaced in range(4):  # tokens of the passage it replaced
                if written or replaced:
                    before = self._agree(end - length - replaced, n - length - written)
                    if before >= self.RESUME_AFTER:
                        best = max(best, length + before)
        return best

    def propose(self, written: Sequence[int], k: int) -> Draft:
        draft = self._lookup(written, k)
        if draft.match_len >= self.MAX_MATCH or len(written) <= self._reply_start:
            return draft
        escaped = self._escaped_lookup(written)
        if escaped is None:
            return draft
        other = escaped.propose(self._escaped_prompt + list(written[self._reply_start :]), k)
        return other if other.match_len > draft.match_len else draft

    def _escaped_lookup(self, written: Sequence[int]) -> Optional[NgramDrafter]:
        """The lookup over the escaped copy of this reply's prompt, made at the reply's first proposal."""
        if self._escaped_due and self._escape is not None:
            self._escaped_due = False
            prompt = written[max(0, self._reply_start - self.ESCAPED_PROMPT_MAX) : self._reply_start]
            self._escaped_prompt = self._escape(prompt)
            if self._escaped_prompt:
                self._escaped = NgramDrafter(self.n_min, self.n_max, self._is_control)
                self._escaped.min_match = self.min_match
                self._escaped.start_reply(len(self._escaped_prompt))
        return self._escaped

    def _lookup(self, written: Sequence[int], k: int) -> Draft:
        if k <= 0 or len(written) <= self.n_min:
            return Draft(source=self.name)
        self._sync(written)
        length, end = self._longest()
        if self.min_match:
            if length < self.min_match:
                return Draft(source=self.name)
        elif length < self.RESUME_BELOW:
            evidence, start = self._resume()
            if start >= 0 and (evidence > length or end < 0):
                return Draft(tokens=self._copy(start, k), source=self.name, match_len=evidence)
        if end < 0:
            return Draft(source=self.name)
        if length < self.MAX_MATCH:
            length = min(self._bridged(length, end), self.MAX_MATCH)
        return Draft(tokens=self._copy(end, k), source=self.name, match_len=length)

    def _copy(self, start: int, k: int) -> list[int]:
        """Up to k tokens copied from `start` on, with this reply's renames applied to the prompt's text, cut
        before the first stop (a slot or a control token)."""
        h = self._written
        out: list[int] = []
        pos = start
        while len(out) < k and pos < len(h) and pos not in self._stops:
            token = h[pos]
            if pos < self._reply_start and token in self._renames:
                out.extend(self._renames[token])
            else:
                out.append(token)
            pos += 1
        return out[:k]
