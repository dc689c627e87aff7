"""The screenshot tool's --also: the same reply saved at other sizes and themes, and a wrong value is one sentence."""

from __future__ import annotations

import pytest

from app.ui.devtools import screenshot


def test_also_reads_size_theme_and_file():
    assert screenshot._also("800x600:dark:docs/a:b.png") == ((800, 600), "dark", "docs/a:b.png")


@pytest.mark.parametrize("value", ["800x600:blue:x.png", "800x600:dark:", "wide:light:x.png", "800x600"])
def test_a_wrong_also_is_one_sentence(value, capsys):
    with pytest.raises(SystemExit) as exit_:
        screenshot.main(["--also", value])
    assert exit_.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.endswith(f"argument --also: {value!r} is not WIDTHxHEIGHT:light|dark:PNG, e.g. 800x600:dark:small.png")
