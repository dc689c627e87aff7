"""What a picture file must be before anything decodes it (app.engine.image_files): an animated GIF gets a
sentence, as a model reading its first frame would answer about one frame of it; a still GIF is read."""

from __future__ import annotations

import io

import numpy as np
import pytest

from app.engine.errors import PromptFormatError
from app.engine.image_files import check_picture


def _gif(frames: int) -> bytes:
    from PIL import Image

    rng = np.random.default_rng(7)
    images = [Image.fromarray(rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)) for _ in range(frames)]
    out = io.BytesIO()
    images[0].save(out, format="GIF", save_all=frames > 1, append_images=images[1:], duration=100, loop=0)
    return out.getvalue()


def test_an_animated_gif_gets_a_sentence():
    with pytest.raises(PromptFormatError, match="animated GIF") as raised:
        check_picture(_gif(3), "dance.gif")
    assert str(raised.value).startswith("dance.gif") and str(raised.value).count(". ") == 0


def test_a_still_gif_is_read():
    check_picture(_gif(1), "still.gif")
