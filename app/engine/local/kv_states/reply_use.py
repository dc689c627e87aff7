"""One reply's use of the kept conversations: the kept state that shares most of its prompt restored before the
prompt is read, its own state kept when it ends, and the time restoring took counted in its prompt's reading."""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from app.engine.events import GenerationStats
from app.engine.local.kv_states.conversation_cache import CacheUse, ConversationCache, Slot


class ReplyUse:
    """Decoded alone, the reply restores into the models' own caches (`restore`, `kept`); side by side, into the
    sequence the batch gives it (`admitted`, `ended`), whose slots of the target and the draft `slots` gives."""

    def __init__(
        self,
        cache: ConversationCache,
        tokens: Sequence[int],
        session: str,
        scope: str,
        slots: Optional[Callable[[int], tuple[Slot, Optional[Slot]]]] = None,
    ):
        self.cache, self.tokens, self.session, self.scope = cache, tokens, session, scope
        self._slots = slots
        self.found: Optional[CacheUse] = None
        self._unsaid = ""  # side by side: what restoring found to tell, said when the reply ends

    def restore(self, draft: Optional[Slot]) -> str:
        """Alone: the kept state restored into the target's cache (and `draft`'s); a sentence to tell, or ""."""
        self.found = self.cache.prepare(self.tokens, self.session, draft, scope=self.scope)
        return self.found.notice

    def kept(self, draft: Optional[Slot]) -> None:
        """Alone: the reply is done, its state kept."""
        self.cache.after_reply(self.session, draft, prompt_n=len(self.tokens))

    def admitted(self, seq: int) -> None:
        """Side by side: the kept state restored into sequence `seq`."""
        assert self._slots is not None
        target, draft = self._slots(seq)
        self.found = self.cache.prepare(self.tokens, self.session, draft, self.scope, slot=target, seq=seq)
        self._unsaid = self.found.notice

    def ended(self, seq: int) -> None:
        """Side by side: the reply in sequence `seq` is done, its state kept."""
        assert self._slots is not None
        target, draft = self._slots(seq)
        self.cache.after_reply(self.session, draft, slot=target, seq=seq, prompt_n=len(self.tokens))

    def take_unsaid(self) -> str:
        """What restoring side by side found to tell, once ("" when nothing, or when already said)."""
        unsaid, self._unsaid = self._unsaid, ""
        return unsaid

    def charged(self, stats: GenerationStats) -> GenerationStats:
        """The reply's stats with restoring counted as part of reading the prompt, and the cache's use beside."""
        return self.cache.counted(self.found.charged(stats)) if self.found is not None else stats
