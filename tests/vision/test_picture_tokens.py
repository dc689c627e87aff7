"""A picture's exact size in tokens, as the composer's chip shows it before sending: the engine counts it with the
loaded projector, and the count equals mtmd's own (computed apart, tests/vision/mtmd_count.py); where it cannot be
counted (a model that cannot see, a damaged picture) the answer is None, and the window shows the estimate."""

from __future__ import annotations

import pytest

from app.engine.config import LoadSettings
from app.engine.host.engine_factory import DispatchingEngine
from app.engine.host.errands import run_errand
from app.engine.host.wire import CountPicture, PictureCounted
from app.engine.image_files import ImageInput
from app.engine.local.engine import SpecEngine
from app.engine.targets import LocalModel
from tests.vision.mtmd_count import mtmd_picture_tokens


@pytest.fixture(scope="module")
def seeing(vision_models):
    # The projector is not loaded by name: the engine finds it beside the target, as the window's does.
    engine = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1))
    engine.load_target(vision_models.target)
    yield engine
    engine.close()


def test_the_engines_count_is_mtmds(seeing, vision_models, pictures):
    for picture in pictures:
        data = picture.read_bytes()
        expected = mtmd_picture_tokens(vision_models.target, vision_models.mmproj, data)
        assert seeing.picture_tokens(ImageInput(data, picture.name)) == expected
    assert expected != 256  # the tiny projector's count is not the estimate the window shows without one


def test_the_errand_answers_with_the_count_and_the_pictures_digest(seeing, pictures):
    image = ImageInput(pictures[0].read_bytes(), pictures[0].name)
    answer = run_errand(CountPicture(7, image), seeing)
    assert answer == PictureCounted(7, image.digest, seeing.picture_tokens(image))
    assert run_errand(CountPicture(8, image), None) == PictureCounted(8, image.digest, None)  # no model loaded


def test_a_damaged_picture_or_a_blind_model_is_not_counted(seeing, tiny_models, pictures):
    whole = pictures[0].read_bytes()
    assert seeing.picture_tokens(ImageInput(whole[:120], "cut.png")) is None
    blind = DispatchingEngine(LoadSettings(n_ctx=512, n_threads=1))
    try:
        blind.load_target(LocalModel(tiny_models.target))
        assert blind.picture_tokens(ImageInput(whole, "noise.png")) is None
    finally:
        blind.close()


def test_a_projector_beside_that_does_not_fit_is_still_named_when_the_picture_is_sent(
    vision_models, pictures, tmp_path
):
    import shutil

    from app.engine.config import GenerationConfig
    from app.engine.errors import ModelLoadError
    from app.testing.synthetic_vision import write_tiny_mmproj
    from tests.vision.test_image_replies import ask

    target = tmp_path / vision_models.target.name
    shutil.copy2(vision_models.target, target)
    write_tiny_mmproj(tmp_path / vision_models.mmproj.name, text_embd=32)  # made for a narrower model
    engine = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1))
    try:
        engine.load_target(target)
        assert engine.picture_tokens(ImageInput(pictures[0].read_bytes(), pictures[0].name)) is None
        with pytest.raises(ModelLoadError, match="n_embd = 32"):  # counting did not swallow llama.cpp's reason
            list(engine.reply(ask(pictures[0]), GenerationConfig(max_tokens=4)))
    finally:
        engine.close()
