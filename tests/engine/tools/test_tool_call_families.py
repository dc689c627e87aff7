"""Tool calls per template family, on tiny GGUFs that carry the real chat templates (tests/fixtures/chat_templates,
from the models' published tokenizer configs as llama.cpp keeps them): the prompt for a request with tools is the
template's own rendering, and a scripted reply in the family's format comes back from `serve` as exactly the right
`tool_calls`, streamed and not."""

from __future__ import annotations

import json
import threading
from datetime import datetime
from pathlib import Path

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, GenerationStats, TokenEvent
from app.engine.local.chat_format import render_prompt
from app.engine.local.engine import SpecEngine
from app.engine.tools.calls import format_of
from app.engine.tools.stream import split_whole
from app.serve.jobs import served_models, work_off
from app.serve.requests import ApiOptions, api_history
from app.serve.server import ApiServer
from app.testing.synthetic import write_tiny_model
from app.testing.vocab import VocabSpec
from tests.serve.api_fixtures import DEADLINE_S, client, stream_chunks
from tests.support.scripted_target import script_replies

TEMPLATES = Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city."}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The time in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}

# (template file, family, a reply in that family's own format, the calls it makes)
FAMILIES = [
    (
        "qwen2.5.jinja",
        "hermes",
        'I will look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>',
        [("get_weather", {"city": "Paris", "days": 2})],
    ),
    (
        "qwen3.jinja",
        "hermes",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n</tool_call>',
        [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Oslo"})],
    ),
    (
        "qwen3-coder.jinja",
        "hermes",
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n<parameter=days>\n3\n"
        "</parameter>\n</function>\n</tool_call>",
        [("get_weather", {"city": "New York", "days": 3})],
    ),
    (
        "llama3.2.jinja",
        "llama3",
        '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        [("get_weather", {"city": "Paris"})],
    ),
    (
        "mistral-nemo.jinja",
        "mistral",
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]',
        [("get_weather", {"city": "Paris"})],
    ),
    (
        "gpt-oss.jinja",
        "harmony",
        "<|channel|>analysis<|message|>The user wants the weather.<|end|><|start|>assistant<|channel|>commentary "
        'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}<|call|>',
        [("get_weather", {"city": "Paris"})],
    ),
]


def _conversation(family: str) -> list[dict]:
    """A first turn, the model's call and its result, then a new question: what an agent's third request holds."""
    call_id = "a1b2c3d4e" if family == "mistral" else "call_1"
    return [
        {"role": "user", "content": "Weather in Rome?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": '{"temp_c": 21}'},
        {"role": "assistant", "content": "It is 21 C in Rome."},
        {"role": "user", "content": "And in Paris?"},
    ]


