"""`specchat`: start the window.

Problems that would otherwise end in a Qt abort or a traceback (no display, a missing Qt platform library, a chat
database this version cannot open) are explained in words before or instead of opening the window.
"""

from __future__ import annotations

import argparse
import ctypes.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Optional, Sequence, cast


def display_problem() -> str:
    """Why Qt could not open a window here ("" when it probably can); checked before QApplication exists,
    because Qt ends the process on a missing platform plugin instead of raising."""
    if not sys.platform.startswith("linux"):
        return ""
    platform = os.environ.get("QT_QPA_PLATFORM", "")
    if platform and not platform.startswith(("xcb", "wayland")):
        return ""  # offscreen, vnc, eglfs...: the user chose it
    has_x = bool(os.environ.get("DISPLAY"))
    has_wayland = bool(os.environ.get("WAYLAND_DISPLAY"))
    if not has_x and not has_wayland:
        return (
            "SpecChat needs a graphical display, and none was found (neither DISPLAY nor WAYLAND_DISPLAY is set).\n"
            "Start it from your desktop session, use `xvfb-run specchat` on a headless machine, or use the "
            "command line instead: specchat-cli --help"
        )
    uses_xcb = platform.startswith("xcb") or (not platform and not has_wayland)
    bundled = getattr(sys, "frozen", False)  # the PyInstaller bundle carries its own libxcb-cursor
    if uses_xcb and not bundled and ctypes.util.find_library("xcb-cursor") is None:
        return (
            "Qt's X11 platform plugin needs the xcb-cursor library, which is not installed.\n"
            "Install it (Debian/Ubuntu: sudo apt install libxcb-cursor0; Fedora: sudo dnf install xcb-util-cursor) "
            "and start SpecChat again."
        )
    return ""


def window_icon():
    """SpecChat's icon at every size it ships (app/data/icons, the same files the desktop entry installs)."""
    from PySide6.QtGui import QIcon

    from app.platform.desktop_entry import window_icon_files

    icon = QIcon()
    for path in window_icon_files():
        icon.addFile(str(path))
    return icon


def ask_about_broken_database(message: str) -> bool:
    """Tell the user the chat database cannot be opened; True if they chose to start a fresh history."""
    from PySide6.QtWidgets import QMessageBox

    box = QMessageBox(QMessageBox.Icon.Warning, "SpecChat cannot open your chats", message)
    box.setInformativeText(
        "SpecChat has not changed the file. You can quit (and open it with the SpecChat version that wrote it), "
        "or move it aside and start a new history; the old file is kept next to it, and every chat that can "
        "still be read from a damaged file is copied into the new history."
    )
    fresh = box.addButton("Move it aside and start fresh", QMessageBox.ButtonRole.DestructiveRole)
    box.addButton("Quit", QMessageBox.ButtonRole.RejectRole)
    box.exec()
    return box.clickedButton() is fresh


def ask_about_unwritable_store(message: str) -> bool:
    """Tell the user the chats cannot be opened for writing (a read-only data folder, a full disk, a lock); True
    if they chose to go on with a read-only copy."""
    from PySide6.QtWidgets import QMessageBox

    box = QMessageBox(QMessageBox.Icon.Warning, "SpecChat cannot save your chats", message)
    box.setInformativeText(
        "You can quit and fix the folder (its permissions, or free disk space), or open your chats read-only: "
        "SpecChat then works on a copy, and nothing you do is saved after you quit."
    )
    read_only = box.addButton("Open read-only", QMessageBox.ButtonRole.AcceptRole)
    box.addButton("Quit", QMessageBox.ButtonRole.RejectRole)
    box.exec()
    return box.clickedButton() is read_only


