"""The sidebar's search finds chats by their answers; "Include thinking" finds them by replies' reasoning too."""

from __future__ import annotations

from app.store import ChatStore
from app.ui.chat.chat_list import ChatListModel, ChatSidebar
from app.ui.chat.chat_list_controller import ChatListController


def _titles(model: ChatListModel) -> list[str]:
    return [model.chat_at(row).title for row in range(model.rowCount())]


def test_include_thinking_widens_the_search_to_the_reasoning(qtbot, tmp_path):
    store = ChatStore(tmp_path / "chats.db")
    thinking = store.create_chat("Primes")
    store.add_message(thinking.id, "assistant", "No: 221 is 13 × 17.", reasoning="Try small factors: 221 / 13 = 17.")
    plain = store.create_chat("Old chat")
    store.add_message(plain.id, "assistant", "An answer from before thinking was kept.")
    model = ChatListModel()
    sidebar = ChatSidebar(model)
    qtbot.addWidget(sidebar)
    controller = ChatListController(store, model)
    sidebar.sig_search_changed.connect(controller.search)
    try:
        controller.refresh()
        assert sorted(_titles(model)) == ["Old chat", "Primes"]
        assert sidebar.include_thinking.isHidden()  # nothing to search for yet
        with qtbot.waitSignal(controller.sig_listed, timeout=5000):
            sidebar.search.setText("small factors")
        assert _titles(model) == [] and not sidebar.include_thinking.isHidden()
        with qtbot.waitSignal(controller.sig_listed, timeout=5000):
            sidebar.include_thinking.setChecked(True)
        assert _titles(model) == ["Primes"]
        with qtbot.waitSignal(controller.sig_listed, timeout=5000):
            sidebar.search.setText("before thinking")  # answers are still found with the box checked
        assert _titles(model) == ["Old chat"]
        with qtbot.waitSignal(controller.sig_listed, timeout=5000):
            sidebar.include_thinking.setChecked(False)
        assert _titles(model) == ["Old chat"]
    finally:
        controller.close()
        store.close()
