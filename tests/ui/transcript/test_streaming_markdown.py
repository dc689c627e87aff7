"""A streaming reply is shown as Markdown while it streams: a fenced code block is a coloured code block from its
first line, no fence is ever shown as text, and nothing moves when the reply finishes."""

from __future__ import annotations

import random

import pytest
from PySide6.QtGui import QColor

from app.engine.events import GenerationStats
from app.store.provenance import RoundRecord, TokenRecord, token_records
from app.ui.transcript import long_text
from app.ui.transcript.chat_view import ChatView, TranscriptMessage
from app.ui.transcript.markdown.code_colors import code_colours
from app.ui.widgets import style
from tests.ui.window_helpers import choose_pair

CODE_REPLY = (
    'Here is the function:\n\n```python\ndef add(a, b):\n    """Their sum."""\n    return a + b\n```\n\n'
    "It returns **the sum**.\n\n```python\nprint(add(1, 2))\n```\n"
)
# Every kind of block the transcript draws, and the seams between them.
SAMPLES = [
    CODE_REPLY,
    "# Title\n\nSome *text*, `code` and a [link](https://example.org).\n\n1. one\n2. two\n   - nested\n\n"
    "> quoted\n> still\n\n---\n\nEnd.",
    "| a | b |\n|---|:-:|\n| 1 | 2 |\n\nAfter the table.\n\n```\nplain code\n```",
    "- item\n\n  ```js\n  let x = 1;\n  ```\n- second\n\nText after.",
    "~~~rust\nfn main() {}\n~~~\nno gap\n```\nunclosed code\nline two",
    "Para one\nsoft break\n\n    indented code\n\n````markdown\n```python\ninner\n```\n````\n\nDone.",
    "A\r\nB\r\n\r\n```py\r\nx = 1\r\n```\r\n\r\n- [ ] task\n- [x] done\n\nSetext\n======\n",
    # Maths inline and on lines of their own, prices that stay text.
    "Area \\(\\pi r^2\\) and $x_1$, for $5 or $10:\n\\[\n\\sqrt{x}\n\\]\nthen\n\n$$\n\\sum_{i=1}^n i\n$$\n\nend.",
    # Past the characters written again at each flush: a long code line, and bold that closes far from its start.
    "```json\n" + '{"key": [1, "two"], ' * 24 + "\n```\n\nStart **" + "word " * 60 + "end** and after.",
]


