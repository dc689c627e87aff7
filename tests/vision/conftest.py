from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def vision_models(tmp_path_factory):
    """The tiny vision pair and its draft (see app.testing.synthetic_vision), written once per test session."""
    from app.testing.synthetic_vision import make_vision_model_set

    return make_vision_model_set(tmp_path_factory.mktemp("tiny-vision"))


@pytest.fixture(scope="session")
def pictures(tmp_path_factory):
    """Three small pictures of different sizes and kinds (noise, stripes, a gradient), as PNG and JPEG files."""
    from tests.vision.pictures import write_pictures

    return write_pictures(tmp_path_factory.mktemp("pictures"))


@pytest.fixture(scope="session")
def blind_server(tiny_models):
    """`specchat-cli serve` over the tiny text-only target, which cannot see pictures: the tests that send it one
    only read its refusal, so they share one server."""
    from tests.serve.api_fixtures import serving_process

    with serving_process("--target", tiny_models.target) as serve:
        yield serve
