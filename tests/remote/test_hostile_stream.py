"""The remote engine and the engine process (the window's path) against a hostile server: Stop ends a stream the
server keeps silent, before or after its headers; a reply has an overall deadline; malformed events and absurd
numbers become a sentence or a clamp, never an exception of the wrong kind."""

from __future__ import annotations

import threading

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, TokenEvent
from app.engine.host.wire import EngineEvents, GenerateReply, LoadModels, ReplyFailed
from app.common.text import valid_text
from app.engine.remote.chunks import parse_chunk
from app.engine.remote.engine import RemoteEngine
from app.engine.targets import ServerModel
from app.engine.remote.server_errors import ConnectionDropped, display_url
from tests.remote.fake_openai_server import FakeServer, Script, content_chunk
from tests.remote.test_remote_worker_and_cli import _serve

JOIN_DEADLINE_S = 20.0  # far below the server's silence (60 s): a stream still open by then was not stopped


def _engine(server: FakeServer, **kwargs) -> RemoteEngine:
    engine = RemoteEngine(api_key_for=lambda url: None, **kwargs)
    engine.load_target(ServerModel.at(server.url, "fake-model"))
    return engine


def _consume_in_thread(engine: RemoteEngine, cancel: threading.Event, first_token: threading.Event):
    result: dict = {"events": [], "error": None}

    def consume() -> None:
        try:
            for event in engine.chat([{"role": "user", "content": "hi"}], GenerationConfig(), cancel=cancel):
                result["events"].append(event)
                if isinstance(event, TokenEvent):
                    first_token.set()
        except Exception as exc:  # the test asserts there was none
            result["error"] = exc

    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    return thread, result


@pytest.mark.parametrize("silent_where", ["before the headers", "mid-reply"])
def test_stop_ends_a_stream_the_server_keeps_silent(silent_where):
    if silent_where == "before the headers":
        script = Script(delay_before_s=60.0)
    else:
        script = Script(chunks=[content_chunk("The")], end="stall", stall_s=60.0)
    with FakeServer(script) as server:
        engine = _engine(server)
        cancel, first_token = threading.Event(), threading.Event()
        thread, result = _consume_in_thread(engine, cancel, first_token)
        if silent_where == "mid-reply":
            assert first_token.wait(JOIN_DEADLINE_S)
        else:
            thread.join(0.5)  # the request is out; the server says nothing
        cancel.set()
        thread.join(JOIN_DEADLINE_S)
        assert not thread.is_alive(), "Stop did not end the stream while the server was silent"
    assert result["error"] is None
    assert not any(isinstance(e, FinishedEvent) for e in result["events"])


def test_a_reply_that_outlasts_its_deadline_keeps_what_arrived():
    with FakeServer(Script(chunks=[content_chunk("The")], end="stall", stall_s=60.0)) as server:
        engine = _engine(server, reply_deadline_s=1.0)
        events = []
        with pytest.raises(ConnectionDropped, match=r"did not finish the reply within 1 s; the reply so far is kept"):
            for event in engine.chat([{"role": "user", "content": "hi"}], GenerationConfig()):
                events.append(event)
    assert "".join(e.text for e in events if isinstance(e, TokenEvent)) == "The"


def test_the_engine_process_says_malformed_event_not_internal_error():
    with FakeServer(Script(chunks=[content_chunk("kept")], raw=[b'data: {"choices": [{"delta": 5}]}\n\n'])) as server:
        sent = _serve(
            [
                LoadModels(1, ServerModel.at(server.url, "fake-model"), None, LoadSettings(n_ctx=1024)),
                GenerateReply(2, ({"role": "user", "content": "hi"},), GenerationConfig()),
            ]
        )
    failed = next(m for m in sent if isinstance(m, ReplyFailed))
    assert failed.message.startswith("The server at http://127.0.0.1:") and "sent a malformed event" in failed.message
    assert (
        "".join(e.text for m in sent if isinstance(m, EngineEvents) for e in m.events if isinstance(e, TokenEvent))
        == "kept"
    )


