"""Hovering a token tells its round (what was proposed, what the target refused and wrote instead); refused
proposals can be shown inline as ghost text that is never copied; the two drafters have their own highlights."""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtGui import QHelpEvent, QTextCursor
from PySide6.QtWidgets import QApplication, QToolTip

from app.store.provenance import RoundRecord, TokenRecord, token_records
from app.ui.widgets import style
from app.ui.transcript.chat_view import DRAFT_TOOLTIP, NGRAM_TOOLTIP, ChatView, TranscriptMessage
from app.ui.transcript.format import GHOST_PROPERTY
from app.ui.shell.window_widgets import LegendRow

ROUNDS = [
    RoundRecord("model", 4, [1, 2, 3, 4], ["The", " cat", " sat", " down"], kept=2, own=5, own_text=" is"),
    RoundRecord("ngram", 3, [6, 7, 8], [" on", " the", " mat"], kept=3, own=9, own_text=" today"),
    RoundRecord("none", 0, [], [], kept=0, own=10, own_text="."),
    RoundRecord("model", 2, [11, 12], [" Bye", "!"], kept=0, own=13, own_text=" Done"),
]
TOKENS = [
    ("The", "draft"),
    (" cat", "draft"),
    (" is", "target"),
    (" on", "ngram"),
    (" the", "ngram"),
    (" mat", "ngram"),
    (" today", "target"),
    (".", "target"),
    (" Done", "target"),
]
TOKEN_ROUNDS = [0, 0, 0, 1, 1, 1, 1, 2, 3]
REPLY = "".join(text for text, _ in TOKENS)


def _message() -> TranscriptMessage:
    return TranscriptMessage(5, "assistant", REPLY, token_records(TOKENS, TOKEN_ROUNDS), rounds=ROUNDS)


def _stream(view: ChatView) -> None:
    view.begin_stream("model")
    rounds: list[RoundRecord] = []
    # As the window gets them: each round's record before its tokens, in flushes of a few tokens.
    for start, end, known in ((0, 3, 1), (3, 7, 2), (7, 9, 4)):
        rounds.extend(ROUNDS[len(rounds) : known])
        view.append_tokens(token_records(TOKENS[start:end], TOKEN_ROUNDS[start:end]), rounds)


def _position(view: ChatView, text: str, nth: int = 0) -> int:
    cursor = QTextCursor(view.document())
    for _ in range(nth + 1):
        cursor = view.document().find(text, cursor)
        assert not cursor.isNull(), text
    return cursor.selectionStart()


def _check_tooltips(view: ChatView) -> None:
    tip = view.token_tooltip(_position(view, "cat") + 1)
    assert DRAFT_TOOLTIP in tip
    assert "The cat<s> sat down</s>" in tip  # the refused part struck through
    assert "Instead the target wrote" in tip and "> is</b>" in tip
    tip = view.token_tooltip(_position(view, "mat") + 1)
    assert NGRAM_TOOLTIP in tip and "n-gram lookup proposed 3" in tip and "<s>" not in tip
    assert "Then the target added" in tip
    tip = view.token_tooltip(_position(view, "Done") + 1)
    assert "<s> Bye!</s>" in tip and "kept 0" in tip


def test_a_tokens_tooltip_tells_its_round_while_streaming_and_after(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    _stream(view)
    _check_tooltips(view)
    # Through a real hover event too.
    cursor = QTextCursor(view.document())
    cursor.setPosition(_position(view, "cat") + 2)
    point = view.cursorRect(cursor).center()
    QApplication.sendEvent(view.viewport(), QHelpEvent(QEvent.Type.ToolTip, point, view.viewport().mapToGlobal(point)))
    assert "<s> sat down</s>" in QToolTip.text()
    QToolTip.hideText()
    view.finish_stream(_message())
    _check_tooltips(view)


def test_an_old_reply_without_rounds_says_only_who_wrote_a_token(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.add_message(
        TranscriptMessage(1, "assistant", "old reply", token_records([("old ", "draft"), ("reply", "target")]))
    )
    tip = view.token_tooltip(_position(view, "old") + 1)
    assert DRAFT_TOOLTIP in tip and "Round" not in tip
    assert view.highlighted_text("draft") == "old "  # an old chat's draft tokens show as the draft model's


def _ghost_text(view: ChatView) -> str:
    from app.ui.transcript.marks import fragments

    return "|".join(f.text() for f in fragments(view.document()) if f.charFormat().boolProperty(GHOST_PROPERTY))


def _select_all_copied(view: ChatView) -> str:
    view.selectAll()
    view.copy()  # what Ctrl+C does
    return QApplication.clipboard().text()


def test_refused_proposals_show_inline_and_are_never_copied(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.set_show_refused(True)
    _stream(view)
    # Ghost text sits after the kept draft tokens and before the target's own token of its round.
    assert "The cat sat down is on the mat today. Bye! Done" in view.toPlainText()
    assert _ghost_text(view) == " sat down| Bye!"
    assert view.streamed_text() == REPLY
    view.finish_stream(_message())
    assert "The cat sat down is on the mat today. Bye! Done" in view.toPlainText()
    ghost = QTextCursor(view.document())
    ghost.setPosition(_position(view, " sat down") + 1)
    assert ghost.charFormat().fontStrikeOut() and ghost.charFormat().boolProperty(GHOST_PROPERTY)
    assert "refused" in view.token_tooltip(_position(view, " sat down") + 1).lower()
    copied = _select_all_copied(view)
    assert REPLY in copied and "sat down" not in copied and "Bye" not in copied
    view.set_show_refused(False)
    assert _ghost_text(view) == "" and REPLY in view.toPlainText()
    view.set_show_refused(True)  # back, in the same places
    assert "The cat sat down is on the mat today. Bye! Done" in view.toPlainText()


def test_refused_proposals_shown_mid_stream_and_hidden_again(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    _stream(view)
    assert _ghost_text(view) == ""
    view.set_show_refused(True)
    assert _ghost_text(view) == " sat down| Bye!"
    assert view.streamed_text() == REPLY
    view.set_show_refused(False)
    view.append_tokens([TokenRecord("\nmore", "target", 3)], ROUNDS)  # another piece of round 3: no second ghost
    view.set_show_refused(True)
    assert _ghost_text(view) == " sat down| Bye!"


def test_draft_model_and_ngram_tokens_have_distinct_highlights_in_the_legend(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.add_message(_message(), is_last_reply=True)
    assert view.highlighted_text("draft") == "The cat"
    assert view.highlighted_text("ngram") == " on the mat"
    assert style.draft_color().rgb() != style.ngram_color().rgb()
    view.set_highlighting(False)
    assert view.highlighted_text() == ""
    view.set_highlighting(True)
    assert view.highlighted_text() == "The cat on the mat"
    legend = LegendRow(highlighting=True, show_refused=False)
    qtbot.addWidget(legend)
    html = legend.legend.text()
    for words, colour in (("draft model", style.draft_color()), ("n-gram copy", style.ngram_color())):
        assert words in html and style.swatch_css(colour) in html
    assert not legend.refused_switch.isChecked()
