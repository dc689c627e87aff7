"""The transcript: streamed tokens keep their provenance through Markdown rendering, and the toggle hides it."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QTextCursor

from app.store.provenance import token_records
from app.engine.events import GenerationStats
from app.ui.transcript.chat_view import DRAFT_TOOLTIP, TARGET_TOOLTIP, ChatView, TranscriptMessage

REPLY_TOKENS = token_records(
    [
        ("Here ", "target"),
        ("is ", "draft"),
        ("**code**", "draft"),
        (":\n\n", "target"),
        ("```python\n", "target"),
        ("print(", "draft"),
        ("1)\n", "draft"),
        ("```\n", "target"),
        ("Done.", "target"),
    ]
)
REPLY = "".join(token.text for token in REPLY_TOKENS)


def _tooltip_at(view: ChatView, text: str) -> str:
    cursor = view.document().find(text)
    assert not cursor.isNull(), text
    return view.token_tooltip(cursor.selectionStart() + 1)


def test_streamed_tokens_are_highlighted_and_survive_markdown(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.begin_stream("Tiny Target  +  Tiny Draft")
    view.append_tokens(REPLY_TOKENS[:4])
    assert view.streamed_text().startswith("Here is code")  # Markdown shows as it streams
    assert view.highlighted_text() == "is code"
    view.append_tokens(REPLY_TOKENS[4:])
    view.finish_stream(
        TranscriptMessage(
            7,
            "assistant",
            REPLY,
            REPLY_TOKENS,
            GenerationStats(tokens=9, tokens_per_second=12.5, drafted=6, accepted=4, acceptance_rate=4 / 6, ttft_s=0.2),
        )
    )
    assert not view.is_streaming()
    plain = view.toPlainText()
    assert "**" not in plain and "```" not in plain  # rendered
    assert "print(1)" in plain
    # Markup characters are gone; the characters that stay keep their draft highlight.
    assert view.highlighted_text() == "is codeprint(1)"
    assert DRAFT_TOOLTIP in _tooltip_at(view, "code")
    assert TARGET_TOOLTIP in _tooltip_at(view, "Done")
    assert "12.5 tok/s" in plain and "67% accepted (4/6 drafted)" in plain


def test_highlight_toggle_hides_and_restores_everywhere(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.add_message(TranscriptMessage(1, "assistant", REPLY, REPLY_TOKENS), is_last_reply=True)
    view.begin_stream("model")
    view.append_tokens(token_records([("more ", "draft"), ("text", "target")]))
    view.set_highlighting(False)
    assert view.highlighted_text() == ""
    view.append_tokens(token_records([(" again", "draft")]))  # tokens arriving while hidden stay plain
    assert view.highlighted_text() == ""
    view.set_highlighting(True)
    assert view.highlighted_text() == "is codeprint(1)more  again"


def test_code_block_copy_link_copies_the_code(qtbot, qapp):
    view = ChatView()
    qtbot.addWidget(view)
    view.add_message(TranscriptMessage(1, "assistant", REPLY, REPLY_TOKENS), is_last_reply=True)
    cursor = view.document().find("Copy")
    assert cursor.charFormat().anchorHref() == view.action_href("copy-code", 0)
    view.anchorClicked.emit(QUrl(view.action_href("copy-code", 0)))
    assert qapp.clipboard().text() == "print(1)"


def test_only_the_last_reply_offers_regenerate(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.show_messages(
        [
            TranscriptMessage(1, "user", "hi"),
            TranscriptMessage(2, "assistant", "one", token_records([("one", "target")])),
            TranscriptMessage(3, "user", "again"),
        ]
    )
    view.begin_stream("model")
    view.append_tokens(token_records([("two", "draft")]))
    view.finish_stream(TranscriptMessage(4, "assistant", "two", token_records([("two", "draft")])))
    hrefs = []
    cursor = QTextCursor(view.document())
    while True:
        cursor = view.document().find("Regenerate", cursor)
        if cursor.isNull():
            break
        hrefs.append(cursor.charFormat().anchorHref())
    assert hrefs == [view.action_href("regenerate", 4)]


def test_hovering_a_token_says_who_produced_it(qtbot):
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QApplication, QToolTip

    view = ChatView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    view.begin_stream("model")
    view.append_tokens(token_records([("Hello ", "target"), ("world", "draft")]))
    for word, expected in (("world", DRAFT_TOOLTIP), ("Hello", TARGET_TOOLTIP)):
        cursor = view.document().find(word)
        cursor.setPosition(cursor.selectionStart() + 2)
        pos = view.cursorRect(cursor).center()
        QApplication.sendEvent(view.viewport(), QHelpEvent(QEvent.Type.ToolTip, pos, view.viewport().mapToGlobal(pos)))
        assert expected in QToolTip.text()
    QToolTip.hideText()


def test_a_line_break_shows_no_highlight(qtbot):
    """A drafted token that starts a line highlights its text, not the line break before it (a sliver at the end of
    the line above)."""
    view = ChatView()
    qtbot.addWidget(view)
    tokens = token_records([("```python\nx = 1", "target"), ("\ny = 2", "draft"), ("\n```", "target")])
    view.add_message(TranscriptMessage(1, "assistant", "".join(t.text for t in tokens), tokens), is_last_reply=True)
    assert view.highlighted_text() == "y = 2"
    view.set_highlighting(False)
    view.set_highlighting(True)  # highlighted again: still not the line break
    assert view.highlighted_text() == "y = 2"
