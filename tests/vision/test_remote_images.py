"""Pictures through a server: the remote engine (the window's, `generate --server`) sends them as data: URLs to
`specchat-cli serve` running the tiny vision model and gets the reply serve's local engine gives; a server whose
model cannot see refuses them, and the person reads its reason in one sentence."""

from __future__ import annotations

import base64
import subprocess
from contextlib import contextmanager

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent
from app.engine.image_files import ImageInput
from app.engine.remote.engine import RemoteEngine
from app.engine.remote.server_errors import ServerError
from app.engine.remote.tool_calls import wire_message
from app.engine.targets import ServerModel
from tests.cli.test_cli_validation import ROOT
from tests.serve.api_fixtures import DEADLINE_S, serving_process
from tests.vision.test_image_replies import QUESTION, ask
from tests.support.processes import cli_command, run_cli

CONFIG = GenerationConfig(max_tokens=24, temperature=0.0, speculative=False)


def remote(url: str, target) -> RemoteEngine:
    engine = RemoteEngine(LoadSettings(), api_key_for=lambda _url: None)
    engine.load_target(ServerModel.at(url, target.name.removesuffix(".gguf")))
    return engine


def reply_text(engine, messages) -> str:
    finished = [e for e in engine.reply(messages, CONFIG) if isinstance(e, FinishedEvent)]
    assert len(finished) == 1
    return finished[0].text


@pytest.fixture(scope="module")
def vision_server(vision_models):
    # No --mmproj: serve finds the projector beside the target.
    with serving_process("--target", vision_models.target) as serve:
        yield serve


def test_a_picture_goes_as_a_data_url_of_its_kind(pictures):
    jpeg = pictures[2].read_bytes()
    sent = wire_message(ask(pictures[2])[0])
    image_part, text_part = sent["content"]
    head, _, payload = image_part["image_url"]["url"].partition(",")
    assert head == "data:image/jpeg;base64" and base64.b64decode(payload) == jpeg
    assert text_part == {"type": "text", "text": QUESTION}


def test_the_servers_reply_to_a_picture_is_the_local_engines(vision_server, vision_models, pictures):
    from app.engine.local.engine import SpecEngine

    local = SpecEngine(LoadSettings(n_ctx=2048, n_threads=1))
    try:
        local.load_target(vision_models.target)
        local.load_projector(vision_models.mmproj)
        expected = reply_text(local, ask(pictures[0]))
    finally:
        local.close()
    engine = remote(vision_server.url, vision_models.target)
    seen = reply_text(engine, ask(pictures[0]))
    blind = reply_text(engine, [{"role": "user", "content": QUESTION}])
    assert seen == expected and seen and seen != blind


def test_generate_server_image_prints_the_servers_reply(vision_server, vision_models, pictures):
    engine = remote(vision_server.url, vision_models.target)
    expected = reply_text(engine, ask(pictures[1]))
    done = run_cli(
        "generate",
        "--server",
        vision_server.url,
        "--model",
        vision_models.target.name.removesuffix(".gguf"),
        "--chat",
        QUESTION,
        "--image",
        str(pictures[1]),
        "--max-tokens",
        "24",
        "--temperature",
        "0",
        timeout=DEADLINE_S,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected.strip()


def test_a_server_whose_model_cannot_see_says_why_in_one_sentence(blind_server, tiny_models, pictures):
    message = ask(pictures[0])
    engine = remote(blind_server.url, tiny_models.target)
    with pytest.raises(ServerError) as raised:
        reply_text(engine, message)
    said = str(raised.value)
    assert "refused the message with pictures (HTTP 400" in said and "cannot see pictures" in said
    assert "\n" not in said and said.endswith(".")
    assert isinstance(message[0]["content"][0]["image"], ImageInput)  # what was asked is as it was


@contextmanager
def llama_server(target, *args):
    """llama.cpp's llama-server over `target` on 127.0.0.1 (skips where it is not built); yields its base URL."""
    from tests.remote.llama_tools import TOOLS_BIN, start, stop, wait_for_port
    from tests.support.ports import free_port

    binary = TOOLS_BIN / "llama-server"
    if not binary.is_file():
        pytest.skip("llama-server is not built (../shared/tools/build-llama-reference.sh)")
    port = free_port()
    log = target.parent / f"llama-server-{port}.log"
    process = start(
        [
            binary,
            "-m",
            target,
            "--alias",
            target.name.removesuffix(".gguf"),
            *args,
            "--host",
            "127.0.0.1",
            "--port",
            port,
            "-t",
            "1",
            "-c",
            1024,
        ],
        log,
    )
    try:
        wait_for_port(port, process, log, timeout_s=DEADLINE_S, http_health=True)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


@pytest.mark.slow
def test_llama_server_with_its_mmproj_reads_the_picture_and_without_it_is_named(vision_models, pictures):
    with llama_server(vision_models.target, "--mmproj", vision_models.mmproj) as url:
        engine = remote(url, vision_models.target)
        seen = reply_text(engine, ask(pictures[0]))
        assert seen and seen != reply_text(engine, [{"role": "user", "content": QUESTION}])
    with llama_server(vision_models.target) as url:
        with pytest.raises(ServerError) as raised:
            reply_text(remote(url, vision_models.target), ask(pictures[0]))
    said = str(raised.value)  # llama-server answers 500 here, with its reason
    assert "refused the message with pictures (HTTP 500" in said and "image input is not supported" in said


def test_mmproj_with_a_server_gets_a_usage_sentence(pictures):
    done = subprocess.run(
        cli_command("generate", "--server", "http://127.0.0.1:9", "--model", "m", "--chat", "Hi")
        + ["--image", str(pictures[0]), "--mmproj", str(pictures[0])],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
    )
    assert done.returncode == 2 and "a --server loads its own projector" in done.stderr
    assert "Traceback" not in done.stderr
