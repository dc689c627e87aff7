"""A finished reply is rendered as Markdown and every shown character keeps the provenance of its source
character; links open only after confirmation; nothing remote is ever loaded."""

from __future__ import annotations

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices, QTextDocument
from PySide6.QtWidgets import QMessageBox

from app.store.provenance import TokenRecord, token_records
from app.ui.widgets import style
from app.ui.transcript.chat_view import ChatView, TranscriptMessage
from tests.ui.transcript.shown_text import shown_with_origins

M = "ngram"  # markup is written as n-gram tokens, so a shown character wrongly mapped to markup is caught
D, T = "draft", "target"

# (source text, origin of its token, what it shows: None for markup, else its shown text)
SEGMENTS = [
    ("# ", M, None),
    ("Head ", D, "Head "),
    ("*", M, None),
    ("x", T, "x"),
    ("*", M, None),
    ("\n\n", M, None),
    # Emphasis inside a link whose URL holds the letters that follow it; an entity; an escape; a soft break.
    ("A ", T, "A "),
    ("[", M, None),
    ("link ", D, "link "),
    ("**", M, None),
    ("b", T, "b"),
    ("**", M, None),
    ("](http://e.com/(a)y)", M, None),
    ("y ", T, "y "),
    ("&amp;", D, "&"),
    (" ", T, " "),
    # Code containing backticks, strikethrough, an escaped star, an image shown as its alt text, an autolink.
    ("`` ", M, None),
    ("a`b", D, "a`b"),
    (" ``", M, None),
    (" ", T, " "),
    ("~~", M, None),
    ("gone", T, "gone"),
    ("~~", M, None),
    (" ", D, " "),
    ("\\", M, None),
    ("*", D, "*"),
    (" ", T, " "),
    ("![", M, None),
    ("alt", D, "alt"),
    ("](http://x/y.png)", M, None),
    ("\n", T, "\n"),
    ("<", M, None),
    ("http://auto.com", D, "http://auto.com"),
    (">", M, None),
    ("\n\n", M, None),
    # A table whose cell starts with the separator row's character.
    ("| ", M, None),
    ("a", D, "a"),
    (" | ", M, None),
    ("b", T, "b"),
    (" |\n|---|:-:|\n| ", M, None),
    ("-1", D, "-1"),
    (" | ", M, None),
    ("x", T, "x"),
    ("&lt;", D, "<"),
    (" |\n\n", M, None),
    # A task list, its checked item starting with the checkbox's letter, and a nested ordered list.
    ("- [ ] ", M, None),
    ("task", D, "task"),
    ("\n- [x] ", M, None),
    ("x marks", T, "x marks"),
    ("\n  1. ", M, None),
    ("nested", D, "nested"),
    ("\n  2. ", M, None),
    ("two", T, "two"),
    ("\n\n", M, None),
    ("> ", M, None),
    ("quote", D, "quote"),
    ("\n", T, "\n"),
    ("> ", M, None),
    ("more", T, "more"),
    ("\n\n", M, None),
    ("```py\n", M, None),
    ("x = `1`", D, "x = `1`"),
    ("\n", T, "\n"),
    ("y = 2", D, "y = 2"),
    ("\n```\n", M, None),
    ("Done.", T, "Done."),
]
SOURCE = "".join(text for text, _, _ in SEGMENTS)
TOKENS = [(text, origin) for text, origin, _ in SEGMENTS]


