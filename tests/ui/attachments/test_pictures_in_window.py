"""Pictures in the window as a user sends them: a model that can see has an eye in the library and the picker; pasted into the composer (a chip with a thumbnail), sent to a model
that can see (the tiny vision model and its projector, in the real engine process), shown in the transcript, there
again after a restart, and deleted from disk with the chat. A model that cannot see gets one sentence, and the
composer keeps the text and the picture."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon, QImage, QTextDocument
from PySide6.QtWidgets import QApplication, QFileDialog, QLabel, QPushButton

from app.ui.transcript.picture_thumbnails import picture_url

from tests.ui.window_helpers import choose_pair, drop_files, send_and_wait


@pytest.fixture(scope="module")
def vision_folder(tmp_path_factory):
    """A folder of the tiny vision model with its projector beside it (found by llama.cpp's naming)."""
    from app.testing.synthetic_vision import make_vision_model_set

    models = make_vision_model_set(tmp_path_factory.mktemp("tiny-vision"))
    folder = tmp_path_factory.mktemp("vision-models")
    for path in (models.target, models.mmproj):
        shutil.copy2(path, folder / path.name)
    return folder / models.target.name


@pytest.fixture(scope="module")
def picture(tmp_path_factory):
    from tests.vision.pictures import write_pictures

    return write_pictures(tmp_path_factory.mktemp("pictures"))[0]  # noise.png, 50 x 40


def paste_picture(window, path) -> None:
    """Copy a picture's data (as a screenshot tool does) and paste it into the composer."""
    QApplication.clipboard().setImage(QImage(str(path)))
    window.composer.edit.paste()


def shown_pictures(window, pictures) -> list[bool]:
    """Whether the transcript shows each picture (its thumbnail is in the document)."""
    document = window.chat_view.document()
    return [
        isinstance(image := document.resource(QTextDocument.ResourceType.ImageResource, picture_url(p)), QImage)
        and not image.isNull()
        for p in pictures
    ]


@pytest.mark.slow
def test_a_pasted_picture_is_sent_shown_kept_after_a_restart_and_deleted_with_its_chat(
    make_window, qtbot, vision_folder, picture
):
    window = make_window(folders=[str(vision_folder.parent)])
    choose_pair(qtbot, window, vision_folder, None)
    seeing = window.session.library.index(window.session.library.row_of(str(vision_folder)), 0)
    assert isinstance(seeing.data(Qt.ItemDataRole.DecorationRole), QIcon)  # the eye, in the library and the picker
    assert "Sees pictures: its projector mmproj-tiny-vision.gguf" in seeing.data(Qt.ItemDataRole.ToolTipRole)
    paste_picture(window, picture)
    assert [p.name for p in window.composer.pictures()] == ["pasted picture.png"]
    assert window.composer.text() == ""  # the picture is attached, not typed
    assert window.composer.tray.isVisible()
    thumbnails = [label.pixmap() for label in window.composer.tray.findChildren(QLabel) if not label.pixmap().isNull()]
    assert len(thumbnails) == 1 and thumbnails[0].height() <= 32

    reply_id = send_and_wait(qtbot, window, "What is in this picture?", timeout=120000)
    chat_id = window.conversation.chat_id
    user, reply = window.store.messages(chat_id)
    assert reply.id == reply_id and reply.stats is not None and reply.stats.stop_reason != "error"
    [stored] = user.pictures
    assert stored.path.is_file() and QImage(str(stored.path)).size() == QImage(str(picture)).size()
    assert window.composer.pictures() == () and not window.composer.tray.isVisible()
    assert shown_pictures(window, [stored]) == [True]
    window.messages.edit_message(user.id)  # Edit puts the picture back into the composer, with the text
    assert [p.name for p in window.composer.pictures()] == ["pasted picture.png"]
    assert window.composer.text() == "What is in this picture?"

    window.shutdown()
    window.close()
    again = make_window(folders=[str(vision_folder.parent)])
    again.open_chat(chat_id)
    assert again.conversation.chat_id == chat_id
    assert shown_pictures(again, [stored]) == [True]

    again.confirm = lambda *question: True
    again.delete_chat(chat_id)
    assert not stored.path.exists()


def test_a_model_that_cannot_see_gets_a_sentence_and_the_composer_keeps_text_and_picture(
    make_window, qtbot, fake_engine, model_folder, tiny_models, picture
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    blind = window.session.library.index(window.session.library.row_of(str(model_folder / tiny_models.target.name)), 0)
    assert blind.data(Qt.ItemDataRole.DecorationRole) is None  # no eye: it cannot see
    paste_picture(window, picture)
    assert "+ ~256 attached" in window.footer.context_label.text()  # counted before sending, as Gemma 3's
    window.composer.edit.setPlainText("What is in this picture?")
    assert not window.send_message(window.composer.text())
    assert window.error_banner.isVisible()
    assert "cannot see pictures" in window.error_banner.text()
    assert window.composer.text() == "What is in this picture?"
    assert [p.name for p in window.composer.pictures()] == ["pasted picture.png"]
    assert fake_engine.requests == [] and window.conversation.chat_id is None  # nothing was sent or stored


def test_a_dropped_or_picked_picture_file_is_a_chip_that_can_be_removed_and_an_svg_gets_a_sentence(
    make_window, qtbot, fake_engine, model_folder, tiny_models, picture, tmp_path, monkeypatch
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    drawing = tmp_path / "logo.svg"
    drawing.write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>')
    assert drop_files(window, picture, drawing)
    assert [p.name for p in window.composer.pictures()] == ["noise.png"]
    assert "logo.svg is an SVG drawing" in window.error_banner.text()
    assert window.composer.attachments() == ()  # neither became a text file

    remove = next(b for b in window.composer.tray.findChildren(QPushButton) if b.accessibleName() == "Remove noise.png")
    qtbot.mouseClick(remove, Qt.MouseButton.LeftButton)
    assert window.composer.pictures() == () and not window.composer.tray.isVisible()

    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(picture)], ""))
    qtbot.mouseClick(window.composer.attach_button, Qt.MouseButton.LeftButton)
    assert [p.name for p in window.composer.pictures()] == ["noise.png"]
    assert window.composer.button.isEnabled()  # a picture alone can be sent
