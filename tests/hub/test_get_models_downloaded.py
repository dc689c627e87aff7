"""Get models knows what is in the models folder already: such a file says "Downloaded" and offers Load, which
loads it instead of fetching it again."""

from __future__ import annotations

import shutil

from fake_hf_server import payload
from PySide6.QtCore import Qt

from app.platform import paths
from test_hub_get_models_panel import TIMEOUT_MS, tiny_pair


def test_a_pair_already_in_the_models_folder_offers_load(qtbot, fake_hub, tiny_models, make_panel):
    paths.models_dir().mkdir(parents=True, exist_ok=True)
    for model in (tiny_models.target, tiny_models.draft):
        shutil.copy(model, paths.models_dir() / model.name)
    panel = make_panel(pairs=[tiny_pair(tiny_models.target, tiny_models.draft)])
    button = panel.pair_buttons["tiny"]
    assert button.text() == "Load pair" and "Downloaded" in button.toolTip()
    with qtbot.waitSignal(panel.sig_load_model, timeout=TIMEOUT_MS) as loaded:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert loaded.args == [
        str(paths.models_dir() / tiny_models.target.name),
        str(paths.models_dir() / tiny_models.draft.name),
    ]
    assert not panel.is_downloading()


def test_a_downloaded_file_says_so_in_a_repos_files_and_offers_load(qtbot, fake_hub, make_panel):
    have = payload(40_000, 1)
    fake_hub.add_repo("acme/Coder-GGUF", {"coder-Q4_K_M.gguf": have, "coder-Q8_0.gguf": payload(60_000, 2)})
    paths.models_dir().mkdir(parents=True, exist_ok=True)
    (paths.models_dir() / "coder-Q4_K_M.gguf").write_bytes(have)
    (paths.models_dir() / "coder-Q8_0.gguf").write_bytes(b"someone else's file of another size")
    panel = make_panel(pairs=[])
    panel.search_tab.open_repo("acme/Coder-GGUF")
    qtbot.waitUntil(lambda: panel.search_tab.files_tree.topLevelItemCount() == 2, timeout=TIMEOUT_MS)
    names = [panel.search_tab.files_tree.topLevelItem(i).text(2) for i in range(2)]
    assert names == ["coder-Q4_K_M.gguf  · Downloaded", "coder-Q8_0.gguf"]  # a different size is not this file
    panel.search_tab.files_tree.setCurrentItem(panel.search_tab.files_tree.topLevelItem(0))
    assert panel.search_tab.download_button.text() == "Load" and panel.search_tab.download_button.isEnabled()
    with qtbot.waitSignal(panel.sig_load_model, timeout=TIMEOUT_MS) as loaded:
        panel.search_tab.download_button.click()
    assert loaded.args == [str(paths.models_dir() / "coder-Q4_K_M.gguf"), ""]
    panel.search_tab.files_tree.setCurrentItem(panel.search_tab.files_tree.topLevelItem(1))
    assert panel.search_tab.download_button.text() == "Download"


def test_a_pair_whose_target_is_in_a_scanned_folder_downloads_only_its_draft(
    qtbot, fake_hub, tiny_models, make_panel, tmp_path
):
    """Issue 45, item 12: the target is in a folder the library scans (not the models folder), so the pair offers
    its draft alone, and once it lands the pair is loaded from where each file is."""
    fake_hub.add_repo("tiny/Tiny-Draft-GGUF", {tiny_models.draft.name: tiny_models.draft.read_bytes()})
    elsewhere = tmp_path / "my-models"
    elsewhere.mkdir()
    target = elsewhere / tiny_models.target.name
    shutil.copy(tiny_models.target, target)
    panel = make_panel(pairs=[tiny_pair(tiny_models.target, tiny_models.draft)])
    panel.library_files = lambda: {target.name: target}
    panel.refresh_downloaded()
    button = panel.pair_buttons["tiny"]
    assert button.text() == "Download draft" and str(target) in button.toolTip()
    with qtbot.waitSignal(panel.sig_pair_downloaded, timeout=TIMEOUT_MS) as loaded:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert loaded.args == [str(target), str(paths.models_dir() / tiny_models.draft.name)]
    assert not (paths.models_dir() / tiny_models.target.name).exists()  # not downloaded again
    assert button.text() == "Load pair"
