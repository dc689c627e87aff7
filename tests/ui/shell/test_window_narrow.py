"""The window fits 800x600 after what a first day shows (issue 45, item 3): a thinking reply, the offer to draft
anyway, a model without a chat template (its format picker) and a chat written with another model (the header's
question, whose buttons named both models). None of it may hold the window wider than 800 pixels, and at 800x600
every control is inside the window."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from app.testing.synthetic import DRAFT_LAYERS, write_tiny_model
from tests.ui.layout_checks import layout_problems
from tests.ui.window_helpers import choose_pair, send_and_wait


def _without_template(writer) -> None:
    del writer.kv_data[0]["tokenizer.chat_template"]


def _widest(window) -> list[tuple[int, str]]:
    shown = [w for w in window.findChildren(QWidget) if w.isVisible()]
    return sorted(
        ((max(w.minimumSizeHint().width(), w.minimumWidth()), f"{type(w).__name__} {w.objectName()}") for w in shown),
        reverse=True,
    )[:6]


def test_the_window_shrinks_to_800_pixels_after_a_first_days_content(make_window, qtbot, fake_engine, model_folder):
    qwen = write_tiny_model(
        model_folder / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", name="Qwen2.5 Coder 1.5B Instruct"
    )
    gemma = write_tiny_model(
        model_folder / "gemma-3-270m-it-q8_0.gguf",
        n_layer=DRAFT_LAYERS,
        name="Gemma 3 270M Instruct",
        edit=_without_template,
    )
    fake_engine.reasoning = "Let me think about this for a while before I answer."
    fake_engine.round_kind = "costly"  # the footer offers to draft anyway
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, qwen, None)
    first = window.store.get_message(send_and_wait(qtbot, window, "Is 221 prime?")).chat_id
    window.new_chat()
    choose_pair(qtbot, window, gemma, None)
    qtbot.waitUntil(lambda: not window.chat_format.row.isHidden(), timeout=5000)
    send_and_wait(qtbot, window, "Once upon a time")
    assert window.speculate_anyway.offered()
    _fits_800(qtbot, window)
    assert window.speculate_anyway.label.isVisible()  # the offer is still there to click
    window.open_chat(first)  # written with Qwen while Gemma is loaded: the header asks
    assert window.chat_header.asking()
    _fits_800(qtbot, window)
    assert window.chat_header.header.load_button.isVisible()


def _fits_800(qtbot, window) -> None:
    qtbot.wait(50)
    assert window.minimumSizeHint().width() <= 800, _widest(window)
    window.resize(800, 600)
    qtbot.waitUntil(lambda: window.width() == 800, timeout=5000)
    # (The test's screen is the offscreen one, whatever its size: only the controls' places inside the window count.)
    assert [problem for problem in layout_problems(window) if "the screen" not in problem] == []
    window.resize(1100, 700)


def test_chat_settings_keeps_its_place_whatever_the_models_name(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    """Issue 45, Polish: "Chat settings" hopped between rows of the model bar with the model name's length."""
    long_name = write_tiny_model(model_folder / "qwen2.5-coder-1.5b-instruct-q4_k_m-with-a-long-name.gguf")
    window = make_window(engine_factory=fake_engine)
    widths = range(560, 1400, 40)
    places = []
    for target in (model_folder / tiny_models.target.name, long_name):
        choose_pair(qtbot, window, target, None)
        button = window.model_bar.settings_button
        at = []
        for width in widths:
            window.resize(width, 700)
            qtbot.waitUntil(lambda wanted=width: window.width() == wanted, timeout=5000)
            qtbot.wait(20)
            at.append(button.mapTo(window, button.rect().topLeft()).y())
        places.append(at)
    assert places[0] == places[1]
    assert [problem for problem in layout_problems(window) if "the screen" not in problem] == []


def test_a_long_error_banner_over_an_open_chat_does_not_widen_the_window(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    """Issue 55, item 3: with a chat open the window could not be made 800 pixels wide, and a banner quoting a long
    unbroken address or file name widened the window by itself. Its whole text stays selectable and in the tooltip."""
    long_name = write_tiny_model(model_folder / "qwen2.5-coder-1.5b-instruct-q4_k_m-with-a-long-name.gguf")
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, long_name, model_folder / tiny_models.draft.name)
    send_and_wait(qtbot, window, "Write a function that checks whether a string is a palindrome.")
    window.resize(1180, 700)
    qtbot.waitUntil(lambda: window.width() == 1180, timeout=5000)
    address = "http://127.0.0.1:8080/v1/chat/completions#" + "0123456789abcdef" * 8  # no place to break a line
    window.show_error(f"The server at {address} refused the request: connection reset")
    qtbot.wait(50)
    assert window.width() == 1180  # the banner did not widen the window
    _fits_800(qtbot, window)
    assert window.error_banner.isVisible() and address in window.error_banner.toolTip()


def test_the_api_indicator_naming_a_long_model_does_not_hold_the_window_wide(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    """Issue 55, item 3: with a chat open and the API on, the footer's "API at … · answers with
    qwen2.5-coder-1.5b-instruct-q4_k_m" held the window 947 pixels wide. It wraps instead, and names the model whole
    in its tooltip."""
    from tests.support.ports import free_port

    target = write_tiny_model(model_folder / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    window = make_window(engine_factory=fake_engine, api_server=True, api_port=free_port())
    choose_pair(qtbot, window, target, model_folder / tiny_models.draft.name)
    qtbot.waitUntil(lambda: bool(window.api_server.state.url), timeout=10000)
    send_and_wait(qtbot, window, "Hello")
    _fits_800(qtbot, window)
    indicator = window.api_server.indicator
    assert "answers with" in indicator.text() and "qwen2.5-coder-1.5b-instruct-q4_k_m" in indicator.toolTip()
