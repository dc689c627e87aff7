"""RemoteEngine: a ChatEngine whose model runs on an OpenAI-compatible server (llama-server, vLLM, LM Studio, ...).

A remote model is named by a ServerModel (app.engine.targets: the server's base URL and the model's id), where a
local model is a LocalModel (its file). The server formats the chat and, for llama-server started with a draft model, speculates
itself: speculation is configured on the server, so this engine has no draft of its own. With llama-server, the
per-token timings it streams tell which tokens its draft proposed (app.engine.remote.server_drafts), so a remote
reply is highlighted and counted like a local one; other servers give tok/s and whatever totals they report.

A thinking model's reasoning comes as the server parsed it, in `reasoning_content` or `reasoning` beside the
content (app.engine.remote.chunks): its tokens are TokenEvents with part "reasoning", its text the FinishedEvent's
`reasoning`, its counts the stats' reasoning_* (drafts among them where llama-server's counters tell). The request's
thinking settings go to the server as the chat template's variables (`chat_template_kwargs`), and
`reasoning_effort`, which OpenAI, vLLM and llama-server read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.errors import EngineError, PromptFormatError
from app.engine.events import EngineEvent, FinishedEvent
from app.engine.context_fit import SessionCuts
from app.engine.image_files import has_images, message_estimate
from app.engine.remote.http import check_model, server_props, silent_stream_s, stream_chat
from app.engine.remote.reply_stream import RemoteReply, reply_deadline_s
from app.engine.remote.server_errors import display_url
from app.engine.reasoning.markers import markers_for
from app.engine.reasoning.splitter import ReplySplitter, split_reply
from app.engine.remote.tool_calls import wire_message
from app.engine.protocol import fitted_reply
from app.engine.targets import ServerModel, Target
from app.engine.tools.calls import ToolFormat

# Servers that speak llama-server's fields (timings_per_token, top_k, min_p, /props): llama-server itself, and
# SpecChat's own API (app/serve).
LLAMA_SERVER_OWNERS = ("llamacpp", "specchat")
# Without the server's tokenizer, prompt sizes are estimated (for fitting the context and the usage label).
_CHARS_PER_TOKEN = 3
_TOKENS_PER_MESSAGE = 4
# A server's context size is shown and used to fit prompts: anything above this is its error.
MAX_SERVER_N_CTX = 1 << 24


def _text_estimate(message: dict) -> int:
    return _TOKENS_PER_MESSAGE + len(str(message.get("content", ""))) // _CHARS_PER_TOKEN


def _template_kwargs(text: str) -> dict:
    """GenerationConfig.template_kwargs (the JSON text of an object) as a dict; {} for none or for anything else."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return dict(value) if isinstance(value, dict) else {}


