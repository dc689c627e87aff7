"""Models elsewhere, in the window: a server's models in the Model picker, a reply from it highlighted like a local
one, and the Settings lists for servers (with their API keys) and RPC workers."""

from __future__ import annotations

import stat

import pytest
from PySide6.QtWidgets import QDialogButtonBox

from app.engine.targets import ServerModel
from app.store import ChatSettings
from app.ui.models.library_model import NGRAM_KEY
from app.ui.settings.dialog import AppSettingsDialog
from tests.remote.fake_openai_server import FakeServer, Script
from tests.remote.test_remote_engine import LLAMA_SERVER_REPLY
from tests.ui.window_helpers import send_and_wait


def _choose_server_model(qtbot, window, key: str) -> None:
    qtbot.waitUntil(lambda: window.library.entry_for(key) is not None, timeout=10000)
    window.choose_target(key)
    qtbot.waitUntil(lambda: not window.drafts.is_checking(), timeout=10000)
    qtbot.waitUntil(window.models_ready, timeout=20000)


def test_a_server_model_is_listed_chosen_and_its_reply_highlighted(make_window, qtbot):
    with FakeServer(Script(models=[("org/fake-model", "llamacpp")], chunks=LLAMA_SERVER_REPLY)) as server:
        window = make_window(servers=[server.url])
        key = ServerModel.at(server.url, "org/fake-model")
        _choose_server_model(qtbot, window, key)
        entry = window.library.entry_for(key)
        assert entry.name == "fake-model" and server.url in entry.summary
        # The draft picker offers what the server does, nothing local.
        assert [o.label for o in window.drafts.options()] == ["Set on the server"]
        send_and_wait(qtbot, window, "hello")
    reply = window.store.messages(window.conversation.chat_id)[-1]
    assert reply.content == "The quick brown fox jumps over the lazy dog."
    assert reply.stats.accepted == 6 and reply.stats.drafted == 12
    assert window.chat_view.highlighted_text() == " quick brown over the lazy dog"
    # Its rounds are kept as the server counts them: how many were kept, not what was proposed.
    assert [(r.drafter, r.kept, r.proposed) for r in reply.rounds] == [
        ("model", 2, []),
        ("model", 0, []),
        ("model", 4, []),
    ]
    assert reply.token_rounds == [-1, 0, 0, 0, 1, 2, 2, 2, 2, 2]


def test_an_unreachable_server_is_one_sentence_and_the_local_models_stay(make_window, qtbot):
    with FakeServer() as server:
        url = server.url
    window = make_window(servers=[url])
    qtbot.waitUntil(lambda: window.error_banner.isVisible(), timeout=10000)
    assert f"Cannot reach the server at {url}" in window.error_banner.text()
    assert window.library.usable_entries()


def test_settings_keep_servers_keys_and_rpc_workers(qtbot, monkeypatch):
    from app.engine.remote import server_keys
    from app.store import AppSettings

    monkeypatch.delenv(server_keys.ENV_VAR, raising=False)
    dialog = AppSettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    remote = dialog.remote
    assert "no authentication" in remote.rpc_warning.text() and "trusted network" in remote.rpc_warning.text()
    assert not remote.add_server("not a url")
    assert "not a server address" in remote.problem.text()
    assert remote.add_server("gpu-box:8080/v1/", "sk-secret")
    assert not remote.add_worker("gpu-box")
    assert "not an RPC worker address" in remote.problem.text()
    assert remote.add_worker("10.0.0.2:50052, 10.0.0.3:50052")
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()  # as the user does
    settings = dialog.settings()
    assert settings.servers == ["http://gpu-box:8080"]
    assert settings.rpc_workers == ["10.0.0.2:50052", "10.0.0.3:50052"]
    assert "sk-secret" not in repr(settings.to_dict())  # the key lives apart, owner-only
    assert server_keys.api_key_for("http://gpu-box:8080") == "sk-secret"
    assert stat.S_IMODE(server_keys.keys_file().stat().st_mode) == 0o600


@pytest.mark.real_models
@pytest.mark.slow
def test_a_real_llama_server_reply_in_the_window_is_highlighted(make_window, qtbot, llama_server):
    from app.engine.remote.http import list_models

    window = make_window(servers=[llama_server])
    key = ServerModel.at(llama_server, list_models(llama_server)[0].id)
    _choose_server_model(qtbot, window, key)
    assert window.session.draft_key == NGRAM_KEY
    window.update_chat_settings(max_tokens=32)
    send_and_wait(qtbot, window, "Write a Python function that returns the sum of a list.", timeout=120000)
    reply = window.store.messages(window.conversation.chat_id)[-1]
    drafted = "".join(text for text, source in reply.tokens if source == "draft")
    assert reply.stats.accepted > 0 and drafted
    assert window.chat_view.highlighted_text()


def test_a_chat_stored_with_a_server_key_opens_on_that_server_model(make_window, qtbot):
    """The store keeps a chat's target as its key, as every version did: an old chat reopens on its server model."""
    with FakeServer(Script(models=[("org/fake-model", "llamacpp")], chunks=LLAMA_SERVER_REPLY)) as server:
        window = make_window(servers=[server.url])
        target = ServerModel.at(server.url, "org/fake-model")
        qtbot.waitUntil(lambda: window.library.entry_for(target) is not None, timeout=10000)
        chat = window.store.create_chat("Old", ChatSettings(target_path=f"server:{target.url}#org/fake-model"))
        window.open_chat(chat.id)
        if window.chat_header.asking():
            window.chat_header.load_chat_model()
        qtbot.waitUntil(lambda: window.models_ready() and window.session.target == target, timeout=20000)
        send_and_wait(qtbot, window, "hello")
        assert window.store.messages(chat.id)[-1].content == "The quick brown fox jumps over the lazy dog."
