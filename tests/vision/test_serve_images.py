"""`specchat-cli serve` reads OpenAI's image_url parts (data: URLs) for a model that sees: the official openai SDK
gets llama-mtmd-cli's reply, and each bad picture (or a model that cannot see) gets a 400 with one sentence."""

from __future__ import annotations

import base64
from contextlib import contextmanager

import pytest

from tests.serve.api_fixtures import DEADLINE_S, serving_process
from tests.vision.mtmd_reference import MARKER, mtmd_cli_reply, reply_matches
from tests.vision.pictures import flat_png, hostile_pictures, picture_server
from tests.support.processes import run_cli

openai = pytest.importorskip("openai")
QUESTION = "What is in this picture?"
HUGE_PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (20000).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00"


@contextmanager
def serving(*args):
    """`specchat-cli serve` on a free port of 127.0.0.1; yields an openai client for it, then stops it with Ctrl+C."""
    with serving_process(*args) as serve:
        yield openai.OpenAI(base_url=serve.url + "/v1", api_key="none", timeout=DEADLINE_S, max_retries=0)


@pytest.fixture(scope="module")
def sdk(vision_models):
    # No --mmproj: the projector beside the target (mmproj-tiny-vision.gguf) is found by its name.
    with serving("--target", vision_models.target, "--draft", vision_models.draft, "--draft-max", 3) as client:
        yield client


def data_url(data: bytes, kind: str = "image/png") -> str:
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


def ask(url: str, text: str = QUESTION) -> list[dict]:
    return [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": text}]}
    ]


def test_the_sdk_sends_a_data_url_and_gets_llama_mtmd_clis_reply(sdk, vision_models, pictures):
    expected = mtmd_cli_reply(vision_models.target, vision_models.mmproj, [pictures[2]], MARKER + QUESTION, 24)
    reply = sdk.chat.completions.create(
        model="m", messages=ask(data_url(pictures[2].read_bytes(), "image/jpeg")), temperature=0, max_tokens=24
    )
    assert reply_matches(reply.choices[0].message.content, expected)


@pytest.mark.parametrize(
    "url, says",
    [
        ("https://example.com/cat.png", "does not fetch"),
        ("data:image/png;base64,%%%not-base64%%%", "base64 data is damaged"),
        ("cut", "damaged or cut-short"),
        (data_url(b"just words, not a picture"), "not a picture"),
        (data_url(b'<svg xmlns="http://www.w3.org/2000/svg"/>', "image/svg+xml"), "SVG drawing"),
        (data_url(HUGE_PNG), "20000 x 20000 pixels"),
        ("bomb.png", "decompression bomb"),
        ("claims.bmp", "damaged or cut-short BMP"),
        ("cut.jpg", "damaged or cut-short JPEG"),
        ("cut.gif", "damaged or cut-short GIF"),
        ("blocks.gif", "more than 100,000 blocks"),
    ],
)
def test_each_bad_picture_gets_a_400_with_a_sentence(sdk, pictures, url, says):
    if url == "cut":
        whole = pictures[0].read_bytes()
        url = data_url(whole[: len(whole) // 2])
    elif not url.startswith(("data:", "https:")):
        url = data_url(hostile_pictures()[url])
    with pytest.raises(openai.BadRequestError) as raised:
        sdk.chat.completions.create(model="m", messages=ask(url), max_tokens=4)
    assert raised.value.status_code == 400 and says in str(raised.value)


def test_too_many_pictures_get_a_400(sdk, pictures):
    url = data_url(pictures[0].read_bytes())
    content = [{"type": "image_url", "image_url": {"url": url}}] * 17 + [{"type": "text", "text": QUESTION}]
    with pytest.raises(openai.BadRequestError, match="at most 16"):
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": content}], max_tokens=4)


@pytest.mark.slow
def test_the_picture_marker_typed_beside_a_picture_gets_a_400_naming_it(sdk, pictures):
    with pytest.raises(openai.BadRequestError) as raised:
        sdk.chat.completions.create(
            model="m", messages=ask(data_url(pictures[0].read_bytes()), "What is \U000f0046 this?"), max_tokens=4
        )
    assert "U+F0046" in str(raised.value) and "chat template" not in str(raised.value)


def test_pictures_of_too_many_pixels_in_all_get_a_400(sdk):
    url = data_url(flat_png(4000, 3000))  # 12 million pixels: one is read, three are too many at once
    content = [{"type": "image_url", "image_url": {"url": url}}] * 3 + [{"type": "text", "text": QUESTION}]
    with pytest.raises(openai.BadRequestError, match="at most 32 million"):
        sdk.chat.completions.create(model="m", messages=[{"role": "user", "content": content}], max_tokens=4)


def test_a_model_that_cannot_see_gets_a_400(blind_server, pictures):
    client = openai.OpenAI(base_url=blind_server.url + "/v1", api_key="none", timeout=DEADLINE_S, max_retries=0)
    with pytest.raises(openai.BadRequestError, match="cannot see pictures"):
        client.chat.completions.create(model="m", messages=ask(data_url(pictures[0].read_bytes())), max_tokens=4)


@pytest.mark.slow
def test_serve_mmproj_loads_the_projector_named_and_refuses_one_made_for_another_model(
    tiny_models, vision_models, pictures, tmp_path
):
    with serving("--target", tiny_models.target, "--mmproj", vision_models.mmproj) as client:
        reply = client.chat.completions.create(
            model="m", messages=ask(data_url(pictures[0].read_bytes())), temperature=0, max_tokens=8
        )
        assert reply.choices[0].message.content

    from app.testing.synthetic_vision import write_tiny_mmproj

    narrow = write_tiny_mmproj(tmp_path / "mmproj-narrow-F16.gguf", text_embd=32)
    done = run_cli(
        "serve",
        "--target",
        str(tiny_models.target),
        "--mmproj",
        str(narrow),
        "--port",
        "0",
        "--threads",
        "1",
        timeout=DEADLINE_S,
    )
    assert done.returncode != 0 and "Traceback" not in done.stderr
    said = done.stderr.strip().splitlines()
    assert len(said) == 1 and "mmproj-narrow-F16.gguf" in said[0] and "n_embd = 32" in said[0]


@pytest.mark.slow
def test_a_server_that_fetches_urls_answers_a_picture_named_by_url(vision_models, pictures):
    expected = mtmd_cli_reply(vision_models.target, vision_models.mmproj, [pictures[1]], MARKER + QUESTION, 16)
    with picture_server({"stripes.png": pictures[1].read_bytes()}) as base:
        with serving(
            "--target", vision_models.target, "--fetch-image-urls", "--image-url-hosts", "127.0.0.1"
        ) as client:
            reply = client.chat.completions.create(
                model="m", messages=ask(f"{base}/stripes.png"), temperature=0, max_tokens=16
            )
            with pytest.raises(openai.BadRequestError, match="answered HTTP 404"):
                client.chat.completions.create(model="m", messages=ask(f"{base}/gone.png"), max_tokens=4)
    assert reply_matches(reply.choices[0].message.content, expected)
