"""Per-model defaults: a model file's own context size is what it loads with, its thinking choice what it is asked
with, while another file keeps the app-wide settings."""

from __future__ import annotations

from app.store import load_settings
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait


def test_a_model_files_defaults_are_applied_when_it_loads(make_window, qtbot, fake_engine, model_folder, tiny_models):
    target = str(model_folder / tiny_models.target.name)
    window = make_window(
        engine_factory=fake_engine,
        context_size=2048,
        model_defaults={
            target: {"context_size": 1024, "thinking": False},
            str(model_folder / "elsewhere.gguf"): {"context_size": 512},
        },
    )
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    qtbot.waitUntil(lambda: fake_engine.n_ctx == 1024, timeout=10000)
    send_and_wait(qtbot, window, "hello")
    assert fake_engine.configs[-1]["thinking"] is False


def test_unusable_defaults_in_the_file_are_dropped_with_a_warning(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"model_defaults": {"/m.gguf": {"context_size": -5, "thinking": true}, "/n.gguf": 3}}')
    settings = load_settings(path)
    assert settings.model_defaults == {"/m.gguf": {"thinking": True}}
    assert "model_defaults" in (settings.load_warning or "")