def test_numbers_from_a_server_are_clamped_at_the_boundary():
    chunk = parse_chunk(
        {
            "choices": [],
            "timings": {
                "predicted_n": 10**7,
                "draft_n": 8,
                "draft_n_accepted": 9**9,
                "prompt_n": "12",
                "cache_n": -3,
                "predicted_per_second": 1e400,
                "prompt_ms": True,
            },
        },
        max_tokens=16,
    )
    t = chunk.timings
    assert (t.predicted_n, t.draft_n, t.draft_n_accepted) == (16, 8, 8)
    assert (t.prompt_n, t.cache_n, t.predicted_per_second, t.prompt_ms) == (0, 0, 0.0, 0.0)
    assert parse_chunk({"choices": [{"delta": {"content": "a\ud800b"}}]}, 16).text == "a\ufffdb"
    assert valid_text("\U0001f600") == "\U0001f600"  # a joined surrogate pair is a character, kept


def test_credentials_in_a_url_are_never_shown():
    assert display_url("http://alice:hunter2@gpu-box:8080") == "http://gpu-box:8080"
    assert display_url("https://token@host/v1") == "https://host/v1"
    with FakeServer() as server:
        url = server.url.replace("http://", "http://alice:hunter2@")
        engine = RemoteEngine(api_key_for=lambda u: None)
        engine.load_target(ServerModel.at(url, "fake-model"))
        assert "hunter2" not in engine.placement_note


def test_stop_in_the_window_s_engine_process_on_a_silent_server_needs_no_restart(qtbot):
    from app.ui.engine_link.engine_process import EngineProcess

    with FakeServer(Script(chunks=[content_chunk("The")], end="stall", stall_s=60.0)) as server:
        engine = EngineProcess()
        streamed: list = []
        died: list = []
        engine.sig_stream.connect(lambda events: streamed.extend(e for e in events if hasattr(e, "text")))
        engine.sig_worker_died.connect(died.append)
        try:
            with qtbot.waitSignal(engine.sig_models_loaded, timeout=60000):
                engine.request_load(1, ServerModel.at(server.url, "fake-model"), None, LoadSettings(n_ctx=1024))
            pid = engine.pid()
            with qtbot.waitSignal(engine.sig_generation_ended, timeout=60000) as ended:
                engine.request_generate(2, [{"role": "user", "content": "hi"}], GenerationConfig())
                qtbot.waitUntil(lambda: bool(streamed), timeout=60000)
                engine.cancel(2)  # the server is silent now
            assert ended.args[0].request_id == 2
            # The stream ended in the engine process itself: it was not killed as stuck and restarted.
            assert engine.pid() == pid and not died
        finally:
            engine.stop()


def test_stop_while_connecting_to_a_host_that_drops_packets_ends_within_a_second():
    """A host that never completes the TCP handshake (a full listen queue: the kernel drops the SYN, as a
    firewall that drops packets does): Stop ends the request at once, not after the 10 s connect timeout."""
    import socket
    import time

    from app.engine.remote.http import stream_chat

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    held = socket.create_connection(("127.0.0.1", port), timeout=2)  # fills the one-entry queue
    cancel = threading.Event()
    outcome: dict = {"events": None, "error": None}

    def request() -> None:
        try:
            outcome["events"] = list(
                stream_chat(f"http://127.0.0.1:{port}", {"model": "m", "stream": True}, None, cancel=cancel)
            )
        except Exception as exc:  # the test asserts there was none
            outcome["error"] = exc

    try:
        thread = threading.Thread(target=request, daemon=True)
        thread.start()
        thread.join(0.5)
        assert thread.is_alive(), "the connect should still be waiting for the handshake"
        stopped_at = time.monotonic()
        cancel.set()
        thread.join(5.0)
        waited = time.monotonic() - stopped_at
    finally:
        held.close()
        listener.close()
    assert not thread.is_alive() and waited < 1.0, f"Stop took {waited:.1f} s during the connect"
    assert outcome["error"] is None and outcome["events"] == []