def open_read_only_copy(path: Optional[Path] = None):
    """A ChatStore over a copy of the chat database in a temporary folder (an empty one when the file cannot be
    read): the user's file is never written. Its `copy_of` names the original."""
    from app.platform import paths
    from app.store import ChatStore, StoreError

    original = Path(path) if path is not None else paths.database_path()
    copy = Path(tempfile.mkdtemp(prefix="specchat-read-only-")) / original.name
    for suffix in ("", "-wal"):  # the WAL holds the newest commits when the last run did not checkpoint
        try:
            shutil.copyfile(original.with_name(original.name + suffix), copy.with_name(copy.name + suffix))
        except OSError:
            pass  # missing or unreadable: the copy starts without it
    try:
        store = ChatStore(copy, check_pages=False)
    except StoreError:  # the copy is not a usable database either: start empty rather than not at all
        copy.unlink(missing_ok=True)
        copy.with_name(copy.name + "-wal").unlink(missing_ok=True)
        store = ChatStore(copy, check_pages=False)
    store.copy_of = original
    return store


def read_only_notice(store) -> str:
    """What the window says while it works on a read-only copy ("" for the user's own database)."""
    if getattr(store, "copy_of", None) is None:
        return ""
    return (
        f"Read-only: {store.copy_of} could not be written, so SpecChat works on a copy; nothing you do is "
        "saved after you quit."
    )


def open_store(check_pages: bool = True):
    """The chat store, or None when the database is refused and the user chose to quit. `check_pages=False`
    leaves reading every page for damage to a DamageWatch after the window shows. A database that cannot be
    written (a read-only folder) is offered read-only, as a copy."""
    from app.store import ChatStore, DatabaseCorruptError, DatabaseTooNewError, StoreError

    try:
        return ChatStore(check_pages=check_pages)
    except StoreError as exc:
        if isinstance(exc, (DatabaseTooNewError, DatabaseCorruptError)):
            return _offer_fresh_history(exc)
        if not ask_about_unwritable_store(str(exc)):
            return None
        return open_read_only_copy()


def _offer_fresh_history(exc):
    """A database this version refuses: quit (None), or move it aside and start fresh with what can be read."""
    from app.store import ChatStore, DatabaseCorruptError, salvage_database, set_aside_database

    damaged = isinstance(exc, DatabaseCorruptError)
    if not ask_about_broken_database(str(exc)):
        return None
    moved = set_aside_database()
    if damaged:
        # A newer version's file is only set aside; a damaged one still holds chats worth keeping.
        store = ChatStore()
        salvage_database(moved, store.path)
        return store
    return ChatStore()


def run_self_test(window) -> int:
    """Drive the real window through one speculative reply with the synthetic models; 0 when it worked.

    The packaging checks call this (`specchat --self-test`) to prove a build can load llama.cpp, run both threads
    and render a reply. main() gives it a private SpecChat home, so nothing of the user's is touched.
    """
    from app.testing.synthetic import make_model_set
    from app.ui.widgets import automation

    try:
        models = make_model_set(Path(tempfile.mkdtemp(prefix="specchat-selftest-")))
        window.add_model_folder(str(models.target.parent))
        automation.choose_pair(window, str(models.target), str(models.draft_identical), timeout_s=120)
        window.update_chat_settings(max_tokens=24, draft_max=4)
        message_id = automation.send_and_wait(window, "Self-test: say something.", timeout_s=120)
        message = window.store.get_message(message_id)
        if not message or not message.content or not message.stats:
            print("self-test: the reply was empty", file=sys.stderr)
            return 1
        drafted = sum(1 for _, source in (message.tokens or []) if source == "draft")
        print(f"self-test: ok ({message.stats.tokens} tokens, {drafted} from the draft)")
        return 0
    except Exception as exc:  # report, do not trace: this is a user-facing check
        print(f"self-test: failed: {exc}", file=sys.stderr)
        return 1


