"""Settings shows how much memory recent conversations' caches may take (Auto says how much that is) and what the
long chats saved on disk take; the budget set there is what the dialog returns."""

from __future__ import annotations

from app.engine.local.kv_states.saved_states import states_root
from app.store.settings import AppSettings
from app.ui.settings.dialog import AppSettingsDialog


def test_the_kept_conversations_budget_is_shown_and_kept(qtbot):
    folder = states_root() / "model-key"
    folder.mkdir(parents=True)
    (folder / "person-0123456789abcdef-0123456789ab.kv").write_bytes(bytes(3_000_000))
    dialog = AppSettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    spin = dialog.kept_conversations
    assert spin.text().startswith("Auto (") and "B)" in spin.text()  # Auto, with the bytes it stands for
    assert "saved on disk: 1, 3.0 MB of" in dialog.saved_conversations.text()
    spin.setValue(512)
    assert dialog.settings().kept_conversations_mib == 512


def test_the_memory_the_kept_conversations_take_is_shown_as_the_last_reply_left_it(qtbot):
    from app.engine.events import GenerationStats
    from app.engine.local.kv_states.conversation_cache import kept_line_of

    stats = GenerationStats(tokens=4, kept_states=3, kept_bytes=71_000_000, kept_budget_bytes=4 << 30)
    dialog = AppSettingsDialog(AppSettings(), kept_state=kept_line_of(stats))
    qtbot.addWidget(dialog)
    assert dialog.kept_in_use.text() == "Conversations kept in memory: 3, 71.0 MB of 4.3 GB (after the last reply)"
    # A server's model keeps nothing here: nothing is said.
    assert kept_line_of(GenerationStats(tokens=4)) == ""
