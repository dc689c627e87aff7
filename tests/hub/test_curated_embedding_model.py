"""The curated embedding model (issue 56), downloaded through the real Get-models panel from the fake Hub under its
published repository id and file name: it lands as a file for document search and `serve --embedding`, is never
loaded as a chat model, and the library lists it as an embedding model."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.hub.curated import curated_pairs
from app.library import inspect_entry
from app.platform import paths
from app.testing.synthetic_embedding import write_tiny_embedding_model

TIMEOUT_MS = 10_000


def _embedding_pair():
    return next(p for p in curated_pairs() if p.kind == "embedding")


def test_one_embedding_model_is_offered_under_its_published_name():
    pair = _embedding_pair()
    assert [p.kind for p in curated_pairs()].count("embedding") == 1
    assert [(f.repo_id, f.filename) for f in pair.files] == [
        ("nomic-ai/nomic-embed-text-v1.5-GGUF", "nomic-embed-text-v1.5.Q8_0.gguf")
    ]


def test_the_embedding_model_downloads_and_is_not_offered_to_load_as_a_chat_model(
    qtbot, fake_hub, tmp_path, make_panel
):
    pair = _embedding_pair()
    tiny = write_tiny_embedding_model(tmp_path / "tiny-embed.gguf")
    fake_hub.add_repo(pair.target.repo_id, {pair.target.filename: tiny.read_bytes()})
    panel = make_panel(pairs=[pair])
    button = panel.pair_buttons[pair.pair_id]
    assert button.text() == "Download" and "n-grams" not in panel.pair_cards[0].sizes.text()
    pairs_landed: list[tuple[str, str]] = []
    panel.sig_pair_downloaded.connect(lambda target, draft: pairs_landed.append((target, draft)))
    with qtbot.waitSignal(panel.sig_models_downloaded, timeout=TIMEOUT_MS):
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    model = paths.models_dir() / "nomic-embed-text-v1.5.Q8_0.gguf"
    assert model.read_bytes() == tiny.read_bytes()
    qtbot.waitUntil(lambda: button.text() == "Downloaded", timeout=TIMEOUT_MS)
    assert not button.isEnabled() and pairs_landed == []
    entry = inspect_entry(model)
    assert entry.kind == "embedding" and not entry.usable
