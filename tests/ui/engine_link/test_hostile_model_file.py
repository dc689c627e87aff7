"""A model file that changes or shrinks under the window (issue 23, class 10). The engine dies by SIGBUS, as
llama.cpp's mapped file does when it is truncated mid-reply; the window says the file changed and the library
marks it, and the changed file is not loaded again behind the user's back."""

from __future__ import annotations

import os
import shutil

import pytest
from PySide6.QtCore import Qt

from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair


def test_a_model_file_truncated_mid_reply_is_reported_and_marked(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    target = model_folder / "changing-target.gguf"
    shutil.copy2(tiny_models.target, target)
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, target, NGRAM_KEY)
    window.update_chat_settings(max_tokens=4000)
    fake_engine.reply = "word " * 2000
    fake_engine.token_delay_s = 0.01
    fake_engine.bus_error_on_change = True
    loads = fake_engine.loads
    window.composer.edit.setPlainText("a long answer, please")
    with qtbot.waitSignal(window.engine_process.sig_stream, timeout=20000):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    os.truncate(target, target.stat().st_size // 2)  # a download restarting, a disk filling up
    qtbot.waitUntil(lambda: "changed on disk" in window.error_banner.text(), timeout=20000)
    banner = window.error_banner.text()
    assert "changing-target.gguf changed on disk while it was in use" in banner
    assert not window.conversation.is_busy() and not window.composer.is_busy()
    entry = window.library.entry_for(str(target))
    assert entry is not None and not entry.usable and "changed on disk" in entry.problem
    # What streamed is kept: the reply saver stores it on its own thread, so the store has it a moment later.
    chat_id = window.conversation.chat_id
    qtbot.waitUntil(lambda: window.store.messages(chat_id)[-1].role == "assistant", timeout=10000)
    reply = window.store.messages(chat_id)[-1]
    assert reply.content.startswith("word")
    window.composer.edit.setPlainText("again?")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert window.composer.text() == "again?"  # not sent: the banner says why
    assert "changed on disk" in window.error_banner.text()
    # The changed file was not loaded again on its own: a model picked now loads after any such load, and is the
    # only one.
    other = model_folder / tiny_models.draft_identical.name
    choose_pair(qtbot, window, other, None)
    assert [entry["path"] for entry in fake_engine.log() if entry["event"] == "load_target"][loads:] == [str(other)]


def test_a_model_file_replaced_while_idle_is_not_used_unseen(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    target = model_folder / "replaced-target.gguf"
    shutil.copy2(tiny_models.target, target)
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, target, NGRAM_KEY)
    with open(target, "ab") as grown:
        grown.write(b"\0" * 4096)
    window.composer.edit.setPlainText("hello")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert "replaced-target.gguf changed on disk since it was loaded" in window.error_banner.text()
    assert window.conversation.chat_id is None  # nothing was sent


@pytest.mark.slow
def test_a_draft_renamed_while_loaded_is_answered_without_and_leaves_the_draft_list(
    make_window, qtbot, model_folder, tiny_models, tmp_path
):
    """The real engine: the reply comes, drafted from earlier text, with one line saying why; the window does not
    refuse the message, and the draft list stops offering the missing file."""
    from tests.ui.window_helpers import send_and_wait

    window = make_window()
    draft = model_folder / tiny_models.draft.name
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, draft)
    window.update_chat_settings(max_tokens=16)
    draft.rename(tmp_path / "moved-away.gguf")

    send_and_wait(qtbot, window, "hello there")
    assert not window.error_banner.isVisible()
    assert (
        window.chat_view.toPlainText().count(
            f"The draft file {draft.name} is gone; drafting from earlier text until you choose another."
        )
        == 1
    )
    qtbot.waitUntil(lambda: window.model_bar.current_draft() == NGRAM_KEY and window.models_ready(), timeout=20000)
    qtbot.waitUntil(lambda: window.library_ready() and not window.drafts.is_checking(), timeout=20000)
    assert window.drafts.row_of(str(draft)) < 0 and window.model_bar.current_draft() == NGRAM_KEY
    send_and_wait(qtbot, window, "and again")  # the next message goes too, and the line is not said again
    assert "is gone" not in window.chat_view.toPlainText().split("and again", 1)[1]
