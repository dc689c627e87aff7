"""`specchat-cli generate --image`: the reply about a picture is llama-mtmd-cli's, and each bad picture (or a model
that cannot see) gets one sentence on stderr and exit status 2."""

from __future__ import annotations

import json
import os

import pytest

from tests.cli.test_cli_validation import cli, one_line_error
from tests.vision.mtmd_reference import MARKER, mtmd_cli_reply, reply_matches
from tests.vision.pictures import flat_png, hostile_pictures

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
    files.update(hostile_pictures())
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
        ("bomb.png", "decompression bomb"),
        ("claims.bmp", "damaged or cut-short BMP"),
        ("cut.jpg", "damaged or cut-short JPEG"),
        ("cut.gif", "damaged or cut-short GIF"),
        ("blocks.gif", "more than 100,000 blocks"),
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


def ask_about(vision_models, *args) -> str:
    """The one-line error of `generate --chat QUESTION` with the tiny vision model and `args`."""
    return one_line_error(
        cli("generate", "--target", vision_models.target, "--chat", QUESTION, "--max-tokens", 4, "--no-history", *args)
    )


@pytest.mark.slow  # two runs of the CLI
def test_an_image_that_is_a_device_or_a_pipe_gets_one_sentence(vision_models, tmp_path):
    fifo = tmp_path / "shot.png"
    os.mkfifo(fifo)  # no writer ever comes: reading it would wait forever
    assert "is a device, not a regular file" in ask_about(vision_models, "--image", "/dev/zero")
    assert "is a pipe (FIFO), not a regular file" in ask_about(vision_models, "--image", fifo)


@pytest.mark.slow  # two runs of the CLI
def test_an_mmproj_that_is_a_pipe_or_a_link_to_a_device_is_called_that(vision_models, pictures, tmp_path):
    fifo, link = tmp_path / "mmproj-fifo.gguf", tmp_path / "mmproj-zero.gguf"
    os.mkfifo(fifo)
    link.symlink_to("/dev/zero")
    said = ask_about(vision_models, "--image", pictures[0], "--mmproj", fifo)
    assert "--mmproj" in said and "is a pipe (FIFO), not a regular file" in said
    said = ask_about(vision_models, "--image", pictures[0], "--mmproj", link)
    assert "is a device, not a regular file" in said and "not found" not in said


def test_the_picture_marker_typed_beside_a_picture_is_named(vision_models, pictures):
    said = one_line_error(
        cli(
            "generate",
            "--target",
            vision_models.target,
            "--chat",
            "What is \U000f0046 this?",
            "--image",
            pictures[0],
            "--max-tokens",
            4,
            "--no-history",
        )
    )
    assert "U+F0046" in said and "chat template" not in said


def test_pictures_of_too_many_pixels_in_all_get_one_sentence(vision_models, tmp_path):
    large = tmp_path / "large.png"
    large.write_bytes(flat_png(4000, 3000))  # 12 million pixels: one is read, three are too many at once
    said = ask_about(vision_models, "--image", large, "--image", large, "--image", large)
    assert "36.0 million pixels" in said and "at most 32 million" in said
