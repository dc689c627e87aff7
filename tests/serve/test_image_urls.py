"""Pictures named by an http(s) URL: refused unless whoever runs the server allows fetching them
(serve --fetch-image-urls); then fetched and checked as a data: URL's picture is, each failure one sentence. A
request's pictures have one deadline in all, are fetched beside other clients' requests rather than in their way,
stop when their client leaves, and never come from this machine or a private network unless the host is allowed
(serve --image-url-hosts), redirects included."""

from __future__ import annotations

import asyncio
import json
import select
import socket
import threading
from contextlib import contextmanager
from typing import Iterator

import pytest

from app.engine.image_files import MAX_IMAGE_BYTES
from app.serve.errors import BadRequest
from app.serve.pictures.fetch import fetch_pictures
from app.serve.requests import ApiLimits, ApiOptions, parse_chat_request
from app.serve.server import ApiServer
from tests.serve.api_fixtures import DEADLINE_S, chat_body, client, running_api
from tests.support.ports import free_port
from tests.vision.pictures import picture_server, write_pictures

LOCAL = ("127.0.0.1",)  # the test servers' host, allowed where a test fetches from them
DRIP_EVERY_S = 0.1


@pytest.fixture(scope="module")
def png(tmp_path_factory) -> bytes:
    return write_pictures(tmp_path_factory.mktemp("pictures"))[0].read_bytes()


def part(url: str) -> dict:
    return {"type": "image_url", "image_url": {"url": url}}


def picture_chat(url: str) -> dict:
    return chat_body(
        "x", 4, messages=[{"role": "user", "content": [{"type": "text", "text": "What is it?"}, part(url)]}]
    )


def fetched(url: str, hosts: tuple[str, ...] = LOCAL, deadline_s: float = DEADLINE_S) -> bytes:
    """The picture at `url` as a server allowing `hosts` fetches it. Raises BadRequest."""
    limits = ApiLimits(fetch_image_urls=True)
    chat = parse_chat_request(picture_chat(url), limits, ApiOptions().defaults)
    chat = asyncio.run(fetch_pictures(chat, hosts, deadline_s))
    return chat.messages[0]["content"][1]["image"].data


