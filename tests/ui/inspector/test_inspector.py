"""The per-reply inspector: its charts hold exactly the recorded rounds, it says what speculation saved or cost,
it explains a reply without rounds, it saves a PNG, and a reply's stats row opens it for that reply."""

from __future__ import annotations

import dataclasses

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QImage

from app.engine.events import GenerationStats
from app.replies.inspector_data import NO_ROUNDS_SENTENCE
from app.store.provenance import RoundRecord
from app.ui.inspector import window as inspector_module
from app.ui.inspector.window import ReplyInspector
from app.ui.inspector.charts import drawn_bars, drawn_lines
from app.ui.transcript.format import TranscriptMessage


def model_round(kept: int, drafted: int, time_s: float) -> RoundRecord:
    return RoundRecord("model", drafted, list(range(drafted)), ["m"] * drafted, kept, 1, "o", "draft model", time_s)


def ngram_round(kept: int, drafted: int, time_s: float) -> RoundRecord:
    return RoundRecord("ngram", drafted, list(range(drafted)), ["n"] * drafted, kept, 1, "o", "copy", time_s)


def plain_round(time_s: float) -> RoundRecord:
    return RoundRecord("none", 0, [], [], 0, 1, "o", "paused", time_s)


# Round 1: the draft model keeps 2 of 4; 2: plain; 3: n-gram keeps 3 of 3; 4: plain; 5: the draft model keeps 0 of 2.
ROUNDS = [
    model_round(2, 4, 0.30),
    plain_round(0.10),
    ngram_round(3, 3, 0.12),
    plain_round(0.14),
    model_round(0, 2, 0.06),
]
STATS = GenerationStats(tokens=10, tokens_per_second=12.5, drafted=9, accepted=5, acceptance_rate=5 / 9)


def reply(rounds, message_id: int = 5, stats: GenerationStats = STATS) -> TranscriptMessage:
    return TranscriptMessage(message_id, "assistant", "x" * 10, None, stats, "Target  +  Draft", rounds=rounds)


@pytest.fixture
def inspector(qtbot):
    dialog = ReplyInspector()
    qtbot.addWidget(dialog)
    return dialog


def test_each_round_is_a_bar_of_its_drafted_and_kept_tokens(inspector):
    inspector.show_message(reply(ROUNDS))
    assert drawn_bars(inspector.charts["rounds"]) == {
        "model:drafted": [(1, 0, 4), (5, 0, 2)],
        "model:kept": [(1, 0, 2), (5, 0, 0)],
        "ngram:drafted": [(3, 0, 3)],
        "ngram:kept": [(3, 0, 3)],
    }


def test_acceptance_by_position_and_the_draft_length_histogram(inspector):
    inspector.show_message(reply(ROUNDS))
    positions = drawn_bars(inspector.charts["positions"])
    # The draft model drafted 4 and 2: position 1 reached twice, kept once (50%); 2 likewise; 3 and 4 once, kept 0.
    assert [round(height) for _, _, height in positions["model:position"]] == [50, 50, 0, 0]
    assert [round(height) for _, _, height in positions["ngram:position"]] == [100, 100, 100]
    # Side by side per position: the draft model's bar left of the n-gram's.
    assert positions["model:position"][0][0] < 1 < positions["ngram:position"][0][0]
    histogram = drawn_bars(inspector.charts["histogram"])
    assert histogram == {
        "none:histogram": [(0, 0, 2)],
        "model:histogram": [(2, 0, 1), (4, 0, 1)],
        "ngram:histogram": [(3, 0, 1)],
    }


def test_tokens_against_time_beside_plain_decoding_with_the_saving(inspector):
    inspector.show_message(reply(ROUNDS))
    chart = inspector.charts["time"]
    lines = drawn_lines(chart)
    times, tokens = lines["this reply"]
    assert times == pytest.approx([0, 0.30, 0.40, 0.52, 0.66, 0.72])
    assert tokens == [0, 3, 4, 8, 9, 10]
    # Plain: the plain rounds as they were, the others' tokens at their median, 0.12 s: 1.2 s against 0.72 s.
    plain_x, plain_y = lines["plain decoding (0.120 s/token)"]
    assert plain_x == pytest.approx([0, 0.36, 0.46, 0.94, 1.08, 1.2]) and plain_y == tokens
    assert chart.verdict.toPlainText().startswith(
        "estimated: saved 0.5 s (1.7x),\nif plain decoding writes every token in"
    )
    assert inspector.captions["time"].text() == (
        "Plain decoding: the plain rounds as they were, the others at "
        "0.120 s per token (median of this reply's 2 plain rounds; each "
        "round is set against the plain rounds closest to it)."
    )


def test_a_reply_slower_than_plain_says_what_it_cost(inspector):
    inspector.show_message(reply([model_round(0, 4, 0.5), plain_round(0.1), model_round(1, 4, 0.6)]))
    assert inspector.charts["time"].verdict.toPlainText().startswith("estimated: cost 0.8 s,\nif plain decoding")


