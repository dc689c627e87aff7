"""The Get-models panel driven with pytest-qt against the fake Hub: a curated pair of real tiny GGUF models
downloads, the library lists both and the draft is offered for the target; search, gated repos, offline, cancel."""

from __future__ import annotations

import dataclasses
import socket
from pathlib import Path

from fake_hf_server import GOOD_TOKEN, payload
from PySide6.QtCore import Qt

from app.platform import paths
from app.hub.curated import CuratedFile, CuratedPair
from app.ui.get_models.panel import GetModelsPanel

TIMEOUT_MS = 10_000


def tiny_pair(target: Path, draft: Path, prefix: str = "tiny") -> CuratedPair:
    return CuratedPair(
        pair_id="tiny",
        family="Tiny",
        title="Tiny target + tiny draft",
        target=CuratedFile(f"{prefix}/Tiny-Target-GGUF", target.name, target.stat().st_size, "Tiny target"),
        draft=CuratedFile(f"{prefix}/Tiny-Draft-GGUF", draft.name, draft.stat().st_size, "Tiny draft"),
        good_at="Testing.",
    )


def test_a_curated_pair_downloads_and_the_library_offers_the_draft_for_the_target(
    qtbot, fake_hub, tiny_models, make_panel
):
    fake_hub.add_repo("tiny/Tiny-Target-GGUF", {tiny_models.target.name: tiny_models.target.read_bytes()})
    fake_hub.add_repo("tiny/Tiny-Draft-GGUF", {tiny_models.draft.name: tiny_models.draft.read_bytes()})
    panel = make_panel(pairs=[tiny_pair(tiny_models.target, tiny_models.draft)])

    with (
        qtbot.waitSignal(panel.sig_pair_downloaded, timeout=TIMEOUT_MS) as pair_signal,
        qtbot.waitSignal(panel.sig_models_downloaded, timeout=TIMEOUT_MS) as models_signal,
    ):
        qtbot.mouseClick(panel.pair_buttons["tiny"], Qt.MouseButton.LeftButton)

    target = paths.models_dir() / tiny_models.target.name
    draft = paths.models_dir() / tiny_models.draft.name
    assert models_signal.args == [[str(target), str(draft)]]
    assert pair_signal.args == [str(target), str(draft)]
    assert target.read_bytes() == tiny_models.target.read_bytes()
    assert draft.read_bytes() == tiny_models.draft.read_bytes()
    assert panel.download_row.bar.value() == 1000 and "Downloaded" in panel.download_row.label.text()
    assert panel.pair_buttons["tiny"].isEnabled()

    # What the main window does on sig_models_downloaded: rescan the library, then offer drafts for the target.
    from app.library import suggest_drafts
    from app.library import library_folders, scan_library

    entries = scan_library(library_folders(scan_hf_cache=False))
    usable = {Path(e.path) for e in entries if e.usable}
    assert {target, draft} <= usable
    suggestions = suggest_drafts(target, [Path(e.path) for e in entries])
    assert suggestions[0].path == draft and suggestions[0].compatible


def test_search_then_a_repos_files_by_quantization_then_download(qtbot, fake_hub, make_panel):
    fake_hub.add_repo(
        "acme/Coder-GGUF",
        {
            "coder-Q4_K_M.gguf": payload(40_000, 1),
            "coder-Q8_0.gguf": payload(60_000, 2),
            "BF16/coder-BF16-00001-of-00002.gguf": payload(30_000, 3),
            "BF16/coder-BF16-00002-of-00002.gguf": payload(20_000, 4),
        },
        downloads=10,
    )
    fake_hub.add_repo("acme/Other-GGUF", {"o.gguf": payload(1000, 5)}, downloads=1)
    panel = make_panel(pairs=[])

    panel.tabs.setCurrentIndex(1)
    qtbot.keyClicks(panel.search_tab.search_edit, "acme")
    qtbot.mouseClick(panel.search_tab.search_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.search_tab.results_list.count() == 2, timeout=TIMEOUT_MS)
    assert panel.search_tab.results_list.item(0).text().startswith("acme/Coder-GGUF")

    panel.search_tab.results_list.setCurrentRow(0)
    qtbot.waitUntil(lambda: panel.search_tab.files_tree.topLevelItemCount() == 3, timeout=TIMEOUT_MS)
    rows = [
        (panel.search_tab.files_tree.topLevelItem(i).text(0), panel.search_tab.files_tree.topLevelItem(i).text(2))
        for i in range(3)
    ]
    assert rows == [
        ("Q4_K_M", "coder-Q4_K_M.gguf"),
        ("Q8_0", "coder-Q8_0.gguf"),
        ("BF16", "coder-BF16.gguf  (2 parts)"),
    ]
    assert panel.search_tab.files_tree.topLevelItem(2).text(1) == "50.0 KB"

    panel.search_tab.files_tree.setCurrentItem(panel.search_tab.files_tree.topLevelItem(2))
    assert panel.search_tab.download_button.isEnabled()
    with qtbot.waitSignal(panel.sig_models_downloaded, timeout=TIMEOUT_MS) as done:
        qtbot.mouseClick(panel.search_tab.download_button, Qt.MouseButton.LeftButton)
    first = paths.models_dir() / "coder-BF16-00001-of-00002.gguf"
    assert done.args == [[str(first)]]
    assert (paths.models_dir() / "coder-BF16-00002-of-00002.gguf").exists()


