"""The API server over the tiny synthetic models: what a client sees for good, bad, oversized, abandoned and
simultaneous requests, and the provenance each chunk carries."""

from __future__ import annotations

import threading
import time

import pytest

from app.serve.requests import ApiLimits
from tests.serve.api_fixtures import (
    DEADLINE_S,
    chat_body,
    client,
    running_api,
    stream_chunks,
    streamed_text,
    streamed_tokens,
)

KEY = "s3cret-key"


def _post(url: str, body, api_key=None, **kwargs):
    with client(api_key) as http:
        if isinstance(body, (bytes, str)):
            return http.post(
                f"{url}/v1/chat/completions", content=body, headers={"Content-Type": "application/json"}, **kwargs
            )
        return http.post(f"{url}/v1/chat/completions", json=body, **kwargs)


def _one_sentence(response) -> str:
    message = response.json()["error"]["message"]
    assert message and message.count(". ") == 0 and message.endswith("."), message
    return message


def test_models_and_a_whole_reply_name_each_tokens_drafter(tiny_models):
    with running_api(tiny_models) as api:
        with client() as http:
            models = http.get(f"{api.url}/v1/models").json()
        assert [m["id"] for m in models["data"]] == ["tiny-target"]
        assert models["data"][0]["specchat"]["draft"] == "tiny-draft"

        reply = _post(api.url, chat_body("the cat and the dog", 30)).json()
        text = reply["choices"][0]["message"]["content"]
        tokens = reply["specchat"]["tokens"]
        assert text and "".join(t["text"] for t in tokens) == text
        assert reply["usage"]["completion_tokens"] == len(tokens) == 30
        assert {t["drafter"] for t in tokens} == {"model", None}  # some drafted and kept, some the target's own
        assert sum(t["drafter"] == "model" for t in tokens) == reply["specchat"]["accepted"]

        chunks = stream_chunks(api.url, chat_body("the cat and the dog", 30))
        assert streamed_text(chunks) == text  # greedy: streamed or whole, the same reply
        assert streamed_tokens(chunks) == tokens
        for chunk in chunks[1:-1]:  # after the role chunk, up to the finish chunk: one token each
            assert [t["text"] for t in chunk["specchat"]["tokens"]] == [chunk["choices"][0]["delta"]["content"]]
        assert chunks[-1]["choices"][0]["finish_reason"] == "length"


def test_timings_per_token_count_like_llama_server(tiny_models):
    with running_api(tiny_models) as api:
        chunks = stream_chunks(api.url, chat_body("the cat and the dog", 20, timings_per_token=True))
    timed = [c for c in chunks if c.get("specchat", {}).get("tokens")]
    assert [c["timings"]["predicted_n"] for c in timed] == list(range(1, 21))
    drafted = [c["timings"]["draft_n"] for c in timed]
    accepted = [c["timings"]["draft_n_accepted"] for c in timed]
    assert drafted == sorted(drafted) and accepted == sorted(accepted) and drafted[-1] >= accepted[-1] > 0
    # A drafted token arrives in a chunk whose accepted count already includes it.
    kept = 0
    for chunk in timed:
        kept += sum(t["drafter"] == "model" for t in chunk["specchat"]["tokens"])
        assert chunk["timings"]["draft_n_accepted"] >= kept
    assert kept == accepted[-1]


@pytest.mark.slow
def test_api_key_is_required_when_set(tiny_models):
    with running_api(tiny_models, api_key=KEY) as api:
        missing = _post(api.url, chat_body("hi", 4))
        wrong = _post(api.url, chat_body("hi", 4), api_key="s3cret-kez")
        with client() as http:
            models = http.get(f"{api.url}/v1/models")
        right = _post(api.url, chat_body("hi", 4), api_key=KEY)
    assert missing.status_code == wrong.status_code == models.status_code == 401
    assert "API key" in _one_sentence(missing) and KEY not in wrong.text
    assert right.status_code == 200 and right.json()["choices"][0]["message"]["content"]


def test_health_answers_a_monitor_without_the_key(tiny_models):
    """As llama-server's does: a monitor needs no key, and learns nothing but that a model is loaded."""
    with running_api(tiny_models, api_key=KEY) as api:
        with client() as http:
            health = [http.get(f"{api.url}{path}") for path in ("/health", "/v1/health")]
            props = http.get(f"{api.url}/props")
            from_a_page = http.get(f"{api.url}/health", headers={"Origin": "http://evil.example"})
    assert [(r.status_code, r.json()) for r in health] == [(200, {"status": "ok"})] * 2
    assert props.status_code == 401  # what is loaded, and its settings, still need the key
    assert from_a_page.status_code == 403


@pytest.mark.slow
def test_web_pages_are_refused_also_from_other_local_ports(tiny_models):
    with running_api(tiny_models) as api:
        foreign = _post(api.url, chat_body("hi", 4), headers={"Origin": "https://evil.example"})
        # DNS rebinding: the page's own name resolved to 127.0.0.1; the Host header still carries that name.
        rebound = _post(api.url, chat_body("hi", 4), headers={"Host": "evil.example:1234"})
        # Another local program's web UI (or a page it was made to serve) is a web page too.
        other_port = _post(api.url, chat_body("hi", 4), headers={"Origin": "http://localhost:3000"})
        malformed = _post(api.url, chat_body("hi", 4), headers={"Origin": "http://[::1"})
        bad_host = _post(api.url, chat_body("hi", 4), headers={"Host": "localhost:99999"})
        program = _post(api.url, chat_body("hi", 4))
    assert foreign.status_code == rebound.status_code == other_port.status_code == 403
    assert "web pages" in _one_sentence(foreign) and "this machine" in _one_sentence(rebound)
    assert "other ports" in _one_sentence(other_port)
    assert malformed.status_code == bad_host.status_code == 400
    assert "Origin" in _one_sentence(malformed) and "Host" in _one_sentence(bad_host)
    assert program.status_code == 200
    assert len(api.done) == 1  # only the program's request reached the engine


