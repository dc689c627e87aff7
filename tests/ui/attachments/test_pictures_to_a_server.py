"""Pictures to a server's model from the window: the engine process sends them as data: URLs in OpenAI's image_url
parts; a server that refuses them is named with its reason, and the message with its picture stays in the chat."""

from __future__ import annotations

import base64

import pytest

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.engine.targets import ServerModel
from tests.remote.fake_openai_server import FakeServer, Script, content_chunk
from tests.ui.attachments.test_pictures_in_window import paste_picture

from tests.ui.window_helpers import send_and_wait

QUESTION = "What is in this picture?"


@pytest.fixture(scope="module")
def picture(tmp_path_factory):
    from tests.vision.pictures import write_pictures

    return write_pictures(tmp_path_factory.mktemp("pictures"))[0]  # noise.png


def chosen_server_model(qtbot, window, server) -> None:
    key = ServerModel.at(server.url, "org/eyes")
    qtbot.waitUntil(lambda: window.library.entry_for(key) is not None, timeout=10000)
    window.choose_target(key)
    qtbot.waitUntil(window.models_ready, timeout=20000)


def test_a_pasted_picture_goes_to_the_servers_model_as_a_data_url(make_window, qtbot, picture):
    script = Script(models=[("org/eyes", "llamacpp")], chunks=[content_chunk("A noisy picture.", finish="stop")])
    with FakeServer(script) as server:
        window = make_window(servers=[server.url])
        chosen_server_model(qtbot, window, server)
        with qtbot.waitSignal(window.engine_process.sig_picture_counted, timeout=10000):
            paste_picture(window, picture)
        labels = window.composer.tray.findChildren(QLabel, "PictureTokens")
        assert [label.text() for label in labels] == ["about 256 tokens"]  # its tokenizer is not at hand
        send_and_wait(qtbot, window, QUESTION)
        [body] = server.requests
    image_part, text_part = body["messages"][-1]["content"]
    head, _, payload = image_part["image_url"]["url"].partition(",")
    assert head == "data:image/png;base64" and base64.b64decode(payload).startswith(b"\x89PNG")
    assert text_part == {"type": "text", "text": QUESTION}
    user, reply = window.store.messages(window.conversation.chat_id)
    assert reply.content == "A noisy picture." and len(user.pictures) == 1


def test_a_server_that_refuses_pictures_is_named_with_its_reason_and_nothing_is_lost(make_window, qtbot, picture):
    script = Script(
        models=[("org/eyes", "llamacpp")],
        status=400,
        error_body={"error": {"message": "image input is not supported by this model"}},
    )
    with FakeServer(script) as server:
        window = make_window(servers=[server.url])
        chosen_server_model(qtbot, window, server)
        paste_picture(window, picture)
        window.composer.edit.setPlainText(QUESTION)
        with qtbot.waitSignal(window.engine_process.sig_generation_ended, timeout=20000):
            qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    said = window.chat_view.toPlainText() + window.error_banner.text()
    assert "refused the message with pictures (HTTP 400" in said
    assert "image input is not supported by this model" in said
    user = window.store.messages(window.conversation.chat_id)[0]
    assert user.content == QUESTION and len(user.pictures) == 1 and user.pictures[0].path.is_file()
