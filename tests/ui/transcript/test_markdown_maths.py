"""Maths in a reply (`$…$`, `\\(…\\)`, `$$…$$`, `\\[…\\]`) reads as Unicode maths in an italic serif, display maths
centred on a line of its own; prices and code keep their `$`; the drafted-token highlight covers the maths that
drafted tokens wrote; a span still open while the reply streams stays as written until it closes."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.store.provenance import TokenRecord, token_records
from app.ui.transcript.chat_view import ChatView, TranscriptMessage
from app.ui.widgets import style
from tests.ui.transcript.shown_text import shown_with_origins

M = "ngram"  # markup, so that a shown character wrongly mapped to a delimiter is caught
D, T = "draft", "target"

# (source text, origin of its token, what it shows: None for markup, else its shown text)
SEGMENTS = [
    ("The area is ", T, "The area is "),
    ("\\(", M, None),
    ("\\pi r^2", D, "π r²"),
    ("\\)", M, None),
    (" and ", T, " and "),
    ("$", M, None),
    ("\\alpha", D, "α"),
    ("$", M, None),
    (" costs $5 and $10.", T, " costs $5 and $10."),
    ("\n\n", M, None),
    ("$$\n", M, None),
    ("\\sum_{i=1}^n i", D, "∑ᵢ₌₁ⁿ i"),
    ("\n$$", M, None),
    ("\n\n", M, None),
    ("So:\n", T, "So:"),
    ("\\[\n", M, None),
    ("\\sqrt{x}", D, "√(x)"),
    ("\n\\]\n", M, None),
    ("Keep ", T, "Keep "),
    ("`", M, None),
    ("$x$", D, "$x$"),
    ("`", M, None),
    (".\n\n", T, "."),
    ("```sh\n", M, None),
    ("echo $HOME $x$", D, "echo $HOME $x$"),
    ("\n```", M, None),
]
SOURCE = "".join(text for text, _, _ in SEGMENTS)
TOKENS = [(text, origin) for text, origin, _ in SEGMENTS]


def _view(qtbot) -> ChatView:
    view = ChatView()
    qtbot.addWidget(view)
    return view


def test_maths_reads_as_unicode_and_prices_and_code_stay_as_written(qtbot):
    view = _view(qtbot)
    view.add_message(TranscriptMessage(1, "assistant", SOURCE, token_records(TOKENS)), is_last_reply=True)
    plain = view.toPlainText()
    assert "The area is π r² and α costs $5 and $10." in plain
    assert "∑ᵢ₌₁ⁿ i" in plain and "√(x)" in plain
    assert "\\pi" not in plain and "\\(" not in plain and "$$" not in plain and "\\sqrt" not in plain
    assert "Keep $x$." in plain and "echo $HOME $x$" in plain  # code never gets maths
    # Every shown character keeps its token's origin: the maths is highlighted as drafted, no delimiter shows.
    expected = [(ch, origin) for _, origin, shown in SEGMENTS if shown for ch in shown]
    assert shown_with_origins(view) == expected
    assert view.highlighted_text("ngram") == ""
    # Maths in an italic serif; display maths centred on a line of its own; the text around it as it was.
    pi = view.document().find("π r²")
    assert pi.charFormat().fontItalic() and pi.charFormat().fontFamilies() == style.MATHS_FONT_FAMILIES
    assert not view.document().find("The area").charFormat().fontItalic()
    display = view.document().find("∑ᵢ₌₁ⁿ i").block()
    assert display.text() == "∑ᵢ₌₁ⁿ i" and display.blockFormat().alignment() & Qt.AlignmentFlag.AlignHCenter
    assert view.document().find("√(x)").block().text() == "√(x)"
    assert not view.document().find("So:").block().blockFormat().alignment() & Qt.AlignmentFlag.AlignHCenter


def test_a_maths_span_stays_as_written_until_it_closes_while_streaming(qtbot):
    view = _view(qtbot)
    view.add_message(TranscriptMessage(1, "user", "Area?"))
    view.begin_stream("model")
    view.append_tokens([TokenRecord("The area is $", "target", 0), TokenRecord("\\pi r^2", "draft", 0)])
    assert "$\\pi r^2" in view.streamed_text()  # not closed yet: as written
    view.append_tokens([TokenRecord("$ here.\n\n$$\n\\alpha", "target", 1)])
    streamed = view.streamed_text()
    assert "The area is π r² here." in streamed and "$$" in streamed and "α" not in streamed
    view.append_tokens([TokenRecord("\n$$\n", "target", 2)])
    assert "α" in view.streamed_text() and "$$" not in view.streamed_text()