def test_adversarial_markdown_keeps_every_shown_characters_provenance(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.add_message(TranscriptMessage(1, "assistant", SOURCE, token_records(TOKENS)), is_last_reply=True)
    expected = [(ch, origin) for _, origin, shown in SEGMENTS if shown for ch in shown]
    assert shown_with_origins(view) == expected
    # The highlight follows: draft-model characters in one colour, and no markup (all n-gram here) shows.
    assert view.highlighted_text("draft") == "".join(s for _, o, s in SEGMENTS if s and o == D).replace("\n", "")
    assert view.highlighted_text("ngram") == ""
    plain = view.toPlainText()
    assert "**" not in plain and "```" not in plain and "](" not in plain and "&amp;" not in plain


def test_tables_lists_and_code_are_laid_out_as_such(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    view.add_message(TranscriptMessage(1, "assistant", SOURCE, token_records(TOKENS)), is_last_reply=True)
    tables = [f for f in view.document().rootFrame().childFrames()[0].childFrames() if f.format().isTableFormat()]
    assert len(tables) == 1 and (tables[0].rows(), tables[0].columns()) == (2, 2)
    plain = view.toPlainText()
    assert "☐  task" in plain and "☑  x marks" in plain and "1.  nested" in plain
    # Code gets Pygments colours in the foreground; its draft highlight stays in the background.
    cursor = view.document().find("y = 2")
    cursor.setPosition(cursor.selectionStart() + 1)
    fmt = cursor.charFormat()
    assert fmt.background().color() == style.draft_color()
    assert fmt.foreground().color().name() != style.TEXT.lower()


def test_a_link_opens_only_after_the_user_confirms_the_full_url(qtbot, monkeypatch):
    asked, opened = [], []
    answer = [QMessageBox.StandardButton.Cancel]
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *args: asked.append(args[2]) or answer[0]))
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True))
    view = ChatView()
    qtbot.addWidget(view)
    text = "See [the docs](https://example.com/a?b=1&c=2) now."
    view.add_message(TranscriptMessage(1, "assistant", text, [TokenRecord(text, "target")]), is_last_reply=True)
    cursor = view.document().find("the docs")
    cursor.setPosition(cursor.selectionStart() + 1)
    href = cursor.charFormat().anchorHref()
    assert href == "https://example.com/a?b=1&c=2"
    view.anchorClicked.emit(QUrl(href))
    assert len(asked) == 1 and "https://example.com/a?b=1&c=2" in asked[0]
    assert opened == []  # declined: nothing opens
    answer[0] = QMessageBox.StandardButton.Open
    view.anchorClicked.emit(QUrl(href))
    assert [url.toString() for url in opened] == ["https://example.com/a?b=1&c=2"]


def test_a_link_to_a_program_or_file_is_never_opened(qtbot, monkeypatch):
    told, opened = [], []
    monkeypatch.setattr(QMessageBox, "information", staticmethod(lambda *args: told.append(args[2])))
    monkeypatch.setattr(QMessageBox, "question", staticmethod(lambda *args: QMessageBox.StandardButton.Open))
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True))
    view = ChatView()
    qtbot.addWidget(view)
    view.anchorClicked.emit(QUrl("file:///etc/passwd"))
    assert opened == [] and "file:///etc/passwd" in told[0]


class _SpyView(ChatView):
    def __init__(self):
        super().__init__()
        self.asked: list[str] = []

    def loadResource(self, kind, name):  # noqa: N802
        self.asked.append(name.toString())
        return super().loadResource(kind, name)


def test_a_reply_with_remote_images_makes_no_request(qtbot):
    from PySide6.QtNetwork import QNetworkAccessManager

    view = _SpyView()
    qtbot.addWidget(view)
    view.resize(600, 400)
    view.show()
    text = (
        "![tracking pixel](https://example.com/pixel.png) and "
        '<img src="http://example.com/raw.png"> and [![badge](https://example.com/b.svg)](https://example.com)'
    )
    view.add_message(TranscriptMessage(1, "assistant", text, [TokenRecord(text, "draft")]), is_last_reply=True)
    view.grab()  # lay out and paint everything, as on screen
    assert not [url for url in view.asked if url.startswith(("http:", "https:", "//"))]
    assert view.loadResource(QTextDocument.ResourceType.ImageResource, QUrl("https://example.com/pixel.png")) is None
    assert not view.findChildren(QNetworkAccessManager) and not view.document().findChildren(QNetworkAccessManager)
    plain = view.toPlainText()
    assert "tracking pixel" in plain and '<img src="http://example.com/raw.png">' in plain  # shown, not fetched
