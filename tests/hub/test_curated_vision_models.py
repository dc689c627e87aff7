"""The vision pairs among the curated pairs (issue 46): each comes with its projector, downloaded from the fake Hub
with its model and draft into the one models folder, where the engine finds it beside its model, the library does not
list it as a model, and a projector published under a generic name still pairs with its own model only."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.engine.gguf.mmproj import mmproj_beside
from app.hub.curated import CuratedFile, CuratedPair, curated_pairs
from app.hub.download_plan import format_bytes
from app.platform import paths

TIMEOUT_MS = 10_000


@pytest.fixture(scope="module")
def projectors(tmp_path_factory) -> tuple[bytes, bytes]:
    """Two tiny projectors of the tiny target's width, with different weights (so their bytes tell them apart)."""
    from app.testing.synthetic_vision import write_tiny_mmproj

    folder = tmp_path_factory.mktemp("projectors")
    return (
        write_tiny_mmproj(folder / "mmproj-a-f16.gguf", seed=1).read_bytes(),
        write_tiny_mmproj(folder / "mmproj-b-f16.gguf", seed=2).read_bytes(),
    )


def _pair(pair_id: str) -> CuratedPair:
    return next(p for p in curated_pairs() if p.pair_id == pair_id)


def _publish(fake_hub, pair: CuratedPair, target: bytes, draft: bytes, projector: bytes) -> None:
    """Serve the pair's files under their published repositories and names."""
    assert pair.draft is not None and pair.projector is not None
    published = {pair.target: target, pair.draft: draft, pair.projector: projector}
    by_repo: dict[str, dict[str, bytes]] = {}
    for file, data in published.items():
        by_repo.setdefault(file.repo_id, {})[file.filename] = data
    for repo_id, files in by_repo.items():
        fake_hub.add_repo(repo_id, files)


def _scan() -> dict[Path, str]:
    """What the library lists after a download: each usable model's path and its projector ("" for none)."""
    from app.library import library_folders, scan_library

    entries = scan_library(library_folders(scan_hf_cache=False))
    return {Path(e.path): e.projector for e in entries if e.usable}


def test_the_gemma_3_pairs_come_with_their_published_projectors_and_count_them_in_their_size():
    for size, pair_id in (("4b", "gemma3-4b"), ("12b", "gemma3-12b"), ("27b", "gemma3-27b")):
        pair = _pair(pair_id)
        repo = f"bartowski/google_gemma-3-{size}-it-GGUF"
        assert pair.projector is not None
        assert (pair.projector.repo_id, pair.projector.filename) == (repo, f"mmproj-google_gemma-3-{size}-it-f16.gguf")
        assert (pair.target.repo_id, pair.target.filename) == (repo, f"google_gemma-3-{size}-it-Q4_K_M.gguf")
        # bartowski's name already starts with the model's, so it is saved as published.
        assert pair.projector.item.name == pair.projector.filename
        assert pair.files[-1] is pair.projector
        assert pair.approx_size == sum(f.approx_size for f in (pair.target, pair.draft, pair.projector) if f)
    assert all(p.projector is None for p in curated_pairs() if not p.pair_id.startswith("gemma3"))


def test_a_vision_pair_downloads_with_its_projector_which_the_engine_finds_beside_the_target(
    qtbot, fake_hub, tiny_models, projectors, make_panel
):
    pair = _pair("gemma3-4b")
    _publish(fake_hub, pair, tiny_models.target.read_bytes(), tiny_models.draft.read_bytes(), projectors[0])
    panel = make_panel(pairs=[pair])
    card = panel.pair_cards[0]
    assert not card.eye.isHidden() and "mmproj-google_gemma-3-4b-it-f16.gguf" in card.eye.toolTip()
    assert card.sizes.text().startswith(f"about {format_bytes(pair.approx_size)} ")
    assert "picture projector" in card.sizes.text()

    with (
        qtbot.waitSignal(panel.sig_pair_downloaded, timeout=TIMEOUT_MS) as landed,
        qtbot.waitSignal(panel.sig_models_downloaded, timeout=TIMEOUT_MS) as models,
    ):
        qtbot.mouseClick(panel.pair_buttons["gemma3-4b"], Qt.MouseButton.LeftButton)

    folder = paths.models_dir()
    target, draft = folder / "google_gemma-3-4b-it-Q4_K_M.gguf", folder / "gemma-3-270m-it-Q8_0.gguf"
    projector = folder / "mmproj-google_gemma-3-4b-it-f16.gguf"
    assert landed.args == [str(target), str(draft)]
    assert models.args == [[str(target), str(draft)]]  # the projector is no model to load
    assert projector.read_bytes() == projectors[0]
    assert mmproj_beside(target) == projector and mmproj_beside(draft) is None
    listed = _scan()
    assert listed[target] == str(projector) and listed[draft] == ""
    assert projector not in listed
    assert panel.pair_buttons["gemma3-4b"].text() == "Load pair"


