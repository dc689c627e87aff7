"""The composer's picture chip shows the picture's size in tokens before sending: exact with a model that sees (the
engine process counts it with the projector beside the model, and the count is mtmd's own), and the context gauge
adds it; "about 256" where it cannot be counted (a server's model), and a model that cannot see says so instead."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtWidgets import QLabel

from tests.ui.attachments.test_pictures_in_window import paste_picture
from tests.vision.mtmd_count import mtmd_picture_tokens

from tests.ui.window_helpers import choose_pair


@pytest.fixture(scope="module")
def vision_set(tmp_path_factory):
    """The tiny vision model with its projector beside it, in a folder of their own."""
    from app.testing.synthetic_vision import make_vision_model_set

    models = make_vision_model_set(tmp_path_factory.mktemp("tiny-vision"))
    folder = tmp_path_factory.mktemp("vision-models")
    for path in (models.target, models.mmproj):
        shutil.copy2(path, folder / path.name)
    return folder / models.target.name, folder / models.mmproj.name


@pytest.fixture(scope="module")
def picture(tmp_path_factory):
    from tests.vision.pictures import write_pictures

    return write_pictures(tmp_path_factory.mktemp("pictures"))[1]  # stripes.png


def chip_tokens(window) -> list[str]:
    return [label.text() for label in window.composer.tray.findChildren(QLabel, "PictureTokens")]


def test_the_chip_shows_mtmds_count_with_a_model_that_sees(make_window, qtbot, vision_set, picture):
    target, mmproj = vision_set
    window = make_window(folders=[str(target.parent)])
    choose_pair(qtbot, window, target, None)
    paste_picture(window, picture)
    pasted = window.composer.pictures()[0].data  # what is sent: the pasted picture as a PNG
    expected = mtmd_picture_tokens(target, mmproj, pasted)
    qtbot.waitUntil(lambda: chip_tokens(window) == [f"{expected} tokens"], timeout=30000)
    assert f"+ {expected} attached" in window.footer.context_label.text()


def test_a_model_that_cannot_see_says_so_on_the_chip(
    make_window, qtbot, fake_engine, model_folder, tiny_models, picture
):
    """Issue 55, item 6: the chip said "about 256 tokens", as if the picture were accepted, and only Send refused it."""
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    with qtbot.waitSignal(window.engine_process.sig_picture_counted, timeout=30000) as answered:
        paste_picture(window, picture)
    assert answered.args[0].tokens is None  # the engine cannot count it
    assert chip_tokens(window) == ["this model cannot see it"]
    chip = window.composer.tray.findChildren(QLabel, "PictureTokens")[0]
    assert "cannot see pictures" in chip.toolTip() and "choose a vision model" in chip.toolTip()
