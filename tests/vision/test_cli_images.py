"""`specchat-cli generate --image`: the reply about a picture is llama-mtmd-cli's, and each bad picture (or a model
that cannot see) gets one sentence on stderr and exit status 2."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_cli_validation import cli, one_line_error
from tests.vision.mtmd_reference import MARKER, mtmd_cli_reply, reply_matches

QUESTION = "What is in this picture?"


def test_generate_with_an_image_answers_as_llama_mtmd_cli_does(vision_models, pictures):
    expected = mtmd_cli_reply(vision_models.target, vision_models.mmproj, [pictures[1]], MARKER + QUESTION, 24)
    done = cli(
        "generate",
        "--target",
        vision_models.target,
        "--chat",
        QUESTION,
        "--image",
        pictures[1],
        "--max-tokens",
        24,
        "--json",
        "--no-history",
        "--draft",
        vision_models.draft,
        "--draft-max",
        3,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert reply_matches(out["text"], expected)
    assert out["stats"]["drafted"] > 0


@pytest.fixture(scope="module")
def bad_pictures(tmp_path_factory, pictures):
    folder = tmp_path_factory.mktemp("bad-pictures")
    whole = pictures[0].read_bytes()
    files = {
        "cut.png": whole[: len(whole) // 2],
        "notes.png": b"these are words, not a picture",
        "drawing.svg": b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>',
        "huge.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (20000).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00",
    }
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


@pytest.mark.parametrize(
    "name, says",
    [
        ("cut.png", "damaged or cut-short"),
        ("notes.png", "not a picture"),
        ("drawing.svg", "SVG drawing"),
        ("huge.png", "20000 x 20000 pixels"),
    ],
)
def test_a_bad_picture_gets_one_sentence_and_status_2(vision_models, bad_pictures, name, says):
    done = cli(
        "generate",
        "--target",
        vision_models.target,
        "--chat",
        QUESTION,
        "--image",
        bad_pictures / name,
        "--max-tokens",
        4,
        "--no-history",
    )
    assert says in one_line_error(done) and name in done.stderr


def test_a_model_that_cannot_see_gets_one_sentence_and_status_2(tiny_models, pictures):
    done = cli(
        "generate",
        "--target",
        tiny_models.target,
        "--chat",
        QUESTION,
        "--image",
        pictures[0],
        "--max-tokens",
        4,
        "--no-history",
    )
    assert "cannot see pictures" in one_line_error(done)
