"""Shared fixtures. Qt runs offscreen and every test gets its own SpecChat home, never the user's folders."""

from __future__ import annotations

import gc
import os
import signal

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# A shell that starts a job in the background (`cmd &`, as some CI runners do) starts it with SIGINT ignored, and an
# ignored signal stays ignored in every child: the tests of Ctrl-C (the CLI's clean exit, a download kept for
# resuming, the API server stopped by Ctrl-C) would then see nothing happen. Python's own handler is reset to the
# default in each child, so installing it here gives them a Ctrl-C as a terminal would.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

pytest_plugins = ["pytester"]  # tests/ui/test_thread_leak_check.py runs the leak fixture on a leaking test

REAL_MODELS_DIR = Path(os.environ.get("SPECCHAT_TEST_MODELS") or Path.home() / ".cache" / "specchat-test-models")
REAL_TARGET = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
REAL_DRAFT = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
REAL_GEMMA = "gemma-3-270m-q4_k_m.gguf"
REAL_SMOLLM = "SmolLM2-135M-Instruct.Q4_1.gguf"
REAL_EMBEDDING = "all-minilm-l6-v2-f16.gguf"  # made by tests/support/real_embedding.py, not fetch-models.sh


@pytest.fixture(autouse=True)
def specchat_home(tmp_path_factory, monkeypatch) -> Path:
    """A private SpecChat home per test, so nothing reads or writes the real user data, config or cache."""
    home = tmp_path_factory.mktemp("specchat-home")
    monkeypatch.setenv("SPECCHAT_HOME", str(home))
    # The synthetic models need no parallelism, and one thread never spins against pytest's other threads.
    monkeypatch.setenv("SPECCHAT_THREADS", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(home / "hf"))
    return home


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """The synthetic GGUF model set (see app.testing.synthetic), written once per test session."""
    from app.testing.synthetic import make_model_set

    return make_model_set(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(scope="session")
def real_models() -> dict[str, Path]:
    """The real models from ../shared/models/fetch-models.sh; the test is skipped when they are absent, and fails
    when SPECCHAT_REQUIRE_REAL_MODELS=1 (.ci/run sets it once it has fetched them)."""
    names = {"target": REAL_TARGET, "draft": REAL_DRAFT, "gemma": REAL_GEMMA, "smollm": REAL_SMOLLM}
    paths = {key: REAL_MODELS_DIR / name for key, name in names.items()}
    _require_real_files(list(paths.values()), "run fetch-models.sh")
    return paths


@pytest.fixture(scope="session")
def real_embedding_model() -> Path:
    """all-MiniLM-L6-v2 converted from its PyPI wheel (tests/support/real_embedding.py, which .ci/run runs after
    fetch-models.sh); skipped or failed when absent, as the chat models are."""
    path = REAL_MODELS_DIR / REAL_EMBEDDING
    _require_real_files([path], "run python -m tests.support.real_embedding")
    return path


def _require_real_files(paths: list[Path], remedy: str) -> None:
    """Skip the test when a real model is absent, or fail it when SPECCHAT_REQUIRE_REAL_MODELS=1: CI has fetched
    them, so a missing one is a fault there, not a reason to let the tier vanish quietly."""
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        why = f"real models absent from {REAL_MODELS_DIR} ({', '.join(missing)}); {remedy}"
        if os.environ.get("SPECCHAT_REQUIRE_REAL_MODELS") == "1":
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """llama.cpp's llama-server with the real Qwen pair, speculating (skips when it or the models are absent)."""
    from tests.remote.llama_tools import serve_llama_server

    yield from serve_llama_server(tmp_path_factory)


def pytest_collection_finish(session):
    """What is alive once the tests are collected (modules, test items, fixture definitions) lives to the session's
    end: frozen out of the garbage collector, so a full collection (each window test's teardown runs one,
    tests/ui/conftest.py) walks only what the tests made since. With the suite collected, a full collection walked
    about 437,000 objects: 0.6 s each time on the loaded 2-core machine (2026-12-06), a fifth of tests/ui's time."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(items):
    """A test that takes the real models (the fixture, or llama-server serving them) is a `real_models` test even
    where its mark was forgotten, so the fast tier (-m "not slow and not real_models") never loads them."""
    for item in items:
        if {"real_models", "real_embedding_model", "llama_server"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.real_models)
