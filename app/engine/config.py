"""Settings records for loading models and for one generation request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

from app.platform.machine_defaults import (
    BATCH_AUTO,
    GPU_LAYERS_ALL,
    GPU_LAYERS_AUTO,
    THREADS_AUTO,
    default_threads,
    resolve_batch,
    resolve_threads,
)

__all__ = [
    "BATCH_AUTO",
    "FLASH_ATTN_CHOICES",
    "GPU_LAYERS_ALL",
    "GPU_LAYERS_AUTO",
    "KV_TYPES",
    "MAX_DRAFT",
    "MAX_OUTPUT_ROWS",
    "MAX_PARALLEL",
    "PARALLEL_AUTO",
    "THREADS_AUTO",
    "DrafterChoice",
    "FlashAttn",
    "GenerationConfig",
    "KvType",
    "LoadSettings",
    "ReasoningEffort",
    "ReasoningFormat",
    "default_threads",
    "load_settings_problem",
]

# What a request asks to draft with: "auto" (the draft model when one is loaded, n-gram lookup otherwise).
DrafterChoice = Literal["auto", "model", "ngram", "history"]
HistoryBook = Literal["person", "api"]
# How a conversation becomes the prompt: the model file's own template (ChatML where it has none or it fails);
# a template the user chose (GenerationConfig.chat_template: a built-in one or a file's); or raw completion, the
# messages' text alone, for a base model that was never taught a chat format.
ChatFormat = Literal["model", "template", "raw"]
# What becomes of a thinking model's reasoning: "split" tells it apart from the answer (TokenEvent.part); "none"
# leaves the markers and the thinking in the answer's text, as llama-server's --reasoning-format none does.
ReasoningFormat = Literal["split", "none"]
ReasoningEffort = Literal["", "low", "medium", "high"]
# Flash attention as llama.cpp's flash_attn_type: "auto" lets it choose per device (on where the backend has it).
FlashAttn = Literal["auto", "on", "off"]
FLASH_ATTN_CHOICES: tuple[FlashAttn, ...] = ("auto", "on", "off")
# The KV cache's element type, for keys and values alike: f16 (llama.cpp's default), or quantized to about a half
# (q8_0) or a quarter (q4_0) of the memory, at a small cost in quality.
KvType = Literal["f16", "q8_0", "q4_0"]
KV_TYPES: tuple[KvType, ...] = ("f16", "q8_0", "q4_0")

# The most logit rows one decode may return (app.engine.local.llama_model sizes llama.cpp's output buffer by it, not
# by n_ctx, so memory stays at a few MB even with a 152k vocab): the longest verify batch fits with room to spare.
MAX_OUTPUT_ROWS = 64
PARALLEL_AUTO = 0
MAX_PARALLEL = 16  # the most requests a setting may ask to decode side by side
# The longest draft: verifying k drafted tokens decodes k + 1 rows with logits, and llama.cpp aborts the process
# when one decode asks for more rows than the context was made for (n_outputs_max).
MAX_DRAFT = MAX_OUTPUT_ROWS - 1


@dataclass(frozen=True)
class LoadSettings:
    """How models are loaded. Changing any of these means reloading the models."""

    n_ctx: int = 4096
    # THREADS_AUTO (0): the physical performance cores, fewer while another program keeps a core busy
    # (app.engine.local.thread_governor); a number is used as it is, whatever the load.
    n_threads: int = THREADS_AUTO
    target_gpu_layers: int = GPU_LAYERS_AUTO
    draft_gpu_layers: int = GPU_LAYERS_AUTO
    # llama.cpp RPC workers ("host:port") the target's layers are spread over; the draft stays on this machine.
    rpc_servers: tuple[str, ...] = ()
    # The most memory (MiB) recent conversations' KV caches are kept in (app.engine.local.kv_states.conversation_cache); 0:
    # Auto, a quarter of the memory available when the model loads, 256 MiB to 4 GiB.
    kept_states_mib: int = 0
    # The most disk (MiB) long conversations' saved states take in the data folder; 0: Auto (2 GiB); -1: none.
    saved_states_mib: int = 0
    # Tokens of a prompt read per forward pass; BATCH_AUTO (0): app.platform.machine_defaults.default_batch.
    n_batch: int = BATCH_AUTO
    flash_attn: FlashAttn = "auto"
    kv_type: KvType = "f16"
    # mmap: the weights are mapped from the file (pages read as needed, shared with the page cache); off, they
    # are read into memory. mlock: the weights are locked in RAM, never swapped out.
    mmap: bool = True
    mlock: bool = False
    # Requests decoded side by side in one batch (app.engine.local.batch); PARALLEL_AUTO (0): from memory, up to 4
    # whose KV caches at the full context fit the memory share kept conversations get (batch.sequences), what
    # `serve` and the window ask for by default. 1, the default here (tools, benchmarks, tests), answers one at a
    # time and keeps conversation states, which restore into one sequence only.
    n_parallel: int = 1

    @property
    def batch(self) -> int:
        """The batch models load with: Auto resolved."""
        return resolve_batch(self.n_batch)

    def problem(self) -> str:
        """Why llama.cpp would refuse these settings, in a sentence; "" when it would not."""
        return load_settings_problem(self.flash_attn, self.kv_type)

    @property
    def threads(self) -> int:
        """The thread count models load with: Auto resolved (the most the engine uses)."""
        return resolve_threads(self.n_threads)

    @property
    def adaptive_threads(self) -> bool:
        return self.n_threads < 1


def load_settings_problem(flash_attn: str, kv_type: str) -> str:
    """llama.cpp refuses a quantized V cache without flash attention (its context creation fails): one sentence."""
    if kv_type != "f16" and flash_attn == "off":
        return (
            f"A {kv_type} KV cache needs flash attention: llama.cpp cannot read a quantized cache without it. "
            "Turn flash attention on (or Auto), or keep the cache at f16."
        )
    return ""


@dataclass(frozen=True)
class GenerationConfig:
    """One request. The same sampling settings are applied to target and draft distributions."""

    max_tokens: int = 512
    temperature: float = 0.0
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    seed: Optional[int] = None
    speculative: bool = True
    # "auto": the draft model when one is loaded, n-gram prompt lookup otherwise (history beside either); "model";
    # "ngram"; "history" (fixed-length drafts from history, n-gram lookup where history has nothing).
    drafter: DrafterChoice = "auto"
    # None means "auto": the speculation controller picks k each round. An int fixes k (for experiments); it is
    # clamped to 0..MAX_DRAFT, so a value saved before the cap existed still runs.
    draft_max: Optional[int] = None
    # With a fixed draft_max: n-gram drafts only where the last this-many tokens recur unbroken (0: any match).
    ngram_min_match: int = 0
    # The draft model stops drafting when its top probability falls below this.
    draft_p_min: float = 0.0
    # Whose acceptance statistics the auto controller learns from and uses: one conversation's text predicts
    # its next reply far better than another chat's does. The window passes one per chat.
    session: str = "default"
    # Write max_tokens tokens whatever the model says (benchmarks against llama.cpp's --ignore-eos).
    ignore_eos: bool = False
    # Draft from the history of earlier prompts and replies (app.engine.speculation.history), and add this
    # request's text to it when the reply is done. Off: neither.
    history: bool = True
    # Which history: "person" (the window's chats and the CLI's replies) or "api" (API clients' own, never the
    # person's: a client could otherwise tell, from provenance or speed, what the person wrote).
    history_book: HistoryBook = "person"
    # Which API client asked, by a label of the key it sent ("" for the person, and for every API client of a server
    # with one key or none: they are one client). What a reply leaves behind (its KV state, its text in the
    # history book) is offered again only to the same book and client: `kept_scope`.
    client: str = ""
    # The tools the model is told about, as the JSON text of OpenAI's `tools` list ("" for none): text, so a
    # config stays hashable and crosses the process boundary as it is. The chat template renders them.
    tools: str = ""
    # "" (the model may answer or call), "required" (it must call one of `tools`) or the name of the one to call.
    tool_choice: str = ""
    # The JSON schema the reply must fit, as its JSON text ("" for none; `{"type": "object"}` for any object):
    # the local engine decodes under its grammar (app.engine.local.grammar).
    json_schema: str = ""
    chat_format: ChatFormat = "model"
    chat_template: str = ""  # the Jinja template's text, for chat_format "template"
    # Thinking (app.engine.reasoning). None: as the template does by default; True/False: passed to the template as
    # `enable_thinking`, where it reads that variable.
    thinking: Optional[bool] = None
    # Passed to the template as `reasoning_effort` where it reads it (gpt-oss); "": the template's default.
    reasoning_effort: ReasoningEffort = ""
    # The most thinking tokens: then the model's own end marker is written for it and the answer follows (0: no
    # limit), as llama-server's --reasoning-budget.
    thinking_budget: int = 0
    reasoning_format: ReasoningFormat = "split"
    # A per-model override of the thinking markers, (start, end); (): the template's own, or <think>...</think>.
    reasoning_markers: tuple[str, ...] = ()
    # More template variables as the JSON text of an object (the API's chat_template_kwargs; "" for none).
    template_kwargs: str = ""
    # Penalties on the target's logits for tokens the reply has already written (app.engine.local.sampling.Penalties):
    # OpenAI's presence and frequency penalties (0: off) and llama.cpp's repeat penalty (1: off).
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    repeat_penalty: float = 1.0
    # Report each written token's log-probability under the target's own distribution (TokenEvent.logprobs), with
    # the `top_logprobs` likeliest tokens at its position.
    logprobs: bool = False
    top_logprobs: int = 0

    @property
    def kept_scope(self) -> str:
        """Whose kept states and history this request may use and add to: its history book, and its client."""
        return f"{self.history_book}_{self.client}" if self.client else self.history_book

    def __post_init__(self) -> None:
        if self.draft_max is not None:
            object.__setattr__(self, "draft_max", max(0, min(int(self.draft_max), MAX_DRAFT)))
