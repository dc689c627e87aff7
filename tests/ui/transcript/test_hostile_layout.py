"""No reply freezes the window (issue 23, class 8). The real window, with the scripted engine streaming huge or
pathological replies, and a stall probe (a 5 ms timer) watching the window's thread the whole time.

The probe's bound here is generous (a loaded CI machine must not fail it): it catches a freeze, which took 4 to
99 s before. The figures against the 50 ms goal are measured side by side by tests/perf/hostile_layout.py.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from app.store.provenance import TokenRecord
from app.ui.devtools.bench_modes import StallProbe
from app.ui.models.library_model import NGRAM_KEY
from app.ui.transcript import long_text
from tests.ui.window_helpers import choose_pair, click_link

FREEZE_MS = 1500

REPLIES = {
    "2 MB in 1,000 tokens": ("x" * 1999 + " ") * 1000,
    "300 KB on one line": "word" * 75_000,
    "*a*a*a… 200 KB": "*a" * 100_000,
    "20 KB of emphasis": "*a*" * 7_000,
}


def _longest_block(view) -> int:
    block, longest = view.document().begin(), 0
    while block.isValid():
        longest = max(longest, block.length())
        block = block.next()
    return longest


@pytest.mark.parametrize("name", list(REPLIES))
def test_a_huge_or_pathological_reply_never_freezes_the_window(
    make_window, qtbot, fake_engine, model_folder, tiny_models, qapp, name
):
    reply = REPLIES[name]
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    window.update_chat_settings(max_tokens=100_000)
    fake_engine.reply = reply
    probe = StallProbe()
    window.composer.edit.setPlainText("write a lot")
    probe.start()
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=120_000) as finished:
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.wait(50)  # the layout and paint that follow the finish
    probe.stop()
    assert probe.longest_ms < FREEZE_MS, f"the window froze for {probe.longest_ms:.0f} ms"
    message_id = finished.args[0]
    assert window.store.get_message(message_id).content == reply  # kept whole
    view = window.chat_view
    assert _longest_block(view) <= long_text.BLOCK_CHARS + 1
    assert view.document().characterCount() < long_text.SHOWN_MAX_CHARS + 10_000  # bounded, whatever the size
    assert "Copy and Export give" in view.toPlainText()  # the plain-text view says so
    click_link(qtbot, view, "Copy", view.action_href("copy", message_id))
    assert qapp.clipboard().text() == reply
    assert not window.composer.is_busy()


def test_a_long_line_cut_into_blocks_copies_as_one_line(qtbot, qapp):
    from app.ui.transcript.chat_view import ChatView, TranscriptMessage

    view = ChatView()
    qtbot.addWidget(view)
    line = "".join(f"{n:05d} " for n in range(1500))  # 9,000 characters, no line break
    code = "```\n" + "\n".join("y" * 300 for _ in range(20)) + "\n```"
    text = f"{line}\n\n{code}"
    view.add_message(TranscriptMessage(1, "assistant", text, [TokenRecord(text, "target")]), is_last_reply=True)
    assert _longest_block(view) <= long_text.BLOCK_CHARS + 1
    view.selectAll()
    copied = view.createMimeDataFromSelection().text()
    assert line.rstrip() in copied  # one line again, where the view cut it into blocks
    assert "\n".join("y" * 300 for _ in range(20)) in copied  # the code's own lines, each whole