@pytest.mark.slow
def test_malformed_requests_get_400_with_one_sentence(tiny_models):
    bad = {
        b"{not json": "not valid JSON",
        b"[1, 2]": "JSON object",
        b"\xff\xfe": "UTF-8",
        '{"messages": "hi"}': "messages",
        '{"messages": [{"role": "wizard", "content": "hi"}]}': "role",
        '{"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}': 'without a "url" string',
        '{"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]}': "only text and image_url",
        '{"messages": [{"role": "user", "content": "hi"}], "max_tokens": "lots"}': "max_tokens",
        '{"messages": [{"role": "user", "content": "hi"}], "temperature": -1}': "temperature",
        '{"messages": [{"role": "user", "content": "hi"}], "n": 3}': '"n"',
    }
    with running_api(tiny_models) as api:
        for body, said in bad.items():
            response = _post(api.url, body)
            assert response.status_code == 400, body
            assert said in _one_sentence(response), body
        still_fine = _post(api.url, chat_body("hi", 4))
        assert still_fine.status_code == 200


def test_oversized_requests_are_refused(tiny_models):
    limits = ApiLimits(max_body_bytes=64 * 1024, max_tokens=100)
    with running_api(tiny_models, limits=limits) as api:
        huge = _post(api.url, chat_body("x" * (65 * 1024), 4))
        too_many_tokens = _post(api.url, chat_body("hi", 101))
        with client() as http:  # a chunked body says no length up front: it is counted as it comes
            chunked = http.post(f"{api.url}/v1/chat/completions", content=iter([b"{" + b" " * 40000] * 2))
    assert huge.status_code == chunked.status_code == 413 and "64 KiB" in _one_sentence(huge)
    assert too_many_tokens.status_code == 400 and "at most 100" in _one_sentence(too_many_tokens)
    assert api.done == []  # none of them reached the engine


def test_a_client_leaving_mid_stream_cancels_its_generation(tiny_models):
    with running_api(tiny_models) as api:
        with client() as http:
            body = {**chat_body("the cat and the dog", 1500), "stream": True}
            with http.stream("POST", f"{api.url}/v1/chat/completions", json=body) as response:
                seen = 0
                for line in response.iter_lines():
                    seen += line.startswith("data: ")
                    if seen == 4:
                        break  # leaving the block closes the connection mid-reply
        ((serial, finished),) = api.wait_done(1)
        assert finished is None  # stopped, not written to its 1500th token
        after = _post(api.url, chat_body("hi", 4))  # and the engine is free for the next client
        assert after.status_code == 200


@pytest.mark.slow
def test_two_clients_at_once_each_get_their_own_reply(tiny_models):
    prompts = ["the cat and the dog", "def return the"]
    with running_api(tiny_models) as api:
        alone = [_post(api.url, chat_body(p, 40)).json()["choices"][0]["message"]["content"] for p in prompts]
        results: dict[int, list] = {}

        def ask(i: int) -> None:
            results[i] = stream_chunks(api.url, chat_body(prompts[i], 40))

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(DEADLINE_S)
        assert [streamed_text(results[i]) for i in range(2)] == alone
        ids = {results[i][0]["id"] for i in range(2)}
        assert len(ids) == 2 and all(len({c["id"] for c in results[i]}) == 1 for i in range(2))
        assert [serial for serial, _ in api.wait_done(4)] == [1, 2, 3, 4]  # one after the other, in order


def test_a_full_queue_answers_503(tiny_models):
    gate = threading.Event()  # the engine answers nothing until it is set: requests stay in line
    with running_api(tiny_models, limits=ApiLimits(max_queued=1), engine_gate=gate) as api:
        answers: list = []
        waiting = threading.Thread(target=lambda: answers.append(_post(api.url, chat_body("hi", 4))))
        waiting.start()
        deadline = time.monotonic() + DEADLINE_S
        while api.server.queue.waiting() < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        refused = _post(api.url, chat_body("hi", 4))
        gate.set()
        waiting.join(DEADLINE_S)
    assert refused.status_code == 503 and "busy" in _one_sentence(refused)
    assert [a.status_code for a in answers] == [200]  # the one in line was answered


def test_a_stop_string_ends_the_reply_before_it(tiny_models):
    with running_api(tiny_models) as api:
        full = _post(api.url, chat_body("the cat and the dog", 40)).json()["choices"][0]["message"]["content"]
        stop = full[12:15]
        cut = full[: full.index(stop)]
        whole = _post(api.url, chat_body("the cat and the dog", 40, stop=[stop])).json()
        chunks = stream_chunks(api.url, chat_body("the cat and the dog", 40, stop=stop))
        done = api.wait_done(3)
    assert whole["choices"][0]["message"]["content"] == cut and whole["choices"][0]["finish_reason"] == "stop"
    assert streamed_text(chunks) == cut and chunks[-1]["choices"][0]["finish_reason"] == "stop"
    # The reply's real totals, not zeros, in both shapes; and the server counts it as answered.
    for summary in (whole["specchat"], chunks[-1]["specchat"]):
        assert summary["rounds"] > 0 and summary["drafted"] > 0 and summary["tokens_per_second"] > 0
    assert all(finished is not None for _, finished in done)
    assert done[-1][1].stats.stop_reason == "stop_string"