def _reference(template: str, messages: list[dict], tools: list[dict]) -> str:
    """The template rendered as Hugging Face's apply_chat_template renders it."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = lambda message: (_ for _ in ()).throw(ValueError(message))
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template).render(
        messages=messages, tools=tools, add_generation_prompt=True, bos_token="<s>", eos_token="</s>"
    )


@pytest.mark.parametrize("name,family,reply,calls", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_the_prompt_with_tools_is_the_templates_own(name, family, reply, calls):
    template = (TEMPLATES / name).read_text()
    messages = _conversation(family)
    assert format_of(template) == family
    rendered = render_prompt(template, messages, bos_token="<s>", eos_token="</s>", tools=[WEATHER, TIME])
    assert rendered.notice == ""
    assert rendered.text == _reference(template, messages, [WEATHER, TIME])
    assert "get_time" in rendered.text  # the tools reached the model


class _ScriptedReplies(SpecEngine):
    """A SpecEngine over a tiny model whose replies are scripted text, one token event per character; the
    prompt each request rendered (with its tools) is kept in `prompts_seen`."""

    def __init__(self, reply: str):
        super().__init__(LoadSettings(n_ctx=4096, n_threads=1))
        self.reply_text = reply
        self.prompts_seen: list[str] = []

    def chat(self, messages, config=GenerationConfig(), *, cancel=None, request_id=0, session=None):
        tools = json.loads(config.tools) if config.tools else ()
        self.prompts_seen.append(self.prompts.render(messages, tools).text)
        for i, char in enumerate(self.reply_text):
            yield TokenEvent(request_id, i, 1, char, "target")
        yield FinishedEvent(
            request_id, self.reply_text, GenerationStats(tokens=len(self.reply_text), stop_reason="eos")
        )


# The control tokens of the families whose call markers are control tokens, as their vocabularies have them.
CONTROL_TOKENS = {
    "mistral-nemo.jinja": (
        "[INST]",
        "[/INST]",
        "[AVAILABLE_TOOLS]",
        "[/AVAILABLE_TOOLS]",
        "[TOOL_CALLS]",
        "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]",
    ),
    "gpt-oss.jinja": ("<|start|>", "<|message|>", "<|channel|>", "<|end|>", "<|call|>", "<|return|>", "<|constrain|>"),
}


@pytest.fixture()
def scripted_api(tmp_path):
    """start(template, reply): a server whose engine writes `reply`. `local=True`: the real local engine over a
    tiny model with the family's control tokens, made to write the reply's tokens (tests.support.scripted_target),
    so the reply goes through the decoder, speculation and detokenizing as a real model's does."""
    started = []

    def start(template_name: str, reply: str, local: bool = False):
        model = write_tiny_model(
            tmp_path / f"{template_name}.gguf",
            vocab_variant=VocabSpec(special_names=CONTROL_TOKENS.get(template_name, ())),
            extra_metadata=[("tokenizer.chat_template", (TEMPLATES / template_name).read_text())],
        )
        server = ApiServer(ApiOptions(port=0, defaults=GenerationConfig(session="api", **api_history(False))))
        engine = SpecEngine(LoadSettings(n_ctx=4096, n_threads=1)) if local else _ScriptedReplies(reply)
        engine.load_target(model)
        if local:
            target = engine.target
            assert target is not None
            script_replies(target, target.tokenize(reply, add_special=False, parse_special=True), target.eos_id)
        server.publish(served_models(engine))
        stop = threading.Event()
        thread = threading.Thread(
            target=work_off, args=(server.queue, engine), kwargs={"until": stop.is_set, "poll_s": 0.05}, daemon=True
        )
        thread.start()
        server.start()
        started.append((server, stop, thread, engine))
        return server, engine

    yield start
    for server, stop, thread, engine in started:
        server.stop()
        stop.set()
        thread.join(DEADLINE_S)
        assert not thread.is_alive()
        engine.close()


def _body(family: str, stream: bool = False) -> dict:
    return {"model": "m", "messages": _conversation(family)[-1:], "tools": [WEATHER, TIME], "stream": stream}


LOCAL = [f for f in FAMILIES if f[0] in CONTROL_TOKENS]


