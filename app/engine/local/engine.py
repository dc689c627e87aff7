"""SpecEngine: the target and draft models, the conversation's KV cache, and one entry point per kind of request.

Every method must be called from one thread, the engine process's main thread, which owns the models. Only the
`cancel` event passed to `chat`/`complete` may be set from another thread; generation stops within one round.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator, Optional, Sequence

from app.engine.placement import rpc
from app.engine.local.chat_format import CHATML, RenderedPrompt, prepare_template, raw_prompt, render_prompt
from app.engine.gguf.compat import compatibility
from app.engine.config import GPU_LAYERS_ALL, GPU_LAYERS_AUTO, GenerationConfig, LoadSettings
from app.engine.local.context_fit import SessionCuts
from app.engine.speculation.controller import AutoController
from app.engine.speculation.cost_measurement import CostMeasurement
from app.engine.local.engine_costs import EngineCosts
from app.engine.local.decoder import generate
from app.engine.speculation.drafters import ModelDrafter, NgramDrafter
from app.engine.speculation.history import HistoryDrafter
from app.engine.speculation.history_file import HistoryFile, HistorySync, history_path
from app.engine.errors import EngineError, IncompatiblePairError
from app.engine.events import NoticeEvent, EngineEvent, FinishedEvent, RoundEvent
from app.engine.protocol import CancelSignal, fitted_reply
from app.engine.targets import ServerModel, Target
from app.engine.placement.gpu_fit import Placement, resolve as resolve_placement
from app.engine.local.llama_model import LoadedModel
from app.engine.local.thread_governor import ThreadGovernor
from app.platform.cpu_load import CpuLoad
from app.platform.machine_defaults import logical_cpus
from app.engine.speculation.policy import FixedPolicy, SpeculationPolicy
from app.engine.local.prompt_tokens import tokenize_prompt


# The per-message token counts kept for fitting long chats (about 1,000 chats' worth of recent messages).
CONTENT_TOKENS_CACHED = 20000
# The most of a prompt that does not continue the last request (a regenerated reply, another chat) kept in history:
# its end, where the user's new message is; the rest was kept when it was written.
PROMPT_TAIL_CHARS = 4000
# What a chat template adds around one message (<|im_start|>role\n ... <|im_end|>\n in ChatML): an estimate, the
# exact count of the fitted prompt checks it.
MESSAGE_MARKUP_TOKENS = 6


class SpecEngine(EngineCosts):
    """Owns the models. Call from the engine process's main thread only (see module docstring)."""

    def __init__(self, load: Optional[LoadSettings] = None, history_file: Optional[HistoryFile] = None):
        """`history_file`: where earlier prompts and replies are kept for the history drafter (the data folder's
        by default)."""
        # Built per engine, not once at import: SPECCHAT_THREADS set after the import still counts.
        self.load_settings = load if load is not None else LoadSettings()
        self.target: Optional[LoadedModel] = None
        self.draft: Optional[LoadedModel] = None
        self._chat_template: Optional[str] = None
        self._template_fallback = ""  # the notice of a chat template that failed, once it has
        self._ngram = NgramDrafter()
        self.history_file = history_file if history_file is not None else HistoryFile()
        # The loaded target's index of each history book in use: "person" (history_file), "api" (API clients' own).
        self._histories: dict[str, HistorySync] = {}
        # The exact text and tokens of the last request plus its reply: the next turn of the same conversation
        # extends this text, so its tokens are reused instead of re-tokenising (which could split differently
        # and force the whole conversation to be evaluated again).
        self._transcript_text = ""
        self._transcript_tokens: list[int] = []
        self._policies: dict[tuple, SpeculationPolicy] = {}  # (session, drafter, target, draft) -> its policy
        self._cuts = SessionCuts()
        self._content_tokens: dict[str, int] = {}  # message text -> its token count, oldest entry first
        # Where the loaded models' layers run, with GPU layers on Auto resolved (app.engine.placement.gpu_fit), and the same
        # in words for the window: what Auto chose and why, or that this build has no GPU backend.
        self.placement: Optional[Placement] = None
        self.placement_note = ""
        self._planned_draft: Optional[Path] = None
        self._measurement: Optional[CostMeasurement] = None  # measuring costs in idle time (idle_step)
        self.governor: Optional[ThreadGovernor] = None  # threads on Auto: the count that follows the load

    # -- models -------------------------------------------------------------------------------------------------

    @property
    def target_path(self) -> Optional[Path]:
        return self.target.path if self.target else None

    @property
    def draft_path(self) -> Optional[Path]:
        return self.draft.path if self.draft else None

    @property
    def n_ctx(self) -> int:
        return self.target.n_ctx if self.target else self.load_settings.n_ctx

    def load_target(self, target: Target | str | Path, planned_draft: str | Path | None = None) -> None:
        """Load (or switch) the target. A loaded draft that is not compatible with the new target is unloaded.

        `planned_draft`: the draft that will be loaded next, so GPU layers on Auto leave room for it first."""
        if isinstance(target, ServerModel):
            raise EngineError(f"{target} is a server's model; this engine loads GGUF files.")
        path = Path(target)
        if self.target is not None and self.target.path == path:
            return
        self._measurement = None
        self._close_target()
        s = self.load_settings
        draft_path = self.draft.path if self.draft is not None else planned_draft
        self.placement = resolve_placement(
            path, draft_path, s.n_ctx, s.target_gpu_layers, s.draft_gpu_layers,
            draft_resident=self.draft.n_gpu_layers if self.draft is not None else None)
        self.placement_note = self.placement.explanation
        self._planned_draft = Path(planned_draft) if self.draft is None and planned_draft is not None else None
        target_devices, _draft_devices = self._devices()
        target_layers = self.placement.target_layers
        if s.rpc_servers:
            target_layers = GPU_LAYERS_ALL if s.target_gpu_layers == GPU_LAYERS_AUTO else s.target_gpu_layers
            self.placement = dataclasses.replace(self.placement, target_layers=target_layers)
            self.placement_note = (f"Target spread over RPC workers {', '.join(s.rpc_servers)} (by their free "
                                   f"memory); draft on this machine. {rpc.TRUSTED_NETWORK_ONLY}")
        self.target = LoadedModel(path, n_ctx=s.n_ctx, n_threads=s.threads, n_gpu_layers=target_layers,
                                  devices=target_devices)
        self.governor = (ThreadGovernor(s.threads, self._set_threads, CpuLoad(), logical_cpus())
                         if s.adaptive_threads else None)
        self._chat_template = self.target.metadata("tokenizer.chat_template")
        self._template_fallback = ""
        # Work every first prompt needs, done while loading rather than while the user waits for a reply.
        prepare_template(self._chat_template)
        self.target.control_tokens()
        self._ngram = NgramDrafter(is_control=self.target.is_control)
        self._histories = {}
        if self.draft is not None and not self._compatible(self.draft.path)[0]:
            self.load_draft(None)

    def load_draft(self, path: str | Path | None) -> None:
        """Load, switch or (with None) unload the draft. Raises IncompatiblePairError for a mismatched vocabulary."""
        self._measurement = None  # it measures the pair it started with
        if path is None:
            if self.draft is not None:
                self.draft.close()
                self.draft = None
                if self.placement is not None:
                    self.placement = dataclasses.replace(self.placement, draft_layers=0)
            return
        path = Path(path)
        if self.draft is not None and self.draft.path == path:
            return
        if self.target is not None:
            compatible, reason = self._compatible(path)
            if not compatible:
                raise IncompatiblePairError(f"{path.name} cannot draft for {self.target.path.name}: {reason}")
        if self.draft is not None:
            self.draft.close()
            self.draft = None
        s = self.load_settings
        if self.target is not None and self.placement is not None and self._planned_draft == path:
            placement = self.placement  # room for this draft was kept when the target was placed
        elif self.target is not None:
            placement = resolve_placement(self.target.path, path, self.n_ctx, s.target_gpu_layers,
                                          s.draft_gpu_layers, target_resident=self.target.n_gpu_layers)
        else:
            placement = resolve_placement(path, None, self.n_ctx, s.draft_gpu_layers, GPU_LAYERS_AUTO)
            placement = Placement(0, placement.target_layers, placement.explanation, placement.backends)
        self._planned_draft = None
        _target_devices, draft_devices = self._devices()
        self.draft = LoadedModel(path, n_ctx=self.n_ctx, n_threads=s.threads, n_gpu_layers=placement.draft_layers,
                                 devices=draft_devices)
        if self.target is not None and self.target.n_threads != s.threads:
            self.draft.set_threads(self.target.n_threads)  # the load's count now, as the governor chose it
        self.placement = placement
        if not s.rpc_servers:
            self.placement_note = placement.explanation

    def _set_threads(self, n_threads: int) -> None:
        for model in (self.target, self.draft):
            if model is not None:
                model.set_threads(n_threads)

    def _devices(self) -> tuple[Optional[tuple[int, ...]], Optional[tuple[int, ...]]]:
        """The devices the target and the draft may use: None (llama.cpp's own choice) until RPC workers are
        registered in this process; then explicitly the chosen workers plus local GPUs, and local GPUs only."""
        workers = rpc.register(self.load_settings.rpc_servers)
        if not rpc.any_registered():
            return None, None
        local = rpc.local_offload_devices()
        return workers + local, local

    def _compatible(self, draft_path: Path) -> tuple[bool, str]:
        result = compatibility(self.target.path, draft_path)
        return result.compatible, result.reason

    def reconfigure(self, load: LoadSettings) -> None:
        """Apply new load settings; models are reloaded only if something that matters to them changed."""
        if load == self.load_settings:
            return
        target, draft = self.target_path, self.draft_path
        self.unload()
        self.load_settings = load
        if target:
            self.load_target(target, planned_draft=draft)
        if draft:
            self.load_draft(draft)

    def unload(self) -> None:
        self.load_draft(None)
        self._close_target()

    def _close_target(self) -> None:
        if self.target is not None:
            self.target.close()
            self.target = None
            self.governor = None
        self._histories = {}
        self._transcript_text = ""
        self._transcript_tokens = []
        self._content_tokens.clear()  # counts from another model's tokenizer

    def close(self) -> None:
        self.unload()

    # -- prompts ------------------------------------------------------------------------------------------------

    def _require_target(self) -> LoadedModel:
        if self.target is None:
            raise RuntimeError("no target model is loaded")
        return self.target

    # Why the model's own chat template could not be used for the last prompt ("" when it could): the chat was
    # formatted as ChatML instead, which a front end should tell the user.
    template_notice: str = ""

    def format_chat(self, messages: Sequence[dict]) -> str:
        return self._render(messages).text

    def _render(self, messages: Sequence[dict], config: Optional[GenerationConfig] = None) -> RenderedPrompt:
        target = self._require_target()
        bos = target.token_text(target.bos_id) if target.bos_id >= 0 else ""
        eos = target.token_text(target.eos_id) if target.eos_id >= 0 else ""
        chosen = config.chat_format if config is not None else "model"
        if chosen == "raw":
            return raw_prompt(messages)
        if chosen == "template" and config is not None:
            return render_prompt(config.chat_template or CHATML, messages, bos_token=bos, eos_token=eos)
        rendered = render_prompt(self._chat_template, messages, bos_token=bos, eos_token=eos)
        if rendered.notice:
            # A template that failed once is not run again for this model: each try could cost its whole time
            # budget, and its reason may differ from try to try (time or output cap), which would read as news.
            self._chat_template, self._template_fallback = None, rendered.notice
        self.template_notice = self._template_fallback
        text, markup = rendered.text, rendered.markup
        if target.add_bos and bos and text.startswith(bos):
            # tokenize() adds BOS itself; a second one would confuse the model
            cut = len(bos)
            text = text[cut:]
            markup = tuple((max(0, a - cut), b - cut) for a, b in markup if b > cut)
        return RenderedPrompt(text, markup, rendered.notice)

    def _tokens_for(self, text: str, markup: Optional[Sequence[tuple[int, int]]] = None) -> list[int]:
        """Tokens for a prompt. With `markup` (a chat prompt) only those spans may hold control tokens; without
        (raw text for `complete`) every literal control token in the text counts."""
        target = self._require_target()
        reuse = bool(self._transcript_tokens) and text.startswith(self._transcript_text)
        if markup is not None:
            start = len(self._transcript_text) if reuse else 0
            tail = tokenize_prompt(target, text, markup, start=start, add_bos=not reuse)
            return self._transcript_tokens + tail if reuse else tail
        if reuse:
            rest = text[len(self._transcript_text):]
            return self._transcript_tokens + target.tokenize(rest, add_special=False)
        return target.tokenize(text, add_special=True)

    def count_tokens(self, messages: Sequence[dict]) -> int:
        # Counted with the model's own format (ChatML where it has none): for raw completion, which writes no
        # markup, that is a little more than the prompt takes, so what fits by this count fits.
        rendered = self._render(messages)
        return len(self._tokens_for(rendered.text, rendered.markup))

    def fit_messages(self, messages: Sequence[dict], reserve_tokens: int,
                     session: str = "default") -> tuple[list[dict], int]:
        """Drop the oldest turns (never the system prompt, never the last message) until the prompt plus
        `reserve_tokens` fits the context. Returns the kept messages and how many were dropped.

        Within a `session` (one chat), turns dropped for an earlier reply stay dropped while the rest fits, so the
        prompt keeps its start and the KV cache shifts once per cut instead of the chat being read again.
        Raises PromptTooLongError when even the system prompt and the last message alone do not fit.
        """
        return self._cuts.fit(messages, self.n_ctx - max(1, reserve_tokens), self.count_tokens, self.n_ctx,
                              session, estimate=self._message_tokens)

    def _message_tokens(self, message: dict) -> int:
        """About how many prompt tokens one message takes: its text's tokens (counted once, then cached) and a
        few for the template's markup around it."""
        content = str(message.get("content", ""))
        n = self._content_tokens.get(content)
        if n is None:
            n = len(self._require_target().tokenize(content, add_special=False, parse_special=False))
            if len(self._content_tokens) >= CONTENT_TOKENS_CACHED:
                self._content_tokens.pop(next(iter(self._content_tokens)))
            self._content_tokens[content] = n
        return n + MESSAGE_MARKUP_TOKENS

    # -- generation ---------------------------------------------------------------------------------------------

    def _policy_for(self, config: GenerationConfig, session: str) -> SpeculationPolicy:
        drafter = config.drafter
        if drafter == "auto":
            drafter = "model" if self.draft is not None else "ngram"
        if drafter == "model" and self.draft is None:
            drafter = "ngram"
        if drafter == "history" and config.draft_max is None:
            drafter = "ngram"  # auto drafts from history beside n-gram lookup anyway
        if config.draft_max is not None:
            return FixedPolicy(config.draft_max, drafter)
        key = (session, drafter, self.target_path, self.draft_path)
        if key not in self._policies:
            self._policies[key] = AutoController(self._costs_now(with_draft=drafter == "model"), drafter)
        return self._policies[key]

    def _run(
        self, tokens: list[int], text: str, config: GenerationConfig, cancel, request_id: int, session: str
    ) -> Iterator[EngineEvent]:
        target = self._require_target()
        policy = self._policy_for(config, session)
        use_model = self.draft is not None and config.drafter in ("auto", "model")
        use_ngram = config.drafter in ("auto", "ngram", "history") or not use_model
        self._ngram.min_match = config.ngram_min_match if config.draft_max is not None else 0
        book = self._history_book(config.history_book) if config.history else None
        past = book if config.speculative else None
        if past is not None:
            past.refresh()  # what other processes added, or forgot when a chat was deleted
        elif book is not None:
            book.file.version()  # opened now, so a damaged file is found (and said) before the reply, not after
        told = book.file.take_notice() if book is not None else ""
        if told:  # a damaged file set aside, or history off: said once, and the reply goes on
            yield NoticeEvent(request_id, told)
        history: list[int] = []
        for event in generate(
            target,
            tokens,
            config,
            policy,
            draft_model=ModelDrafter(self.draft) if use_model else None,
            ngram=self._ngram if use_ngram else None,
            past=past.drafter if past is not None else None,
            cancel=cancel,
            request_id=request_id,
            on_history=history.extend,
            governor=self.governor,
        ):
            if isinstance(event, RoundEvent) and isinstance(policy, AutoController) and policy.online.table_stale:
                self._drop_stale_costs()
            if isinstance(event, FinishedEvent):
                if book is not None and event.text:
                    book.record(session, self._new_text(text) + event.text)
                self._transcript_tokens = history
                self._transcript_text = text + event.text
            yield event

    def _history_book(self, name: str) -> Optional[HistorySync]:
        """The loaded target's index of history book `name`, made on first use; None with no target."""
        if self.target is None:
            return None
        if name not in self._histories:
            target = self.target
            file = self.history_file if name == "person" else HistoryFile(history_path(name))
            self._histories[name] = HistorySync(file, HistoryDrafter(),
                                                lambda text: target.tokenize(text, add_special=False,
                                                                             parse_special=True))
        return self._histories[name]

    def _new_text(self, text: str) -> str:
        """What of a request's text history has not seen: past the last request and its reply when it goes on
        from them, else its end."""
        if self._transcript_text and text.startswith(self._transcript_text):
            return text[len(self._transcript_text):]
        return text[-PROMPT_TAIL_CHARS:]

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
        if messages and messages[-1].get("role") == "assistant":
            # The partial reply is model text, not markup: it is appended after the generation prompt as text.
            rendered = self._render(messages[:-1], config)
            rendered = RenderedPrompt(rendered.text + messages[-1]["content"], rendered.markup, rendered.notice)
        else:
            rendered = self._render(messages, config)
        tokens = self._tokens_for(rendered.text, rendered.markup)
        return self._run(tokens, rendered.text, config, cancel, request_id, session or config.session)

    def reply(self, messages: Sequence[dict], config: GenerationConfig, *, cancel: Optional[CancelSignal] = None,
              request_id: int = 0) -> Iterator[EngineEvent]:
        """The one request path (app.engine.protocol): the context fitted and said, then chat()."""
        return fitted_reply(self, messages, config, cancel=cancel, request_id=request_id)

    def complete(
        self,
        prompt: str,
        config: GenerationConfig = GenerationConfig(),
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
        session: Optional[str] = None,
    ) -> Iterator[EngineEvent]:
        """Continue raw `prompt` text (no chat template)."""
        tokens = self._tokens_for(prompt)
        return self._run(tokens, prompt, config, cancel, request_id, session or config.session)