class RemoteEngine:
    """ChatEngine for a model on a server. `api_key_for(url)` gives the key to send (None for none)."""

    def __init__(
        self,
        load: LoadSettings = LoadSettings(),
        api_key_for: Optional[Callable[[str], Optional[str]]] = None,
        read_timeout_s: Optional[float] = None,
        reply_deadline_s: Optional[float] = None,
    ):
        if api_key_for is None:
            from app.engine.remote.server_keys import api_key_for as saved_key_for

            api_key_for = saved_key_for
        self._api_key_for: Callable[[str], Optional[str]] = api_key_for
        self._load = load
        self._read_timeout_s = read_timeout_s
        self._reply_deadline_s = reply_deadline_s
        self._target: Optional[ServerModel] = None
        self._cuts = SessionCuts()
        self._url = ""
        self._model = ""
        self._llama_server = False
        self._n_ctx = load.n_ctx
        self.placement_note = ""
        self.template_notice = ""
        self.tool_format: ToolFormat = "hermes"  # how its calls are given back as text (see _call_text)

    # -- models -------------------------------------------------------------------------------------------------

    @property
    def loaded_target(self) -> Optional[ServerModel]:
        return self._target

    @property
    def draft_path(self) -> Optional[Path]:
        return None

    @property
    def n_ctx(self) -> int:
        return self._n_ctx

    def load_target(self, target: Target, planned_draft=None) -> None:
        """Check the server offers the model (so a wrong name or key is said at once, not at the first reply)."""
        if not isinstance(target, ServerModel):
            raise EngineError(f"{target} is not a server model.")
        url, model = target.url, target.model
        key = self._api_key_for(url)
        entry = check_model(url, model, key)
        self._url, self._model, self._target = url, model, target
        self._llama_server = entry.owned_by in LLAMA_SERVER_OWNERS
        self._n_ctx = self._load.n_ctx
        if self._llama_server:
            settings = server_props(url, key).get("default_generation_settings")
            n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
            if isinstance(n_ctx, int) and not isinstance(n_ctx, bool) and 0 < n_ctx <= MAX_SERVER_N_CTX:
                self._n_ctx = n_ctx
        kind = "llama-server" if self._llama_server else "server"
        self.placement_note = f"On the {kind} at {display_url(url)} (speculation, if any, is set up on the server)"

    def load_draft(self, path) -> None:
        if path is not None:
            raise EngineError(
                "A server's model speculates with the draft the server was started with "
                "(llama-server -md DRAFT); choose no draft model for it."
            )

    def unload(self) -> None:
        self._target = None
        self.placement_note = ""

    def reconfigure(self, load: LoadSettings) -> None:
        self._load = load
        if not self._llama_server:
            self._n_ctx = load.n_ctx

    def idle_step(self) -> bool:
        return False  # the server decides its own speculation: nothing to measure here

    @property
    def parallel(self) -> int:
        return 1  # a reply streams from its server as it comes, one request at a time here

    def step(self) -> bool:
        return False

    def close(self) -> None:
        self.unload()

    # -- prompts ------------------------------------------------------------------------------------------------

    def count_tokens(self, messages: Sequence[dict], config: Optional[GenerationConfig] = None) -> int:
        """An estimate: the server's tokenizer is not at hand (the tools' schema counted as text, a picture as
        PICTURE_TOKENS_ESTIMATE)."""
        tools = len(config.tools) // _CHARS_PER_TOKEN if config is not None and config.tools else 0
        return tools + sum(message_estimate(m, _text_estimate) for m in messages)

    def fit_messages(
        self, messages: Sequence[dict], reserve_tokens: int, session: str = "default"
    ) -> tuple[list[dict], int]:
        # The server caches by prompt prefix: keeping the same turns dropped between cuts keeps that prefix.
        return self._cuts.fit(messages, self.n_ctx - max(1, reserve_tokens), self.count_tokens, self.n_ctx, session)

    # -- generation ---------------------------------------------------------------------------------------------

    def request_body(self, messages: Sequence[dict], config: GenerationConfig) -> dict:
        body: dict = {
            "model": self._model,
            "messages": [wire_message(m) for m in messages],
            "stream": True,
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
        }
        if config.seed is not None:
            body["seed"] = config.seed
        for name, off in (("presence_penalty", 0.0), ("frequency_penalty", 0.0), ("repeat_penalty", 1.0)):
            if getattr(config, name) != off:
                body[name] = getattr(config, name)  # repeat_penalty: llama-server's own field
        if config.tools:
            body["tools"] = json.loads(config.tools)
            if config.tool_choice:
                body["tool_choice"] = (
                    "required"
                    if config.tool_choice == "required"
                    else {"type": "function", "function": {"name": config.tool_choice}}
                )
        if config.json_schema:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": json.loads(config.json_schema)},
            }
        if self._llama_server:
            # llama-server's own fields; other servers may refuse fields they do not know.
            body.update({"top_k": config.top_k, "min_p": config.min_p, "timings_per_token": True})
        body.update(self._thinking_fields(config))
        return body

    def _thinking_fields(self, config: GenerationConfig) -> dict:
        """The request's thinking settings as the server's fields; {} where it asks for the server's defaults (a
        server that knows none of these fields, such as OpenAI's own, refuses them)."""
        fields: dict = {}
        kwargs = _template_kwargs(config.template_kwargs)
        if config.thinking is not None:
            kwargs["enable_thinking"] = config.thinking
        if config.reasoning_effort:
            fields["reasoning_effort"] = config.reasoning_effort
            if self._llama_server:
                kwargs.setdefault("reasoning_effort", config.reasoning_effort)  # gpt-oss's template reads it
        if kwargs:
            fields["chat_template_kwargs"] = kwargs
        if self._llama_server:
            if config.thinking_budget > 0:
                fields["thinking_budget_tokens"] = config.thinking_budget
            if config.reasoning_format == "none":
                fields["reasoning_format"] = "none"  # the thinking and its tags stay in the content
        return fields

    def chat(
        self,
        messages: Sequence[dict],
        config: GenerationConfig = GenerationConfig(),
        *,
        cancel=None,
        request_id: int = 0,
    ) -> Iterator[EngineEvent]:
        if self._target is None:
            raise EngineError("No model is loaded. Choose a model above.")
        if config.logprobs:
            raise PromptFormatError(
                "Log-probabilities come from a local GGUF model only; this model runs on another server."
            )
        body = self.request_body(messages, config)
        # A server with no reasoning parser (llama-server --reasoning-format none, a plain proxy) sends
        # `<think>...</think>` inside `content`: the splitter tells those tokens apart as the local engine's does,
        # and passes what the server already sent as reasoning_content as it is.
        events = self._stream(body, cancel, request_id, has_images(messages))
        if config.reasoning_format == "none":
            return events
        return _thinking_told(events, ReplySplitter(markers_for(None, config.reasoning_markers), ids=False))

    def completion_tokens(self, prompt: str | Sequence[int], suffix: Optional[str] = None) -> list[int]:
        raise PromptFormatError(
            "Raw completions (/v1/completions) run on a local GGUF model only; this model runs "
            "on another server: ask that server directly."
        )

    def complete(
        self,
        prompt: str | Sequence[int],
        config: GenerationConfig = GenerationConfig(),
        *,
        cancel=None,
        request_id: int = 0,
    ) -> Iterator[EngineEvent]:
        self.completion_tokens(prompt)
        return iter(())

    def reply(
        self, messages: Sequence[dict], config: GenerationConfig, *, cancel=None, request_id: int = 0
    ) -> Iterator[EngineEvent]:
        """The one request path (app.engine.protocol): the context fitted and said, then chat(). Pictures go to the
        server as data: URLs; a server whose model cannot see refuses them, and its reason is said."""
        return fitted_reply(self, messages, config, cancel=cancel, request_id=request_id)

    def _stream(self, body: dict, cancel, request_id: int, pictures: bool = False) -> Iterator[EngineEvent]:
        max_tokens = max(1, int(body["max_tokens"]))
        deadline_s = self._reply_deadline_s if self._reply_deadline_s is not None else reply_deadline_s(max_tokens)
        kwargs = {} if self._read_timeout_s is None else {"read_timeout_s": self._read_timeout_s}
        silent_s = silent_stream_s()
        reply = RemoteReply(request_id, max_tokens, display_url(self._url), silent_s)
        events = stream_chat(
            self._url,
            body,
            self._api_key_for(self._url),
            cancel,
            deadline_s=deadline_s,
            silent_s=silent_s,
            pictures=pictures,
            **kwargs,
        )
        try:
            for event in events:
                yield from reply.read(event)
                if reply.ended:
                    break
        finally:
            events.close()  # shuts the connection at once when the reply ended early
        if cancel is not None and cancel.is_set():
            return
        yield from reply.finish()


def _thinking_told(events: Iterator[EngineEvent], splitter: ReplySplitter) -> Iterator[EngineEvent]:
    """A server's reply with `<think>` in its content told apart by `splitter`. Where the server split the reply
    itself (reasoning_content), its FinishedEvent stands as it is: its counts are the server's own (usage)."""
    inner: list[FinishedEvent] = []

    def watched() -> Iterator[EngineEvent]:
        for event in events:
            if isinstance(event, FinishedEvent):
                inner.append(event)
            yield event

    for event in split_reply(watched(), splitter):
        if isinstance(event, FinishedEvent) and inner and inner[-1].reasoning:
            event = inner[-1]
        yield event