def _tokens(text: str, cuts: list[int]) -> list[TokenRecord]:
    """`text` cut at these offsets, drafted and written by turns, one round per pair of tokens."""
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)]) if b > a]
    return [TokenRecord(piece, "draft" if n % 2 else "target", n // 2) for n, piece in enumerate(pieces)]


def _view(qtbot) -> ChatView:
    view = ChatView()
    qtbot.addWidget(view)
    view.resize(700, 900)
    view.show()
    view.add_message(TranscriptMessage(1, "user", "Write add."))
    return view


def _lines(view: ChatView) -> list[tuple[str, float, float]]:
    """Each line of the transcript from the reply's first line (under its header) to its last non-empty one, with
    where it is laid out: its text, top and height."""
    document = view.document()
    layout = document.documentLayout()
    lines = []
    block = document.begin()
    while block.isValid():
        rect = layout.blockBoundingRect(block)
        lines.append((block.text(), rect.y(), rect.height()))
        block = block.next()
    header = next(n for n, line in enumerate(lines) if line[0] in ("model", "Assistant"))
    last = max(n for n, line in enumerate(lines) if line[0])
    return lines[header + 1 : last + 1]


def _finish(view: ChatView, text: str, tokens: list[TokenRecord], rounds=None) -> None:
    view.finish_stream(
        TranscriptMessage(
            2, "assistant", text, tokens, GenerationStats(tokens=len(tokens), tokens_per_second=12.5), rounds=rounds
        )
    )


def test_a_fenced_block_is_a_coloured_code_block_from_its_first_line(qtbot):
    view = _view(qtbot)
    view.begin_stream("model")
    tokens = _tokens(CODE_REPLY, [8, 22, 25, 33, 38, 48])  # ... "```py", "thon\n", "def add(", "a, b):\n" ...
    view.append_tokens(tokens[:4])  # the fence and its language
    assert view.streamed_text().rstrip() == "Here is the function:\npython   Copy"  # an empty code block, no fence
    view.append_tokens(tokens[4:6])  # the first line of code, still streaming
    assert view.is_streaming()
    streamed = view.streamed_text()
    assert "```" not in streamed and streamed.endswith("python   Copy\ndef add(a, b):")
    keyword = view.document().find("def").charFormat()
    assert keyword.fontFamilies() == style.monospace_font().families()
    colours = code_colours("def add(a, b):", "python", style.current().code_style)
    assert colours is not None and keyword.foreground().color() == QColor(colours[0])  # a Python keyword's colour
    # The same colour and font as the finished reply gives it.
    rest = _tokens(CODE_REPLY, [48])[1:]
    view.append_tokens([TokenRecord(t.text, t.origin, 3) for t in rest])
    _finish(view, CODE_REPLY, tokens[:6] + rest)
    finished = view.document().find("def").charFormat()
    assert finished.foreground().color() == keyword.foreground().color()
    assert finished.fontFamilies() == keyword.fontFamilies()


def test_no_fence_is_shown_as_text_while_it_streams(qtbot):
    """A fence's backticks come a token or two at a time: the line is held back until it is known to be a fence."""
    view = _view(qtbot)
    view.begin_stream("model")
    text = CODE_REPLY
    for end in range(1, len(text) + 1):  # one character a token
        view.append_tokens([TokenRecord(text[end - 1], "target", end)])
        assert "`" not in view.streamed_text(), repr(text[:end])


def test_the_reply_does_not_move_when_it_finishes(qtbot):
    """The reply ends with a closed fence: every line is where it was, with the same text, once it finishes."""
    view = _view(qtbot)
    view.begin_stream("model")
    tokens = _tokens(CODE_REPLY, list(range(3, len(CODE_REPLY), 4)))
    for n in range(0, len(tokens), 3):
        view.append_tokens(tokens[n : n + 3])
    streamed, before = view.streamed_text(), _lines(view)
    assert "```" not in streamed and "**" not in streamed
    _finish(view, CODE_REPLY, tokens)
    after = _lines(view)[: len(before)]
    assert [line[0] for line in after] == [line[0] for line in before]  # the same text
    assert after == before  # at the same places, the same heights
    assert streamed in view.toPlainText()


@pytest.mark.slow
def test_every_kind_of_block_ends_where_it_streamed(qtbot):
    """Replies cut into tokens at random places (and one character a token), with refused proposals shown: the
    finished reply is laid out as the stream showed it."""
    shuffle = random.Random(36)
    for text in SAMPLES:
        for cuts in (list(range(1, len(text))), sorted(shuffle.sample(range(1, len(text)), len(text) // 3))):
            view = _view(qtbot)
            view.set_show_refused(True)
            view.begin_stream("model")
            tokens = _tokens(text, cuts)
            rounds = [RoundRecord("model", 2, [1, 2, 3], ["d", "Q", "Z"], kept=1) for _ in tokens]
            for n in range(0, len(tokens), 3):
                view.append_tokens(tokens[n : n + 3], rounds)
            before = _lines(view)
            assert any("QZ" in line[0] for line in before)  # the refused proposals are shown
            _finish(view, text, tokens, rounds)
            assert _lines(view)[: len(before)] == before, text


@pytest.mark.slow
def test_each_flush_shows_what_one_flush_of_the_same_text_would(qtbot):
    """Written block by block, flush after flush, the reply looks as it would written at once at any point."""
    shuffle = random.Random(7)
    for text in SAMPLES:
        tokens = _tokens(text, sorted(shuffle.sample(range(1, len(text)), len(text) // 3)))
        view = _view(qtbot)
        view.begin_stream("model")
        for n in range(0, len(tokens), 3):
            view.append_tokens(tokens[n : n + 3])
            at_once = _view(qtbot)
            at_once.begin_stream("model")
            at_once.append_tokens(tokens[: n + 3])
            assert _lines(view) == _lines(at_once), "".join(t.text for t in tokens[: n + 3])
            at_once.close()


def test_refused_proposals_shown_or_hidden_mid_stream_leave_it_whole(qtbot):
    """Ghost text inserted into or taken out of what streamed already moves nothing the stream writes next."""
    for text in SAMPLES[:4]:
        view = _view(qtbot)
        view.begin_stream("model")
        tokens = _tokens(text, list(range(1, len(text))))
        rounds = [RoundRecord("model", 2, [1, 2, 3], ["d", "Q", "Z"], kept=1) for _ in tokens]
        for n in range(0, len(tokens), 3):
            view.set_show_refused(n % 2 == 0)
            view.append_tokens(tokens[n : n + 3], rounds)
        view.set_show_refused(True)
        before = _lines(view)
        _finish(view, text, tokens, rounds)
        assert _lines(view)[: len(before)] == before, text


def test_thinking_streams_as_quiet_markdown(qtbot):
    view = _view(qtbot)
    view.set_keep_thinking_open(True)
    view.begin_stream("model")
    view.append_reasoning(
        token_records([("Use **a** and ", "target"), ("`b`:\n\n", "draft"), ("```python\nx = 1\n", "target")])
    )
    streamed = view.streamed_text()
    assert "Use a and b:" in streamed and "x = 1" in streamed and "`" not in streamed and "*" not in streamed
    for word in ("Use", "x = 1"):
        assert view.document().find(word).charFormat().foreground().color() == QColor(style.TEXT_MUTED)


def test_thinking_past_what_a_stream_shows_says_so(qtbot):
    view = _view(qtbot)
    view.set_keep_thinking_open(True)
    view.begin_stream("model")
    for _ in range(long_text.SHOWN_MAX_CHARS // 90):
        view.append_reasoning(token_records([("word " * 19 + "\n\n", "target")]))
    assert view.streamed_text().count(long_text.STREAM_NOT_SHOWN) == 1
    view.answer_started(1.0, 300)
    view.append_tokens(token_records([("The answer.", "target")]))
    assert view.streamed_text().endswith(long_text.STREAM_NOT_SHOWN + "\n\nThe answer.")


@pytest.mark.slow
def test_the_window_streams_a_code_reply_as_a_code_block(make_window, qtbot, fake_engine, model_folder, tiny_models):
    """Through the whole window (the engine process, the conversation's flushes): the code block of a reply still
    streaming is already a code block."""
    from PySide6.QtCore import Qt

    fake_engine.token_delay_s = 0.1  # a reply of about three seconds
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    view = window.chat_view
    window.composer.edit.setPlainText("Write add()")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "def add(a, b):" in view.streamed_text(), timeout=20000)
    assert view.is_streaming() and "```" not in view.streamed_text()
    assert "python   Copy" in view.streamed_text()
    assert view.document().find("def add").charFormat().fontFamilies() == style.monospace_font().families()
    qtbot.waitUntil(lambda: not window.conversation.is_busy(), timeout=20000)
