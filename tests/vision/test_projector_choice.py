"""A projector chosen for a model (not found beside it) is checked against the model from the headers, with a sentence
for a file that does not fit, and the engine reads pictures with it from the first picture on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.engine.gguf.mmproj import projector_problem
from app.engine.local.engine import SpecEngine
from app.store.model_defaults import ModelDefaults, projector_of, read_defaults
from app.testing.synthetic_vision import write_tiny_mmproj
from tests.vision.test_image_replies import CONFIGS, ask, finished


@pytest.fixture(scope="module")
def apart(vision_models, tmp_path_factory):
    """The tiny vision model alone in its folder, and its projector in another: none lies beside the model."""
    model = tmp_path_factory.mktemp("model-alone") / "tiny-vision.gguf"
    shutil.copy2(vision_models.target, model)
    projector = tmp_path_factory.mktemp("projectors") / "vision-projector.gguf"
    shutil.copy2(vision_models.mmproj, projector)
    return model, projector


def test_a_projector_that_fits_passes_and_others_get_one_sentence(apart, vision_models, tmp_path):
    model, projector = apart
    assert projector_problem(projector, model) == ""
    other = write_tiny_mmproj(tmp_path / "mmproj-other-model.gguf", text_embd=48)
    assert projector_problem(other, model) == (
        "mmproj-other-model.gguf is the projector of another model: its embedding size is 48, and tiny-vision's is 64."
    )
    assert projector_problem(vision_models.draft, model) == (
        "tiny-draft-for-vision.gguf is not a projector (an mmproj file) but a model of its own."
    )
    (tmp_path / "notes.gguf").write_text("not a model")
    assert projector_problem(tmp_path / "notes.gguf", model).startswith("notes.gguf cannot be read as a projector")


def test_the_engine_reads_pictures_with_the_projector_offered_for_it(apart, pictures):
    model, projector = apart
    engine = SpecEngine()
    try:
        engine.load_target(model)
        assert engine.offered_projector is None  # none lies beside it
        engine.offer_projector(projector)
        assert engine.offered_projector == projector and engine.projector_path is None  # read at the first picture
        done = finished(engine.chat(ask(pictures[0]), CONFIGS["plain"]))
        assert done.text and engine.projector_path == projector
        engine.offer_projector(projector)  # offered again (the next load request): kept loaded as it is
        assert engine.projector_path == projector
        engine.offer_projector(None)  # the choice cleared: none beside it, so the model no longer sees
        assert engine.offered_projector is None and engine.projector_path is None
    finally:
        engine.close()


def test_the_chosen_projector_is_kept_with_the_models_settings_and_wins_over_the_one_beside(vision_models):
    kept = read_defaults({"projector": "/elsewhere/mmproj-tiny-vision.gguf", "context_size": 1024})
    assert kept is not None and kept.projector == "/elsewhere/mmproj-tiny-vision.gguf"
    assert projector_of(str(vision_models.target), kept) == Path("/elsewhere/mmproj-tiny-vision.gguf")
    assert projector_of(str(vision_models.target), ModelDefaults()) == vision_models.mmproj  # the one beside it
    assert read_defaults({"projector": 3}) is None and read_defaults({"projector": ""}) is None  # unusable: dropped
