"""Recent conversations' KV caches, kept so that going back to a chat (or an API client's turn after another's)
reads only its new tokens.

A request is decoded in one sequence of the models' contexts (a Slot: seq 0 when requests take turns, the batch's
free sequence when they are decoded side by side). Before a request that does not go on from what its sequence
holds, that state is copied out (llama_state_seq_get_data) and kept, unless a saved file still holds it or the
request goes on from inside the sequence's last reply (an agent's next turn); then the kept state (in memory or on
disk) sharing the longest token prefix with the request, as llama-server picks a slot, is copied back in when it
shares more than the sequence does. The draft model's cache is kept and restored with it. States are kept least
recently used first within a byte budget; long conversations also go to disk (saved_states.py) after each reply,
once the engine is quiet, for a chat reopened after a restart.

States are kept per scope (the request's history book, "person" or "api") and never offered across: an API
client must not be able to tell, from how fast a guessed prefix is answered, what the person wrote.

Restoring is lossless: the bytes copied back are the KV cells llama.cpp computed, so the reply is the same.

Use from the engine process's main thread only.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Protocol, Sequence

from app.common.units import format_bytes
from app.engine.events import GenerationStats
from app.engine.local.kv_states.saved_states import (
    DISK_DEFAULT,
    DISK_MIN_TOKENS,
    SavedStates,
    model_folder,
    shared_prefix,
)

if TYPE_CHECKING:  # the window imports the budget from here, and never loads llama.cpp
    from app.engine.local.llama_model import LoadedModel


class Slot(Protocol):
    """One sequence of a model's context and the mirror of what it holds: LoadedModel itself for seq 0, and the
    batch's sequences (app.engine.local.batch.sequences.SequenceSlot)."""

    @property
    def path(self) -> Path: ...

    @property
    def cached(self) -> list[int]: ...

    def common_prefix(self, tokens: Sequence[int], end: int | None = None) -> int: ...

    def truncate(self, n_keep: int) -> None: ...

    def state_bytes(self) -> bytes: ...

    def restore_state(self, state: bytes, tokens: Sequence[int]) -> bool: ...


# A state shorter than this is not kept: reading it again costs about what copying it does.
KEEP_MIN_TOKENS = 64
# A kept state is restored only when it shares this many more tokens than seq 0 already does.
RESTORE_MIN_GAIN = 32
# The default memory budget: this share of the memory available when the model loads, within these bounds.
MEMORY_SHARE = 0.25
MEMORY_MIN = 256 << 20
MEMORY_MAX = 4 << 30


def available_memory() -> int:
    """Bytes of memory available now (MemAvailable on Linux; the physical memory elsewhere), 0 if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def memory_budget(mib: int) -> int:
    """The memory budget in bytes: `mib` as set, or (0, Auto) a share of the available memory."""
    if mib > 0:
        return mib << 20
    return int(min(MEMORY_MAX, max(MEMORY_MIN, available_memory() * MEMORY_SHARE)))


def disk_budget(mib: int) -> int:
    return mib << 20 if mib > 0 else DISK_DEFAULT


def kept_line(count: int, used: int, budget: int) -> str:
    """The kept conversations' memory in words, for Settings and the CLI."""
    return f"Conversations kept in memory: {count}, {format_bytes(used)} of {format_bytes(budget)}"


def kept_line_of(stats: Optional[GenerationStats]) -> str:
    """kept_line as a reply's stats tell it ("" when they do not: no reply yet, or a server's model)."""
    if stats is None or not stats.kept_budget_bytes:
        return ""
    return kept_line(stats.kept_states, stats.kept_bytes, stats.kept_budget_bytes) + " (after the last reply)"


def save_all_ended(cache: Optional["ConversationCache"]) -> None:
    """Save every ended reply's state now (`cache` None: no target loaded), before the models or their sequences
    change."""
    while cache is not None and cache.save_ended():
        pass


@dataclasses.dataclass
class KeptConversation:
    scope: str
    session: str
    tokens: list[int]  # what the target's cache held
    state: bytes
    draft_path: Optional[Path] = None
    draft_tokens: list[int] = dataclasses.field(default_factory=list)
    draft_state: bytes = b""

    @property
    def size(self) -> int:
        return len(self.state) + len(self.draft_state)


