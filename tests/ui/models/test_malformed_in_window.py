"""Malformed model files in the real window with the real engine process: every one ends in a clear message, and
no process but the engine worker ever dies."""

from __future__ import annotations

import shutil

import pytest

from tests.support.malformed_models import MALFORMED, make_malformed_set
from app.engine.targets import LocalModel
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait


@pytest.fixture(scope="module")
def malformed_files(tmp_path_factory):
    return make_malformed_set(tmp_path_factory.mktemp("malformed"))


def test_every_malformed_file_is_refused_with_its_reason_and_the_window_still_chats(
    make_window, qtbot, model_folder, tiny_models, malformed_files
):
    for path in malformed_files.values():
        shutil.copy2(path, model_folder / path.name)
    window = make_window()
    for kind, path in malformed_files.items():
        entry = window.library.entry_for(str(model_folder / path.name))
        assert entry is not None and not entry.usable, kind
        assert MALFORMED[kind].reason.lower() in entry.problem.lower(), (kind, entry.problem)
        window.choose_target(entry.path)
        assert window.error_banner.isVisible() and entry.problem in window.error_banner.text()
    # The real engine is untouched by all of that: a good model loads and answers.
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    window.update_chat_settings(max_tokens=8)
    message_id = send_and_wait(qtbot, window, "hello")
    assert window.store.get_message(message_id).content


@pytest.mark.slow
def test_a_file_that_aborts_llama_cpp_takes_down_only_the_engine_process(
    make_window, qtbot, model_folder, tiny_models, malformed_files
):
    window = make_window()
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    pid = window.engine_process.pid()
    bad = model_folder / "bad-vocab.gguf"
    shutil.copy2(malformed_files["duplicate_token_text"], bad)
    # Past the library's verdict, as if the header checks missed it: llama.cpp itself aborts in the worker.
    with qtbot.waitSignal(window.engine_process.sig_worker_died, timeout=30000) as blocker:
        window.engine_process.request_load(999, LocalModel(bad), None, window._load_settings())
    death = blocker.args[0]
    assert death.loading_path == str(bad)
    assert "GGML_ASSERT" in death.detail and "SIGABRT" in death.message
    assert "GGML_ASSERT" in window.error_banner.text()
    assert window.engine_process.is_running() and window.engine_process.pid() != pid
    # The window reloads nothing automatically that crashed; the good target is chosen again and answers.
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    window.update_chat_settings(max_tokens=8)
    assert window.store.get_message(send_and_wait(qtbot, window, "still alive?")).content


def test_a_chat_template_that_never_ends_gets_chatml_and_a_notice(make_window, qtbot, model_folder):
    from gguf import GGUFValue, GGUFValueType

    from app.testing.synthetic import DRAFT_LAYERS, write_tiny_model

    endless = "{% for i in range(100000) %}{% for j in range(100000) %}{{ i }}{% endfor %}{% endfor %}"

    def endless_template(writer) -> None:
        writer.kv_data[0]["tokenizer.chat_template"] = GGUFValue(value=endless, type=GGUFValueType.STRING)

    path = write_tiny_model(model_folder / "endless-template.gguf", n_layer=DRAFT_LAYERS, edit=endless_template)
    window = make_window()
    choose_pair(qtbot, window, path, NGRAM_KEY)
    window.update_chat_settings(max_tokens=8)
    message_id = send_and_wait(qtbot, window, "hello", timeout=60000)
    assert window.store.get_message(message_id).content
    text = window.chat_view.toPlainText()
    assert "chat template could not be used" in text and "ChatML" in text
    # Said once, not on every reply.
    send_and_wait(qtbot, window, "again", timeout=60000)
    assert window.chat_view.toPlainText().count("chat template could not be used") == 1
