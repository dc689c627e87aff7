"""The sequences of one model's context, side by side in one KV budget, each with a mirror of what it holds.

A model loaded with n_seq_max = N (app.engine.local.llama_model.LoadedModel) holds N sequences in one unified
buffer of n_ctx cells: a short reply leaves its cells to a long one. Sequence s's cache holds `cached[s]` at
positions 0..len-1. A free sequence keeps what it held, so a request whose prompt starts the same (the next turn
of a chat, a second request with the same system prompt) takes the free sequence that shares most of it; free
sequences give their cells back when a prompt needs the room.

Only the engine process's main thread may use a Sequences (it drives the model).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence


from app.common.units import format_bytes, plural
from app.engine.config import PARALLEL_AUTO
from app.engine.local.decoding.reply import RowWindow
from app.engine.local.kv_states.conversation_cache import MEMORY_SHARE, available_memory
from app.engine.local.kv_states.saved_states import shared_prefix
from app.engine.local.llama_model import LoadedModel
from app.engine.placement.devices import list_devices

# Auto decodes at most this many requests side by side: past it, on a CPU, a batch's rows cost about what they
# give (docs/performance.md, Many requests at once), and llama-server runs 4 slots by default.
MAX_AUTO_SEQUENCES = 4


def parallel_sequences(setting: int, per_sequence: int, available: Optional[int] = None) -> int:
    """How many sequences a context holds: `setting` when set (1 or more), else (PARALLEL_AUTO) as many, up to
    MAX_AUTO_SEQUENCES and at least 1, as have room for a full context's KV cache each (`per_sequence` bytes,
    kv_budget_line) within the share of the memory available now that kept conversations get."""
    if setting != PARALLEL_AUTO:
        return max(1, setting)
    free = available_memory() if available is None else available
    if per_sequence <= 0 or free <= 0:
        return 1
    return max(1, min(MAX_AUTO_SEQUENCES, int(free * MEMORY_SHARE) // per_sequence))


def memory_for_kv() -> int:
    """Bytes a KV cache may take now: the memory available and the offload devices' free memory (the cache of
    offloaded layers lives there); 0 if unknown."""
    report = list_devices()
    on_devices = sum(dev.free_bytes for dev in report.offload_devices) if report.known else 0
    return available_memory() + on_devices


def kv_budget_line(sequences: int, per_sequence: int, n_ctx: int) -> str:
    """What the sequences cost, in words: "4 requests at once: 4 x 117 MB of KV cache (470 MB) for 4,096 tokens
    each, one budget shared"."""
    return (
        f"{plural(sequences, 'request')} at once: {sequences} x "
        f"{format_bytes(per_sequence)} of KV cache ({format_bytes(sequences * per_sequence)}) for {n_ctx:,} tokens "
        "each, one budget shared"
    )


def kv_room_problem(sequences: int, per_sequence: int, n_ctx: int, room: int) -> str:
    """Why `sequences` contexts of `n_ctx` tokens (`per_sequence` bytes of KV cache each) cannot be loaded in
    `room` bytes, in a sentence; "" when they fit or a size is unknown. Said before llama.cpp tries to allocate it
    (it may abort, or the system may swap for minutes)."""
    need = sequences * per_sequence
    if sequences <= 1 or per_sequence <= 0 or room <= 0 or need <= room:
        return ""
    fits = room // per_sequence
    fix = (
        f"ask for at most {fits} at once, or a smaller context"
        if fits >= 1
        else f"even one takes {format_bytes(per_sequence)}: ask for a smaller context"
    )
    return (
        f"{sequences} requests at once of {n_ctx:,} tokens each need {format_bytes(need)} of KV cache, more than "
        f"the {format_bytes(room)} of memory free: {fix}."
    )


@dataclass(frozen=True)
class Rows:
    """One sequence's rows in a forward pass: `tokens` appended to its cache, logits kept for the rows from
    `first_logit` on (len(tokens): none)."""

    seq: int
    tokens: Sequence[int]
    first_logit: int


class SequenceSlot:
    """Sequence `seq` of `sequences`, as kept conversation states see a model (kv_states' Slot): its mirror, and its
    state copied out and back in."""

    def __init__(self, sequences: "Sequences", seq: int):
        self._sequences = sequences
        self.seq = seq

    @property
    def path(self) -> Path:
        return self._sequences.model.path

    @property
    def cached(self) -> list[int]:
        return self._sequences.cached[self.seq]

    def common_prefix(self, tokens: Sequence[int], end: int | None = None) -> int:
        return shared_prefix(self.cached, tokens[:end] if end is not None else tokens)

    def truncate(self, n_keep: int) -> None:
        self._sequences.truncate(self.seq, n_keep)

    def state_bytes(self) -> bytes:
        return self._sequences.model.seq_state(self.seq) if self.cached else b""

    def restore_state(self, state: bytes, tokens: Sequence[int]) -> bool:
        restored = self._sequences.model.set_seq_state(self.seq, state, len(tokens))
        self._sequences.cached[self.seq] = list(tokens) if restored else []
        return restored


