"""The decoding loop: plain and speculative decoding are the same loop, a round drafts k >= 0 tokens and the target
verifies [last token, draft...] in one batch.

The target's cache always holds `history[:-1]`: the last token is evaluated at the head of the next verify batch,
so a round with k = 0 is exactly plain decoding and costs one single-token forward pass.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence

import numpy as np

from app.engine.config import MAX_DRAFT, GenerationConfig
from app.engine.local.model_drafter import ModelDrafter
from app.engine.speculation.drafters import Draft, NgramDrafter
from app.engine.errors import PromptTooLongError
from app.engine.events import (DraftSource, EngineEvent, FinishedEvent, GenerationStats, RoundEvent, ThreadsEvent,
                               TokenChoice, TokenEvent, TokenLogprobs, TokenSource, decode_speed)
from app.engine.local.llama_model import LoadedModel
from app.engine.local.thread_governor import ThreadChange, ThreadGovernor
from app.engine.speculation.policy import SpeculationPolicy
from app.engine.speculation.history import HistoryDrafter
from app.engine.speculation.rounds import copy_tokens, observe_round, plan_round
from app.engine.local.grammar import GrammarMask
from app.engine.reasoning.splitter import ReplySplitter
from app.engine.local.sampling import Penalties, Sampler, accept_or_resample, log_probabilities
from app.engine.local.text_stream import TextStream


# A draft model that drafted last round reads at most this many tokens before drafting again: the last token
# it drafted, the target's own token and the one the batch ends with.
USUAL_CATCH_UP = 3


@dataclass
class _Tally:
    """What the rounds of one reply drafted and kept."""

    drafted: int = 0
    accepted: int = 0
    rounds: int = 0
    draft_rounds: int = 0
    histogram: dict[int, int] = field(default_factory=dict)  # draft length -> rounds

    def add(self, drafted: int, accepted: int) -> None:
        self.rounds += 1
        self.drafted += drafted
        self.accepted += accepted
        self.draft_rounds += bool(drafted)
        self.histogram[drafted] = self.histogram.get(drafted, 0) + 1


def verify(
    target: LoadedModel, draft: Draft, sampler: Sampler, rng: np.random.Generator,
    grammar: Optional[GrammarMask] = None, penalties: Optional[Penalties] = None,
) -> tuple[int, int]:
    """Decide how many drafted tokens the target keeps and which token it adds itself.

    Expects the target to have just decoded [last, *draft.tokens] with logits for every row. Under a `grammar`
    each row is masked by the grammar's state at its position (the state advances by each kept token; the
    caller's state is left as it was). With `penalties`, each row is penalised by the reply's tokens up to its
    position, the drafted ones before it included.
    Returns (accepted count, the target's own next token).
    """
    state = grammar.clone() if grammar is not None else None
    try:
        return _verify_rows(target, draft, sampler, rng, state, penalties)
    finally:
        if state is not None:
            state.close()


def _verify_rows(target: LoadedModel, draft: Draft, sampler: Sampler, rng: np.random.Generator,
                 state: Optional[GrammarMask], penalties: Optional[Penalties]) -> tuple[int, int]:
    def logits(i: int) -> np.ndarray:
        return penalties.apply(target.logits(i), draft.tokens[:i]) if penalties is not None else target.logits(i)

    def row(i: int) -> np.ndarray:
        return state.masked(logits(i)) if state is not None else logits(i)

    def greedy_choice(i: int) -> int:
        # The row's best token, when the grammar allows it, is the masked row's best too (masking only lowers
        # others): the whole vocabulary is masked only when it does not (llama.cpp's sampler does the same).
        best = int(np.argmax(logits(i)))
        if state is None or state.allows(best):
            return best
        return int(np.argmax(state.masked(logits(i))))

    for i, token in enumerate(draft.tokens):
        if sampler.greedy:
            best = greedy_choice(i)
            if best != token:
                return i, best
        else:
            q = draft.probs[i] if draft.probs else None
            accepted, chosen = accept_or_resample(token, sampler.distribution(row(i)), q, rng)
            if not accepted:
                return i, chosen
        if state is not None:
            state.accept(token)
    if sampler.greedy:
        return len(draft.tokens), greedy_choice(len(draft.tokens))
    return len(draft.tokens), sampler.pick(row(len(draft.tokens)), rng)


def generate(
    target: LoadedModel,
    prompt: Sequence[int],
    config: GenerationConfig,
    policy: SpeculationPolicy,
    *,
    draft_model: Optional[ModelDrafter] = None,
    ngram: Optional[NgramDrafter] = None,
    past: Optional[HistoryDrafter] = None,
    cancel: Optional[threading.Event] = None,
    request_id: int = 0,
    on_history: Optional[Callable[[list[int]], None]] = None,
    clock: Callable[[], float] = time.perf_counter,
    governor: Optional[ThreadGovernor] = None,
    grammar: Optional[GrammarMask] = None,
    splitter: Optional[ReplySplitter] = None,
) -> Iterator[EngineEvent]:
    """Yield token and round events, then one FinishedEvent. `on_history` receives prompt + kept tokens at the end.
    Every event goes through `splitter`, which tells each token's part (reasoning or answer; all answer without
    one); when the thinking reaches config.thinking_budget tokens, its end marker is written for the model.
    The drafters see every token of the reply, the thinking's too, so an answer can be drafted from its reasoning.
    `governor` follows the machine's load with the models' CPU threads, between forward passes (a ThreadsEvent
    says when the count changed).
    `past` drafts from earlier requests' text (the history drafter), `ngram` from this request's. Under a
    `grammar` (a fresh state, advanced here by every kept token) only what it allows is written.

    Raises PromptTooLongError before any work if the prompt cannot fit with room for one new token.
    """
    if not prompt:
        raise ValueError("empty prompt")
    if len(prompt) >= target.n_ctx:
        raise PromptTooLongError(len(prompt), target.n_ctx)
    cancel = cancel or threading.Event()
    split = splitter if splitter is not None else ReplySplitter(split=False)
    budget = max(0, config.thinking_budget)
    policy.begin_request()
    if ngram is not None:
        ngram.start_reply(len(prompt))
    sampler = Sampler.from_config(config)
    penalties = Penalties.from_config(config)
    rng = np.random.default_rng(config.seed)
    started = clock()
    if governor is not None:
        yield from _threads_event(request_id, governor.before_reply(), -1)

    reused = target.keep_common_prefix(prompt, leave=1)
    if not target.decode(list(prompt[reused:-1]), cancel=cancel):
        stats = GenerationStats(stop_reason="cancelled", prompt_tokens=len(prompt), prompt_cached=reused)
        yield from split.feed(_finish(request_id, "", stats))
        return
    prompt_done = clock()

    history = list(prompt)
    text_stream = TextStream()
    pieces: list[str] = []
    tally = _Tally()
    emitted = 0
    first_token_at: Optional[float] = None
    stop_reason = ""
    budget_spent = False

    def token_event(token: int, source: TokenSource, drafter: Optional[DraftSource], round_index: int,
                    row: int = -1) -> list[EngineEvent]:
        """`row`: the target's logits row (of the last decode) that chose `token`, for its log-probabilities."""
        data = target.token_bytes(token)
        text = text_stream.feed(data)
        pieces.append(text)
        if penalties is not None:
            penalties.add(token)
        # A special token shows as nothing, but may be (part of) a marker, e.g. Harmony's <|channel|>.
        special = target.token_text(token) if not data and target.is_control(token) else ""
        logprobs = _logprobs(target, row, token, config.top_logprobs) if config.logprobs and row >= 0 else None
        return split.feed(TokenEvent(request_id, emitted, token, text, source, drafter, round_index,
                                     logprobs=logprobs, markup=special), special)

    while not stop_reason:
        if cancel.is_set():
            stop_reason = "cancelled"
            break
        if budget and not budget_spent and grammar is None and split.thinking and split.reasoning_tokens >= budget:
            # The thinking budget is spent: its end marker is written as the model's own tokens (as llama-server's
            # --reasoning-budget does), read into the cache behind the last token, and the answer follows.
            budget_spent = True
            closing = target.tokenize(split.family.close_text, add_special=False, parse_special=True)
            if closing and emitted + len(closing) < config.max_tokens and len(history) + len(closing) < target.n_ctx:
                target.decode([history[-1], *closing[:-1]])
                for token in closing:
                    history.append(token)
                    yield from token_event(token, "target", None, -1)
                    emitted += 1
                continue
        # The verify batch [last, draft...] needs k + 1 free positions and k + 1 logit rows (at most MAX_DRAFT + 1);
        # the reply needs k + 1 more tokens.
        room = target.n_ctx - (len(history) - 1)
        if room <= 0:
            stop_reason = "context_full"
            break
        k_max = max(0, min(room - 1, config.max_tokens - emitted - 1, MAX_DRAFT))
        if budget and not budget_spent and split.thinking:
            k_max = max(0, min(k_max, budget - split.reasoning_tokens - 1))  # no round writes past the budget
        policy.note_threads(target.n_threads)
        behind = draft_model.behind(history) if draft_model is not None and config.speculative else 0
        plan, proposals = plan_round(policy, history, k_max, speculative=config.speculative, ngram=ngram,
                                     has_model=draft_model is not None, past=past, model_behind=behind)

        t_draft = clock()
        if plan.drafter == "model" and plan.k > 0 and draft_model is not None:
            draft = draft_model.propose(history, plan.k, sampler, rng, config.draft_p_min, cancel,
                                        stop_below=plan.stop_below)
        elif plan.drafter in ("ngram", "history") and plan.k > 0:
            draft = Draft(tokens=copy_tokens(plan, proposals), source=plan.drafter)
        else:
            draft = Draft(source="none")
        t_verify = clock()

        target.decode([history[-1], *draft.tokens], logit_rows=range(len(draft.tokens) + 1))
        accepted, own_token = verify(target, draft, sampler, rng, grammar, penalties)
        t_done = clock()
        threads = target.n_threads
        kept = [*draft.tokens[:accepted], own_token]
        proposer: Optional[DraftSource] = None if draft.source == "none" else draft.source
        # A draft that first read many tokens (the prompt, or text another drafter supplied) says nothing about
        # what drafting a token costs: its time is not learned from.
        draft_s = t_verify - t_draft if draft.caught_up <= USUAL_CATCH_UP else 0.0
        observe_round(policy, plan, proposals, len(draft.tokens), accepted, draft_s, t_done - t_verify, kept)
        round_index = tally.rounds
        tally.add(len(draft.tokens), accepted)
        yield from split.feed(RoundEvent(request_id, draft.source, plan.k, len(draft.tokens), accepted, plan.reason,
                         index=round_index, proposed=tuple(draft.tokens),
                         proposed_text=tuple(_piece(target, t) for t in draft.tokens), own=own_token,
                         own_text=_piece(target, own_token), time_s=t_done - t_draft, threads=threads,
                         kind=plan.kind, expected=plan.expected))
        if governor is not None:
            for change in _threads_event(request_id, governor.observe(len(draft.tokens) + 1, t_done - t_verify),
                                         round_index):
                yield from split.feed(change)

        for position, token in enumerate(kept):
            source: TokenSource = "draft" if position < accepted else "target"
            drafter = proposer if position < accepted else None
            if target.is_end_of_generation(token) and not config.ignore_eos:
                stop_reason = "eos"
                break
            history.append(token)
            if grammar is not None:
                grammar.accept(token)
            if first_token_at is None:
                first_token_at = clock()
            yield from token_event(token, source, drafter, round_index, row=position)
            emitted += 1
            if emitted >= config.max_tokens:
                stop_reason = "max_tokens"
                break
        # Roll back what the target refused; the draft model catches up at its next proposal.
        target.truncate(len(history) - 1)

    if governor is not None:
        for change in _threads_event(request_id, governor.settle(), tally.rounds - 1):
            yield from split.feed(change)
    tail = text_stream.flush()
    if tail:
        pieces.append(tail)
        # The reply's texts must add up to the reply: a dangling partial character is flushed as its own event.
        yield from split.feed(TokenEvent(request_id, emitted, -1, tail, "target"))
    ended = clock()
    if on_history is not None:
        on_history(history)
    stats = GenerationStats(
        tokens=emitted,
        tokens_per_second=decode_speed(emitted, max(ended - prompt_done, 1e-9)),
        ttft_s=(first_token_at - started) if first_token_at is not None else 0.0,
        drafted=tally.drafted,
        accepted=tally.accepted,
        acceptance_rate=tally.accepted / tally.drafted if tally.drafted else 0.0,
        mean_accepted_run=tally.accepted / tally.draft_rounds if tally.draft_rounds else 0.0,
        rounds=tally.rounds,
        stop_reason=stop_reason,
        prompt_tokens=len(prompt),
        prompt_cached=reused,
        prompt_eval_s=prompt_done - started,
        elapsed_s=ended - started,
        draft_len_histogram=dict(sorted(tally.histogram.items())),
    )
    yield from split.feed(_finish(request_id, "".join(pieces), stats))


def _threads_event(request_id: int, change: Optional[ThreadChange], after_round: int) -> Iterator[ThreadsEvent]:
    if change is not None:
        yield ThreadsEvent(request_id, change.before, change.after, change.reason, after_round)


def _logprobs(target: LoadedModel, row: int, token: int, top: int) -> TokenLogprobs:
    """`token`'s log-probability from the target's logits row `row` (of the last decode), with the `top` likeliest."""
    def choice(token_id: int, logprob: float) -> TokenChoice:
        piece = target.token_bytes(token_id) or target.token_text(token_id).encode("utf-8")
        return TokenChoice(token_id, piece, logprob)

    chosen, best = log_probabilities(target.logits(row), token, top)
    return TokenLogprobs(choice(token, chosen), tuple(choice(i, lp) for i, lp in best))


def _piece(target: LoadedModel, token: int) -> str:
    """A token's own text for display (a piece of a multi-byte character shows as a replacement mark)."""
    return target.token_bytes(token).decode("utf-8", errors="replace")


def _finish(request_id: int, text: str, stats: GenerationStats) -> FinishedEvent:
    return FinishedEvent(request_id, text, stats)
