"""Appearance: Light and Dark, chosen in Settings or followed from the OS, switched live; dark screenshots of the
window, a code block and the inspector show dark colours; text keeps its contrast on every highlight."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QApplication
from tests.support.contrast import contrast, luminance
from tests.ui.window_helpers import choose_pair, send_and_wait

from app.store import load_settings
from app.store.settings import THEME_CHOICES
from app.ui.settings.dialog import AppSettingsDialog
from app.ui.transcript.markdown.code_colors import code_colours
from app.ui.widgets import style
from app.ui.widgets.themes import DARK, LIGHT, THEMES, resolve_theme


pytestmark = pytest.mark.usefixtures("restore_light")


def _over(rgba: tuple[int, int, int, int], background: str) -> QColor:
    return QColor(style.swatch_css(QColor(*rgba), background))


@pytest.mark.parametrize("theme", list(THEMES.values()), ids=list(THEMES))
def test_text_keeps_its_contrast_on_every_highlight_in_both_themes(theme):
    assert set(THEMES) | {"system"} == set(THEME_CHOICES)
    assert set(theme.highlights) == set(LIGHT.highlights)  # a drafter's colour is in every theme
    for background in (theme.surface, theme.user_bubble, theme.code_background):
        assert contrast(QColor(theme.text), QColor(background)) >= 7
        for origin, rgba in theme.highlights.items():
            assert contrast(QColor(theme.text), _over(rgba, background)) >= 4.5, (theme.name, origin, background)
    # The two drafters stay apart from each other and from the background.
    draft, ngram = (_over(theme.highlights[o], theme.surface) for o in ("draft", "ngram"))
    assert draft != ngram and QColor(theme.surface) not in (draft, ngram)


def test_code_colours_follow_the_theme_and_stay_readable_on_dark():
    code = "def add(a, b):\n    # sum\n    return a + b\n"
    light = code_colours(code, "python", LIGHT.code_style)
    dark = code_colours(code, "python", DARK.code_style)
    assert light != dark
    for colour in {c for c in dark if c}:
        assert contrast(QColor(colour), QColor(DARK.code_background)) >= 3, colour


def test_the_system_choice_follows_the_os_scheme_and_an_explicit_choice_does_not(qtbot, make_window):
    window = make_window()
    hints = QApplication.styleHints()
    assert window.appearance.choice() == "system" and style.current() is LIGHT  # offscreen: no OS preference
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Dark)
    assert style.current() is DARK
    assert QApplication.palette().color(QPalette.ColorRole.Window) == QColor(DARK.surface)
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
    assert style.current() is LIGHT
    window.appearance.set_choice("dark")
    hints.colorSchemeChanged.emit(Qt.ColorScheme.Light)
    assert style.current() is DARK
    assert resolve_theme("nonsense", system_is_dark=True) is DARK


def _pixel(image: QImage, widget, window) -> QColor:
    """The colour at the top-left inside `widget`, as the window's screenshot shows it."""
    point = widget.mapTo(window, QPoint(6, 6))
    return image.pixelColor(point * image.devicePixelRatio())


def _count(image: QImage, colour: str) -> int:
    wanted = QColor(colour).rgb()
    return sum(
        1 for y in range(0, image.height(), 2) for x in range(0, image.width(), 2) if image.pixel(x, y) == wanted
    )


def test_dark_screenshots_of_the_window_a_code_block_and_the_inspector(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window = make_window(engine_factory=fake_engine, theme="dark")
    assert style.current() is DARK  # chosen in the saved settings, shown from the start
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft_identical.name)
    message_id = send_and_wait(qtbot, window, "Write add in Python")
    assert "```python" in window.store.get_message(message_id).content  # the reply holds a code block
    qtbot.wait(50)
    shot = window.grab().toImage()
    shot.save(str(tmp_path / "window-dark.png"))
    viewport = window.chat_view.viewport()
    assert _pixel(shot, viewport, window) == QColor(DARK.surface)
    assert _pixel(shot, window.sidebar, window) == QColor(DARK.sidebar)
    assert luminance(_pixel(shot, viewport, window)) < 0.05
    assert _count(shot, DARK.code_background) > 500  # the code block's frame, in the dark code colour
    assert _count(shot, LIGHT.code_background) == 0 and _count(shot, LIGHT.surface) < 50

    window.inspector.open_message(message_id)
    dialog = window.inspector.dialog
    qtbot.waitExposed(dialog)
    inspector = dialog.grab().toImage()
    inspector.save(str(tmp_path / "inspector-dark.png"))
    chart = next(iter(dialog.charts.values()))
    assert _pixel(inspector, chart, dialog) == QColor(DARK.surface)
    assert _pixel(inspector, dialog.panel, dialog) == QColor(DARK.surface)


@pytest.mark.slow
def test_switching_theme_in_settings_redraws_the_open_chat_live(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft_identical.name)
    send_and_wait(qtbot, window, "Write add in Python")
    before = window.grab().toImage()
    assert _count(before, LIGHT.code_background) > 500

    dialog = AppSettingsDialog(window.settings, window)
    qtbot.addWidget(dialog)
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    window.apply_app_settings(dialog.settings())
    qtbot.waitUntil(lambda: _count(window.grab().toImage(), LIGHT.code_background) == 0, timeout=5000)
    after = window.grab().toImage()
    assert _pixel(after, window.chat_view.viewport(), window) == QColor(DARK.surface)
    assert _count(after, DARK.code_background) > 500 and _count(after, LIGHT.code_background) == 0
    assert load_settings().theme == "dark"  # remembered

    window.apply_app_settings(dataclasses.replace(window.settings, theme="light"))
    qtbot.waitUntil(lambda: _count(window.grab().toImage(), LIGHT.code_background) > 500, timeout=5000)


def test_a_switch_while_a_reply_streams_waits_for_it_to_end(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft_identical.name)
    fake_engine.token_delay_s = 0.02
    window.composer.edit.setPlainText("Write add in Python")
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=30000):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: "Here" in window.chat_view.toPlainText(), timeout=10000)
        shown = window.chat_view.toPlainText()
        window.appearance.set_choice("dark")
        assert window.chat_view.toPlainText().startswith(shown[:20])  # the streaming reply was not re-rendered
        assert _count(window.grab().toImage(), LIGHT.user_bubble) > 500  # the message above it: not yet redrawn
    qtbot.waitUntil(lambda: _count(window.grab().toImage(), LIGHT.user_bubble) == 0, timeout=5000)
    after = window.grab().toImage()
    assert _count(after, DARK.code_background) > 500
    assert _count(after, DARK.user_bubble) > 500 and _count(after, LIGHT.user_bubble) == 0  # redrawn once it ended


def _nearest(image: QImage, target: QColor) -> float:
    """How close the image's closest pixel comes to `target` (the largest channel difference; 0: exact)."""
    return min(
        max(abs(c.red() - target.red()), abs(c.green() - target.green()), abs(c.blue() - target.blue()))
        for c in (image.pixelColor(x, y) for x in range(image.width()) for y in range(image.height()))
    )


def test_the_footers_api_link_follows_a_live_switch_to_dark(make_window):
    window = make_window()
    window.appearance.set_choice("light")
    window.appearance.set_choice("dark")
    link = window.api_server.indicator
    assert "<a href" in link.text()
    # Its underline is drawn in the dark theme's link colour, not the light theme's dark blue kept from before.
    assert _nearest(link.grab().toImage(), QColor(DARK.accent)) < 8
