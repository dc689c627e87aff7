"""GPU layers on Auto: what fits in free device memory goes to the GPU, draft first; a CPU-only build says so."""

from __future__ import annotations

import re

import pytest

from app.engine.placement import gpu_fit
from app.engine.config import GPU_LAYERS_AUTO, LoadSettings
from app.engine.placement.devices import GIB, Device, DeviceReport, list_devices
from app.engine.placement.gpu_fit import COMPUTE_RESERVE_BYTES, FREE_MARGIN, layout_from_tensors, place

MIB = 1024**2
CPU = Device("CPU", "AMD EPYC", "cpu", 32 * GIB, 32 * GIB, "CPU")


def gpu(free_gib: float, name: str = "NVIDIA GeForce RTX 4090") -> Device:
    return Device("CUDA0", name, "gpu", int(free_gib * GIB), 24 * GIB, "CUDA")


def model(name: str, n_layer: int, layer_mib: int, output_mib: int = 100, n_ctx: int = 4096):
    """A made-up GGUF: n_layer blocks of layer_mib each, 2 KV heads of 64 (f16 KV: 2 MiB per layer at 4096)."""
    tensors = [("token_embd.weight", 200 * MIB), ("output_norm.weight", 0), ("output.weight", output_mib * MIB)]
    for i in range(n_layer):
        tensors += [(f"blk.{i}.attn_q.weight", layer_mib * MIB // 2), (f"blk.{i}.ffn_up.weight", layer_mib * MIB // 2)]
    meta = {
        "general.architecture": "qwen2",
        "qwen2.block_count": n_layer,
        "qwen2.embedding_length": 1024,
        "qwen2.attention.head_count": 16,
        "qwen2.attention.head_count_kv": 2,
    }
    return layout_from_tensors(name, tensors, meta, n_ctx)


TARGET = model("target.gguf", 28, 100)  # ~2.9 GiB with KV and output
DRAFT = model("draft.gguf", 24, 20)


def test_layout_counts_layers_output_and_kv_cache():
    assert TARGET.n_layer == 28 and TARGET.layer_bytes[0] == 100 * MIB
    assert TARGET.kv_bytes[0] == 4096 * (64 + 64) * 2 * 2  # n_ctx x (k + v per head) x kv heads x f16
    assert TARGET.cost(0) == 0
    assert TARGET.cost(1) == 100 * MIB + TARGET.kv_bytes[0] + COMPUTE_RESERVE_BYTES
    assert TARGET.cost(TARGET.all_layers) == TARGET.cost(TARGET.n_layer) + 100 * MIB  # the output head comes last
    tied = layout_from_tensors(
        "tied",
        [("token_embd.weight", 300 * MIB), ("blk.0.x", MIB)],
        {"general.architecture": "a", "a.block_count": 1},
        512,
    )
    assert tied.output_bytes == 300 * MIB  # tied embeddings: llama.cpp copies them to the output's device


def test_everything_fits():
    p = place(TARGET, DRAFT, DeviceReport((CPU, gpu(22.1))))
    assert (p.target_layers, p.draft_layers) == (TARGET.all_layers, DRAFT.all_layers)
    assert p.explanation == (
        "All 28 layers of the target and the draft on NVIDIA GeForce RTX 4090 (CUDA), 23.7 GB free."
    )
    assert p.backends == "CUDA"


def test_draft_fits_but_only_part_of_the_target():
    free = (DRAFT.cost(DRAFT.all_layers) + TARGET.cost(10) + 50 * MIB) / (1 - FREE_MARGIN) / GIB
    p = place(TARGET, DRAFT, DeviceReport((CPU, gpu(free))))
    assert p.draft_layers == DRAFT.all_layers
    assert p.target_layers == 10
    assert p.explanation.startswith("All 24 layers of the draft, 10 of 28 layers of the target on NVIDIA")
    assert "the rest on the CPU" in p.explanation


def test_nothing_fits():
    p = place(TARGET, DRAFT, DeviceReport((CPU, gpu(0.3))))
    assert (p.target_layers, p.draft_layers) == (0, 0)
    assert p.explanation.startswith("CPU only: not even one layer fits") and p.backends == "CPU"


def test_a_number_set_by_the_user_overrides_auto_and_takes_its_room_first():
    free = (TARGET.cost(20) + DRAFT.cost(5)) / (1 - FREE_MARGIN) / GIB + 0.01
    p = place(TARGET, DRAFT, DeviceReport((CPU, gpu(free))), target_request=20)
    assert (p.target_layers, p.draft_layers) == (20, 5)
    assert "(target as set in Settings)" in p.explanation
    assert place(TARGET, None, DeviceReport((CPU, gpu(22))), target_request=0).target_layers == 0


def test_an_integrated_gpu_is_used_when_there_is_no_discrete_one():
    igpu = Device("Vulkan0", "Intel Iris Xe", "igpu", 8 * GIB, 16 * GIB, "Vulkan")
    p = place(TARGET, None, DeviceReport((CPU, igpu)))
    assert p.target_layers == TARGET.all_layers and "Intel Iris Xe (Vulkan)" in p.explanation


def test_cpu_only_build_runs_on_the_cpu_and_says_so():
    report = DeviceReport((CPU,), rpc=True)  # an RPC build claims GPU offload support without a GPU
    p = place(TARGET, DRAFT, report)
    assert (p.target_layers, p.draft_layers) == (0, 0)
    assert (
        p.explanation
        == "CPU only: this build of llama.cpp has no GPU backend - see 'GPU builds' in docs/gpu-and-remote.md."
    )
    asked = place(TARGET, DRAFT, report, target_request=20)
    assert asked.target_layers == 0
    assert asked.explanation == (
        "GPU layers set to 20, but this build of llama.cpp has no GPU backend: "
        "the models run on the CPU. See 'GPU builds' in docs/gpu-and-remote.md."
    )


def test_unknown_devices_leave_auto_on_the_cpu_with_the_reason():
    p = place(
        TARGET,
        DRAFT,
        DeviceReport(problem="this llama.cpp build does not export ggml_backend_dev_count"),
        target_request=12,
    )
    assert (p.target_layers, p.draft_layers) == (12, 0)
    assert "ggml_backend_dev_count" in p.explanation


def test_this_machine_lists_the_cpu_only():
    report = list_devices()
    assert report.known, report.problem
    assert report.cpu_only and any(d.kind == "cpu" for d in report.devices)
    assert report.lines() == [
        "CPU only: this build of llama.cpp has no GPU backend - see 'GPU builds' in docs/gpu-and-remote.md"
    ]


def test_a_missing_symbol_leaves_the_devices_unknown(monkeypatch):
    from app.engine.placement import devices

    monkeypatch.setattr(devices, "symbol", lambda libs, name, *a: None)
    report = devices.list_devices()
    assert not report.known and "ggml_backend_dev_count" in report.problem
    assert report.lines()[0].startswith("Devices unknown:")


def test_a_tiny_model_loads_on_auto_with_no_gpu_layers(tiny_models):
    from app.engine.local.engine import SpecEngine

    engine = SpecEngine(LoadSettings(n_ctx=256, n_threads=1))
    assert engine.load_settings.target_gpu_layers == GPU_LAYERS_AUTO
    try:
        engine.load_target(tiny_models.target, planned_draft=tiny_models.draft)
        engine.load_draft(tiny_models.draft)
        assert (engine.target.n_gpu_layers, engine.draft.n_gpu_layers) == (0, 0)
        assert engine.placement_note.startswith("CPU only: this build of llama.cpp has no GPU backend")
        assert engine.costs_cached() is False  # keys build without error for the resolved layers
    finally:
        engine.close()


def test_model_files_are_sized_from_their_tensors(tiny_models):
    layout = gpu_fit.read_layout(tiny_models.target, 256)
    assert layout.n_layer > 0 and all(size > 0 for size in layout.layer_bytes)
    assert all(kv > 0 for kv in layout.kv_bytes)


@pytest.mark.parametrize("request_", [GPU_LAYERS_AUTO, 7])
def test_an_unreadable_file_never_stops_the_load(tmp_path, request_):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"nope")
    p = gpu_fit.resolve(bad, None, 512, request_, GPU_LAYERS_AUTO, report=DeviceReport((CPU, gpu(20))))
    assert p.target_layers == max(request_, 0) and "could not be read" in p.explanation


def test_the_docs_section_the_notices_point_to_exists():
    from pathlib import Path

    from app.engine.placement.devices import SEE_GPU_DOCS

    heading, path = re.fullmatch(r"see '(.+)' in (\S+)", SEE_GPU_DOCS).groups()
    text = (Path(__file__).resolve().parents[3] / path).read_text(encoding="utf-8")
    assert f"## {heading}" in text and "-DGGML_CUDA=on" in text


@pytest.mark.parametrize("free_gib, expect_target_on_gpu", [(20.0, True), (0.5, False)])
def test_the_engine_places_the_planned_draft_first(tiny_models, monkeypatch, free_gib, expect_target_on_gpu):
    from app.engine.placement import devices
    from app.engine.local.engine import SpecEngine

    # A pretend GPU: llama.cpp here has none, so the layers asked for still run on the CPU.
    monkeypatch.setattr(devices, "list_devices", lambda: DeviceReport((CPU, gpu(free_gib, "Fake GPU"))))
    engine = SpecEngine(LoadSettings(n_ctx=256, n_threads=1))
    try:
        engine.load_target(tiny_models.target, planned_draft=tiny_models.draft)
        engine.load_draft(tiny_models.draft)
        target_all = gpu_fit.read_layout(tiny_models.target, 256).all_layers
        assert engine.draft.n_gpu_layers == gpu_fit.read_layout(tiny_models.draft, 256).all_layers
        assert engine.target.n_gpu_layers == (target_all if expect_target_on_gpu else 0)
        assert "Fake GPU (CUDA)" in engine.placement_note
        assert engine.placement.backends == "CUDA"
    finally:
        engine.close()
