"""A large history is checked for damage after the window shows; a damaged one is then offered as at a start."""

from __future__ import annotations

from app.platform import paths
from app.store import ChatStore
from app.ui.shell import main as ui_main
from app.ui.shell.store_check import DamageWatch
from tests.store.test_store_salvage import damage_middle_page, make_history


def test_damage_found_after_the_start_is_offered_and_the_readable_chats_kept(qtbot, qapp, monkeypatch):
    path = paths.database_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    original = make_history(path)
    damage_middle_page(path)
    store = ui_main.open_store(check_pages=False)  # opens at once, damage unseen
    assert store is not None
    from app.ui.shell.main_window import MainWindow

    windows = [MainWindow(store=store, scan_on_start=False)]
    asked = []
    monkeypatch.setattr(ui_main, "ask_about_broken_database", lambda message: asked.append(message) or True)
    watch = DamageWatch(store.path)
    with qtbot.waitSignal(watch.sig_damaged, timeout=10000) as blocker:
        watch.start()
    assert "damaged" in blocker.args[0]
    ui_main._reopen_damaged_store(qapp, windows)
    try:
        assert asked and len(windows) == 2 and windows[1].isVisible()
        titles = {chat.title for chat in windows[1].store.list_chats()}
        assert len(titles & set(original)) >= 30
        assert list(path.parent.glob(path.name + ".broken-*"))
    finally:
        windows[-1].close()


def test_an_intact_history_says_nothing(qtbot, tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        store.add_message(store.create_chat("fine").id, "user", "all good")
    watch = DamageWatch(tmp_path / "chats.db")
    damaged = []
    watch.sig_damaged.connect(damaged.append)
    watch.start()
    qtbot.waitUntil(lambda: not watch.busy(), timeout=10000)  # the answer came back to the GUI thread
    assert damaged == []
