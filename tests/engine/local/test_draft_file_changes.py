"""A loaded draft whose file goes away or is replaced: the engine answers without it and says why, once."""

from __future__ import annotations

import os
import shutil

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, NoticeEvent, RoundEvent, WaitingEvent
from app.engine.local.engine import SpecEngine

MESSAGES = [{"role": "user", "content": "count: 1 2 3 4 5 6 7 8 9 1 2 3 4 5 6 7 8 9"}]


@pytest.fixture(params=[1, 2], ids=["alone", "side-by-side"])
def engine_and_draft(tiny_models, tmp_path, request):
    """The tiny pair loaded (one request at a time, or two side by side), its draft a copy of this test's own (the
    session's files stay where they are)."""
    draft = tmp_path / tiny_models.draft.name
    shutil.copyfile(tiny_models.draft, draft)
    engine = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1, n_parallel=request.param))
    engine.load_target(tiny_models.target)
    engine.load_draft(draft)
    yield engine, draft
    engine.close()


def _answer(engine: SpecEngine) -> tuple[list[str], list[RoundEvent], FinishedEvent]:
    """One reply's notices, rounds and finish; side by side, the engine is stepped whenever the reply waits, as the
    engine process's loop does."""
    events = []
    for steps, event in enumerate(engine.chat(MESSAGES, GenerationConfig(max_tokens=24))):
        assert steps < 5000, "the reply never ended"
        if isinstance(event, WaitingEvent):
            engine.step()
        else:
            events.append(event)
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    notices = [e.text for e in events if isinstance(e, NoticeEvent)]
    return notices, [e for e in events if isinstance(e, RoundEvent)], finished


def test_a_renamed_draft_answers_with_ngram_drafts_and_says_so_once(engine_and_draft):
    engine, draft = engine_and_draft
    _, _, before = _answer(engine)
    draft.rename(draft.with_name("moved.gguf"))

    notices, rounds, after = _answer(engine)
    assert notices == [f"The draft file {draft.name} is gone; drafting from earlier text until you choose another."]
    assert rounds and all(r.drafter != "model" for r in rounds)
    assert after.text == before.text  # greedy: the same reply, drafted another way
    assert engine.draft_path is None
    assert _answer(engine)[0] == []  # said once, not at every reply


def test_a_replaced_draft_is_not_read_again_and_the_reply_says_why(engine_and_draft, tiny_models):
    engine, draft = engine_and_draft
    replacement = draft.with_name("new.gguf")
    shutil.copyfile(tiny_models.draft, replacement)
    os.utime(replacement, ns=(0, 1_000_000_000))  # a different file: its time is not the loaded one's
    os.replace(replacement, draft)

    notices, rounds, _ = _answer(engine)
    assert notices == [
        f"The draft file {draft.name} changed on disk; drafting from earlier text until you choose it again "
        "(or another)."
    ]
    assert rounds and all(r.drafter != "model" for r in rounds)
    engine.load_draft(draft)  # chosen again: the new file loads, and drafts
    notices, rounds, _ = _answer(engine)
    assert notices == [] and engine.draft_path == draft


def test_a_draft_gone_while_idle_is_let_go_before_the_idle_work_reads_it(engine_and_draft):
    engine, draft = engine_and_draft
    draft.unlink()
    engine.idle_step()  # measuring costs keys them by the file: it must not need the missing one
    assert engine.draft_path is None
    notices, _, _ = _answer(engine)
    assert notices and "is gone" in notices[0]


def test_a_draft_gone_before_the_last_reply_is_saved_leaves_the_target_state_saved(engine_and_draft):
    """A reply's state is saved at the first quiet moment, the draft's beside the target's, filed by the draft's
    file. When that file is gone by then, the quiet moment still saves the target's state and unloads the draft,
    without an error."""
    from app.engine.local.kv_states.saved_states import states_root
    from tests.engine.local.test_conversation_cache import _chat

    engine, draft = engine_and_draft
    for steps, event in enumerate(engine.chat(_chat("apple", 3)[:-1], GenerationConfig(max_tokens=8))):
        assert steps < 5000, "the reply never ended"
        if isinstance(event, WaitingEvent):
            engine.step()
    draft.unlink()
    while engine.idle_step():
        pass
    assert engine.draft_path is None
    assert list(states_root().glob("*/*.kv"))
