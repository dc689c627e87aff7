"""The thinking models among the curated pairs (issue 31), downloaded through the real Get-models panel from the fake
Hub under their exact published repository ids and file names: Qwen3 8B with Qwen3 0.6B as its draft, and
gpt-oss-20b, which comes alone (no smaller model shares its vocabulary)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.hub.curated import curated_pairs
from app.platform import paths

TIMEOUT_MS = 10_000


def _pair(pair_id: str):
    return next(p for p in curated_pairs() if p.pair_id == pair_id)


def test_the_thinking_models_are_offered_under_their_published_names():
    qwen3, gpt_oss = _pair("qwen3-8b"), _pair("gpt-oss-20b")
    assert [(f.repo_id, f.filename) for f in qwen3.files] == [
        ("Qwen/Qwen3-8B-GGUF", "Qwen3-8B-Q4_K_M.gguf"),
        ("Qwen/Qwen3-0.6B-GGUF", "Qwen3-0.6B-Q8_0.gguf"),
    ]
    assert [(f.repo_id, f.filename) for f in gpt_oss.files] == [("ggml-org/gpt-oss-20b-GGUF", "gpt-oss-20b-mxfp4.gguf")]
    assert gpt_oss.draft is None and gpt_oss.approx_size == gpt_oss.target.approx_size


def test_qwen3_and_its_draft_download_together_and_are_selected_as_a_pair(qtbot, fake_hub, tiny_models, make_panel):
    pair = _pair("qwen3-8b")
    assert pair.draft is not None
    fake_hub.add_repo(pair.target.repo_id, {pair.target.filename: tiny_models.target.read_bytes()})
    fake_hub.add_repo(pair.draft.repo_id, {pair.draft.filename: tiny_models.draft.read_bytes()})
    panel = make_panel(pairs=[pair])
    with qtbot.waitSignal(panel.sig_pair_downloaded, timeout=TIMEOUT_MS) as landed:
        qtbot.mouseClick(panel.pair_buttons["qwen3-8b"], Qt.MouseButton.LeftButton)
    target, draft = paths.models_dir() / "Qwen3-8B-Q4_K_M.gguf", paths.models_dir() / "Qwen3-0.6B-Q8_0.gguf"
    assert landed.args == [str(target), str(draft)]
    assert draft.read_bytes() == tiny_models.draft.read_bytes()


def test_gpt_oss_downloads_alone_as_one_model(qtbot, fake_hub, tiny_models, make_panel):
    pair = _pair("gpt-oss-20b")
    fake_hub.add_repo(pair.target.repo_id, {pair.target.filename: tiny_models.target.read_bytes()})
    panel = make_panel(pairs=[pair])
    button = panel.pair_buttons["gpt-oss-20b"]
    assert button.text() == "Download" and "ggml-org/gpt-oss-20b-GGUF/gpt-oss-20b-mxfp4.gguf" == button.toolTip()
    pairs_landed: list[tuple[str, str]] = []
    panel.sig_pair_downloaded.connect(lambda target, draft: pairs_landed.append((target, draft)))
    with qtbot.waitSignal(panel.sig_models_downloaded, timeout=TIMEOUT_MS) as landed:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    model = paths.models_dir() / "gpt-oss-20b-mxfp4.gguf"
    assert landed.args == [[str(model)]]
    assert model.read_bytes() == tiny_models.target.read_bytes()
    # The pair signal would have come from the same call, just after the models' one: no draft was chosen.
    assert pairs_landed == []
