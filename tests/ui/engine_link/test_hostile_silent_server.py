"""Stop on a server that went silent mid-reply (issue 23, class 5, the window's half). The window keeps what came,
ends up idle, and never blames the chat template or llama.cpp for a server's silence."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from pathlib import Path

from app.engine.targets import LocalModel, ServerModel
from app.ui.engine_link.engine_process import STOP_GRACE_MS
from app.ui.engine_link.worker_death import stuck_sentence
from tests.remote.fake_openai_server import FakeServer, Script, content_chunk


@pytest.mark.slow
def test_stop_on_a_silent_server_is_not_blamed_on_llama_cpp(make_window, qtbot):
    script = Script(
        models=[("org/silent", "llamacpp")],
        chunks=[content_chunk("The first words")],
        end="stall",
        stall_s=STOP_GRACE_MS / 1000 + 3,
    )
    with FakeServer(script) as server:
        window = make_window(servers=[server.url])
        key = ServerModel.at(server.url, "org/silent")
        qtbot.waitUntil(lambda: window.library.entry_for(key) is not None, timeout=10000)
        window.choose_target(key)
        qtbot.waitUntil(window.models_ready, timeout=20000)
        window.composer.edit.setPlainText("hello")
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: "The first words" in window.chat_view.toPlainText(), timeout=10000)
        # The request ends either way: its reply ends once the client drops the read, or a stuck engine is
        # restarted after STOP_GRACE_MS; only then is everything the window will say about it said.
        with qtbot.waitSignal(window.engine_process.sig_generation_ended, timeout=STOP_GRACE_MS + 10000):
            window.conversation.stop()  # the user presses Stop while the server says nothing
            assert not window.conversation.is_busy() and not window.composer.is_busy()
        said = window.chat_view.toPlainText() + window.error_banner.text()
        assert "llama.cpp" not in said and "chat template" not in said
        if "restarted" in said:  # the read could not be interrupted: the server is named as the cause
            assert "The server went silent" in said
    reply = window.store.messages(window.conversation.chat_id)[-1]
    assert reply.content == "The first words"


def test_a_stuck_local_engine_is_still_called_that():
    assert "llama.cpp" in stuck_sentence(LocalModel(Path("/models/target.gguf")))
    assert "server" in stuck_sentence(ServerModel("http://127.0.0.1:9", "m")).lower()