def test_a_target_downloaded_before_needs_only_its_projector(qtbot, fake_hub, tiny_models, projectors, make_panel):
    pair = _pair("gemma3-12b")
    _publish(fake_hub, pair, tiny_models.target.read_bytes(), tiny_models.draft.read_bytes(), projectors[1])
    folder = paths.models_dir()
    folder.mkdir(parents=True, exist_ok=True)
    target, draft = folder / "google_gemma-3-12b-it-Q4_K_M.gguf", folder / "google_gemma-3-1b-it-Q8_0.gguf"
    target.write_bytes(tiny_models.target.read_bytes())  # the text pair, downloaded before it came with a projector
    draft.write_bytes(tiny_models.draft.read_bytes())
    panel = make_panel(pairs=[pair])
    button = panel.pair_buttons["gemma3-12b"]
    assert button.text() == "Download projector"

    with qtbot.waitSignal(panel.sig_pair_downloaded, timeout=TIMEOUT_MS) as landed:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)

    assert landed.args == [str(target), str(draft)]
    assert mmproj_beside(target) == folder / "mmproj-google_gemma-3-12b-it-f16.gguf"
    assert button.text() == "Load pair"


def _generic_pair(pair_id: str, size: str) -> CuratedPair:
    """A pair as ggml-org publishes Gemma 3 (llama.cpp's docs/multimodal.md): every repository's projector is
    named mmproj-model-f16.gguf."""
    repo = f"ggml-org/gemma-3-{size}-it-GGUF"
    return CuratedPair(
        pair_id,
        "Gemma 3",
        f"Gemma 3 {size}",
        CuratedFile(repo, f"gemma-3-{size}-it-Q4_K_M.gguf", 1000, f"Gemma 3 {size}"),
        CuratedFile("ggml-org/gemma-3-270m-it-GGUF", "gemma-3-270m-it-Q8_0.gguf", 1000, "Gemma 3 270M"),
        "Testing.",
        projector=CuratedFile(repo, "mmproj-model-f16.gguf", 1000, f"Gemma 3 {size} projector"),
    )


def test_generically_named_projectors_of_two_models_in_one_folder_each_pair_with_their_own_model(
    qtbot, fake_hub, tiny_models, projectors, make_panel
):
    small, large = _generic_pair("g4", "4b"), _generic_pair("g12", "12b")
    target_bytes, draft_bytes = tiny_models.target.read_bytes(), tiny_models.draft.read_bytes()
    fake_hub.add_repo("ggml-org/gemma-3-270m-it-GGUF", {"gemma-3-270m-it-Q8_0.gguf": draft_bytes})
    for pair, projector in ((small, projectors[0]), (large, projectors[1])):
        fake_hub.add_repo(pair.target.repo_id, {pair.target.filename: target_bytes, "mmproj-model-f16.gguf": projector})
    panel = make_panel(pairs=[small, large])

    for pair in (small, large):  # one after the other, into the same models folder
        with qtbot.waitSignal(panel.sig_pair_downloaded, timeout=TIMEOUT_MS):
            qtbot.mouseClick(panel.pair_buttons[pair.pair_id], Qt.MouseButton.LeftButton)

    folder = paths.models_dir()
    small_target, large_target = folder / "gemma-3-4b-it-Q4_K_M.gguf", folder / "gemma-3-12b-it-Q4_K_M.gguf"
    small_projector, large_projector = (folder / f"mmproj-gemma-3-{s}-it-Q4_K_M-f16.gguf" for s in ("4b", "12b"))
    assert mmproj_beside(small_target) == small_projector and small_projector.read_bytes() == projectors[0]
    assert mmproj_beside(large_target) == large_projector and large_projector.read_bytes() == projectors[1]
    assert not (folder / "mmproj-model-f16.gguf").exists()
    listed = _scan()
    assert set(listed) == {small_target, large_target, folder / "gemma-3-270m-it-Q8_0.gguf"}
    assert panel.pair_buttons["g4"].text() == panel.pair_buttons["g12"].text() == "Load pair"