class DripServer:
    """An HTTP server on 127.0.0.1 that promises a large picture and sends it a byte at a time, for ever; it counts
    the connections it holds and notices each one its client closes."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/slow.png"
        self.holding = 0
        self.closed = 0
        self.changed = threading.Condition()
        self.stopping = threading.Event()

    def serve(self) -> None:
        self.sock.settimeout(DRIP_EVERY_S)
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            threading.Thread(target=self._drip, args=(conn,), daemon=True).start()

    def _drip(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)  # the request: what it asks for does not matter
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 1000000\r\n\r\n")
            with self.changed:
                self.holding += 1
                self.changed.notify_all()
            try:
                while not self.stopping.is_set():
                    if select.select([conn], [], [], DRIP_EVERY_S)[0] and not conn.recv(1024):
                        break  # the fetch let go of the connection
                    conn.sendall(b"\x89")
            except OSError:
                pass
            with self.changed:
                self.holding -= 1
                self.closed += 1
                self.changed.notify_all()

    def wait_for(self, holding: int = -1, closed: int = -1) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.holding >= holding and self.closed >= closed, DEADLINE_S)


@contextmanager
def drip_server() -> Iterator[DripServer]:
    server = DripServer()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stopping.set()
        thread.join(DEADLINE_S)
        server.sock.close()


def raw_request(url: str, body: dict) -> socket.socket:
    """A chat request sent on a socket of its own, its answer left unread: the client is there until it is closed."""
    port = int(url.rsplit(":", 1)[1])
    payload = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE_S)
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
    sock.sendall(head.encode() + f"Content-Length: {len(payload)}\r\n\r\n".encode() + payload)
    return sock


@pytest.fixture(scope="module")
def api(tiny_models):
    limits = ApiLimits(fetch_image_urls=True, image_url_hosts=LOCAL)
    with running_api(tiny_models, limits=limits, draft=False) as api:
        yield api


def refusal(url: str, body: dict) -> str:
    with client() as http:
        response = http.post(f"{url}/v1/chat/completions", json=body)
    assert response.status_code == 400, response.text
    return response.json()["error"]["message"]


def test_a_url_is_refused_unless_the_server_fetches_urls(png):
    from app.serve.pictures.parts import image_part

    with picture_server({"cat.png": png}) as base:
        with pytest.raises(BadRequest, match="--fetch-image-urls allows it"):
            image_part(part(f"{base}/cat.png"), 0)
        assert fetched(f"{base}/cat.png") == png


@pytest.mark.parametrize(
    "name, says",
    [
        ("missing.png", "answered HTTP 404"),
        ("words.txt", "not a picture"),
        ("huge.png", f"over {MAX_IMAGE_BYTES // 2**20} MiB"),
    ],
)
def test_each_failed_fetch_gets_one_sentence(png, name, says):
    files = {"words.txt": b"just some words", "huge.png": png + b"\0" * MAX_IMAGE_BYTES}
    with picture_server(files) as base:
        with pytest.raises(BadRequest, match=says) as raised:
            fetched(f"{base}/{name}")
    assert str(raised.value).startswith("messages[0].content")


def test_a_host_that_does_not_answer_gets_a_sentence():
    with picture_server({}) as base:
        closed = base  # the server is gone once the block ends: nothing listens on its port
    with pytest.raises(BadRequest, match="could not be fetched"):
        fetched(f"{closed}/cat.png")


def test_a_dripping_host_gets_a_sentence_once_the_requests_time_is_up():
    with drip_server() as drip:
        with pytest.raises(BadRequest, match="did not arrive within 0.5 s") as raised:
            fetched(drip.url, deadline_s=0.5)
        assert drip.wait_for(closed=1)  # and the fetch let go of it
    assert "\n" not in str(raised.value)


@pytest.mark.slow
def test_a_text_chat_is_answered_while_45_requests_wait_for_dripping_pictures(api):
    with drip_server() as drip:
        waiting = [raw_request(api.url, picture_chat(drip.url)) for _ in range(45)]
        try:
            assert drip.wait_for(holding=45), drip.holding
            with client() as http:
                answer = http.post(f"{api.url}/v1/chat/completions", json=chat_body("hi", 4))
            assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"]
            assert drip.holding == 45 and drip.closed == 0  # every picture still on its way
        finally:
            for sock in waiting:
                sock.close()
        assert drip.wait_for(closed=45)  # each client's leaving ended its fetch


def test_a_client_that_leaves_ends_its_pictures_fetch(api):
    with drip_server() as drip:
        with raw_request(api.url, picture_chat(drip.url)):
            assert drip.wait_for(holding=1)
        assert drip.wait_for(closed=1)


TARGETS = {
    "loopback by name, port open": "http://localhost:{open}/cat.png",
    "loopback by name, answering an error": "http://localhost:{open}/missing.png",
    "loopback by name, port closed": "http://localhost:{closed}/cat.png",
    "another loopback address": "http://127.0.0.2:{open}/cat.png",
    "IPv6 loopback": "http://[::1]:{open}/cat.png",
    "a private network": "http://10.11.12.13:{open}/cat.png",
    "link-local (cloud metadata)": "http://169.254.169.254/latest/meta-data/",
}


@pytest.mark.slow
def test_a_redirect_to_this_machine_or_a_private_network_is_refused_with_one_sentence(api, png):
    locations: dict[str, str] = {}
    said = set()
    with picture_server({"cat.png": png}) as pictures, picture_server({}, locations) as redirects:
        open_port = int(pictures.rsplit(":", 1)[1])
        for target in TARGETS.values():
            locations["go"] = target.format(open=open_port, closed=free_port())
            said.add(refusal(api.url, picture_chat(f"{redirects}/go")))
    assert len(said) == 1, said  # the same whether anything listens there, and whatever it answers
    assert "does not fetch from" in said.pop()


def test_a_url_on_this_machine_is_refused_unless_its_host_is_allowed(png):
    with picture_server({"cat.png": png}) as base:
        with pytest.raises(BadRequest, match="does not fetch from"):
            fetched(f"{base}/cat.png", hosts=())
        assert fetched(f"{base}/cat.png", hosts=LOCAL) == png


def test_redirects_are_followed_a_few_times(png):
    locations = {str(n): f"/{n + 1}" for n in range(20)}
    with picture_server({"cat.png": png}) as pictures, picture_server({}, locations) as redirects:
        locations["4"] = f"{pictures}/cat.png"
        assert fetched(f"{redirects}/0") == png  # five redirects
        with pytest.raises(BadRequest, match="redirects more than 5 times"):
            fetched(f"{redirects}/5")


@pytest.mark.slow
def test_stopping_the_server_with_pictures_on_their_way_writes_no_traceback(capfd, caplog):
    limits = ApiLimits(fetch_image_urls=True, image_url_hosts=LOCAL)
    with drip_server() as drip:
        server = ApiServer(ApiOptions(port=0, limits=limits))
        server.start()
        waiting = [raw_request(server.url, picture_chat(drip.url)) for _ in range(3)]
        try:
            assert drip.wait_for(holding=3)
            server.stop()
            assert drip.wait_for(closed=3)
        finally:
            for sock in waiting:
                sock.close()
    logged = capfd.readouterr().err + caplog.text
    assert "Traceback" not in logged, logged
