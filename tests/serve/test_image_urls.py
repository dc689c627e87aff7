"""Pictures named by an http(s) URL: refused unless whoever runs the server allows fetching them
(serve --fetch-image-urls); then fetched and checked as a data: URL's picture is, each failure one sentence."""

from __future__ import annotations

import pytest

from app.engine.image_files import MAX_IMAGE_BYTES
from app.serve.errors import BadRequest
from app.serve.image_parts import image_part
from tests.vision.pictures import picture_server, write_pictures


@pytest.fixture(scope="module")
def png(tmp_path_factory) -> bytes:
    return write_pictures(tmp_path_factory.mktemp("pictures"))[0].read_bytes()


def part(url: str) -> dict:
    return {"type": "image_url", "image_url": {"url": url}}


def test_a_url_is_refused_unless_the_server_fetches_urls(png):
    with picture_server({"cat.png": png}) as base:
        with pytest.raises(BadRequest, match="--fetch-image-urls allows it"):
            image_part(part(f"{base}/cat.png"), 0)
        fetched = image_part(part(f"{base}/cat.png"), 0, fetch_urls=True)
    assert fetched["image"].data == png


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
            image_part(part(f"{base}/{name}"), 2, fetch_urls=True)
    assert str(raised.value).startswith("messages[2].content")


def test_a_host_that_does_not_answer_gets_a_sentence():
    with picture_server({}) as base:
        closed = base  # the server is gone once the block ends: nothing listens on its port
    with pytest.raises(BadRequest, match="could not be fetched"):
        image_part(part(f"{closed}/cat.png"), 0, fetch_urls=True)
