"""The engine runs in its own process: the window survives its crashes and hangs, and closes at once whatever it
is doing. The scripted engine runs in the real engine process and dies the way llama.cpp does (abort())."""

from __future__ import annotations

import os
import signal
import time

import pytest
from PySide6.QtCore import Qt

from app.store import load_settings
from app.store.unusable_models import unusable_reason
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait, wait_ms


def _start_slow_reply(qtbot, window, fake_engine, text="tell me a long story"):
    fake_engine.token_delay_s = 0.02
    fake_engine.reply = " ".join(f"word{i}" for i in range(400))
    window.composer.edit.setPlainText(text)
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "word10" in window.chat_view.streamed_text(), timeout=10000)


def _next_message_gets_a_whole_reply(qtbot, window, fake_engine) -> None:
    fake_engine.token_delay_s = 0.0
    fake_engine.reply = "Back again."
    qtbot.waitUntil(window.models_ready, timeout=20000)
    message_id = send_and_wait(qtbot, window, "still there?")
    assert window.store.get_message(message_id).content == "Back again."


def test_a_file_that_aborts_the_engine_is_reported_and_never_loaded_again(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    target = model_folder / tiny_models.target.name
    fake_engine.crash_on_load = target.name
    window = make_window(engine_factory=fake_engine)
    window.composer.edit.setPlainText("my carefully written question")
    first_pid = None
    with qtbot.waitSignal(window.engine_process.sig_worker_died, timeout=20000):
        window.choose_target(str(target))
        qtbot.waitUntil(lambda: window.engine_process.pid() is not None, timeout=10000)
        first_pid = window.engine_process.pid()
    # One sentence with llama.cpp's own assertion; the window and the composer text are still there.
    shown = window.error_banner.text()
    assert window.error_banner.isVisible()
    assert tiny_models.target.name in shown and "GGML_ASSERT" in shown
    assert window.composer.text() == "my carefully written question"
    # A fresh engine process runs, and the library marks the file with the reason.
    assert window.engine_process.is_running() and window.engine_process.pid() != first_pid
    entry = window.library.entry_for(str(target))
    assert entry is not None and not entry.usable and "crashed" in entry.problem
    assert unusable_reason(target)
    # The file was never remembered as the last model, so the next start does not crash on it again.
    assert load_settings().last_target != str(target)
    window.shutdown()
    again = make_window(engine_factory=fake_engine)
    assert not again.library.entry_for(str(target)).usable
    assert again.model_bar.current_target() is None
    # A model the person picks now loads after whatever the start itself asked for: only it is loaded.
    other = model_folder / tiny_models.draft_identical.name
    choose_pair(qtbot, again, other, None)
    assert [entry["path"] for entry in fake_engine.log() if entry["event"] == "load_target"] == [str(other)]


def test_a_worker_killed_mid_reply_keeps_the_partial_reply_and_the_next_message_works(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    _start_slow_reply(qtbot, window, fake_engine)
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=10000) as blocker:
        os.kill(window.engine_process.pid(), signal.SIGKILL)
    stored = window.store.get_message(blocker.args[0])
    assert stored.content.startswith("word0 word1") and "word399" not in stored.content
    assert stored.stats.stop_reason == "error"
    text = window.chat_view.toPlainText()
    assert "SIGKILL" in text and "Retry" in text
    # The engine came back with the models; the next message gets a whole reply.
    _next_message_gets_a_whole_reply(qtbot, window, fake_engine)


@pytest.mark.slow
def test_stop_ends_a_hung_engine_and_the_next_message_works(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    fake_engine.hang_in_chat = True
    asked = len(fake_engine.requests)
    window.composer.edit.setPlainText("this never gets an answer")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len(fake_engine.requests) > asked, timeout=10000)  # the engine has it and hangs
    hung_pid = window.engine_process.pid()
    with qtbot.waitSignal(window.engine_process.sig_worker_died, timeout=10000):
        window.composer.button.click()  # Stop
        assert not window.conversation.is_busy()  # the window is free at once
    assert window.engine_process.pid() != hung_pid
    fake_engine.hang_in_chat = False
    _next_message_gets_a_whole_reply(qtbot, window, fake_engine)


@pytest.mark.slow
def test_stop_while_a_long_prompt_is_read_keeps_the_engine(make_window, qtbot, fake_engine, model_folder, tiny_models):
    """A stop is heard between two prompt chunks, and one chunk of a large model on a slow CPU outlasts the 3 s that
    a writing reply gets: the engine is reading, not stuck, and replacing it would lose the chat's cache."""
    from app.ui.engine_link.engine_process import STOP_GRACE_MS

    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    fake_engine.prompt_read_s = STOP_GRACE_MS / 1000 + 2
    reading_pid = window.engine_process.pid()
    died: list = []
    window.engine_process.sig_worker_died.connect(died.append)
    window.composer.edit.setPlainText("a long file to read")
    with qtbot.waitSignal(window.engine_process.sig_context, timeout=10000):  # the prompt fits: it is being read
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    window.composer.button.click()  # Stop
    qtbot.waitUntil(lambda: not window.engine_process.busy(), timeout=int(STOP_GRACE_MS + 10000))
    assert died == [] and window.engine_process.pid() == reading_pid
    fake_engine.prompt_read_s = 0.0
    _next_message_gets_a_whole_reply(qtbot, window, fake_engine)


@pytest.mark.slow
def test_closing_while_a_model_loads_does_not_wait_for_the_load(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    load_delay_s = 60
    fake_engine.load_delay_s = load_delay_s
    window = make_window(engine_factory=fake_engine)
    window.choose_target(str(model_folder / tiny_models.target.name))
    qtbot.waitUntil(lambda: "Loading…" in window.model_bar.load_state.text(), timeout=10000)
    wait_ms(qtbot, 500)
    pid = window.engine_process.pid()
    started = time.monotonic()
    window.close()
    # The engine process is asked, then killed (CLOSE_WAIT_S): closing never waits the minute the load would take.
    assert time.monotonic() - started < load_delay_s / 4
    assert not window.engine_process.is_running()
    with_signal_zero = _process_exists(pid)
    assert not with_signal_zero


def _process_state(pid: int) -> str:
    """The one-letter state in /proc/<pid>/stat ("T" once SIGSTOP has taken effect)."""
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0]


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for every purpose but its exit status.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_a_reply_survives_the_app_being_killed_and_can_be_continued(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    import subprocess
    import sys
    from pathlib import Path

    from app.store import ChatStore

    target = model_folder / tiny_models.target.name
    fake_engine.token_delay_s = 0.01
    fake_engine.reply = " ".join(f"word{i}" for i in range(3000))
    child = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).resolve().parents[1] / "run_window_child.py"),
            str(model_folder),
            str(target),
            str(fake_engine.folder),
            "write a lot",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "streaming", child.stderr.read()
        deadline = time.monotonic() + 10
        saved = []
        while time.monotonic() < deadline and not saved:
            with ChatStore() as store:
                chats = store.list_chats()
                saved = [m for m in store.messages(chats[0].id) if m.role == "assistant"] if chats else []
            time.sleep(0.1)
        assert saved, "the streaming reply was never saved"
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    with ChatStore() as store:
        chat = store.list_chats()[0]
        reply = [m for m in store.messages(chat.id) if m.role == "assistant"][-1]
    assert reply.stats.stop_reason == "interrupted"
    assert reply.content.startswith("word0 word1 word2")
    # Reopened, the chat shows the reply marked interrupted, with Continue and Regenerate.
    fake_engine.token_delay_s = 0.0
    fake_engine.reply = " and the end."
    window = make_window(engine_factory=fake_engine)
    window.open_chat(chat.id)
    text = window.chat_view.toPlainText()
    assert reply.content[-20:] in text and "interrupted" in text
    assert "Continue" in text and "Regenerate" in text
    choose_pair(qtbot, window, target, NGRAM_KEY)
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=10000) as blocker:
        window.messages.continue_reply(reply.id)
    continued = window.store.get_message(blocker.args[0])
    assert continued.id == reply.id
    assert continued.content == reply.content + " and the end."
    assert continued.stats.stop_reason == "eos"
    # The engine was asked to continue the reply: the prompt ends with the partial reply itself.
    assert fake_engine.requests[-1][-1] == {"role": "assistant", "content": reply.content}


