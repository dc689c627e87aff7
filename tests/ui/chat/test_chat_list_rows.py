"""The chat list changes one row at a time: a chat that got a message moves to the top, a new chat is inserted,
a renamed one changes in place, a deleted one goes; the rest of a long list is left alone."""

from __future__ import annotations

import dataclasses

from app.store import ChatStore
from app.ui.chat.chat_list import ChatListModel


def test_rows_move_insert_change_and_go_one_at_a_time(qtmodeltester, tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chats = [store.create_chat(f"chat {i}") for i in range(50)]
        model = ChatListModel()
        model.set_chats(store.list_chats())
        qtmodeltester.check(model)
        resets, moves, inserts, removes = [], [], [], []
        model.modelReset.connect(lambda: resets.append(1))
        model.rowsMoved.connect(lambda *a: moves.append(a))
        model.rowsInserted.connect(lambda *a: inserts.append(a))
        model.rowsRemoved.connect(lambda *a: removes.append(a))

        store.add_message(chats[10].id, "user", "hello again")  # an old chat gets a message
        model.upsert(store.get_chat(chats[10].id))
        assert [model.chat_at(r).id for r in range(model.rowCount())] == [c.id for c in store.list_chats()]

        new = store.create_chat("brand new")
        model.upsert(new)
        renamed = store.rename_chat(chats[20].id, "renamed")
        model.upsert(renamed)
        store.delete_chat(chats[30].id)
        model.remove(chats[30].id)
        assert [model.chat_at(r).title for r in range(model.rowCount())] == [c.title for c in store.list_chats()]
        assert (len(resets), len(moves), len(inserts), len(removes)) == (0, 1, 1, 1)
        qtmodeltester.check(model)


def test_a_chat_newest_already_changes_in_place(qtmodeltester, tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        first = store.create_chat("first")
        store.create_chat("second")
        model = ChatListModel()
        model.set_chats(store.list_chats())
        changed = []
        model.dataChanged.connect(lambda top, bottom, *_: changed.append((top.row(), bottom.row())))
        top = model.chat_at(0)
        model.upsert(dataclasses.replace(top, title="second, renamed"))
        assert changed == [(0, 0)] and model.chat_at(0).title == "second, renamed"
        assert model.chat_at(1).id == first.id


def test_sending_in_a_window_with_many_chats_moves_one_row(make_window, qtbot, fake_engine, model_folder, tiny_models):
    from app.ui.models.library_model import NGRAM_KEY
    from tests.ui.window_helpers import choose_pair, send_and_wait

    with ChatStore() as store:
        for i in range(30):
            store.create_chat(f"older chat {i}")
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    window.open_chat(window.chat_list.chat_at(29).id)  # the oldest
    resets, moves = [], []
    window.chat_list.modelReset.connect(lambda: resets.append(1))
    window.chat_list.rowsMoved.connect(lambda *a: moves.append(a))
    send_and_wait(qtbot, window, "bring this chat back to the top")
    assert resets == [] and len(moves) == 1
    assert window.chat_list.chat_at(0).id == window.conversation.chat_id
    assert window.chat_list.rowCount() == 30


def test_only_the_newest_search_is_shown(make_window, qtbot):
    with ChatStore() as store:
        for word in ("apple", "apricot", "banana"):
            chat = store.create_chat(f"about {word}")
            store.add_message(chat.id, "user", f"tell me about the {word}")
    window = make_window()
    listed = []
    window.chat_lists.sig_listed.connect(
        lambda: listed.append([window.chat_list.chat_at(r).title for r in range(window.chat_list.rowCount())])
    )
    window.chat_lists.search("apple")
    window.chat_lists.search("ap")  # typed on before the first search came back
    window.chat_lists.search("banana")
    qtbot.waitUntil(lambda: bool(listed))
    # One thread answers the searches in order, so a search asked now answers after any superseded one would have.
    window.chat_lists.search("apricot")
    qtbot.waitUntil(lambda: len(listed) == 2)
    assert listed == [["about banana"], ["about apricot"]]
