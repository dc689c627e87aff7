"""Load settings people tune (batch, flash attention, KV-cache type, mmap, mlock) reach llama.cpp, a combination it
refuses gets a sentence first, and the memory each model takes is told by one formula that matches llama.cpp."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.errors import ModelLoadError
from app.engine.gguf.memory import kv_bytes, memory_cost
from app.engine.local.engine import SpecEngine
from app.engine.local.llama_model import LoadedModel
from app.engine.events import FinishedEvent
from app.library import inspect_entry
from app.platform.machine_defaults import BATCH_AUTO, default_batch
from app.testing.synthetic import TARGET_LAYERS, TinyShape, write_tiny_model

PROMPT = "the quick brown fox jumps over the lazy dog " * 30  # longer than a 64-token batch
# A quantized cache stores 32 values a block, so llama.cpp wants heads of a multiple of 32 values (real models have
# 64 to 256); the tiny set's heads have 16.
WIDE_HEADS = TinyShape(n_embd=64, n_head=2, n_head_kv=1)


@pytest.fixture(scope="module")
def wide_heads(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wide-heads")
    return (
        write_tiny_model(folder / "wide-target.gguf", n_layer=4, shape=WIDE_HEADS, name="Wide Target"),
        write_tiny_model(folder / "wide-draft.gguf", n_layer=1, shape=WIDE_HEADS, name="Wide Draft"),
    )


def test_each_load_setting_reaches_the_loaded_engine(wide_heads):
    load = LoadSettings(n_ctx=1024, n_threads=1, n_batch=64, flash_attn="on", kv_type="q8_0", mmap=False)
    engine = SpecEngine(load)
    try:
        engine.load_target(wide_heads[0])
        engine.load_draft(wide_heads[1])
        assert "Batch 64, KV cache q8_0, flash attention on, weights read into RAM." in engine.placement_note
        events = list(engine.chat([{"role": "user", "content": PROMPT}], GenerationConfig(max_tokens=8)))
        assert isinstance(events[-1], FinishedEvent) and events[-1].stats.prompt_tokens > 64
    finally:
        engine.close()


def test_a_quantized_cache_takes_the_memory_the_formula_says(wide_heads):
    """The same prompt's cache, saved from llama.cpp, shrinks by what the formula says q8_0 saves."""
    sizes = {}
    for kv_type in ("f16", "q8_0"):
        model = LoadedModel(wide_heads[0], n_ctx=512, n_threads=1, kv_type=kv_type, flash_attn="on")
        try:
            model.decode(model.tokenize(PROMPT, add_special=True)[:200], logit_rows=[0])
            sizes[kv_type] = len(model.state_bytes())
        finally:
            model.close()
    per_token = (WIDE_HEADS.n_embd // WIDE_HEADS.n_head) * 2 * WIDE_HEADS.n_head_kv * 4
    saved = sizes["f16"] - sizes["q8_0"]
    assert saved == kv_bytes(per_token, 200, "f16") - kv_bytes(per_token, 200, "q8_0")


def test_a_quantized_cache_without_flash_attention_is_refused_with_a_sentence(tiny_models):
    engine = SpecEngine(LoadSettings(n_ctx=512, n_threads=1, kv_type="q4_0", flash_attn="off"))
    try:
        with pytest.raises(ModelLoadError, match="A q4_0 KV cache needs flash attention"):
            engine.load_target(tiny_models.target)
    finally:
        engine.close()
    assert LoadSettings(kv_type="q8_0", flash_attn="auto").problem() == ""  # llama.cpp turns it on itself


def test_batch_on_auto_is_the_machines_default():
    assert LoadSettings(n_batch=BATCH_AUTO).batch == default_batch()
    assert LoadSettings(n_batch=256).batch == 256


def test_memory_of_a_model_from_its_header(tiny_models):
    entry = inspect_entry(tiny_models.target)
    per_token = (TinyShape.n_embd // TinyShape.n_head) * 2 * TinyShape.n_head_kv * TARGET_LAYERS
    cost = entry.memory(1024, "f16")
    assert cost is not None
    assert cost.kv_cache == 1024 * per_token * 2 and cost.weights == entry.file_size
    assert entry.memory(1024, "q8_0").kv_cache == 1024 * per_token * 34 // 32
    assert entry.memory(1024, "q4_0").kv_cache == 1024 * per_token * 18 // 32
    # llama.cpp caps the context at what the model was trained for, and so does the cost.
    assert entry.memory(1 << 20, "f16").n_ctx == TinyShape.context_length


def test_memory_in_words():
    cost = memory_cost(1_000_000_000, 14336, 4096, "f16")
    assert cost.label == "1.1 GB"
    assert cost.detail == "1.0 GB of weights + 117 MB of KV cache (4,096 tokens, f16)"


@pytest.mark.real_models
@pytest.mark.parametrize(
    "n_ctx, kv_type, mib", [(4096, "f16", 112.0), (8192, "f16", 224.0), (4096, "q8_0", 59.5), (8192, "q4_0", 63.0)]
)
def test_the_formula_matches_what_llama_cpp_reports_for_qwen_1_5b(real_models, n_ctx, kv_type, mib):
    """llama.cpp's load log ("llama_kv_cache: size = 112.00 MiB ( 4096 cells, 28 layers...)"), 2026-12-04."""
    cost = inspect_entry(real_models["target"]).memory(n_ctx, kv_type)
    assert cost is not None and cost.kv_cache == mib * 2**20


def test_gpu_fitting_sizes_the_cache_by_its_type(tiny_models):
    """A q8_0 cache leaves GPU layers on Auto room for more of the model: its layers are sized at that type."""
    from app.engine.placement.gpu_fit import read_layout

    f16, q8 = read_layout(tiny_models.target, 1024), read_layout(tiny_models.target, 1024, "q8_0")
    assert [k * 34 // 64 for k in f16.kv_bytes] == list(q8.kv_bytes)
    assert q8.layer_bytes == f16.layer_bytes


def test_load_settings_in_settings_json_that_cannot_be_used_fall_back_with_a_warning(tmp_path):
    from app.store import load_settings

    path = tmp_path / "settings.json"
    path.write_text(
        '{"kv_cache_type": "q3_k", "batch_size": -4, "flash_attention": "on", "use_mlock": true, '
        '"model_defaults": {"/m.gguf": {"kv_cache_type": "q8_0", "flash_attention": "maybe"}}}'
    )
    settings = load_settings(path)
    assert (settings.kv_cache_type, settings.batch_size) == ("f16", 0)
    assert (settings.flash_attention, settings.use_mlock) == ("on", True)
    assert settings.model_defaults == {"/m.gguf": {"kv_cache_type": "q8_0"}}
    assert all(name in settings.load_warning for name in ("kv_cache_type", "batch_size", "model_defaults"))