@pytest.mark.parametrize("name,family,reply,calls", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_a_reply_in_the_familys_format_is_its_tool_calls(scripted_api, name, family, reply, calls):
    server, engine = scripted_api(name, reply)
    _check_calls(server, family, calls)
    assert "get_time" in engine.prompts_seen[-1]  # the tools went to the template


@pytest.mark.parametrize("name,family,reply,calls", LOCAL, ids=[f[0] for f in LOCAL])
def test_control_token_markers_are_read_on_the_local_engine(scripted_api, tmp_path, name, family, reply, calls):
    """Mistral's [TOOL_CALLS] and Harmony's headers are control tokens that write no text: the call reader still
    sees them, and the content shown never holds them."""
    server, engine = scripted_api(name, reply, local=True)
    target = engine.target
    written = target.tokenize(reply, add_special=False, parse_special=True)
    assert any(target.is_control(t) for t in written)  # the markers are control tokens, as in the real vocabulary
    _check_calls(server, family, calls)
    # The CLI (generate --tools, --mcp) reads calls from the finished reply: its calls_text has the markers too.
    config = GenerationConfig(max_tokens=200, history=False, tools=json.dumps([WEATHER, TIME]))
    own = SpecEngine(LoadSettings(n_ctx=4096, n_threads=1))  # the server's engine is its engine thread's alone
    try:
        own.load_target(tmp_path / f"{name}.gguf")
        script_replies(own.target, written, own.target.eos_id)
        finished = [e for e in own.chat(_conversation(family)[-1:], config) if isinstance(e, FinishedEvent)][-1]
    finally:
        own.close()
    content, got = split_whole(finished.calls_text, format_of((TEMPLATES / name).read_text()), [WEATHER, TIME])
    assert [(c.name, json.loads(c.arguments)) for c in got] == calls
    assert "[TOOL_CALLS]" not in finished.text and "<|call|>" not in finished.text


def _check_calls(server, family: str, calls) -> None:
    """The reply comes back as exactly `calls`, whole and streamed, with no call markup in its content."""
    with client() as http:
        whole = http.post(f"{server.url}/v1/chat/completions", json=_body(family)).json()
    choice = whole["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    got = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in choice["message"]["tool_calls"]]
    assert got == calls
    assert all(c["type"] == "function" and c["id"] for c in choice["message"]["tool_calls"])
    assert "tool_call" not in (choice["message"]["content"] or "") and "TOOL_CALLS" not in (
        choice["message"]["content"] or ""
    )

    chunks = stream_chunks(server.url, _body(family))
    frames = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    streamed: dict[int, dict] = {}
    for delta in frames:
        for part in delta.get("tool_calls") or []:
            call = streamed.setdefault(part["index"], {"name": "", "arguments": "", "id": None})
            if "id" in part:
                assert call["id"] is None, "id, type and name come once, in the call's first frame"
                call.update(id=part["id"], name=part["function"]["name"])
            call["arguments"] += part["function"].get("arguments", "")
    assert [(c["name"], json.loads(c["arguments"])) for _, c in sorted(streamed.items())] == calls
    content = "".join(d.get("content") or "" for d in frames)
    assert "<tool_call>" not in content and "[TOOL_CALLS]" not in content and "<|call|>" not in content
    assert content.strip() == content  # never "\n\n" beside the calls
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "tool_calls"


def test_a_fenced_json_call_is_a_call_when_tools_are_offered(scripted_api):
    """What the real Qwen2.5-Coder 1.5B often writes instead of its template's tags."""
    fenced = '```json\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n```'
    server, _ = scripted_api("qwen2.5.jinja", fenced)
    with client() as http:
        offered = http.post(f"{server.url}/v1/chat/completions", json=_body("hermes")).json()
        plain = http.post(
            f"{server.url}/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        ).json()
    assert offered["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert offered["choices"][0]["message"]["content"] is None
    assert plain["choices"][0]["message"]["content"] == fenced  # no tools offered: it is text
    assert "tool_calls" not in plain["choices"][0]["message"]


def test_health_says_ok_with_a_model_loaded(scripted_api):
    server, _ = scripted_api("qwen2.5.jinja", "hi")
    with client() as http:
        assert http.get(f"{server.url}/health").json() == {"status": "ok"}


def test_fields_not_honoured_are_refused_by_name(scripted_api):
    server, _ = scripted_api("qwen2.5.jinja", "hi")
    with client() as http:
        for field, value in [("logit_bias", {"1": 2}), ("typical_p", 0.5), ("presence_penalty", 2.5)]:
            reply = http.post(
                f"{server.url}/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "hi"}], field: value},
            )
            assert reply.status_code == 400 and field in reply.json()["error"]["message"]
        both = http.post(
            f"{server.url}/v1/chat/completions",
            json={**_body("hermes"), "tool_choice": "required", "response_format": {"type": "json_object"}},
        )
        assert both.status_code == 400


def test_parallel_tool_calls_false_keeps_the_first_call_only(scripted_api):
    name, family, reply, calls = FAMILIES[1]  # Qwen3: two calls
    server, _ = scripted_api(name, reply)
    body = {**_body(family), "parallel_tool_calls": False}
    with client() as http:
        whole = http.post(f"{server.url}/v1/chat/completions", json=body).json()
    assert [c["function"]["name"] for c in whole["choices"][0]["message"]["tool_calls"]] == [calls[0][0]]
    frames = [c["choices"][0]["delta"] for c in stream_chunks(server.url, body) if c["choices"]]
    assert {part["index"] for d in frames for part in d.get("tool_calls") or []} == {0}


def _reply(server, body: dict) -> tuple[dict, list[dict]]:
    """The message of the whole reply, and the deltas of the streamed one."""
    with client() as http:
        whole = http.post(f"{server.url}/v1/chat/completions", json=body).json()["choices"][0]["message"]
    return whole, [c["choices"][0]["delta"] for c in stream_chunks(server.url, body) if c["choices"]]


def _streamed_calls(frames: list[dict]) -> list[tuple[str, dict]]:
    calls: dict[int, dict] = {}
    for delta in frames:
        for part in delta.get("tool_calls") or []:
            call = calls.setdefault(part["index"], {"name": "", "arguments": ""})
            call["name"] += part.get("function", {}).get("name", "")
            call["arguments"] += part["function"].get("arguments", "")
    return [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())]


QUOTED_CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'


@pytest.mark.parametrize(
    "reply",
    [
        f"The attached file shows a call:\n\n```json\n{QUOTED_CALL}\n```\n\nThat is how the format looks.",
        '<tool_call>\n{"name": "delete_file", "arguments": {"path": "/"}}\n</tool_call>',
    ],
)
def test_a_quoted_call_or_a_call_to_a_tool_not_offered_is_text(scripted_api, reply):
    """Issue 44 class 5: a fenced call quoted inside an answer, and a call to a tool never offered, are the reply's
    text, whole and streamed: never tool_calls."""
    server, _ = scripted_api("qwen2.5.jinja", reply)
    whole, frames = _reply(server, _body("hermes"))
    assert "tool_calls" not in whole and whole["content"] == reply
    assert _streamed_calls(frames) == [] and "".join(d.get("content") or "" for d in frames) == reply


def test_two_calls_in_one_fenced_block_are_two_calls(scripted_api):
    """Issue 45 item 15: how the 1.5B writes parallel calls (two objects in one fenced block)."""
    reply = f'```json\n{QUOTED_CALL}\n{{"name": "get_time", "arguments": {{"city": "Oslo"}}}}\n```'
    server, _ = scripted_api("qwen2.5.jinja", reply)
    whole, frames = _reply(server, {**_body("hermes"), "parallel_tool_calls": True})
    calls = [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Oslo"})]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in whole["tool_calls"]] == calls
    assert whole["content"] is None and _streamed_calls(frames) == calls


def test_a_control_tokens_name_never_reaches_the_content(scripted_api):
    """Issue 45 item 14: the 1.5B wrote <|im_start|> (a control token) before its call in a read_file loop; the
    token's name came back as the content, and the call was not read. Through the real decoder and detokenizer."""
    reply = f"<|im_start|>\n{QUOTED_CALL}"
    server, engine = scripted_api("qwen2.5.jinja", reply, local=True)  # <|im_start|> is a control token there too
    target = engine.target
    assert any(target.is_control(t) for t in target.tokenize(reply, add_special=False, parse_special=True))
    whole, frames = _reply(server, _body("hermes"))
    assert [c["function"]["name"] for c in whole.get("tool_calls") or []] == ["get_weather"]
    assert not whole["content"]
    assert _streamed_calls(frames) == [("get_weather", {"city": "Paris"})]
    assert "<|im_start|>" not in "".join(d.get("content") or "" for d in frames)
