"""A cited source shown in its document: at its offsets, found by its text when the document changed, and shown
alone with one sentence when the document is gone."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor

from app.store.projects.sources import Source
from app.ui.projects.source_dialog import SourceDialog, passage_in
from app.ui.transcript.source_links import parse_argument, source_argument
from app.ui.widgets import style
from app.ui.widgets.themes import DARK, LIGHT
from tests.support.contrast import contrast

TEXT = "# Roses\n\nRoses bloom in June.\n\n# Soil\n\nLoam holds water well.\n"


def _source(path, start=39, end=61, text="Loam holds water well."):
    return Source(2, str(path), start, end, 0.02, text, heading="Soil")


def test_the_passage_is_found_at_its_offsets_or_by_its_text():
    source = _source("/docs/garden.md")
    assert TEXT[39:61] == source.text and passage_in(TEXT, source) == (39, 61)
    moved = "Intro.\n" + TEXT
    assert passage_in(moved, source) == (46, 68)
    assert passage_in("Nothing about soil.", source) is None


def test_a_source_link_names_its_reply_and_number():
    assert parse_argument(source_argument(41, 3)) == (41, 3)
    assert parse_argument("41") is None and parse_argument("x.y") is None


def test_the_dialog_highlights_the_passage_or_says_why_it_cannot(qtbot, tmp_path):
    path = tmp_path / "garden.md"
    path.write_text("Intro.\n" + TEXT)
    dialog = SourceDialog(_source(path))
    qtbot.addWidget(dialog)
    assert dialog.highlighted_text() == "Loam holds water well." and dialog.note.isHidden()
    assert "Roses bloom in June." in dialog.text.toPlainText()

    path.unlink()
    gone = SourceDialog(_source(path))
    qtbot.addWidget(gone)
    assert gone.text.toPlainText() == "Loam holds water well." and not gone.note.isHidden()
    assert gone.note.text().endswith("The passage as it was given to the model is shown.")


@pytest.mark.usefixtures("restore_light")
@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
def test_the_highlighted_passage_stays_readable_in_both_themes(qtbot, qapp, tmp_path, theme):
    style.apply_style(qapp, theme)
    path = tmp_path / "garden.md"
    path.write_text(TEXT)
    dialog = SourceDialog(_source(path))
    qtbot.addWidget(dialog)
    (mark,) = dialog.text.extraSelections()
    assert contrast(mark.format.foreground().color(), mark.format.background().color()) >= 4.5
    assert mark.format.background().color() != QColor(theme.surface)  # the passage stands out
