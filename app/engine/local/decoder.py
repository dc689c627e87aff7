"""The decoding loop: plain and speculative decoding are the same loop, a round drafts k >= 0 tokens and the target
verifies [last token, draft...] in one batch.

The target's cache always holds `written[:-1]`: the last token is evaluated at the head of the next verify batch,
so a round with k = 0 is exactly plain decoding and costs one single-token forward pass.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterator, Optional

import numpy as np

from app.engine.config import GenerationConfig
from app.engine.errors import PromptTooLongError
from app.engine.events import COPYING_SOURCES, EngineEvent, ThreadsEvent
from app.engine.local.batch.reply import LogitRows, Reply, unwritten
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.grammar import GrammarMask
from app.engine.local.llama_model import LoadedModel
from app.engine.local.model_drafter import ModelDrafter
from app.engine.local.vision.projector import before_placeholder
from app.engine.local.sampling import Penalties, Sampler, accept_or_resample
from app.engine.local.thread_governor import ThreadChange, ThreadGovernor
from app.engine.speculation.drafters import Draft, NgramDrafter
from app.engine.speculation.history import HistoryDrafter
from app.engine.speculation.policy import SpeculationPolicy
from app.engine.speculation.rounds import copy_tokens, observe_round, plan_round


# A draft model that drafted last round reads at most this many tokens before drafting again: the last token
# it drafted, the target's own token and the one the batch ends with.
USUAL_CATCH_UP = 3


def verify(
    target: LogitRows,
    draft: Draft,
    sampler: Sampler,
    rng: np.random.Generator,
    grammar: Optional[GrammarMask] = None,
    penalties: Optional[Penalties] = None,
) -> tuple[int, int]:
    """Decide how many drafted tokens the target keeps and which token it adds itself.

    Expects the target to have just decoded [last, *draft.tokens] with logits for every row (`target`'s rows 0..k). Under a `grammar`
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


def _verify_rows(
    target: LogitRows,
    draft: Draft,
    sampler: Sampler,
    rng: np.random.Generator,
    state: Optional[GrammarMask],
    penalties: Optional[Penalties],
) -> tuple[int, int]:
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
    request: DecodeRequest,
    *,
    draft_model: Optional[ModelDrafter] = None,
    cancel: Optional[threading.Event] = None,
    clock: Callable[[], float] = time.perf_counter,
    governor: Optional[ThreadGovernor] = None,
) -> Iterator[EngineEvent]:
    """Yield the request's token and round events, then one FinishedEvent (DecodeRequest says what each of its
    parts does). When the thinking reaches config.thinking_budget tokens, its end marker is written for the model.
    The drafters see every token of the reply, the thinking's too, so an answer can be drafted from its reasoning.
    `draft_model` drafts when the request may use it (`use_model`). `governor` follows the machine's load with the
    models' CPU threads, between forward passes (a ThreadsEvent says when the count changed).

    Raises PromptTooLongError before any work if the prompt cannot fit with room for one new token.
    """
    prompt, config, policy, request_id = request.prompt, request.config, request.policy, request.request_id
    ngram, past, grammar, media = request.ngram, request.past, request.grammar, request.media
    if not request.use_model:
        draft_model = None
    if not prompt:
        raise ValueError("empty prompt")
    if len(prompt) >= target.n_ctx:
        raise PromptTooLongError(len(prompt), target.n_ctx)
    cancel = cancel or threading.Event()
    reply = Reply(
        target, prompt, config, request_id=request_id, clock=clock, grammar=grammar, splitter=request.splitter
    )
    policy.begin_request()
    if ngram is not None:
        ngram.start_reply(len(prompt))
    if governor is not None:
        yield from _threads_event(request_id, governor.before_reply(), -1)

    if media is not None:
        reply.reused, read = media.read(target, cancel)
    else:
        reply.reused = target.keep_common_prefix(prompt, leave=1)
        read = target.decode(list(prompt[reply.reused : -1]), cancel=cancel)
    if not read:
        yield from unwritten(request_id, len(prompt), reply.reused, reply.split)
        return
    reply.prompt_done = clock()
    written = reply.written

    while not reply.stop_reason:
        if cancel.is_set():
            reply.stop_reason = "cancelled"
            break
        closing = reply.closing()
        if closing:
            target.decode([written[-1], *closing[:-1]])
            yield from reply.write_closing(closing)
            continue
        room = target.n_ctx - (len(written) - 1)
        if room <= 0:
            reply.stop_reason = "context_full"
            break
        yield from _round(
            target, reply, policy, config, room, draft_model, ngram, past, cancel, clock, governor, grammar
        )

    if governor is not None:
        for change in _threads_event(request_id, governor.settle(), reply.tally.rounds - 1):
            yield from reply.split.feed(change)
    finished = reply.finish()
    if request.on_written is not None:
        request.on_written(written)
    yield from finished


