"""Files llama.cpp would refuse or crash on are called unusable, with the reason, before anything loads them; the
draft length stops where llama.cpp's verify batch does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.engine.config import MAX_DRAFT, MAX_OUTPUT_ROWS, GenerationConfig
from app.engine.gguf.info import inspect_gguf
from app.engine.child_process import last_error_line
from app.engine.gguf.probe import CACHE_FILE_NAME, probe_model, probe_models
from app.library import inspect_entry
from tests.support.malformed_models import MALFORMED, make_malformed_set
from tests.support.processes import run_cli


@pytest.fixture(scope="session")
def malformed(tmp_path_factory) -> dict[str, Path]:
    return make_malformed_set(tmp_path_factory.mktemp("malformed"))


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_header_check_names_the_problem(malformed, kind):
    info = inspect_gguf(malformed[kind])
    assert not info.usable
    assert MALFORMED[kind].reason in info.problem


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_library_lists_the_file_as_unusable_with_the_reason(malformed, kind):
    entry = inspect_entry(malformed[kind])
    assert not entry.usable
    assert MALFORMED[kind].reason.lower() in entry.problem.lower()  # the library capitalises its sentences


def test_the_synthetic_family_stays_usable(tiny_models):
    for path in (
        tiny_models.target,
        tiny_models.draft,
        tiny_models.bad_vocab_type,
        tiny_models.bad_bos,
        tiny_models.bad_eos,
        tiny_models.bad_token_text,
    ):
        info = inspect_gguf(path)
        assert info.usable, (path.name, info.problem)


def test_real_models_stay_usable(real_models):
    for path in real_models.values():
        info = inspect_gguf(path)
        assert info.usable, (path.name, info.problem)


@pytest.mark.parametrize(
    "kind, words",
    [
        ("duplicate_token_text", "GGML_ASSERT(id_to_token.size() == token_to_id.size())"),
        ("add_bos_without_bos", "GGML_ASSERT(vocab.token_bos() != LLAMA_TOKEN_NULL)"),
    ],
)
def test_probe_reports_the_assert_that_would_have_killed_us(malformed, kind, words):
    verdict = probe_model(malformed[kind], use_cache=False)
    assert not verdict.ok
    assert verdict.reason.startswith("llama.cpp crashes on it: llama-vocab.cpp:")
    assert words in verdict.reason


def test_probe_reports_llama_cpp_refusals(malformed):
    verdict = probe_model(malformed["unknown_architecture"], use_cache=False)
    assert not verdict.ok
    assert verdict.reason == "llama.cpp cannot load it: unknown model architecture: 'nosucharch'"


def test_probe_passes_a_good_model_and_caches_the_verdict(tiny_models, specchat_home, monkeypatch):
    assert probe_model(tiny_models.target).ok
    cache = json.loads((specchat_home / "cache" / CACHE_FILE_NAME).read_text())
    [key] = cache["files"]
    assert key.startswith(str(tiny_models.target.resolve()))

    def no_child(*_args, **_kwargs):
        raise AssertionError("probed again instead of using the cached verdict")

    monkeypatch.setattr("app.engine.gguf.probe._run_child", no_child)
    assert probe_model(tiny_models.target).ok


def test_a_target_and_its_draft_are_probed_by_one_child_and_a_crash_spoils_only_its_own_verdict(
    tiny_models, malformed, monkeypatch
):
    started = []
    real_run = subprocess.run

    def counting_run(cmd, *args, **kwargs):
        started.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr("app.engine.gguf.probe.subprocess.run", counting_run)
    assert [v.ok for v in probe_models([tiny_models.target, tiny_models.draft])] == [True, True]
    assert len(started) == 1  # the first use's wait: one Python and one llama.cpp to start, not two
    started.clear()
    verdicts = probe_models(
        [tiny_models.draft_identical, malformed["duplicate_token_text"], malformed["unknown_architecture"]],
        use_cache=False,
    )
    assert verdicts[0].ok
    assert verdicts[1].reason.startswith("llama.cpp crashes on it: llama-vocab.cpp:")
    assert verdicts[2].reason == "llama.cpp cannot load it: unknown model architecture: 'nosucharch'"
    assert len(started) == 2  # the files after the one that killed the child had one of their own


def test_last_error_line_prefers_the_assert():
    stderr = (
        "llama_model_loader: loaded meta data\n"
        "/build/x/vendor/llama.cpp/src/llama-vocab.cpp:2544: GGML_ASSERT(a == b) failed\n"
        "Aborted\n"
    )
    assert last_error_line(stderr) == "llama-vocab.cpp:2544: GGML_ASSERT(a == b) failed"


def test_draft_cap_fits_llama_cpp_output_rows():
    # Verifying k drafted tokens decodes k + 1 rows with logits.
    assert MAX_DRAFT + 1 <= MAX_OUTPUT_ROWS
    assert GenerationConfig(draft_max=64).draft_max == MAX_DRAFT
    assert GenerationConfig(draft_max=-3).draft_max == 0
    assert GenerationConfig(draft_max=None).draft_max is None


def test_generation_at_the_draft_cap_runs(tiny_models):
    # A child process, so an abort in llama.cpp shows as a negative return code rather than killing the tests.
    done = run_cli(
        "generate",
        "--target",
        str(tiny_models.target),
        "--draft",
        str(tiny_models.draft_identical),
        "--prompt",
        "The cat",
        "--draft-max",
        str(MAX_DRAFT),
        "--max-tokens",
        str(MAX_DRAFT + 8),
        "--json",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    stats = json.loads(done.stdout)["stats"]
    assert stats["tokens"] == MAX_DRAFT + 8
    assert str(MAX_DRAFT) in stats["draft_len_histogram"]  # a full-length draft was verified


def test_chat_settings_spin_box_stops_at_the_cap(qtbot):
    from app.store import ChatSettings
    from app.ui.settings.chat_dialog import ChatSettingsDialog

    dialog = ChatSettingsDialog(ChatSettings(draft_max=64))  # saved before the cap existed
    qtbot.addWidget(dialog)
    assert dialog.draft_max.maximum() == MAX_DRAFT
    assert dialog.settings().draft_max == MAX_DRAFT
