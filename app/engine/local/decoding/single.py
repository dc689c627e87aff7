"""One reply decoded alone: plain and speculative decoding are the same loop, a round drafts k >= 0 tokens and the
target verifies [last token, draft...] in one forward pass (each round's steps in round_step.py, shared with the batch).

The target's cache holds `written[:-1]` between rounds: the last token is evaluated at the head of the next verify
batch, so a round with k = 0 is exactly plain decoding and costs one single-token forward pass. The first round's
batch starts with the prompt's rest instead (round_step.first_round_rest), read in the same pass.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Iterator, Optional

from app.engine.events import EngineEvent, ThreadsEvent
from app.engine.local.decoding.reply import Reply, RowWindow, unwritten
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.decoding.round_step import USUAL_CATCH_UP, RoundStep, first_round_rest, verify_rows
from app.engine.local.llama_model import LoadedModel
from app.engine.local.decoding.model_drafter import ModelDrafter
from app.engine.local.thread_governor import ThreadChange, ThreadGovernor


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
    prompt, request_id, media = request.prompt, request.request_id, request.media
    if not request.use_model:
        draft_model = None
    request.check_room(target.n_ctx)
    cancel = cancel or threading.Event()
    reply = Reply(target, request, clock=clock)
    reply.begin()
    if governor is not None:
        yield from _threads_event(request_id, governor.before_reply(), -1)

    if media is not None:
        reply.reused, read = media.read(target, cancel)
    else:
        reply.reused = target.keep_common_prefix(prompt, leave=1)
        rest = min(len(prompt) - reply.reused, first_round_rest(target.n_batch))  # read with the first round
        read = target.decode(list(prompt[reply.reused : len(prompt) - rest]), cancel=cancel)
    if not read:
        yield from unwritten(request, reply.reused)
        return
    reply.prompt_done = clock()
    written = reply.written

    while not reply.stop_reason:
        if cancel.is_set():
            reply.stop_reason = "cancelled"
            break
        closing = reply.closing()
        if closing:
            target.decode([*written[len(target.cached) :], *closing[:-1]])
            yield from reply.write_closing(closing)
            continue
        room = target.n_ctx - (len(written) - 1)
        if room <= 0:
            reply.stop_reason = "context_full"
            break
        yield from _round(target, reply, room, draft_model, cancel, clock, governor)

    if governor is not None:
        yield from reply.threads_changed(governor.settle(), reply.tally.rounds - 1)
    yield from reply.finish()


def _round(
    target: LoadedModel,
    reply: Reply,
    room: int,
    draft_model: Optional[ModelDrafter],
    cancel: threading.Event,
    clock: Callable[[], float],
    governor: Optional[ThreadGovernor],
) -> Iterator[EngineEvent]:
    """One round: plan it, draft, verify the draft in one forward pass, keep what the target accepted and roll back
    the rest. `room` is how many tokens the context has left."""
    request, written = reply.request, reply.written
    behind = draft_model.behind(written) if draft_model is not None and request.config.speculative else 0
    step = RoundStep.planned(reply, room, has_model=draft_model is not None, behind=behind)

    t_draft = clock()
    if step.model_drafts and draft_model is not None:
        step.draft = draft_model.propose(
            written,
            step.plan.k,
            reply.sampler,
            reply.rng,
            request.config.draft_p_min,
            cancel,
            stop_below=step.plan.stop_below,
        )
    else:
        step.copy()
    t_verify = clock()

    draft = step.draft
    # The rows the cache lacks: the last token, after the prompt's rest in a reply's first round.
    pending = len(written) - len(target.cached)
    batch = verify_rows(written, pending, draft.tokens)
    target.decode(batch, logit_rows=range(pending - 1, len(batch)))
    rows = RowWindow(target, pending - 1)
    step.judge(rows)
    t_done = clock()
    if pending > 1:
        reply.prompt_done = t_done
    # A pass that read prompt rows says nothing of what verifying costs (they cost what rows with logits do not).
    step.learn(
        t_verify - t_draft if draft.caught_up <= USUAL_CATCH_UP else 0.0, t_done - t_verify if pending == 1 else 0.0
    )
    yield from step.recorded(t_done - t_draft, target.n_threads)
    if governor is not None:
        yield from reply.threads_changed(governor.observe(pending + len(draft.tokens), t_done - t_verify), step.index)
    yield from step.written(rows)
    # Roll back what the target refused; the draft model catches up at its next proposal.
    target.truncate(len(written) - 1)


def _threads_event(request_id: int, change: Optional[ThreadChange], after_round: int) -> Iterator[ThreadsEvent]:
    if change is not None:
        yield ThreadsEvent(request_id, change.before, change.after, change.reason, after_round)
