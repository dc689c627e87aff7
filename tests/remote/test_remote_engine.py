"""The remote engine against a scripted OpenAI-compatible server: streaming, provenance, and every error path."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest

from app.engine.config import GenerationConfig
from app.engine.errors import ModelLoadError
from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from app.engine.remote.engine import RemoteEngine
from app.engine.targets import LocalModel, ServerModel, target_from_key
from app.engine.remote.server_errors import ConnectionDropped, ServerError
from tests.remote.fake_openai_server import FakeServer, Script, content_chunk


def _timed(text, n, drafted=0, accepted=0, finish=None):
    timings = {"predicted_n": n, "predicted_per_second": 50.0, "prompt_n": 7, "cache_n": 0}
    if drafted:
        timings.update(draft_n=drafted, draft_n_accepted=accepted)
    return content_chunk(text, timings, finish)


def _engine(server: FakeServer, model: str = "fake-model", key=None, **kwargs) -> RemoteEngine:
    engine = RemoteEngine(api_key_for=lambda url: key, **kwargs)
    engine.load_target(ServerModel.at(server.url, model))
    return engine


def _run(engine: RemoteEngine, cancel=None) -> tuple[list, list, FinishedEvent | None]:
    tokens, rounds, finished = [], [], None
    for event in engine.chat([{"role": "user", "content": "hi"}], GenerationConfig(max_tokens=32), cancel=cancel):
        if isinstance(event, TokenEvent):
            tokens.append(event)
        elif isinstance(event, RoundEvent):
            rounds.append(event)
        elif isinstance(event, FinishedEvent):
            finished = event
    return tokens, rounds, finished


# A llama-server reply as it streams with "timings_per_token": the first token is plain; a round drafts 4 and
# accepts 2 (counters rise at its first token: 2 drafts then the target's own); a round drafts 4 and accepts 0;
# a round accepts all 4 but the parser merges its 2nd and 3rd tokens into one chunk.
LLAMA_SERVER_REPLY = [
    content_chunk("", None),  # the role-only first delta
    _timed("The", 1),
    _timed(" quick", 2, drafted=4, accepted=2),
    _timed(" brown", 3, drafted=4, accepted=2),
    _timed(" fox", 4, drafted=4, accepted=2),
    _timed(" jumps", 5, drafted=8, accepted=2),
    _timed(" over", 6, drafted=12, accepted=6),
    _timed(" the lazy", 8, drafted=12, accepted=6),
    _timed(" dog", 9, drafted=12, accepted=6),
    _timed(".", 10, drafted=12, accepted=6),
    _timed("", 10, drafted=12, accepted=6, finish="stop"),
]


def test_llama_server_provenance_is_rebuilt_per_token():
    with FakeServer(Script(chunks=LLAMA_SERVER_REPLY)) as server:
        tokens, rounds, finished = _run(_engine(server))
        assert server.requests[-1]["timings_per_token"] is True
    assert [t.source for t in tokens] == [
        "target",
        "draft",
        "draft",
        "target",
        "target",
        "draft",
        "draft",
        "draft",
        "draft",
        "target",
    ]
    assert "".join(t.text for t in tokens) == finished.text == "The quick brown fox jumps over the lazy dog."
    # The merged chunk's text goes to its last token.
    assert [t.text for t in tokens[6:8]] == ["", " the lazy"]
    assert [(r.drafted, r.accepted) for r in rounds] == [(4, 2), (4, 0), (4, 4)]
    # Each round's accepted drafts, then the target's own token, carry its index; the first token has no round.
    assert [r.index for r in rounds] == [0, 1, 2]
    assert [t.round for t in tokens] == [-1, 0, 0, 0, 1, 2, 2, 2, 2, 2]
    assert [t.drafter for t in tokens] == [None, "model", "model", None, None, "model", "model", "model", "model", None]
    assert all(r.proposed == () and r.own == -1 for r in rounds)  # not reported by the server: left unknown
    stats = finished.stats
    assert (stats.tokens, stats.drafted, stats.accepted, stats.rounds) == (10, 12, 6, 3)
    assert stats.acceptance_rate == pytest.approx(0.5)
    assert stats.tokens_per_second == pytest.approx(50.0)
    assert stats.stop_reason == "eos"


def test_a_server_without_timings_gets_tokens_and_speed_but_no_provenance():
    chunks = [
        content_chunk("Hello", None),
        content_chunk(" there", None),
        content_chunk("", None, "length"),
        {"choices": [], "usage": {"completion_tokens": 2, "prompt_tokens": 5}},
    ]
    with FakeServer(Script(models=[("vendor/model", "vllm")], chunks=chunks)) as server:
        tokens, rounds, finished = _run(_engine(server, "vendor/model"))
        body = server.requests[-1]
    assert "timings_per_token" not in body and "top_k" not in body  # fields other servers may refuse
    assert [t.source for t in tokens] == ["target", "target"] and rounds == []
    assert finished.text == "Hello there"
    assert (finished.stats.tokens, finished.stats.prompt_tokens, finished.stats.stop_reason) == (2, 5, "max_tokens")
    assert finished.stats.tokens_per_second > 0


def test_unreachable_server_is_one_sentence():
    with FakeServer() as server:
        url = server.url
    engine = RemoteEngine(api_key_for=lambda url: None)
    with pytest.raises(ServerError, match=r"^Cannot reach the server at http://127\.0\.0\.1:\d+; check"):
        engine.load_target(ServerModel.at(url, "fake-model"))


def test_missing_and_wrong_api_keys_are_told_apart_and_the_key_is_never_shown():
    with FakeServer(Script(api_key="s3cret-key", chunks=LLAMA_SERVER_REPLY)) as server:
        with pytest.raises(ServerError, match="needs an API key"):
            _engine(server)
        with pytest.raises(ServerError, match="refused the API key") as wrong:
            _engine(server, key="wrong-key-123")
        assert "wrong-key-123" not in str(wrong.value)
        tokens, _, finished = _run(_engine(server, key="s3cret-key"))  # the right key works
        assert finished is not None


def test_unknown_model_is_refused_at_load_naming_what_the_server_offers():
    with FakeServer(Script(models=[("a", "x"), ("b", "x")])) as server:
        with pytest.raises(ModelLoadError, match=r'no model "c"; it offers: a, b\.'):
            _engine(server, "c")


def test_model_not_loaded_at_reply_time_is_one_sentence():
    with FakeServer(Script(models=[("m", "x")])) as server:
        engine = _engine(server, "m")
        server.script.models = [("other", "x")]  # unloaded since
        with pytest.raises(ServerError, match=r'has no model "m" loaded \(HTTP 404'):
            _run(engine)


def test_connection_dropped_mid_reply_keeps_what_arrived_then_fails():
    with FakeServer(Script(chunks=LLAMA_SERVER_REPLY[:4], end="drop")) as server:
        engine = _engine(server)
        arrived = []
        with pytest.raises(ConnectionDropped, match="dropped mid-reply; the reply so far is kept"):
            for event in engine.chat([{"role": "user", "content": "hi"}], GenerationConfig()):
                arrived.append(event)
    assert "".join(e.text for e in arrived if isinstance(e, TokenEvent)) == "The quick brown"


def test_a_silent_server_times_out_with_a_sentence():
    with FakeServer(Script(delay_before_s=2.0)) as server:
        engine = _engine(server, read_timeout_s=0.3)
        with pytest.raises(ServerError, match="sent nothing for"):
            _run(engine)


def test_stop_closes_the_stream_while_the_server_is_silent():
    cancel = threading.Event()
    with FakeServer(Script(chunks=LLAMA_SERVER_REPLY[:3], end="stall", stall_s=8.0)) as server:
        engine = _engine(server)
        events = engine.chat([{"role": "user", "content": "hi"}], GenerationConfig(), cancel=cancel)
        first = next(e for e in events if isinstance(e, TokenEvent))
        cancel.set()
        rest = list(events)
    assert first.text == "The"
    assert not any(isinstance(e, FinishedEvent) for e in rest)


def test_target_keys_round_trip_and_file_paths_are_not_keys():
    target = ServerModel.at("http://gpu-box:8080/v1/", "org/model#q4")
    assert target.key == "server:http://gpu-box:8080#org/model#q4"
    assert target_from_key(target.key) == ServerModel("http://gpu-box:8080", "org/model#q4")
    assert target_from_key("/models/server:x.gguf") == LocalModel(Path("/models/server:x.gguf"))


def test_api_keys_are_kept_owner_only_and_found_by_url(monkeypatch):
    from app.engine.remote import server_keys

    monkeypatch.delenv(server_keys.ENV_VAR, raising=False)
    server_keys.save_api_key("http://gpu-box:8080/v1", "k-123")
    assert server_keys.api_key_for("http://gpu-box:8080") == "k-123"
    assert server_keys.api_key_for("http://other:1") is None
    if os.name == "posix":
        assert stat.S_IMODE(server_keys.keys_file().stat().st_mode) == 0o600
    server_keys.save_api_key("http://gpu-box:8080", "")
    assert server_keys.api_key_for("http://gpu-box:8080") is None
    monkeypatch.setenv(server_keys.ENV_VAR, "from-env")
    assert server_keys.api_key_for("http://gpu-box:8080") is None  # the environment's key is the CLI's, per URL
    assert json.loads(server_keys.keys_file().read_text()) == {}


def test_an_address_that_is_not_a_server_is_one_sentence():
    from app.engine.remote.http import list_models

    with pytest.raises(ServerError, match='"ftp://gpu-box:1" is not a server address'):
        list_models("ftp://gpu-box:1")
