"""The settings dialogs return what the user entered, and the window applies it."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog

from app.engine.config import GPU_LAYERS_ALL, GPU_LAYERS_AUTO, PARALLEL_AUTO
from app.engine.placement.devices import Device, DeviceReport, list_devices
from app.store import AppSettings, ChatSettings, load_settings
from app.ui.settings.chat_dialog import ChatSettingsDialog
from app.ui.settings.dialog import AppSettingsDialog


def test_chat_settings_round_trip_keeps_models_and_switch(qtbot):
    original = ChatSettings(speculative=False, target_path="/m/t.gguf", draft_path="/m/d.gguf", seed=None)
    dialog = ChatSettingsDialog(original)
    qtbot.addWidget(dialog)
    dialog.system_prompt.setPlainText("  Be brief.  ")
    dialog.temperature.setValue(0.7)
    dialog.top_p.setValue(0.9)
    dialog.top_k.setValue(20)
    dialog.seed.setValue(42)
    dialog.max_tokens.setValue(256)
    dialog.draft_max.setValue(6)
    result = dialog.settings()
    assert (result.system_prompt, result.temperature, result.top_p, result.top_k, result.seed) == (
        "Be brief.",
        0.7,
        0.9,
        20,
        42,
    )
    assert (result.max_tokens, result.draft_max) == (256, 6)
    assert (result.speculative, result.target_path, result.draft_path) == (False, "/m/t.gguf", "/m/d.gguf")
    dialog.seed.setValue(-1)
    dialog.draft_max.setValue(0)
    assert dialog.settings().seed is None and dialog.settings().draft_max is None  # "Random", "Auto"


def test_app_settings_dialog_edits_folders_and_load_settings(qtbot):
    dialog = AppSettingsDialog(AppSettings(model_folders=["/a"], threads=2, context_size=4096))
    qtbot.addWidget(dialog)
    dialog.add_folder("/b")
    dialog.add_folder("/a")  # no duplicates
    dialog.threads.setValue(3)
    dialog.context_size.setValue(8192)
    dialog.target_gpu_layers.setValue(GPU_LAYERS_AUTO)
    dialog.draft_gpu_layers.setValue(10)
    dialog.scan_hf_cache.setChecked(False)
    result = dialog.settings()
    assert result.model_folders == ["/a", "/b"]
    assert (result.threads, result.context_size, result.target_gpu_layers, result.draft_gpu_layers) == (
        3,
        8192,
        GPU_LAYERS_AUTO,
        10,
    )
    assert result.scan_hf_cache is False


def test_changed_load_settings_reload_the_models_when_confirmed_and_are_saved(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    from tests.ui.window_helpers import choose_pair
    from app.ui.models.library_model import NGRAM_KEY

    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    asked = []
    window.confirm = lambda title, text, action: asked.append(title) or True
    new = AppSettings(**{**window.settings.to_dict(), "context_size": 1024})
    monkeypatch.setattr(AppSettingsDialog, "exec", lambda self: QDialog.DialogCode.Accepted)
    monkeypatch.setattr(AppSettingsDialog, "settings", lambda self: new)
    window.open_app_settings()
    qtbot.waitUntil(lambda: window.footer.context_gauge.maximum() == 1024 and window.models_ready())
    assert asked == ["Reload the model?"]
    assert fake_engine.n_ctx == 1024
    assert load_settings().context_size == 1024


def test_changed_load_settings_wait_for_the_next_load_when_not_confirmed(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    from tests.ui.window_helpers import choose_pair
    from app.ui.models.library_model import NGRAM_KEY

    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    window.confirm = lambda *args: False
    window.apply_app_settings(AppSettings(**{**window.settings.to_dict(), "kv_cache_type": "q8_0", "batch_size": 256}))
    assert fake_engine.load_settings["kv_type"] == "f16"  # still loaded as it was: nothing reloaded behind the back
    window.session.request_load()  # the next load
    qtbot.waitUntil(lambda: fake_engine.load_settings["kv_type"] == "q8_0", timeout=10000)
    assert fake_engine.load_settings["n_batch"] == 256


def test_gpu_layers_offer_auto_a_number_and_all(qtbot):
    dialog = AppSettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    spin = dialog.target_gpu_layers
    assert spin.text() == "Auto" and dialog.settings().target_gpu_layers == GPU_LAYERS_AUTO  # the default
    spin.lineEdit().selectAll()
    qtbot.keyClicks(spin.lineEdit(), "All")
    spin.interpretText()
    assert dialog.settings().target_gpu_layers == GPU_LAYERS_ALL and spin.text() == "All"
    spin.setValue(0)
    assert spin.text() == "0" and dialog.settings().target_gpu_layers == 0


def test_devices_section_says_cpu_only_on_this_build(qtbot):
    dialog = AppSettingsDialog(AppSettings(), devices=list_devices())  # the real list of this machine's llama.cpp
    qtbot.addWidget(dialog)
    text = dialog.devices.text()
    assert "CPU only: this build of llama.cpp has no GPU backend - see 'GPU builds' in docs/gpu-and-remote.md" in text
    assert "RPC (models on other machines): " in text


def test_devices_section_lists_gpus_with_free_memory(qtbot):
    report = DeviceReport(
        (
            Device("CPU", "x", "cpu", 0, 0, "CPU"),
            Device("CUDA0", "NVIDIA GeForce RTX 4090", "gpu", int(22.1 * 1024**3), 0, "CUDA"),
        ),
        rpc=False,
    )
    dialog = AppSettingsDialog(AppSettings(), devices=report)
    qtbot.addWidget(dialog)
    assert "NVIDIA GeForce RTX 4090 (CUDA), 23.7 GB free" in dialog.devices.text()
    assert "CPU only" not in dialog.devices.text()


def test_threads_on_auto_show_the_count_auto_starts_from_and_a_number_stays_possible(qtbot, monkeypatch):
    monkeypatch.setenv("SPECCHAT_THREADS", "6")
    dialog = AppSettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    assert dialog.threads.text() == "Auto (6)"
    assert dialog.settings().threads == 0
    dialog.threads.setValue(2)
    assert dialog.threads.text() == "2" and dialog.settings().threads == 2


def test_top_p_and_top_k_are_off_at_temperature_zero_and_say_why(qtbot):
    dialog = ChatSettingsDialog(ChatSettings(temperature=0.0, top_p=0.8, top_k=30))
    qtbot.addWidget(dialog)
    assert not dialog.top_p.isEnabled() and not dialog.top_k.isEnabled()
    assert "Temperature 0 always takes the likeliest token" in dialog.top_k.toolTip()
    dialog.temperature.setValue(0.7)
    assert dialog.top_p.isEnabled() and dialog.top_k.isEnabled()
    assert (dialog.settings().top_p, dialog.settings().top_k) == (0.8, 30)  # kept while they were off


def test_requests_at_once_show_the_context_each_chat_gets(qtbot):
    """The chosen model was trained on 2,048 tokens: four chats at a context of 8,192 get 2,048 each, and the page
    says so; a smaller context is what each gets."""
    dialog = AppSettingsDialog(AppSettings(context_size=8192, parallel_requests=PARALLEL_AUTO), trained_context=2048)
    qtbot.addWidget(dialog)
    field = dialog.requests_at_once
    assert field.box.text().startswith("Auto") and field.cost.text().startswith("Up to 4 requests at once")
    field.box.setValue(4)
    assert field.cost.text().startswith("4 requests at once, each chat with 2,048 tokens (the most this model")
    dialog.context_size.setValue(1024)
    assert "each chat with 1,024 tokens of KV cache" in field.cost.text()
    assert dialog.settings().parallel_requests == 4


def test_requests_at_once_start_on_auto(qtbot):
    dialog = AppSettingsDialog(AppSettings())  # a new install's
    qtbot.addWidget(dialog)
    assert dialog.requests_at_once.box.text().startswith("Auto")
    assert dialog.settings().parallel_requests == PARALLEL_AUTO
