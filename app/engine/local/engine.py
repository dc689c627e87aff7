"""SpecEngine: one entry point per kind of request, over the loaded models (model_pair.py), their prompts
(prompts.py) and each chat's speculation policy (policies.py).

Every method must be called from one thread, the engine process's main thread, which owns the models. Only the
`cancel` event passed to `chat`/`complete` may be set from another thread; generation stops within one round.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Iterator, Optional, Sequence

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.context_fit import SessionCuts
from app.engine.errors import EngineError
from app.engine.events import EngineEvent, FinishedEvent, NoticeEvent, RoundEvent, TokenEvent
from app.engine.local.batch.driver import BatchDriver
from app.engine.local.batch.hooks import SequenceHooks
from app.engine.gguf.mmproj import mmproj_beside
from app.engine.image_files import ImageInput, has_images, message_estimate
from app.engine.local.kv_states.conversation_cache import ConversationCache, save_all_ended
from app.engine.local.kv_states.reply_use import ReplyUse
from app.engine.local.decoding.single import generate
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.grammar import GrammarMask, schema_grammar
from app.engine.local.llama_model import LoadedModel
from app.engine.local.decoding.model_drafter import ModelDrafter
from app.engine.local.model_pair import ModelPair
from app.engine.local.policies import Policies
from app.engine.local.prompts import Prompts
from app.engine.local.reply_drafters import reply_drafters
from app.engine.local.reply_prompt import (
    ReplyPrompt,
    chat_prompt,
    completion_prompt,
    completion_tokens,
    led_by,
    reply_markers,
    remember_turn,
    reply_splitter,
)
from app.engine.local.vision.seeing import Seeing
from app.engine.local.thread_governor import ThreadGovernor
from app.engine.placement.gpu_fit import Placement
from app.engine.protocol import CancelSignal, fitted_reply
from app.engine.speculation.costs import CostTable
from app.engine.speculation.drafters import NgramDrafter
from app.engine.speculation.history_file import HistoryBooks, HistoryFile
from app.engine.targets import LocalModel, ServerModel, Target
from app.engine.tools.calls import ToolFormat, reader_text


class SpecEngine:
    """Answers requests with the loaded models. Call from the engine process's main thread only (see module
    docstring)."""

    def __init__(self, load: Optional[LoadSettings] = None, history_file: Optional[HistoryFile] = None):
        """`history_file`: where earlier prompts and replies are kept for the history drafter (the data folder's
        by default)."""
        # Built per engine, not once at import: SPECCHAT_THREADS set after the import still counts.
        self.models = ModelPair(load if load is not None else LoadSettings())
        self.policies = Policies(self.models)
        self._prompts: Optional[Prompts] = None  # the loaded target's
        self._template: Optional[str] = None
        self._conversations: Optional[ConversationCache] = None  # the loaded target's kept KV states
        self._ngram = NgramDrafter()
        self._draft_gone = ""  # why the draft was unloaded (its file gone or replaced), until a reply says it
        self.history_file = history_file if history_file is not None else HistoryFile()
        self.histories = HistoryBooks(self.history_file)  # the loaded target's index of each history book in use
        self._cuts = SessionCuts()
        # Requests decoded side by side when the models hold several sequences (LoadSettings.n_parallel).
        self._batch: Optional[BatchDriver] = None
        self.seeing = Seeing()  # the loaded target's projector, when it can see pictures

    # -- models -------------------------------------------------------------------------------------------------

    @property
    def load_settings(self) -> LoadSettings:
        return self.models.load_settings

    @property
    def target(self) -> Optional[LoadedModel]:
        return self.models.target

    @property
    def draft(self) -> Optional[LoadedModel]:
        return self.models.draft

    @property
    def placement(self) -> Optional[Placement]:
        return self.models.placement

    @property
    def placement_note(self) -> str:
        return self.models.note

    @property
    def governor(self) -> Optional[ThreadGovernor]:
        return self.models.governor

    @property
    def target_path(self) -> Optional[Path]:
        return self.models.target_path

    @property
    def loaded_target(self) -> Optional[LocalModel]:
        path = self.models.target_path
        return LocalModel(path) if path is not None else None

    @property
    def draft_path(self) -> Optional[Path]:
        return self.models.draft_path

    @property
    def n_ctx(self) -> int:
        return self.models.n_ctx

    @property
    def parallel(self) -> int:
        """Requests decoded side by side (1: one at a time; each reply's events then never wait for a step)."""
        return self.models.parallel if self._batch is not None else 1

    def step(self) -> bool:
        """One forward pass over every reply decoded side by side: each yields WaitingEvent until it comes (see
        app.engine.local.batch.driver). False when no reply waits for one."""
        return self._batch.step() if self._batch is not None else False

    def _new_batch(self) -> None:
        target = self.models.target
        self._batch = (
            BatchDriver(target, self.models.draft, self.models.governor)
            if target is not None and self.models.parallel > 1
            else None
        )

    def load_target(self, target: Target | str | Path, planned_draft: str | Path | None = None) -> None:
        """Load (or switch) the target. A loaded draft that is not compatible with the new target is unloaded.

        `planned_draft`: the draft that will be loaded next, so GPU layers on Auto leave room for it first."""
        if isinstance(target, ServerModel):
            raise EngineError(f"{target} is a server's model; this engine loads GGUF files.")
        path = Path(target)
        if self.models.target is not None and self.models.target.path == path:
            return
        self.policies.models_changed()
        self._forget_target()
        self.models.load_target(path, planned_draft)
        loaded = self.models.require_target()
        self._prompts = Prompts(loaded)
        self._template = loaded.metadata("tokenizer.chat_template")  # names the thinking's markers
        s = self.load_settings
        self._conversations = ConversationCache.for_target(
            loaded, s.kept_states_mib, s.saved_states_mib, on_disk=s.saved_states_mib >= 0, n_ctx=self.n_ctx
        )
        self._ngram = NgramDrafter(is_control=loaded.is_control, escape=loaded.json_escaped)
        self.histories.forget()
        self._new_batch()
        self.seeing.offer(mmproj_beside(path), loaded)

    def load_projector(self, path: str | Path | None) -> None:
        """Load (None: unload) the loaded target's projector, its mmproj file, so it reads pictures. Raises
        ModelLoadError for a file that is no projector for this target."""
        self.seeing.load(path, self.models.require_target())

    def offer_projector(self, path: str | Path | None) -> None:
        """The loaded target's projector as chosen in its settings (None: the one beside it, if any), loaded when a
        prompt first holds a picture; the one already offered or loaded is kept as it is."""
        self.seeing.choose(Path(path) if path is not None else None, self.models.require_target())

    @property
    def projector_path(self) -> Optional[Path]:
        return self.seeing.path

    def picture_tokens(self, image: ImageInput) -> Optional[int]:
        """The exact number of tokens `image` takes in this target's prompt (its projector loaded if it lies beside
        the target); None when it cannot be counted here."""
        return self.seeing.picture_tokens(image)

    @property
    def offered_projector(self) -> Optional[Path]:
        """The projector the target reads pictures with, loaded or to be loaded at its first picture."""
        return self.seeing.offered

    def load_draft(self, path: str | Path | None) -> None:
        """Load, switch or (with None) unload the draft. Raises IncompatiblePairError for a mismatched vocabulary."""
        save_all_ended(self._conversations)
        self.policies.models_changed()
        self._batch = None  # its sequences name the old draft's
        self.models.load_draft(path)
        self._new_batch()
        if path is not None:
            self._draft_gone = ""  # a draft chosen again: the old one's news is stale

    def _forget_changed_draft(self) -> None:
        """Unload a draft whose file is gone or was replaced since it loaded, before anything reads it again: its
        costs and kept states are keyed by the file, and a file cut under llama.cpp's mapping kills the process.
        Side by side it waits until no reply runs. Why is kept for the next reply that would have drafted with it."""
        said = self.models.draft_file_change()
        if said and (self._batch is None or not self._batch.busy):
            self.load_draft(None)
        self._draft_gone = said or self._draft_gone

    def reconfigure(self, load: LoadSettings) -> None:
        """Apply new load settings; models are reloaded only if something that matters to them changed."""
        if load == self.models.load_settings:
            return
        target, draft = self.target_path, self.draft_path
        self.unload()
        self.models.load_settings = load
        if target:
            self.load_target(target, planned_draft=draft)
        if draft:
            self.load_draft(draft)

    def unload(self) -> None:
        self.load_draft(None)
        self._forget_target()

    def _forget_target(self) -> None:
        save_all_ended(self._conversations)
        self.seeing.close()
        self.models.close_target()
        self._batch = None
        self._prompts = None
        self._conversations = None
        self.histories.forget()

    def close(self) -> None:
        self.unload()

    # -- kept conversations -------------------------------------------------------------------------------------

    def forget_conversation(self, session: str) -> None:
        """Drop the KV states kept for `session` (a deleted chat), in memory and on disk."""
        if self._conversations is not None:
            self._conversations.forget(session, self._batch.forget if self._batch is not None else None)

    @property
    def conversation_cache(self) -> Optional[ConversationCache]:
        """The loaded target's kept conversations (None before a target is loaded): their budget and use."""
        return self._conversations

    # -- costs --------------------------------------------------------------------------------------------------

    def measure_costs(self, with_draft: bool = True) -> CostTable:
        """What forward passes cost for the loaded models, measured now all at once unless on disk (benchmarks
        want a measured table; replies never wait for one, see idle_step)."""
        return self.policies.measure(with_draft)

    def costs_cached(self, with_draft: bool = True) -> bool:
        """Whether the costs of these models and settings were measured before (on disk)."""
        return self.policies.cached(with_draft)

    def idle_step(self) -> bool:
        """Do one short piece of background work (saving an ended reply's state, or one forward pass of measuring
        the loaded models' costs); False when there is nothing to do now. Call between requests only."""
        self._forget_changed_draft()
        if self._conversations is not None and self._conversations.save_ended():
            return True
        if self._batch is None:
            return self.policies.idle_step()
        return self._batch.idle_work(self.policies.idle_step, self.policies.measuring())

    # -- prompts ------------------------------------------------------------------------------------------------

    @property
    def prompts(self) -> Prompts:
        """The loaded target's prompts; RuntimeError before a target is loaded."""
        if self._prompts is None:
            raise RuntimeError("no target model is loaded")
        return self._prompts

    @property
    def tool_format(self) -> ToolFormat:
        return self._prompts.tool_format if self._prompts is not None else "hermes"

    @property
    def template_notice(self) -> str:
        """Why the model's own chat template could not be used for the last prompt ("" when it could): the chat
        was formatted as ChatML instead, which a front end should tell the user."""
        return self._prompts.template_notice if self._prompts is not None else ""

    def format_chat(self, messages: Sequence[dict]) -> str:
        return self.prompts.render(messages).text

    def count_tokens(self, messages: Sequence[dict], config: Optional[GenerationConfig] = None) -> int:
        if has_images(messages):
            return self.seeing.count_tokens(self.prompts, messages, config)
        return self.prompts.count_tokens(messages, config)

    def fit_messages(
        self, messages: Sequence[dict], reserve_tokens: int, session: str = "default"
    ) -> tuple[list[dict], int]:
        """Drop the oldest turns (never the system prompt, never the last message) until the prompt plus
        `reserve_tokens` fits the context. Returns the kept messages and how many were dropped.

        Within a `session` (one chat), turns dropped for an earlier reply stay dropped while the rest fits, so the
        prompt keeps its start and the KV cache shifts once per cut instead of the chat being read again.
        Raises PromptTooLongError when even the system prompt and the last message alone do not fit.
        """
        return self._cuts.fit(
            messages,
            self.n_ctx - max(1, reserve_tokens),
            self.count_tokens,
            self.n_ctx,
            session,
            estimate=lambda message: message_estimate(message, self.prompts.message_tokens),
        )

    # -- generation ---------------------------------------------------------------------------------------------

    def _run(self, prompt: ReplyPrompt, cancel, request_id: int, session: str) -> Iterator[EngineEvent]:
        """The reply's events. Its grammar is built here, before the first event, so a schema refused (too large,
        or one llama.cpp cannot read) is the caller's error at once, as a 400 is before a stream starts."""
        target = self.models.require_target()
        schema = prompt.config.json_schema
        grammar = target.grammar(schema_grammar(json.loads(schema))) if schema else None
        events = self._events(prompt, cancel, request_id, session, grammar)
        return led_by(prompt.opening, request_id, events) if prompt.opening else events

    def _events(
        self, prompt: ReplyPrompt, cancel, request_id: int, session: str, grammar: Optional[GrammarMask]
    ) -> Iterator[EngineEvent]:
        tokens, text, config, media = prompt.tokens, prompt.text, prompt.config, prompt.media
        prompts = self.prompts
        self._forget_changed_draft()
        if self._draft_gone and config.speculative and config.drafter in ("auto", "model"):
            yield NoticeEvent(request_id, self._draft_gone)  # said once: the reply goes on with n-gram drafts
            self._draft_gone = ""
        drafters = reply_drafters(config, self.models, self._ngram, self.histories, self._batch is not None)
        config, book = drafters.config, drafters.book
        policy = self.policies.for_request(config, session)
        if drafters.notice:
            yield NoticeEvent(request_id, drafters.notice)
        # A prompt with pictures reuses the live cache only (its pictures' placeholders are keyed by their bytes);
        # the kept conversations and the transcripts hold text prompts.
        kept, batch = None, self._batch
        if self._conversations is not None and media is None:
            kept = ReplyUse(self._conversations, tokens, session, config.kept_scope, batch.slots if batch else None)
        hooks = SequenceHooks()
        if kept is not None and batch is not None:  # restored into the sequence the batch gives it, kept at its end
            hooks = SequenceHooks(on_admit=kept.admitted, on_end=kept.ended)
        elif kept is not None:
            notice = kept.restore(self.models.draft)
            if notice:
                yield NoticeEvent(request_id, notice)
        written: list[int] = []
        splitter = reply_splitter(prompt, reply_markers(self._template, config))
        call_pieces: list[str] = []  # the answer with control tokens by name, for reading tool calls
        request = DecodeRequest(
            tokens,
            config,
            policy,
            request_id,
            ngram=drafters.ngram,
            past=drafters.past,
            use_model=drafters.draft is not None,
            grammar=grammar,
            splitter=splitter,
            on_written=written.extend,
            media=media,
        )
        for event in self._decode(request, drafters.draft, cancel, hooks):
            if isinstance(event, RoundEvent):
                self.policies.after_round(policy)
            if config.tools and isinstance(event, TokenEvent) and event.part == "answer":
                call_pieces.append(reader_text(event.text, event.markup, self.tool_format))
            if isinstance(event, FinishedEvent):
                unsaid = kept.take_unsaid() if kept is not None else ""
                if unsaid:
                    yield NoticeEvent(request_id, unsaid)
                if config.tools and "".join(call_pieces) != event.text:
                    event = dataclasses.replace(event, call_text="".join(call_pieces))
                # The history drafter and the next turn's reuse take the reply as its tokens wrote it, thinking and
                # markers too.
                reply = splitter.raw_text
                if kept is not None:  # restoring a kept state is part of reading the prompt
                    event = dataclasses.replace(event, stats=kept.charged(event.stats))
                if book is not None and reply:
                    book.record(session, prompts.new_text(text) + reply)
                remember_turn(prompts, self.seeing, prompt, reply, written)
            yield event
        if kept is not None and self._batch is None:  # side by side, the batch's on_end keeps it
            kept.kept(self.models.draft)

    def _decode(
        self, request: DecodeRequest, draft: Optional[LoadedModel], cancel, hooks: SequenceHooks
    ) -> Iterator[EngineEvent]:
        """The reply's tokens, rounds and finish: decoded alone, or side by side with others (`hooks`: the batch's
        for kept states)."""
        if self._batch is not None:
            return self._batch.reply(request, cancel, hooks)
        return generate(
            self.models.require_target(),
            request,
            draft_model=ModelDrafter(draft) if draft is not None else None,
            cancel=cancel,
            governor=self.governor,
        )

    def chat(
        self,
        messages: Sequence[dict],
        config: GenerationConfig = GenerationConfig(),
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
        session: Optional[str] = None,
    ) -> Iterator[EngineEvent]:
        """Reply to `messages` ([{"role": "system"|"user"|"assistant", "content": str}]).

        When the last message is the assistant's, its reply is continued where it ends (the reply was stopped or
        interrupted). The previous turn's KV cache is reused. Raises PromptTooLongError if the prompt does not fit.
        """
        prompt = chat_prompt(self.prompts, self.seeing, messages, config, reply_markers(self._template, config))
        return self._run(prompt, cancel, request_id, session or config.session)

    def reply(
        self,
        messages: Sequence[dict],
        config: GenerationConfig,
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
    ) -> Iterator[EngineEvent]:
        """The one request path (app.engine.protocol): the context fitted and said, then chat()."""
        return fitted_reply(self, messages, config, cancel=cancel, request_id=request_id)

    def completion_tokens(self, prompt: str | Sequence[int], suffix: Optional[str] = None) -> list[int]:
        """The tokens of a raw completion's prompt (text, or token ids as they are); with `suffix`, the model's
        fill-in-the-middle prompt (reply_prompt.completion_tokens)."""
        self.models.require_target()
        return completion_tokens(self.prompts, prompt, suffix)

    def complete(
        self,
        prompt: str | Sequence[int],
        config: GenerationConfig = GenerationConfig(),
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
        session: Optional[str] = None,
    ) -> Iterator[EngineEvent]:
        """Continue raw `prompt` text (no chat template), or a prompt's token ids (completion_tokens)."""
        self.models.require_target()
        return self._run(completion_prompt(self.prompts, prompt, config), cancel, request_id, session or config.session)
