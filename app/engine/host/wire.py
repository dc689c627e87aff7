"""The wire between the window and the engine process: every message that crosses the pipe, as a frozen record.

Both ends match on type: the engine process's loop (app.engine.host.worker) and the window's handle
(app.ui.engine_link.engine_process). A reply's engine records (app.engine.events) cross as they are inside
EngineEvents, so a new kind of engine event needs no change here: the window's handle passes records it has no
signal of its own for to `sig_engine_event`.

Stop is not a message: the window writes the highest cancelled request id into a shared integer that the loop
reads every round, because the loop is busy inside generation when a stop matters, and a queued message would only
be read once the reply had ended. The local API (`specchat-cli serve`'s app.serve.engine.client, the window's
app.ui.engine_link.api_bridge) sends its requests (AnswerChat, AnswerCompletion) with shared integers of their own:
"api stopped up to", and "enough up to": the client has what it wants (a stop string came), so the reply stops and
its FinishedEvent still comes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional, Union

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import EngineEvent
from app.engine.image_files import ImageInput
from app.engine.placement.devices import DeviceReport
from app.engine.targets import Target
from app.engine.tools.calls import ToolFormat

# The window's API numbers its requests from here, so that their answers and the window's own never share an id.
API_IDS_FROM = 1 << 40

# ----- requests: window -> engine process, handled one at a time in order


@dataclass(frozen=True)
class LoadModels:
    """Load `target` (None: unload everything) and `draft` (None: no draft model) with `settings`."""

    request_id: int
    target: Optional[Target]
    draft: Optional[Path]
    settings: LoadSettings
    projector: Optional[Path] = None  # the target's mmproj, loaded now, so it reads pictures (a local target only)
    # The window's: the mmproj chosen in the target's Model settings (None: the one beside it, if any), loaded at
    # the first picture as the one beside it is. Used when `projector` is None.
    chosen_projector: Optional[Path] = None


@dataclass(frozen=True)
class GenerateReply:
    """Reply to `messages` with `config`: the engine's reply(), streamed back as EngineEvents."""

    request_id: int
    messages: tuple[dict[str, Any], ...]
    config: GenerationConfig


@dataclass(frozen=True)
class Shutdown:
    """Close the engine and end the process."""


@dataclass(frozen=True)
class ListDevices:
    """List the compute devices of the engine process's llama.cpp build: the window never loads llama.cpp."""

    request_id: int


@dataclass(frozen=True)
class ForgetChat:
    """A chat was deleted: its text leaves the history drafter's file and its saved KV states leave the disk.
    `session` is its engine session (app.ui.chat.chat_prompt.chat_session)."""

    request_id: int
    session: str


@dataclass(frozen=True)
class MeasureApiHistory:
    """Say how big the API clients' own history is, after forgetting all of it when `clear`."""

    request_id: int
    clear: bool = False


@dataclass(frozen=True)
class CountPicture:
    """Say how many tokens `image` takes with the loaded target's projector (the composer's chip, before sending)."""

    request_id: int
    image: ImageInput


@dataclass(frozen=True)
class AnswerChat:
    """An API client's chat request, as sent (the engine's chat(), no fitting: a prompt past the context is a 400).
    Answered with ReplyStarted or ReplyFailed, EngineEvents, and always ReplyEnded last; with `count_only`, the
    prompt is counted (ReplyStarted's prompt_tokens, also past the context) and nothing is decoded."""

    request_id: int
    messages: tuple[dict[str, Any], ...]
    config: GenerationConfig
    count_only: bool = False


@dataclass(frozen=True)
class AnswerCompletion:
    """An API client's raw completion (/v1/completions): text or token ids, and a suffix to fill in before.
    Answered as AnswerChat is."""

    request_id: int
    prompt: Union[str, tuple[int, ...]]
    suffix: Optional[str]
    config: GenerationConfig


Request = Union[
    LoadModels,
    GenerateReply,
    Shutdown,
    ListDevices,
    ForgetChat,
    MeasureApiHistory,
    CountPicture,
    AnswerChat,
    AnswerCompletion,
]

# ----- replies: engine process -> window


@dataclass(frozen=True)
class WorkerReady:
    """The engine process is up and reads requests."""


@dataclass(frozen=True)
class LoadingModel:
    """About to load `path` as the `role` model: if the process dies now, this file is the suspect."""

    request_id: int
    path: str
    role: Literal["target", "draft"]


@dataclass(frozen=True)
class ModelsLoaded:
    """The models are loaded and ready; `placement_note` says where they run, for a person. `parallel`: the
    requests the engine answers side by side (n_ctx tokens each)."""

    request_id: int
    target: Optional[Target]
    draft: Optional[Path]
    n_ctx: int
    placement_note: str
    parallel: int = 1
    projector: Optional[Path] = None  # the target reads pictures with it (loaded, or at its first picture)


@dataclass(frozen=True)
class LoadFailed:
    """Loading failed; `message` is meant for a person."""

    request_id: int
    message: str


@dataclass(frozen=True)
class EngineEvents:
    """A reply's engine records in order (tokens and rounds batched; any other record is sent at once)."""

    events: tuple[EngineEvent, ...]


# ReplyFailed.code of a conversation that does not fit in the context (OpenAI's error code, which agents read).
CONTEXT_LENGTH_EXCEEDED = "context_length_exceeded"


@dataclass(frozen=True)
class ReplyFailed:
    """The engine raised or died during the reply; `message` is meant for a person. `retryable` is False when
    trying again would fail the same way (the llama.cpp build cannot run on this CPU)."""

    request_id: int
    message: str
    retryable: bool = True
    status: int = 500  # what it means to an API client (400: the request asked for what cannot be done)
    code: str = ""  # a reason clients branch on, in OpenAI's words: CONTEXT_LENGTH_EXCEEDED, or none


@dataclass(frozen=True)
class ReplyStarted:
    """An API request's prompt fits and decoding starts: the target answering, the prompt's length in tokens, and
    how the model writes a tool call (for reading its calls out of the reply)."""

    request_id: int
    target: Target
    prompt_tokens: int
    tool_format: ToolFormat


@dataclass(frozen=True)
class ReplyEnded:
    """The engine is done with this request, however it ended; always the last message of a GenerateReply."""

    request_id: int


@dataclass(frozen=True)
class DevicesListed:
    """The answer to ListDevices."""

    request_id: int
    report: DeviceReport


@dataclass(frozen=True)
class ChatForgotten:
    """The answer to ForgetChat: the chat's text and saved states are gone (or were never there)."""

    request_id: int
    session: str


@dataclass(frozen=True)
class ApiHistoryMeasured:
    """The answer to MeasureApiHistory: the API clients' history holds `size_bytes` bytes now."""

    request_id: int
    size_bytes: int


@dataclass(frozen=True)
class PictureCounted:
    """The answer to CountPicture: the picture (its SHA-256) takes exactly `tokens` tokens with the loaded target's
    projector; None where it cannot be counted (a server's model, a model that cannot see, no model loaded)."""

    request_id: int
    digest: str
    tokens: Optional[int]


Reply = Union[
    WorkerReady,
    LoadingModel,
    ModelsLoaded,
    LoadFailed,
    EngineEvents,
    ReplyFailed,
    ReplyEnded,
    DevicesListed,
    ChatForgotten,
    ApiHistoryMeasured,
    PictureCounted,
    ReplyStarted,
]