def _round(
    target: LoadedModel,
    reply: Reply,
    policy: SpeculationPolicy,
    config: GenerationConfig,
    room: int,
    draft_model: Optional[ModelDrafter],
    ngram: Optional[NgramDrafter],
    past: Optional[HistoryDrafter],
    cancel: threading.Event,
    clock: Callable[[], float],
    governor: Optional[ThreadGovernor],
    grammar: Optional[GrammarMask],
) -> Iterator[EngineEvent]:
    """One round: plan it, draft, verify the draft in one batch, keep what the target accepted and roll back the
    rest. `room` is how many tokens the context has left."""
    written, sampler, rng, request_id = reply.written, reply.sampler, reply.rng, reply.request_id
    k_max = reply.k_max(room)
    policy.note_threads(target.n_threads)
    behind = draft_model.behind(written) if draft_model is not None and config.speculative else 0
    plan, proposals = plan_round(
        policy,
        written,
        k_max,
        speculative=config.speculative,
        ngram=ngram,
        has_model=draft_model is not None,
        past=past,
        model_behind=behind,
    )

    t_draft = clock()
    if plan.drafter == "model" and plan.k > 0 and draft_model is not None:
        draft = draft_model.propose(
            written, plan.k, sampler, rng, config.draft_p_min, cancel, stop_below=plan.stop_below
        )
    elif plan.drafter in COPYING_SOURCES and plan.k > 0:
        # Copied text stops before a picture's positions, which only a picture's embeddings may fill.
        draft = Draft(tokens=before_placeholder(copy_tokens(plan, proposals)), source=plan.drafter)
    else:
        draft = Draft(source="none")
    t_verify = clock()

    target.decode([written[-1], *draft.tokens], logit_rows=range(len(draft.tokens) + 1))
    accepted, own_token = verify(target, draft, sampler, rng, grammar, reply.penalties)
    t_done = clock()
    kept = [*draft.tokens[:accepted], own_token]
    # A draft that first read many tokens (the prompt, or text another drafter supplied) says nothing about
    # what drafting a token costs: its time is not learned from.
    draft_s = t_verify - t_draft if draft.caught_up <= USUAL_CATCH_UP else 0.0
    observe_round(policy, plan, proposals, len(draft.tokens), accepted, draft_s, t_done - t_verify, kept)
    round_index = reply.tally.rounds
    yield from reply.round_event(plan, draft, accepted, own_token, t_done - t_draft, target.n_threads)
    if governor is not None:
        for change in _threads_event(
            request_id, governor.observe(len(draft.tokens) + 1, t_done - t_verify), round_index
        ):
            yield from reply.split.feed(change)
    yield from reply.keep(draft, accepted, own_token, round_index, target)
    # Roll back what the target refused; the draft model catches up at its next proposal.
    target.truncate(len(written) - 1)


def _threads_event(request_id: int, change: Optional[ThreadChange], after_round: int) -> Iterator[ThreadsEvent]:
    if change is not None:
        yield ThreadsEvent(request_id, change.before, change.after, change.reason, after_round)
