"""A draft larger than the target (issue 36) is never suggested, not even as the draft remembered from another
pair, and the list marks it "Won't be faster"; a user who picks it anyway gets it. Issue 55, item 6: so is a draft of
the target's own size (the 1.5B F16 offered for the 1.5B Q4).

The list is the window's own reading of the files, so the scripted engine loads the target: the real one was still
starting when each test ended, and closing it cost 2 s."""

from __future__ import annotations

import shutil

from app.ui.models.library_model import NGRAM_KEY, NOT_SMALLER


def test_a_draft_larger_than_the_target_is_marked_and_never_suggested(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    small, large = str(model_folder / tiny_models.draft.name), str(model_folder / tiny_models.target.name)
    window = make_window(
        engine_factory=fake_engine, last_draft=large
    )  # remembered from when the large one was the draft of another
    window.choose_target(small)
    qtbot.waitUntil(lambda: not window.drafts.is_checking() and window.drafts.row_of(NGRAM_KEY) >= 0, timeout=10000)  # noqa
    options = {option.key: option for option in window.drafts.options()}
    assert options[large].detail.startswith(NOT_SMALLER)
    assert "can only slow the replies" in options[large].tooltip
    keys = [option.key for option in window.drafts.options()]
    assert keys.index(large) > keys.index(NGRAM_KEY)  # listed after every suggestion
    assert window.model_bar.current_draft() != large
    window.choose_draft(large)  # the user's own pick is honoured
    assert window.model_bar.current_draft() == large


def test_a_draft_of_the_targets_own_size_is_marked_and_never_suggested(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    target = model_folder / tiny_models.target.name
    same_size = shutil.copy2(target, model_folder / "tiny-target-f16.gguf")  # as many parameters as the target
    window = make_window(engine_factory=fake_engine)
    window.choose_target(str(target))
    qtbot.waitUntil(lambda: not window.drafts.is_checking() and window.drafts.row_of(NGRAM_KEY) >= 0, timeout=10000)  # noqa
    options = {option.key: option for option in window.drafts.options()}
    assert options[str(same_size)].detail.startswith("Won't be faster") and not options[str(same_size)].suggested
    assert window.model_bar.current_draft() != str(same_size)