@dataclasses.dataclass(frozen=True)
class EndedReply:
    """A reply that has ended, its sequence's state not saved yet: whose it is, where its prompt ended (what follows
    is the reply's own tokens), and the sequences of the target and the draft that hold it."""

    session: str
    scope: str
    prompt_n: int
    target: Slot
    draft: Optional[Slot]


@dataclasses.dataclass(frozen=True)
class CacheUse:
    """What a request found: the tokens seq 0 shares with it after any restore, where they came from, and a note
    for the person ("" when nothing went wrong)."""

    shared: int
    source: str  # "continued", "memory", "disk" or "none"
    notice: str = ""
    seconds: float = 0.0  # spent copying states out and in, before the decoder's clock starts

    def charged(self, stats: GenerationStats) -> GenerationStats:
        """The reply's stats with the time spent here counted in its prompt, first token and whole reply."""
        if not self.seconds:
            return stats
        return dataclasses.replace(
            stats,
            prompt_eval_s=stats.prompt_eval_s + self.seconds,
            ttft_s=stats.ttft_s + self.seconds if stats.ttft_s else 0.0,
            elapsed_s=stats.elapsed_s + self.seconds,
        )


class ConversationCache:
    """The kept states of one loaded target (and whichever draft is loaded beside it)."""

    def __init__(self, target: LoadedModel, memory_bytes: int, disk: Optional[SavedStates], n_ctx: int = 0):
        self.target = target
        self.disk_n_ctx = n_ctx or target.n_ctx  # one request's context: what saved states are filed under
        self.memory_bytes = memory_bytes
        self.disk = disk
        self._kept: collections.OrderedDict[int, KeptConversation] = collections.OrderedDict()  # oldest first
        self._next_key = 0
        self._holders: dict[int, tuple[str, str]] = {}  # whose conversation each sequence holds: (session, scope)
        self._ended: dict[int, EndedReply] = {}  # each sequence's ended reply whose state waits to be saved
        # The files each sequence's states (the target's, the draft's) went to after its reply ended.
        self._saved: dict[int, tuple[Path, Optional[Path]]] = {}
        self._draft_disks: dict[Path, SavedStates] = {}  # the saved states of each draft model used beside it

    @classmethod
    def for_target(
        cls, target: LoadedModel, memory_mib: int = 0, disk_mib: int = 0, on_disk: bool = True, n_ctx: int = 0
    ) -> "ConversationCache":
        """`n_ctx`: the context one request has (the target's own unless it holds several sequences)."""
        disk = SavedStates(model_folder(target.path, n_ctx or target.n_ctx), disk_budget(disk_mib)) if on_disk else None
        return cls(target, memory_budget(memory_mib), disk, n_ctx)

    # -- the request path ---------------------------------------------------------------------------------------

    def prepare(
        self,
        tokens: Sequence[int],
        session: str,
        draft: Optional[Slot] = None,
        scope: str = "person",
        slot: Optional[Slot] = None,
        seq: int = 0,
    ) -> CacheUse:
        """Make sequence `seq` (`slot`, the target itself for seq 0; `draft`, the draft's same sequence) hold the
        longest kept prefix of `tokens` (the prompt) of `scope`, keeping what it held."""
        started = time.perf_counter()
        use = self._prepare(tokens, session, slot if slot is not None else self.target, draft, scope, seq)
        return dataclasses.replace(use, seconds=time.perf_counter() - started)

    def _prepare(
        self, tokens: Sequence[int], session: str, target: Slot, draft: Optional[Slot], scope: str, seq: int
    ) -> CacheUse:
        limit = len(tokens) - 1  # the last prompt token is always decoded, for its logits
        leaving, leaving_scope = self._holders.get(seq, ("", ""))
        self._holders[seq] = (session, scope)
        ended = self._ended.pop(seq, None)
        # A request that goes on from inside the last reply (an agent's next turn, the reply rendered the client's
        # own way) keeps the prompt the sequence holds: the reply as written is not worth keeping, and this
        # request's own end saves the longer state. Any other request changes what the sequence holds: the ended
        # reply's state goes to disk first, and that file restores it as a copy would.
        goes_on = (
            ended is not None
            and (ended.session, ended.scope) == (session, scope)
            and target.common_prefix(tokens, limit) >= ended.prompt_n
        )
        if ended is not None and not goes_on:
            self._save(seq, ended)
        saved = self._saved.pop(seq, None)
        if leaving_scope and leaving_scope != scope:  # another scope's conversation is never reused
            self._keep(self._copy_out(target, draft, leaving, leaving_scope, saved))
            for model in (target, draft):
                if model is not None:
                    model.truncate(0)
        shared = target.common_prefix(tokens, limit)
        key, kept_n = self._best(tokens, scope)
        header, disk_n = self.disk.best(tokens, scope) if self.disk is not None else (None, 0)
        if max(kept_n, disk_n) < shared + RESTORE_MIN_GAIN:
            # The reply will overwrite the rest: it is copied out first, unless it is too short for a copy ever to
            # be restored while the sequence keeps the shared part (RESTORE_MIN_GAIN), as when a chat or an agent's
            # session goes on from its last turn: copying the whole state would only delay the first token.
            if not goes_on and len(target.cached) - shared >= RESTORE_MIN_GAIN:
                self._keep(self._copy_out(target, draft, leaving, scope, saved))
            return CacheUse(shared, "continued" if shared else "none", self._take_disk_notice())
        # The sequence is copied out first, and kept after the restore: the one restored is never evicted for it.
        # A conversation in a sequence is not also kept: the sequence is its copy until another takes its place.
        outgoing = self._copy_out(target, draft, leaving, scope, saved)
        use = CacheUse(target.common_prefix(tokens, limit), "none")
        if key is not None and kept_n >= disk_n:
            entry = self._kept.pop(key)
            if target.restore_state(entry.state, entry.tokens):
                if draft is not None and entry.draft_path == draft.path and entry.draft_state:
                    draft.restore_state(entry.draft_state, entry.draft_tokens)
                use = CacheUse(min(kept_n, limit), "memory")
        elif header is not None and self.disk is not None:
            state = self.disk.load(header)
            if state is not None and target.restore_state(state, header.tokens):
                use = CacheUse(min(disk_n, limit), "disk")
                if draft is not None:  # the draft's too: reading it again costs more than half the target's time
                    self._restore_draft_from_disk(draft, tokens, scope)
        self._keep(outgoing)
        return dataclasses.replace(use, notice=self._take_disk_notice())

    def after_reply(
        self,
        session: str,
        draft: Optional[Slot] = None,
        slot: Optional[Slot] = None,
        seq: int = 0,
        prompt_n: int = 0,
    ) -> None:
        """A reply is done (its prompt `prompt_n` tokens long). A long conversation's state goes to disk, replacing
        its earlier one, the draft's too, but not now: saving takes 0.5-0.9 s on the 1.5B (docs/performance-log.md,
        2026-12-07), which would hold back the reply's end. It is saved at the first quiet moment (save_ended),
        before another request changes the sequence, or when the models change or close."""
        self._saved.pop(seq, None)
        scope = self._holders.get(seq, ("", ""))[1] or "person"
        self._ended[seq] = EndedReply(session, scope, prompt_n, slot if slot is not None else self.target, draft)

    def save_ended(self) -> bool:
        """Save one ended reply's state (call between requests); False when none waits."""
        if not self._ended:
            return False
        seq = next(iter(self._ended))
        self._save(seq, self._ended.pop(seq))
        return True

    def _save(self, seq: int, ended: EndedReply) -> None:
        target, draft = ended.target, ended.draft
        if self.disk is None or len(target.cached) < DISK_MIN_TOKENS:
            return
        saved = self.disk.save(ended.scope, ended.session, target.cached, target.state_bytes())
        draft_disk = self._draft_disk(draft)
        draft_saved = None
        if draft is not None and draft_disk is not None and len(draft.cached) >= DISK_MIN_TOKENS:
            draft_saved = draft_disk.save(ended.scope, ended.session, draft.cached, draft.state_bytes())
        if saved is not None:
            self._saved[seq] = (saved, draft_saved)

    def _draft_disk(self, draft: Optional[Slot]) -> Optional[SavedStates]:
        if draft is None or self.disk is None:
            return None
        if draft.path not in self._draft_disks:
            try:  # in the target's context size: the draft's sequences are sized as the target's
                folder = model_folder(draft.path, self.disk_n_ctx)
            except OSError:  # the draft's file is gone (it is being unloaded): its states have nothing to be filed by
                return None
            self._draft_disks[draft.path] = SavedStates(folder, self.disk.budget_bytes)
        return self._draft_disks[draft.path]

    def _restore_draft_from_disk(self, draft: Slot, tokens: Sequence[int], scope: str) -> None:
        draft_disk = self._draft_disk(draft)
        if draft_disk is None:
            return
        header, n = draft_disk.best(tokens, scope)
        if header is not None and n > draft.common_prefix(tokens):
            state = draft_disk.load(header)
            if state is not None:
                draft.restore_state(state, header.tokens)

    def _take_disk_notice(self) -> str:
        notice = ""
        for disk in (self.disk, *self._draft_disks.values()):
            if disk is not None and disk.notice:
                notice, disk.notice = disk.notice, ""
        return notice

    def _copy_out(
        self,
        target: Slot,
        draft: Optional[Slot],
        session: str,
        scope: str,
        saved: Optional[tuple[Path, Optional[Path]]],
    ) -> Optional[KeptConversation]:
        """What a sequence (and the draft's same sequence) holds, copied before another request overwrites it.
        None when the files saved after its reply (`saved`) still hold exactly that: they are kept apart instead,
        since copying a long state out takes 0.3-0.5 s before the request's first token (docs/performance-log.md,
        2026-12-07) and a saved file restores it as well."""
        if saved is not None and self.disk is not None and self.disk.detach(saved[0], target.cached):
            draft_disk = self._draft_disk(draft)
            if draft is not None and draft_disk is not None and saved[1] is not None:
                draft_disk.detach(saved[1], draft.cached)  # else the draft reads it again when it is restored
            return None
        if len(target.cached) < KEEP_MIN_TOKENS:  # too short to be worth keeping
            return None
        entry = KeptConversation(scope, session, list(target.cached), target.state_bytes())
        if draft is not None and len(draft.cached) >= KEEP_MIN_TOKENS:
            entry.draft_path, entry.draft_tokens = draft.path, list(draft.cached)
            entry.draft_state = draft.state_bytes()
        return entry

    def _keep(self, entry: Optional[KeptConversation]) -> None:
        """Keep a conversation's copy, most recently used, within the budget (the oldest evicted first)."""
        if entry is None or not entry.state or entry.size > self.memory_bytes:
            return
        for key, kept in list(self._kept.items()):
            if (
                kept.scope == entry.scope
                and len(kept.tokens) <= len(entry.tokens)
                and kept.tokens == entry.tokens[: len(kept.tokens)]
            ):
                del self._kept[key]  # an earlier turn of the same conversation: superseded
        self._kept[self._next_key] = entry
        self._next_key += 1
        while self.used_bytes() > self.memory_bytes:
            self._kept.popitem(last=False)

    def _best(self, tokens: Sequence[int], scope: str) -> tuple[Optional[int], int]:
        best, best_n = None, 0
        for key, entry in self._kept.items():
            if entry.scope != scope:
                continue
            n = shared_prefix(entry.tokens, tokens)
            if n > best_n:
                best, best_n = key, n
        return best, best_n

    # -- forgetting and telling ---------------------------------------------------------------------------------

    def forget(self, session: str, empty: Optional[Callable[[int], None]] = None) -> None:
        """Drop the states of `session` (a deleted chat), in memory and on disk, and empty the sequences that hold
        it: seq 0, the target's own, here; `empty` (the batch's, when requests are decoded side by side) is called
        with each, seq 0 too."""
        self._kept = collections.OrderedDict((k, e) for k, e in self._kept.items() if e.session != session)
        self._ended = {seq: ended for seq, ended in self._ended.items() if ended.session != session}
        if self.disk is not None:
            self.disk.forget(session)
            for draft_disk in self._draft_disks.values():
                draft_disk.forget(session)
        for seq, (holder, _scope) in self._holders.items():
            if holder == session and empty is not None:
                empty(seq)
            if holder == session and seq == 0:
                self.target.truncate(0)

    def used_bytes(self) -> int:
        return sum(entry.size for entry in self._kept.values())

    @property
    def kept_count(self) -> int:
        return len(self._kept)

    def counted(self, stats: GenerationStats) -> GenerationStats:
        """A reply's stats with the states kept now and their budget."""
        return dataclasses.replace(
            stats, kept_states=len(self._kept), kept_bytes=self.used_bytes(), kept_budget_bytes=self.memory_bytes
        )

    def summary(self) -> str:
        """One line for Settings: the budgets and what is used of them."""
        line = kept_line(len(self._kept), self.used_bytes(), self.memory_bytes)
        if self.disk is not None:
            line += f"; on disk {format_bytes(self.disk.used_bytes())} of {format_bytes(self.disk.budget_bytes)}"
        return line