class Sequences:
    """N sequences of `model`'s context (its n_seq_max). Taking them over clears what the context held."""

    def __init__(self, model: LoadedModel, n: int):
        self.model = model
        self.n = n
        for seq in range(n):
            model.seq_rm(seq, 0)
        model.cached = []  # sequence 0's single-request mirror no longer says what it holds
        self.cached: list[list[int]] = [[] for _ in range(n)]
        self.scopes: list[str] = ["" for _ in range(n)]  # whose text each sequence holds (GenerationConfig.kept_scope)
        self._free = list(range(n))

    def retire(self) -> None:
        """Another Sequences takes the context over (the batch starts over): the slots given out before say they
        hold nothing from now on, so a reply's state waiting to be saved through one is not read from a context
        that no longer holds it."""
        self.cached = [[] for _ in range(self.n)]

    @property
    def free(self) -> int:
        """Sequences not in use."""
        return len(self._free)

    @property
    def room(self) -> int:
        """Cells left in the shared budget."""
        return self.model.n_ctx - sum(len(c) for c in self.cached)

    def take(self, prompt: Sequence[int], scope: str = "") -> Optional[int]:
        """A free sequence for a request of `scope` with `prompt`, the one whose cache shares most of it; None when
        all are in use. Another scope's text is never reused (one API key's prompts are never another's cache, as
        kept conversation states): a sequence that held one is emptied."""
        if not self._free:
            return None
        best = max(
            self._free, key=lambda s: (shared_prefix(self.cached[s], prompt) if self.scopes[s] == scope else 0, -s)
        )
        self._free.remove(best)
        if self.scopes[best] != scope:
            self.truncate(best, 0)
            self.scopes[best] = scope
        return best

    def claim(self, seq: int, scope: str = "") -> None:
        """Take sequence `seq` itself (a draft model's sequence in step with the target's of the same number)."""
        if seq in self._free:
            self._free.remove(seq)
        if self.scopes[seq] != scope:
            self.truncate(seq, 0)
            self.scopes[seq] = scope

    def release(self, seq: int) -> None:
        """The request on `seq` ended: the sequence is free, and keeps what it holds for a prompt that shares it."""
        if seq not in self._free:
            self._free.append(seq)

    def empty_if_free(self, seq: int) -> None:
        """Forget what sequence `seq` holds (a deleted chat's), unless a request is using it."""
        if seq in self._free:
            self.truncate(seq, 0)

    def lend(self) -> None:
        """Lend the context to LoadedModel's own decode (the cost measurement), which writes sequence 0 and keeps
        its mirror in `model.cached`: the other sequences give back their cells, and sequence 0's mirror becomes
        the model's. Only while no request runs; `take_back` when done."""
        for seq in range(1, self.n):
            self.truncate(seq, 0)
        self.model.cached = list(self.cached[0])

    def take_back(self) -> None:
        """The context lent (`lend`) comes back: sequence 0 holds what the model's own mirror says it holds."""
        self.cached[0] = list(self.model.cached)
        self.model.cached = []

    def make_room(self, cells: int) -> bool:
        """Free sequences give back their cells, least shared first, until `cells` are free; False if they cannot."""
        for seq in sorted(self._free, key=lambda s: len(self.cached[s])):
            if self.room >= cells:
                break
            self.truncate(seq, 0)
        return self.room >= cells

    def keep_prefix(self, seq: int, tokens: Sequence[int], leave: int = 0) -> int:
        """Keep what sequence `seq` shares with `tokens` (minus `leave` tokens at the end); return how many. As
        the single decoder's cache does (LoadedModel.keep_common_prefix), a chat whose oldest turns were dropped
        to fit the context keeps the cached text after the dropped stretch, shifted down over it."""
        end = max(0, len(tokens) - leave)
        cached = self.cached[seq]
        n = shared_prefix(cached, tokens[:end])
        kept = self.model.shift_out_gap(seq, cached, tokens, n, end, lambda k: self.truncate(seq, k))
        if kept is None:
            self.truncate(seq, n)
        return len(cached)

    def truncate(self, seq: int, n_keep: int) -> None:
        """Forget sequence `seq`'s positions from `n_keep` on."""
        if n_keep >= len(self.cached[seq]):
            return
        if not self.model.seq_rm(seq, n_keep):
            self.model.seq_rm(seq, 0)  # a memory that drops only whole sequences: start over, never compute stale
            n_keep = 0
        del self.cached[seq][n_keep:]

    def read(self, parts: Sequence[tuple[int, Sequence[int]]]) -> None:
        """Append tokens to several sequences' caches, no logits kept, in as few forward passes as the batch
        allows."""
        pending = [(seq, list(tokens)) for seq, tokens in parts if tokens]
        chunk = self.model.n_batch
        while pending:
            rows: list[Rows] = []
            used = 0
            for i, (seq, tokens) in enumerate(pending):
                take = tokens[: chunk - used]
                if take:
                    rows.append(Rows(seq, take, len(take)))
                    pending[i] = (seq, tokens[len(take) :])
                    used += len(take)
            self.decode(rows)
            pending = [(seq, tokens) for seq, tokens in pending if tokens]

    def decode(self, parts: Sequence[Rows]) -> list[RowWindow]:
        """One forward pass over every part's rows (at most the model's n_batch in all); each part's logits rows
        as a RowWindow, in order. On failure each mirror is made to say what llama.cpp kept, and it raises."""
        tokens: list[int] = []
        positions: list[int] = []
        seqs: list[int] = []
        logits: list[bool] = []
        windows: list[RowWindow] = []
        for part in parts:
            base = len(self.cached[part.seq])
            windows.append(RowWindow(self.model, len(tokens) + part.first_logit))
            for i, token in enumerate(part.tokens):
                tokens.append(token)
                positions.append(base + i)
                seqs.append(part.seq)
                logits.append(i >= part.first_logit)
        if not tokens:
            return windows
        try:
            self.model.decode_rows(tokens, positions, seqs, logits)
        except Exception:
            for part in parts:
                kept = self.model.seq_pos_max(part.seq) + 1
                mirror = self.cached[part.seq]
                base = len(mirror)
                del mirror[kept:]
                mirror.extend(part.tokens[: max(0, kept - base)])
            raise
        for part in parts:
            self.cached[part.seq].extend(part.tokens)
        return windows
