"""A vision model found through Get models' search of the Hub (issue 46): its repository's projectors are no rows of
their own, and the model's download brings one projector (the F16 one) saved under the name that pairs it with the
model, so the library lists one model that sees; a model here already without its projector fetches just that."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_hf_server import payload
from PySide6.QtCore import Qt

from app.engine.gguf.mmproj import mmproj_beside
from app.hub.client import RepoListing
from app.hub.download_plan import format_bytes
from app.hub.repo_files import RemoteFile, group_gguf_files
from app.hub.repo_projector import download_items, preferred_projector
from app.platform import paths

TIMEOUT_MS = 10_000
REPO = "acme/Vision-GGUF"
MODEL = "vision-Q4_K_M.gguf"
PAIRED = "mmproj-vision-Q4_K_M-f16.gguf"  # ggml-org's generic mmproj-model-f16.gguf, named after its model


@pytest.fixture(scope="module")
def projector_f16(tmp_path_factory) -> bytes:
    from app.testing.synthetic_vision import write_tiny_mmproj

    return write_tiny_mmproj(tmp_path_factory.mktemp("projector") / "mmproj-f16.gguf", seed=1).read_bytes()


def _publish(fake_hub, tiny_models, projector_f16: bytes) -> None:
    """A model and two projectors: the F16 one, and a smaller Q8_0 one that must not be chosen."""
    fake_hub.add_repo(
        REPO,
        {
            MODEL: tiny_models.target.read_bytes(),
            "mmproj-model-f16.gguf": projector_f16,
            "mmproj-model-q8_0.gguf": payload(len(projector_f16) // 2, 7),
        },
        downloads=5,
    )


def _open_repo(qtbot, panel) -> None:
    panel.tabs.setCurrentIndex(1)
    panel.search_tab.search("acme")
    qtbot.waitUntil(lambda: panel.search_tab.results_list.count() == 1, timeout=TIMEOUT_MS)
    panel.search_tab.results_list.setCurrentRow(0)
    qtbot.waitUntil(lambda: panel.search_tab.files_tree.topLevelItemCount() > 0, timeout=TIMEOUT_MS)
    panel.search_tab.files_tree.setCurrentItem(panel.search_tab.files_tree.topLevelItem(0))


def _library() -> list:
    from app.library import library_folders, scan_library

    return [e for e in scan_library(library_folders(scan_hf_cache=False)) if e.usable]


def test_a_searched_vision_model_downloads_with_its_f16_projector_and_the_library_shows_one_model_that_sees(
    qtbot, fake_hub, tiny_models, projector_f16, make_panel
):
    from app.ui.models.library_model import LibraryModel

    _publish(fake_hub, tiny_models, projector_f16)
    panel = make_panel(pairs=[])
    _open_repo(qtbot, panel)

    tree = panel.search_tab.files_tree
    assert tree.topLevelItemCount() == 1  # the projectors are no models of their own
    row = tree.topLevelItem(0)
    assert (row.text(0), row.text(2)) == ("Q4_K_M", f"{MODEL}  + picture projector {format_bytes(len(projector_f16))}")
    assert not row.icon(2).isNull() and "mmproj-model-f16.gguf" in row.toolTip(2)
    assert "1 model(s)" in panel.search_tab.repo_label.text()

    with qtbot.waitSignal(panel.sig_models_downloaded, timeout=TIMEOUT_MS) as done:
        qtbot.mouseClick(panel.search_tab.download_button, Qt.MouseButton.LeftButton)

    folder = paths.models_dir()
    model, projector = folder / MODEL, folder / PAIRED
    assert done.args == [[str(model)]]  # the projector is no model to load
    assert projector.read_bytes() == projector_f16
    assert mmproj_beside(model) == projector
    assert sorted(p.name for p in folder.iterdir()) == sorted([MODEL, PAIRED])
    entries = _library()
    assert [(Path(e.path), e.projector) for e in entries] == [(model, str(projector))]
    library = LibraryModel()
    library.set_entries(entries)
    assert library.rowCount() == 1
    assert library.index(0, 0).data(Qt.ItemDataRole.DecorationRole) is not None  # the eye
    assert panel.search_tab.download_button.text() == "Load"


def test_a_model_here_without_its_projector_fetches_only_the_projector(
    qtbot, fake_hub, tiny_models, projector_f16, make_panel
):
    _publish(fake_hub, tiny_models, projector_f16)
    folder = paths.models_dir()
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / MODEL
    model.write_bytes(tiny_models.target.read_bytes())  # downloaded before the search brought projectors
    panel = make_panel(pairs=[])
    _open_repo(qtbot, panel)

    assert panel.search_tab.files_tree.topLevelItem(0).text(2).endswith("· Downloaded, without its projector")
    assert panel.search_tab.download_button.text() == "Download projector"
    with qtbot.waitSignal(panel.sig_models_downloaded, timeout=TIMEOUT_MS):
        qtbot.mouseClick(panel.search_tab.download_button, Qt.MouseButton.LeftButton)

    assert mmproj_beside(model) == folder / PAIRED
    assert not fake_hub.gets(MODEL) and fake_hub.gets("mmproj-model-f16.gguf")
    assert panel.search_tab.download_button.text() == "Load"


def _listing(*files: tuple[str, int]) -> RepoListing:
    remote = tuple(RemoteFile(path, size) for path, size in files)
    return RepoListing("acme/R", "main", tuple(group_gguf_files(remote)), remote)


def test_a_repository_without_projectors_downloads_the_model_alone():
    listing = _listing(("m-Q4_K_M.gguf", 10), ("m-Q8_0.gguf", 20), ("README.md", 1))
    model = listing.model_groups[0].models[0]
    assert [(i.path, i.name) for i in download_items(listing, model)] == [("m-Q4_K_M.gguf", "m-Q4_K_M.gguf")]
    assert listing.projectors == () and listing.model_count == 2


def test_the_projector_chosen_is_the_f16_one_else_the_smallest():
    several = _listing(
        ("m-Q4_K_M.gguf", 10), ("mmproj-m-bf16.gguf", 6), ("mmproj-m-f16.gguf", 6), ("mmproj-m-q8_0.gguf", 3)
    )
    chosen = preferred_projector(several.projectors)
    assert chosen is not None and chosen.name == "mmproj-m-f16.gguf"
    no_f16 = _listing(("m-Q4_K_M.gguf", 10), ("mmproj-m-f32.gguf", 12), ("mmproj-m-q8_0.gguf", 3))
    chosen = preferred_projector(no_f16.projectors)
    assert chosen is not None and chosen.name == "mmproj-m-q8_0.gguf"
    # bartowski's name already pairs with the model, so it is saved as published.
    items = download_items(several, several.model_groups[0].models[0])
    assert [(i.path, i.name) for i in items][-1] == ("mmproj-m-f16.gguf", "mmproj-m-f16.gguf")
    assert several.model_count == 1


def test_the_cli_download_of_a_vision_model_brings_its_projector_too(
    fake_hub, tiny_models, projector_f16, tmp_path, capsys
):
    from app.cli import main

    _publish(fake_hub, tiny_models, projector_f16)
    assert main(["download", REPO, "Q4_K_M", "--dest", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / MODEL)  # the model to load; the projector comes along
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([MODEL, PAIRED])
    assert mmproj_beside(tmp_path / MODEL) == tmp_path / PAIRED
