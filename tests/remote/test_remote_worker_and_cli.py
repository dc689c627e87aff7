"""A server's model through the engine process's loop (the window's path) and through `specchat-cli generate`."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from app.cli import main as cli_main
from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import ContextEvent, TokenEvent
from app.engine.host.wire import (
    EngineEvents,
    GenerateReply,
    LoadFailed,
    LoadModels,
    ModelsLoaded,
    ReplyEnded,
    ReplyFailed,
)
from app.engine.host.worker import _WorkerLoop, default_engine_factory
from app.engine.targets import ServerModel
from tests.remote.fake_openai_server import FakeServer, Script
from tests.remote.test_remote_engine import LLAMA_SERVER_REPLY


class _Pipe:
    """The loop's end of the pipe: requests to hand it, replies it sent."""

    def __init__(self, requests):
        self.requests = list(requests)
        self.sent = []

    def recv(self):
        if not self.requests:
            raise EOFError
        return self.requests.pop(0)

    def send(self, message):
        self.sent.append(message)

    def poll(self, timeout=0.0):
        return True  # the next request is always there at once (or the end of the list)


def _serve(requests) -> list:
    pipe = _Pipe(requests)
    loop = _WorkerLoop(pipe, multiprocessing.Value("q", 0), default_engine_factory)
    try:
        loop.serve()
    finally:
        loop.close()
    return pipe.sent


def test_the_engine_process_loads_a_server_model_and_keeps_a_dropped_reply_s_text():
    with FakeServer(Script(chunks=LLAMA_SERVER_REPLY[:5], end="drop")) as server:
        target = ServerModel.at(server.url, "fake-model")
        sent = _serve(
            [
                LoadModels(1, target, None, LoadSettings(n_ctx=1024)),
                GenerateReply(2, ({"role": "user", "content": "hi"},), GenerationConfig()),
            ]
        )
    loaded = next(m for m in sent if isinstance(m, ModelsLoaded))
    assert loaded.target == target and loaded.draft is None and loaded.n_ctx == 2048  # n_ctx from the server's /props
    kinds = [type(m) for m in sent]
    assert kinds.index(ReplyFailed) > kinds.index(EngineEvents) and kinds[-1] is ReplyEnded
    events = [e for m in sent if isinstance(m, EngineEvents) for e in m.events]
    assert isinstance(events[0], ContextEvent) and events[0].dropped == 0  # the reply's stream says its fitting first
    streamed = [e for e in events if isinstance(e, TokenEvent)]
    assert "".join(e.text for e in streamed) == "The quick brown fox"
    assert [e.source for e in streamed] == ["target", "draft", "draft", "target"]
    assert "dropped mid-reply" in next(m for m in sent if isinstance(m, ReplyFailed)).message


def test_a_local_draft_for_a_server_model_is_refused_in_one_sentence():
    with FakeServer(Script(chunks=LLAMA_SERVER_REPLY)) as server:
        sent = _serve([LoadModels(1, ServerModel.at(server.url, "fake-model"), Path("/m/draft.gguf"), LoadSettings())])
    failed = next(m for m in sent if isinstance(m, LoadFailed))
    assert "speculates with the draft the server was started with" in failed.message


def test_cli_generate_against_a_server_prints_the_local_json_shape(capsys, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("k-1\n")
    with FakeServer(Script(api_key="k-1", chunks=LLAMA_SERVER_REPLY)) as server:
        code = cli_main(
            [
                "generate",
                "--server",
                server.url,
                "--model",
                "fake-model",
                "--chat",
                "hi",
                "--api-key-file",
                str(key_file),
                "--max-tokens",
                "16",
                "--json",
            ]
        )
        assert server.requests[-1]["max_tokens"] == 16
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["text"] == "The quick brown fox jumps over the lazy dog."
    assert [t["source"] for t in out["tokens"]][:4] == ["target", "draft", "draft", "target"]
    assert (out["stats"]["accepted"], out["stats"]["drafted"], out["stats"]["rounds"]) == (6, 12, 3)


def test_cli_server_errors_and_misuse_are_one_line(capsys):
    with FakeServer(Script(api_key="k-1")) as server:
        code = cli_main(["generate", "--server", server.url, "--model", "fake-model", "--chat", "hi"])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: The server at") and "needs an API key" in err
    assert cli_main(["generate", "--server", "http://x:1", "--chat", "hi"]) == 2
    assert "--server needs --model" in capsys.readouterr().err
    assert cli_main(["generate", "--server", "http://x:1", "--model", "m", "--prompt", "hi"]) == 2
    assert "raw --prompt text is local only" in capsys.readouterr().err
    assert cli_main(["generate", "--chat", "hi"]) == 2
    assert "--server URL" in capsys.readouterr().err
