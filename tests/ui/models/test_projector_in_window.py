"""A vision model whose projector lies in another folder gets it in Model settings (checked at once:
a projector of another model gets a sentence and is not kept); the eye appears, the choice survives a restart, and
a picture sent in the window is answered by the real engine; choosing a draft afterwards keeps its sight. A chat with pictures moved to a model that cannot see
says so when asked to answer a picture again, loses nothing, and still answers its text. (Issue 46, Models.)"""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFileDialog

from app.store import load_settings
from tests.ui.attachments.test_pictures_in_window import paste_picture
from tests.ui.window_helpers import choose_pair, send_and_wait


@pytest.fixture(scope="module")
def apart(tmp_path_factory):
    """The tiny vision model alone in its folder, its projector in another (none lies beside the model), and the
    projector of a model of another embedding size; and a draft for it."""
    from app.testing.synthetic_vision import make_vision_model_set, write_tiny_mmproj

    models = make_vision_model_set(tmp_path_factory.mktemp("tiny-vision"))
    model = tmp_path_factory.mktemp("seeing-model") / "tiny-vision.gguf"
    shutil.copy2(models.target, model)
    projectors = tmp_path_factory.mktemp("projectors")
    projector = projectors / "tiny-vision-projector.gguf"
    shutil.copy2(models.mmproj, projector)
    return model, projector, write_tiny_mmproj(projectors / "mmproj-wider-model.gguf", text_embd=48), models.draft


@pytest.fixture(scope="module")
def picture(tmp_path_factory):
    from tests.vision.pictures import write_pictures

    return write_pictures(tmp_path_factory.mktemp("pictures"))[0]


def eye(window, model) -> bool:
    row = window.library.index(window.library.row_of(str(model)), 0)
    return isinstance(row.data(Qt.ItemDataRole.DecorationRole), QIcon)


def edit_projector(window, monkeypatch, model, pick):
    """Open the model's settings, pick `pick` with Choose…, press OK; returns the editor as it was left."""
    editors = []

    def run(editor):
        editors.append(editor)
        monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(pick), ""))
        editor.projector.choose_button.click()
        editor.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
        return editor.result()

    monkeypatch.setattr("app.ui.models.model_settings_dialog.ModelSettingsDialog.exec", run)
    window.model_actions.edit_settings(str(model))
    return editors[0]


@pytest.mark.slow
def test_a_projector_chosen_in_model_settings_lets_the_model_see(make_window, qtbot, apart, picture, monkeypatch):
    model, projector, wider, _draft = apart
    window = make_window(folders=[str(model.parent)])
    choose_pair(qtbot, window, model, None)
    assert not eye(window, model)  # nothing lies beside it: it cannot see yet

    editor = edit_projector(window, monkeypatch, model, wider)
    assert editor.projector.problem.text() == (
        "mmproj-wider-model.gguf is the projector of another model: its embedding size is 48, and tiny-vision's is 64."
    )
    assert editor.projector.label.text() == "None: this model cannot see pictures"
    assert "projector" not in load_settings().model_defaults.get(str(model), {})  # not kept
    assert not eye(window, model)

    with qtbot.waitSignal(window.engine_process.sig_models_loaded, timeout=20000) as loaded:
        editor = edit_projector(window, monkeypatch, model, projector)
    assert editor.result() == QDialog.DialogCode.Accepted and not editor.projector.problem.isVisibleTo(editor)
    assert loaded.args[0].projector == projector  # the engine reads pictures with it, the model not loaded again
    assert load_settings().model_defaults[str(model)] == {"projector": str(projector)}
    assert eye(window, model)
    row = window.library.index(window.library.row_of(str(model)), 0)
    assert "tiny-vision-projector.gguf is chosen in its Model settings" in row.data(Qt.ItemDataRole.ToolTipRole)

    paste_picture(window, picture)
    reply_id = send_and_wait(qtbot, window, "What is in this picture?", timeout=120000)
    reply = window.store.get_message(reply_id)
    assert reply.stats is not None and reply.stats.stop_reason != "error" and reply.content

    window.shutdown()
    window.close()
    saved = load_settings().model_defaults  # settings.json as the window left it (make_window writes it anew)
    again = make_window(folders=[str(model.parent)], model_defaults=saved)
    assert eye(again, model)  # the choice survives a restart
    assert again.model_actions.dialog_for(str(model)).projector.label.text() == "tiny-vision-projector.gguf (chosen)"


def beside(tmp_path, model, projector, *others):
    """`model` in a folder of its own with `projector` beside it, named as published, and `others`."""
    folder = tmp_path / "sees"
    folder.mkdir()
    for path in (model, *others):
        shutil.copy2(path, folder / path.name)
    shutil.copy2(projector, folder / "mmproj-tiny-vision-F32.gguf")
    return folder / model.name


@pytest.mark.slow
def test_a_draft_chosen_after_a_picture_keeps_the_models_sight(make_window, qtbot, apart, picture, tmp_path):
    model, projector, _wider, draft = apart
    seeing = beside(tmp_path, model, projector, draft)
    window = make_window(folders=[str(seeing.parent)])
    choose_pair(qtbot, window, seeing, None)
    paste_picture(window, picture)
    send_and_wait(qtbot, window, "What is in this picture?", timeout=120000)
    choose_pair(qtbot, window, seeing, seeing.parent / draft.name)  # loads the draft; the projector stays
    paste_picture(window, picture)
    reply = window.store.get_message(send_and_wait(qtbot, window, "And now?", timeout=120000))
    assert reply.stats is not None and reply.stats.stop_reason != "error" and reply.content


@pytest.mark.slow
def test_a_chat_with_a_picture_moved_to_a_model_that_cannot_see(
    make_window, qtbot, apart, picture, model_folder, tiny_models, tmp_path
):
    model, projector, _wider, _draft = apart
    seeing = beside(tmp_path, model, projector)
    blind = model_folder / tiny_models.target.name
    window = make_window(folders=[str(seeing.parent), str(model_folder)])
    choose_pair(qtbot, window, seeing, None)
    paste_picture(window, picture)
    first = send_and_wait(qtbot, window, "What is in this picture?", timeout=120000)
    chat_id = window.conversation.chat_id

    choose_pair(qtbot, window, blind, None)
    window.messages.regenerate(first)  # the Regenerate link under the reply about the picture
    assert "cannot see pictures" in window.error_banner.text() and window.error_banner.isVisible()
    assert not window.conversation.is_busy()
    assert [m[0] for m in window.store.message_texts(chat_id)][-1] == first and not window.store.versions(chat_id)

    second = send_and_wait(qtbot, window, "Say something else.", timeout=120000)  # its text is still answered
    assert window.store.get_message(second).stats.stop_reason != "error"
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=120000) as again:
        window.messages.regenerate(second)  # a reply to a message without pictures is regenerated
    regenerated = window.store.get_message(again.args[0])
    assert regenerated.id != second and regenerated.stats.stop_reason != "error"
