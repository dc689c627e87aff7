"""What the window says when the engine process dies or hangs: the record of the death and its sentences.

A death is told in the user's terms (a build that cannot run here, an RPC worker gone, a silent server), with
llama.cpp's last error line when there is one; the window keeps its chats whatever the cause. Errands in flight
are sent again to the fresh worker, except those that may have killed it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from app.engine.child_process import build_fault_sentence, how_it_ended, is_build_fault
from app.engine.host.errands import Errand
from app.engine.host.wire import CountPicture, DevicesListed, ListDevices, PictureCounted, Reply
from app.engine.placement.devices import DeviceReport
from app.engine.targets import ServerModel, Target


@dataclass(frozen=True)
class WorkerDeath:
    """What the worker was doing when it died, and what it said last."""

    message: str  # one sentence for a person
    detail: str  # llama.cpp's last error line, or ""
    loading_path: Optional[str]  # the model file being loaded, if the worker died loading one
    load_request_id: Optional[int]
    generate_request_id: Optional[int]
    build_fault: bool = False  # SIGILL: this llama.cpp build cannot run here; no model file is to blame
    ended: str = "it hung"  # how the process ended (app.engine.child_process.how_it_ended), for the API's clients


def stuck_sentence(target: Optional[Target]) -> str:
    """What a Stop that did not end the reply in time says: a silent server is not a stuck engine."""
    if isinstance(target, ServerModel):
        return (
            "The server went silent and did not end the reply when asked to stop, so its connection was "
            "dropped and the engine restarted; your chats are safe. The server, not SpecChat, had stopped "
            "answering."
        )
    return (
        "The engine did not stop within a few seconds (stuck in the chat template or in llama.cpp), "
        "so it was restarted; your chats are safe."
    )


def exit_sentence(code: Optional[int]) -> str:
    """What an engine process that ended by itself (exit code `code`) says."""
    if is_build_fault(code):
        return f"{build_fault_sentence()} Your chats are safe."
    return (
        f"The engine process ended unexpectedly ({how_it_ended(code)}); your chats are safe "
        "and a fresh engine was started."
    )


def failed_reply_sentence(message: str, detail: str, build_fault: bool) -> str:
    """What a reply cut short by the death says: `message` with llama.cpp's `detail`, or an RPC worker named."""
    if build_fault or not detail:
        return message
    if "ggml-rpc" in detail:
        # ggml aborts the process when an RPC worker goes away; say that first, in the user's terms.
        return (
            f"An RPC worker stopped answering ({detail.rsplit('/', 1)[-1]}); the reply so far is kept "
            "and a fresh engine was started. Check the workers in Settings."
        )
    return f"{message} llama.cpp said: {detail}"


def answer_instead(errand: Errand) -> Optional[Reply]:
    """The answer an errand in flight at the death gets instead of being sent to the fresh worker (None: it is sent
    again): listing devices or reading a picture may be what killed the worker, so they are not asked again."""
    if isinstance(errand, ListDevices):
        return DevicesListed(errand.request_id, DeviceReport(problem="the engine process ended while listing them"))
    if isinstance(errand, CountPicture):
        return PictureCounted(errand.request_id, errand.image.digest, None)
    return None
