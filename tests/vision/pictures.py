"""Pictures for the image tests, drawn with Pillow (a test dependency) so each is a real file of its format."""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_pictures(dest: Path) -> list[Path]:
    from PIL import Image

    rng = np.random.default_rng(46)
    noise = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    stripes = np.zeros((64, 64, 3), dtype=np.uint8)
    stripes[::8] = (255, 0, 0)
    stripes[:, ::5, 2] = 200
    ramp = np.linspace(0, 255, 96, dtype=np.uint8)
    gradient = np.stack([np.tile(ramp, (48, 1)), np.tile(ramp[::-1], (48, 1)), np.full((48, 96), 90, np.uint8)], -1)
    paths = [dest / "noise.png", dest / "stripes.png", dest / "gradient.jpg"]
    for array, path in zip((noise, stripes, gradient), paths):
        Image.fromarray(array).save(path)
    return paths