def close_on_signals(app):
    """SIGTERM and SIGINT (Ctrl-C in the terminal, a logout, `kill`) close the window as its close button does,
    so the reply in progress stops and the database closes cleanly. Installed before the window exists, so a
    signal during start-up also ends in a clean exit once the event loop runs. Python runs signal handlers only
    between bytecodes, so a timer keeps some Python running while Qt waits for events. Returns a function that
    puts the previous handlers back."""
    import signal

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    def close_now() -> None:
        for widget in QApplication.topLevelWidgets():
            if widget.isWindow() and widget.isVisible():
                widget.close()
        app.quit()  # also ends a dialog's event loop, if one is open

    def on_signal(_signum, _frame) -> None:
        QTimer.singleShot(0, close_now)

    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}
    ticker = QTimer(app)
    ticker.timeout.connect(lambda: None)
    ticker.start(200)

    def restore() -> None:
        ticker.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return restore


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="specchat", description="SpecChat: chat with local GGUF models.")
    parser.add_argument(
        "--self-test",
        action="store_true",
        help="open the window, generate one reply with tiny built-in models, and exit",
    )
    args = parser.parse_args(argv)

    if args.self_test:
        os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp(prefix="specchat-selftest-home-")
        # The built-in models are tiny: one thread is plenty, and spinning llama.cpp threads on a busy machine
        # can stall a check that should take a second.
        os.environ.setdefault("SPECCHAT_THREADS", "1")
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    problem = display_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 1

    from app.ui.shell.qt_check import explain_platform_failure, pyside_problem

    problem = pyside_problem()
    if problem:
        print(problem, file=sys.stderr)
        return 1

    from PySide6.QtWidgets import QApplication

    from app import __version__
    from app.ui.widgets.style import apply_style

    with explain_platform_failure():
        app = cast(QApplication, QApplication.instance()) or QApplication(sys.argv[:1])
    app.setApplicationName("SpecChat")
    app.setApplicationDisplayName("SpecChat")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("specchat")  # Wayland and task bars match the window to specchat.desktop and its icon
    app.setWindowIcon(window_icon())
    apply_style(app)
    restore_signals = close_on_signals(app)
    try:
        return _open_window(app, args.self_test)
    finally:
        restore_signals()


def _open_window(app, self_test: bool) -> int:
    from app.ui.shell.main_window import MainWindow

    instance = None
    if not self_test:  # the self-test has a private home of its own and must run beside an open window
        from app.platform import paths
        from app.ui.shell.single_instance import InstanceServer, ask_running_instance, server_name

        name = server_name(paths.user_data_dir())
        if ask_running_instance(name):
            print("SpecChat is already running; its window was brought to the front.", file=sys.stderr)
            return 0
        instance = InstanceServer(name, app)
    store = open_store(check_pages=False)
    if store is None:
        return 1
    windows = [MainWindow(store=store)]
    windows[0].show()
    if read_only_notice(store):
        windows[0].show_error(read_only_notice(store))
    if instance is not None:
        from app.ui.shell.single_instance import bring_to_front

        instance.sig_activate.connect(lambda: bring_to_front(windows[-1]))
    from app.ui.shell.store_check import DamageWatch

    watch = DamageWatch(store.path, app)
    watch.sig_damaged.connect(lambda _message: _reopen_damaged_store(app, windows))
    watch.start()
    try:
        return _run(app, windows[0], self_test)
    finally:
        if instance is not None:
            instance.close()


def _reopen_damaged_store(app, windows: list) -> None:
    """The history turned out damaged after the window opened: close it, ask as at a start (quit, or move the
    file aside and keep every readable chat), and open a fresh window on what the user chose."""
    from app.ui.shell.main_window import MainWindow

    app.setQuitOnLastWindowClosed(False)
    try:
        windows[-1].close()  # stops the reply, saves what streamed, closes the store
        store = open_store()
        if store is None:
            app.quit()
            return
        windows.append(MainWindow(store=store))
        windows[-1].show()
    finally:
        app.setQuitOnLastWindowClosed(True)


def _run(app, window, self_test: bool) -> int:
    from PySide6.QtCore import QTimer

    if self_test:
        result: list[int] = []

        def drive() -> None:
            result.append(run_self_test(window))
            window.close()
            app.quit()

        QTimer.singleShot(0, drive)
        app.exec()
        return result[0] if result else 1
    return app.exec()


if __name__ == "__main__":
    raise SystemExit(main())