def test_a_gated_pair_asks_for_a_token_and_then_downloads(qtbot, fake_hub, make_panel, tmp_path):
    target, draft = tmp_path / "t-Q4_K_M.gguf", tmp_path / "d-Q8_0.gguf"
    target.write_bytes(payload(20_000, 1))
    draft.write_bytes(payload(5_000, 2))
    fake_hub.add_repo("gated/Tiny-Target-GGUF", {target.name: target.read_bytes()}, gated=True)
    fake_hub.add_repo("gated/Tiny-Draft-GGUF", {draft.name: draft.read_bytes()}, gated=True)
    panel = make_panel(pairs=[tiny_pair(target, draft, prefix="gated")])

    qtbot.mouseClick(panel.pair_buttons["tiny"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: panel.token_row.isVisible(), timeout=TIMEOUT_MS)
    assert "gated" in panel.message() and "token" in panel.message()
    assert not fake_hub.gets()

    panel.token_row.token_edit.setText(GOOD_TOKEN)
    with qtbot.waitSignal(panel.sig_models_downloaded, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.token_row.save_token_button, Qt.MouseButton.LeftButton)
    assert (paths.models_dir() / target.name).read_bytes() == target.read_bytes()
    assert not panel.token_row.isVisible()
    assert GOOD_TOKEN not in panel.message()


def test_offline_is_said_inline_and_the_pairs_stay_usable(qtbot, online, monkeypatch, make_panel, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    target, draft = tmp_path / "t.gguf", tmp_path / "d.gguf"
    target.write_bytes(b"x")
    draft.write_bytes(b"y")
    panel = make_panel(pairs=[tiny_pair(target, draft)])

    panel.search_tab.search("qwen")
    qtbot.waitUntil(lambda: "Can't reach the Hugging Face Hub" in panel.message(), timeout=TIMEOUT_MS)
    assert panel.search_tab.search_button.isEnabled() and panel.pair_buttons["tiny"].isEnabled()

    with qtbot.waitSignal(panel.sig_busy_changed, timeout=TIMEOUT_MS, check_params_cb=lambda busy: not busy):
        qtbot.mouseClick(panel.pair_buttons["tiny"], Qt.MouseButton.LeftButton)
    assert "Can't reach the Hugging Face Hub" in panel.message()
    assert panel.pair_buttons["tiny"].isEnabled()


def test_cancel_keeps_the_partial_download_and_resume_finishes_it(qtbot, fake_hub, make_panel, tmp_path, monkeypatch):
    target, draft = tmp_path / "t-Q4_K_M.gguf", tmp_path / "d-Q8_0.gguf"
    target.write_bytes(payload(400_000, 1))
    draft.write_bytes(payload(50_000, 2))
    fake_hub.add_repo("tiny/Tiny-Target-GGUF", {target.name: target.read_bytes()})
    fake_hub.add_repo("tiny/Tiny-Draft-GGUF", {draft.name: draft.read_bytes()})
    # The server holds the target half way until Cancel is clicked, so the click always lands mid-file.
    fake_hub.failures.pause_after[target.name] = 200_000
    cancel = GetModelsPanel.cancel_download

    def cancel_and_let_the_server_go_on(panel) -> None:
        cancel(panel)
        fake_hub.failures.resume.set()

    monkeypatch.setattr(GetModelsPanel, "cancel_download", cancel_and_let_the_server_go_on)
    panel = make_panel(pairs=[tiny_pair(target, draft)])
    part = paths.models_dir() / (target.name + ".part")

    qtbot.mouseClick(panel.pair_buttons["tiny"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: part.exists() and part.stat().st_size > 50_000, timeout=TIMEOUT_MS)
    with qtbot.waitSignal(panel.sig_busy_changed, timeout=TIMEOUT_MS, check_params_cb=lambda busy: not busy):
        qtbot.mouseClick(panel.download_row.cancel_button, Qt.MouseButton.LeftButton)
    assert "cancelled" in panel.message().lower()
    assert panel.download_row.resume_button.isVisible()
    kept = part.stat().st_size
    assert 0 < kept < 400_000

    fake_hub.failures.pause_after.clear()
    with qtbot.waitSignal(panel.sig_models_downloaded, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.download_row.resume_button, Qt.MouseButton.LeftButton)
    assert (paths.models_dir() / target.name).read_bytes() == target.read_bytes()
    resumed = [r for r in fake_hub.gets() if r.origin == "cdn" and r.headers.get("range")]
    assert resumed and resumed[0].headers["range"] == f"bytes={kept}-"


def test_after_an_offline_failure_the_pair_list_stays_on_the_chosen_pair(
    qtbot, online, monkeypatch, make_panel, tmp_path
):
    """Disabling the clicked Download button moved focus down the list, and the list scrolled after it."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    pairs = []
    for n in range(8):
        target, draft = tmp_path / f"t{n}.gguf", tmp_path / f"d{n}.gguf"
        target.write_bytes(b"x")
        draft.write_bytes(b"y")
        pairs.append(dataclasses.replace(tiny_pair(target, draft, prefix=f"p{n}"), pair_id=f"p{n}"))
    panel = make_panel(pairs=pairs)
    panel.resize(700, 420)
    qtbot.waitExposed(panel)
    chosen = panel.pair_buttons["p2"]
    scroll = panel.pairs_scroll
    scroll.ensureWidgetVisible(chosen)
    before = scroll.verticalScrollBar().value()

    with qtbot.waitSignal(panel.sig_busy_changed, timeout=TIMEOUT_MS, check_params_cb=lambda busy: not busy):
        qtbot.mouseClick(chosen, Qt.MouseButton.LeftButton)
    assert "Can't reach the Hugging Face Hub" in panel.message()
    assert scroll.verticalScrollBar().value() == before  # the list did not move
    assert panel.window().focusWidget() is chosen  # and the keyboard is on the chosen pair's button again
