"""Issue 36: a draft larger than the target is never suggested, not even as the draft remembered from another
pair, and the list marks it "Larger than the target"; a user who picks it anyway gets it."""

from __future__ import annotations

from app.ui.models.library_model import NGRAM_KEY


def test_a_draft_larger_than_the_target_is_marked_and_never_suggested(make_window, qtbot, model_folder, tiny_models):
    small, large = str(model_folder / tiny_models.draft.name), str(model_folder / tiny_models.target.name)
    window = make_window(last_draft=large)  # remembered from when the large one was the draft of another
    window.choose_target(small)
    qtbot.waitUntil(lambda: not window.drafts.is_checking() and window.drafts.row_of(NGRAM_KEY) >= 0, timeout=10000)  # noqa
    options = {option.key: option for option in window.drafts.options()}
    assert options[large].detail.startswith("Larger than the target")
    assert "can only slow the replies" in options[large].tooltip
    keys = [option.key for option in window.drafts.options()]
    assert keys.index(large) > keys.index(NGRAM_KEY)  # listed after every suggestion
    assert window.model_bar.current_draft() != large
    window.choose_draft(large)  # the user's own pick is honoured
    assert window.model_bar.current_draft() == large
