"""Background, the window's one way to work off the GUI thread: answers on the GUI thread, the newest run wins."""

from __future__ import annotations

import threading

from PySide6.QtCore import QCoreApplication

from app.ui.widgets.background import Background


def test_the_answer_comes_back_on_the_gui_thread_and_an_older_one_is_dropped(qtbot):
    background = Background("test")
    release = threading.Event()
    answers: list = []
    gui_thread = threading.current_thread()

    def slow() -> str:
        assert release.wait(10), "the test never released the first run"
        return "old"

    background.run(slow, answers.append)
    background.run(lambda: "new", lambda value: answers.append((value, threading.current_thread() is gui_thread)))
    release.set()
    qtbot.waitUntil(lambda: not background.busy(), timeout=10000)
    assert answers == [("new", True)]
    background.close(wait_s=5)


def test_an_error_reaches_on_failed_and_nothing_comes_after_close(qtbot):
    background = Background("test")
    failures: list = []
    background.run(lambda: 1 / 0, lambda value: failures.append("done"), failures.append)
    qtbot.waitUntil(lambda: not background.busy(), timeout=10000)
    assert len(failures) == 1 and isinstance(failures[0], ZeroDivisionError)
    late: list = []
    release = threading.Event()
    background.run(lambda: release.wait(10), late.append)
    background.close()
    release.set()
    # Its thread ends after the work's answer was posted, so once it has ended every answer is in the queue.
    qtbot.waitUntil(lambda: background.close(), timeout=10000)
    QCoreApplication.sendPostedEvents()
    assert late == []


def test_a_kept_thread_runs_all_the_work_and_close_ends_it(qtbot):
    background = Background("test", keep_thread=True)
    threads: list = []
    for _ in range(3):
        background.run(lambda: threading.current_thread(), threads.append, lane=str(len(threads)))
        qtbot.waitUntil(lambda n=len(threads): len(threads) == n + 1, timeout=10000)
    assert len(set(threads)) == 1  # a thread-bound resource (an SQLite connection) stays on its thread
    closed: list = []
    assert background.close(wait_s=5, last=lambda: closed.append(threading.current_thread()))
    assert closed == threads[:1]


def test_an_idle_thread_leaves_and_a_new_one_takes_the_next_run(qtbot, monkeypatch):
    from app.ui.widgets import background as module

    monkeypatch.setattr(module, "IDLE_EXIT_S", 0.05)
    background = Background("test")
    threads: list = []
    background.run(lambda: threading.current_thread(), threads.append)
    qtbot.waitUntil(lambda: len(threads) == 1, timeout=10000)
    qtbot.waitUntil(lambda: not threads[0].is_alive(), timeout=10000)  # no thread waits forever for work
    background.run(lambda: threading.current_thread(), threads.append)
    qtbot.waitUntil(lambda: len(threads) == 2, timeout=10000)
    assert threads[1] is not threads[0]
    assert background.close(wait_s=5)


def test_its_threads_end_with_the_object_it_belongs_to(qtbot):
    """A closed window's workers used to wait IDLE_EXIT_S (30 s) for work, holding a Background whose Qt object was
    gone."""
    from PySide6.QtCore import QObject

    owner = QObject()
    background = Background("test", owner)
    threads: list = []
    background.run(lambda: threading.current_thread(), threads.append)
    qtbot.waitUntil(lambda: len(threads) == 1, timeout=10000)
    assert threads[0].is_alive()  # idle, waiting for the next run
    owner.deleteLater()
    qtbot.waitUntil(lambda: not threads[0].is_alive(), timeout=2000)
