"""Get models, end to end in the real window: from an empty library, a curated pair downloads from a fake Hub on
127.0.0.1, the library lists both files and the model bar offers the downloaded draft for the downloaded target."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from PySide6.QtCore import Qt

from app.platform import paths
from app.hub.curated import CuratedFile, CuratedPair


# The hub tests' fake Hub and their fixtures (loopback guard, online, fake_hub), reused rather than copied.
_HUB_TESTS = Path(__file__).resolve().parents[2] / "hub"
sys.path.insert(0, str(_HUB_TESTS))
_spec = importlib.util.spec_from_file_location("_hub_test_fixtures", _HUB_TESTS / "conftest.py")
_hub_fixtures = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_hub_fixtures)
loopback_only = _hub_fixtures.loopback_only  # autouse: any connection off 127.0.0.1 fails the test
online = _hub_fixtures.online
fake_hub = _hub_fixtures.fake_hub

TIMEOUT_MS = 15_000


def _tiny_pair(target: Path, draft: Path) -> CuratedPair:
    return CuratedPair(
        pair_id="tiny",
        family="Tiny",
        title="Tiny target + tiny draft",
        target=CuratedFile("tiny/Tiny-Target-GGUF", target.name, target.stat().st_size, "Tiny target"),
        draft=CuratedFile("tiny/Tiny-Draft-GGUF", draft.name, draft.stat().st_size, "Tiny draft"),
        good_at="Testing.",
    )


def test_a_curated_pair_downloads_into_the_window_and_is_offered_as_target_and_draft(
    make_window, qtbot, fake_hub, tiny_models, monkeypatch
):
    fake_hub.add_repo("tiny/Tiny-Target-GGUF", {tiny_models.target.name: tiny_models.target.read_bytes()})
    fake_hub.add_repo("tiny/Tiny-Draft-GGUF", {tiny_models.draft.name: tiny_models.draft.read_bytes()})
    # The panel shows only this pair; the window builds the panel itself, exactly as for a user.
    monkeypatch.setattr(
        "app.ui.get_models.panel.curated_pairs", lambda: (_tiny_pair(tiny_models.target, tiny_models.draft),)
    )

    window = make_window(folders=[])  # the real engine; nothing but the app's own (empty) models folder
    assert not window.library.usable_entries()
    assert window.pages.currentWidget() is window.empty_page

    qtbot.mouseClick(window.empty_page.get_models_button, Qt.MouseButton.LeftButton)
    panel = window.library_ctl.get_models_panel
    assert panel is not None and panel.isVisible()
    assert list(panel.pair_buttons) == ["tiny"]

    with qtbot.waitSignal(panel.sig_pair_downloaded, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.pair_buttons["tiny"], Qt.MouseButton.LeftButton)
    target = paths.models_dir() / tiny_models.target.name
    draft = paths.models_dir() / tiny_models.draft.name
    assert target.read_bytes() == tiny_models.target.read_bytes()
    assert draft.read_bytes() == tiny_models.draft.read_bytes()
    assert not list(paths.models_dir().glob("*.part"))

    # The window rescans, selects the pair and loads both files (models_ready: the chosen target and draft).
    qtbot.waitUntil(window.models_ready, timeout=TIMEOUT_MS)
    assert not window.error_banner.isVisible(), window.error_banner.text()

    usable = {entry.path for entry in window.library.usable_entries()}
    assert usable == {str(target), str(draft)}
    assert window.pages.currentIndex() == 0  # the chat page, no longer the first-run page
    assert window.model_bar.current_target() == str(target)

    first = window.drafts.option_at(0)
    assert first is not None and first.key == str(draft)
    assert first.enabled and "Recommended" in first.detail
    assert window.model_bar.draft_combo.isEnabled()
    assert window.model_bar.current_draft() == str(draft)