def test_a_reply_without_rounds_says_so_instead_of_empty_charts(inspector):
    inspector.show_message(reply(None, stats=GenerationStats(tokens=4)))
    assert not inspector.notice.isHidden() and inspector.notice.text() == NO_ROUNDS_SENTENCE
    assert inspector.charts == {}
    assert not inspector.save_button.isEnabled()
    # An old reply whose stats kept the draft-length histogram still shows that one chart.
    inspector.show_message(reply(None, stats=GenerationStats(tokens=9, draft_len_histogram={"0": 2, "3": 1})))
    assert list(inspector.charts) == ["histogram"]
    assert drawn_bars(inspector.charts["histogram"]) == {"none:histogram": [(0, 0, 2)], "any:histogram": [(3, 0, 1)]}
    # Showing a reply with rounds again brings every chart back, holding only that reply's rounds.
    inspector.show_message(reply(ROUNDS[:1]))
    assert inspector.notice.isHidden()
    assert drawn_bars(inspector.charts["rounds"]) == {"model:drafted": [(1, 0, 4)], "model:kept": [(1, 0, 2)]}


def test_save_writes_one_png_of_the_whole_panel(inspector, qtbot, tmp_path, monkeypatch):
    inspector.show_message(reply(ROUNDS, message_id=42))
    inspector.show()
    asked = {}

    def fake_dialog(parent, caption, suggested, filters):
        asked["suggested"], asked["filters"] = suggested, filters
        return str(tmp_path / "my charts"), filters

    monkeypatch.setattr(inspector_module.QFileDialog, "getSaveFileName", fake_dialog)
    with qtbot.waitSignal(inspector.sig_saved) as blocker:
        qtbot.mouseClick(inspector.save_button, Qt.MouseButton.LeftButton)
    assert blocker.args == [str(tmp_path / "my charts.png")]
    assert asked["suggested"].endswith("specchat-reply-42.png") and "*.png" in asked["filters"]
    data = (tmp_path / "my charts.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    image = QImage()
    assert image.loadFromData(data, "PNG")
    assert (image.width(), image.height()) == (inspector.panel.width(), inspector.panel.height())
    assert "Saved my charts.png" in inspector.status.text()


def test_save_into_a_folder_that_cannot_be_written_says_so(inspector, tmp_path):
    inspector.show_message(reply(ROUNDS))
    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    assert not inspector.write_png(str(blocker / "charts.png"))
    assert inspector.status.text().startswith("Could not save")


# ----- in the window


def _click_text(qtbot, view, text: str) -> None:
    cursor = view.document().find(text)
    assert not cursor.isNull(), text
    cursor.setPosition(cursor.selectionStart() + 1)
    view.setTextCursor(cursor)
    view.ensureCursorVisible()
    rect = view.cursorRect(cursor)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.right() + 2, rect.center().y()))


def test_clicking_a_replys_stats_row_opens_the_inspector_for_that_reply(make_window, fake_engine, qtbot):
    window = make_window(engine_factory=fake_engine)
    store = window.store
    chat = store.create_chat("Inspect")
    replies = {}
    for question, tokens, rounds in (("first?", 7, ROUNDS[:2]), ("second?", 4, ROUNDS[2:])):
        store.add_message(chat.id, "user", question)
        stats = dataclasses.replace(STATS, tokens=tokens)
        answer = f"answer to {question}"
        replies[
            store.add_message(
                chat.id,
                "assistant",
                answer,
                stats=stats,
                tokens=[(answer, "target")],
                token_rounds=[len(rounds) - 1],
                rounds=rounds,
            ).id
        ] = rounds
    window.open_chat(chat.id)
    view = window.chat_view
    first, second = replies

    with qtbot.waitSignal(view.sig_inspect) as blocker:
        _click_text(qtbot, view, "7 tokens")
    assert blocker.args == [first]
    dialog = window.inspector.dialog
    qtbot.waitUntil(dialog.isVisible)
    assert window.inspector.shown_message_id() == first
    assert drawn_bars(dialog.charts["rounds"]) == {"model:drafted": [(1, 0, 4)], "model:kept": [(1, 0, 2)]}

    _click_text(qtbot, view, "4 tokens")
    qtbot.waitUntil(lambda: window.inspector.shown_message_id() == second)
    assert window.inspector.dialog is dialog  # one window, showing the reply clicked last
    assert set(drawn_bars(dialog.charts["rounds"])) == {"ngram:drafted", "ngram:kept", "model:drafted", "model:kept"}


def test_all_four_charts_fit_a_laptop_screen(inspector, qtbot):
    """Issue 45, Polish: on a 1366x768 screen (the inspector about 650 pixels tall, less the title bar) the lower
    charts were below the fold. The panel with all four charts and its buttons need at most 560 pixels here, which
    leaves room for a desktop's larger fonts."""
    rounds = [model_round(3, 4, 0.2), ngram_round(2, 4, 0.1), plain_round(0.05)] * 4
    inspector.show_message(reply(rounds))
    assert len(inspector.charts) == 4
    inspector.resize(980, 620)
    qtbot.wait(20)
    needed = inspector.panel.minimumSizeHint().height()
    buttons = inspector.save_button.sizeHint().height() + 12
    assert needed + buttons <= 560, (needed, buttons)