def test_an_illegal_instruction_says_the_build_is_at_fault_not_the_model(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    # llama.cpp built with AMX on a CPU that cannot run it dies by SIGILL on the first real prompt.
    window = make_window(engine_factory=fake_engine)
    target = model_folder / tiny_models.target.name
    choose_pair(qtbot, window, target, NGRAM_KEY)
    fake_engine.illegal_instruction_in_chat = True
    with qtbot.waitSignal(window.engine_process.sig_worker_died, timeout=20000):
        window.composer.edit.setPlainText("my first question")
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    text = window.chat_view.toPlainText()
    assert "illegal instruction" in text and "packaging/install.py --rebuild" in text
    assert "Retry" not in text  # retrying would only crash again
    # Not blamed on the model file, and not loaded again only to crash again.
    entry = window.library.entry_for(str(target))
    assert entry is not None and entry.usable
    assert not unusable_reason(target)
    assert "packaging/install.py --rebuild" in window.error_banner.text()
    window.shutdown()
    # After a restart the question is still there, marked, with a way forward.
    fake_engine.illegal_instruction_in_chat = False
    again = make_window(engine_factory=fake_engine)
    again.open_chat(again.store.list_chats()[0].id)
    shown = again.chat_view.toPlainText()
    assert "my first question" in shown
    assert "has no reply" in shown and "Retry" in shown


@pytest.mark.slow
def test_an_engine_paused_and_resumed_mid_reply_finishes_the_reply_whole(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    # SIGSTOP then SIGCONT (a laptop suspended, a debugger attached): the reply goes on where it was, whole.
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    _start_slow_reply(qtbot, window, fake_engine)
    pid = window.engine_process.pid()
    os.kill(pid, signal.SIGSTOP)
    try:
        # The kernel says the engine is stopped; the window still waits for it and shows no error.
        qtbot.waitUntil(lambda: _process_state(pid) == "T", timeout=10000)
        assert window.conversation.is_busy() and not window.error_banner.isVisible()
    finally:
        os.kill(pid, signal.SIGCONT)
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=30000) as blocker:
        pass
    assert window.store.get_message(blocker.args[0]).content.endswith("word399")
    assert window.engine_process.pid() == pid  # never taken for dead


@pytest.mark.slow
def test_stop_while_the_engine_is_paused_frees_the_window_and_restarts_it(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    _start_slow_reply(qtbot, window, fake_engine)
    paused_pid = window.engine_process.pid()
    os.kill(paused_pid, signal.SIGSTOP)
    with qtbot.waitSignal(window.engine_process.sig_worker_died, timeout=15000):
        window.composer.button.click()  # Stop
        assert not window.conversation.is_busy()
    assert window.engine_process.pid() != paused_pid
    # The words that arrived before the pause are kept.
    assert "word10" in window.chat_view.toPlainText()
    _next_message_gets_a_whole_reply(qtbot, window, fake_engine)


def test_a_worker_killed_mid_reply_is_named_once_without_an_earlier_replys_note(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    """What an earlier reply left in the engine's log is not this crash's cause: the window names the kill alone,
    and says it once."""
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    fake_engine.log_line_in_chat = "error: the earlier reply's trouble, long over"
    send_and_wait(qtbot, window, "first")
    fake_engine.log_line_in_chat = ""
    _start_slow_reply(qtbot, window, fake_engine)
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=10000):
        os.kill(window.engine_process.pid(), signal.SIGKILL)
    said = "The engine process ended unexpectedly (killed by SIGKILL)"
    shown = (
        window.chat_view.toPlainText() + "\n" + (window.error_banner.text() if window.error_banner.isVisible() else "")
    )
    assert "earlier reply" not in shown
    assert shown.count(said) == 1
