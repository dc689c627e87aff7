"""Going back to a conversation reads only its new tokens: after another chat, after another API client's turn,
and after the engine restarts (its state saved on disk). The reply is the same as without the cache."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, NoticeEvent, WaitingEvent
from app.engine.local.engine import SpecEngine
from app.engine.local.kv_states.conversation_cache import kept_line_of
from app.engine.local.kv_states.saved_states import DISK_MIN_TOKENS, forget_saved_states, states_root
from tests.perf.conversation_cache import conversation
from tests.support.engines import tiny_pair_engine


def _engine(tiny_models, n_ctx=2048, **load):
    return tiny_pair_engine(tiny_models, n_ctx, **load)


def _chat(topic: str, turns: int, words: int = 40) -> list[dict]:
    """A conversation of `turns` user turns, each `words` words long (the tiny model's replies come later)."""
    messages = [{"role": "system", "content": "You answer briefly."}]
    for turn in range(turns):
        text = " ".join(f"{topic}{(turn * words + i) % 97}" for i in range(words))
        messages.append({"role": "user", "content": text})
        messages.append({"role": "assistant", "content": f"Noted {topic} {turn}."})
    return messages


def _reply(engine, messages, session, **config):
    events = list(engine.chat(messages, GenerationConfig(max_tokens=12, session=session, **config)))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    notices = [e.text for e in events if isinstance(e, NoticeEvent)]
    return finished, notices


def _continued(messages, reply_text, line):
    return messages + [{"role": "assistant", "content": reply_text}, {"role": "user", "content": line}]


def _fresh_reply(tiny_models, messages, session):
    """The reply of an engine that has never seen the conversation, with no saved states: what a cached reply
    must equal."""
    engine = _engine(tiny_models, saved_states_mib=-1)
    try:
        return _reply(engine, messages, session)[0].text
    finally:
        engine.close()


def test_back_to_a_chat_after_another_reads_only_its_new_tokens(tiny_models):
    engine = _engine(tiny_models)
    try:
        a, b = _chat("apple", 3)[:-1], _chat("brick", 3)[:-1]
        first_a, _ = _reply(engine, a, "chat-a")
        first_b, _ = _reply(engine, b, "chat-b")
        again = _continued(a, first_a.text, "And one more thing about apples.")
        back, _ = _reply(engine, again, "chat-a")
        assert back.stats.prompt_cached >= 0.9 * back.stats.prompt_tokens, back.stats
        # and B, in turn, found its own
        again_b = _continued(b, first_b.text, "And bricks?")
        back_b, _ = _reply(engine, again_b, "chat-b")
        assert back_b.stats.prompt_cached >= 0.9 * back_b.stats.prompt_tokens, back_b.stats
        summary = engine.conversation_cache.summary()
        assert "Conversations kept in memory: " in summary
    finally:
        engine.close()
    assert back.text == _fresh_reply(tiny_models, again, "chat-a")


def test_a_long_chat_reopened_after_a_restart_comes_from_disk(tiny_models):
    long_chat = _chat("cedar", 6)[:-1]
    engine = _engine(tiny_models)
    try:
        first, _ = _reply(engine, long_chat, "chat-c")
        assert first.stats.prompt_tokens > 1000  # long enough to be saved
    finally:
        engine.close()
    again = _continued(long_chat, first.text, "Go on, please.")
    engine = _engine(tiny_models)
    try:
        reopened, notices = _reply(engine, again, "chat-c")
    finally:
        engine.close()
    assert reopened.stats.prompt_cached >= 0.9 * reopened.stats.prompt_tokens, reopened.stats
    assert not notices
    assert reopened.text == _fresh_reply(tiny_models, again, "chat-c")


def test_a_damaged_saved_state_is_ignored_with_a_note(tiny_models):
    long_chat = _chat("dune", 6)[:-1]
    engine = _engine(tiny_models)
    try:
        first, _ = _reply(engine, long_chat, "chat-d")
    finally:
        engine.close()
    saved = list(states_root().glob("*/*.kv"))  # the target's, and the draft's when it drafted
    assert saved
    for file in saved:
        data = bytearray(file.read_bytes())
        data[-100:] = bytes(100)  # the end of the KV state overwritten
        file.write_bytes(bytes(data))
    again = _continued(long_chat, first.text, "Go on.")
    engine = _engine(tiny_models)
    try:
        reply, notices = _reply(engine, again, "chat-d")
    finally:
        engine.close()
    assert any("damaged" in n for n in notices), notices
    assert reply.stats.prompt_cached < 0.1 * reply.stats.prompt_tokens  # read again, not restored from bad bytes
    assert reply.text == _fresh_reply(tiny_models, again, "chat-d")


def test_deleting_a_chat_deletes_its_saved_state(tiny_models):
    long_chat = _chat("elm", 6)[:-1]
    engine = _engine(tiny_models)
    try:
        first, _ = _reply(engine, long_chat, "chat-e")
    finally:
        engine.close()
    assert forget_saved_states("chat-e") >= 1
    engine = _engine(tiny_models)
    try:
        reply, _ = _reply(engine, _continued(long_chat, first.text, "Go on."), "chat-e")
    finally:
        engine.close()
    assert reply.stats.prompt_cached < 0.1 * reply.stats.prompt_tokens


def test_forgetting_a_conversation_in_the_engine_drops_it_from_memory(tiny_models):
    engine = _engine(tiny_models)
    try:
        a, b = _chat("fig", 3)[:-1], _chat("gum", 3)[:-1]
        first_a, _ = _reply(engine, a, "chat-f")
        _reply(engine, b, "chat-g")
        engine.forget_conversation("chat-f")
        back, _ = _reply(engine, _continued(a, first_a.text, "More?"), "chat-f")
    finally:
        engine.close()
    assert back.stats.prompt_cached < 0.1 * back.stats.prompt_tokens


@pytest.mark.slow
def test_the_memory_budget_keeps_the_most_recent_conversations(tiny_models):
    # About 1.1 MB per conversation of the tiny model here: a 2 MiB budget keeps one besides the one in use.
    engine = _engine(tiny_models, kept_states_mib=2, saved_states_mib=-1)
    try:
        chats = [(_chat(f"topic{i}x", 3)[:-1], f"chat-{i}") for i in range(6)]
        replies = [_reply(engine, messages, session)[0] for messages, session in chats]
        assert engine.conversation_cache.used_bytes() <= 2 << 20
        # Each reply's stats say what is kept and within which budget (Settings and generate --json show it).
        last = replies[-1].stats
        assert last.kept_states >= 1 and 0 < last.kept_bytes <= last.kept_budget_bytes == 2 << 20
        assert kept_line_of(last).startswith(f"Conversations kept in memory: {last.kept_states}, ")
        recent, _ = _reply(engine, _continued(chats[4][0], replies[4].text, "More?"), "chat-4")
        oldest, _ = _reply(engine, _continued(chats[0][0], replies[0].text, "More?"), "chat-0")
    finally:
        engine.close()
    assert recent.stats.prompt_cached >= 0.9 * recent.stats.prompt_tokens
    assert oldest.stats.prompt_cached < 0.1 * oldest.stats.prompt_tokens


def test_a_real_model_goes_back_to_a_chat_from_its_cache_with_the_same_reply(real_models):
    def engine_with(**load):
        engine = SpecEngine(LoadSettings(n_ctx=2048, n_threads=2, **load))
        engine.load_target(real_models["target"])
        return engine

    engine = engine_with()
    try:
        a, b = conversation("threads", turns=2), conversation("decimal arithmetic", turns=2)  # ~300 tokens each
        first_a, _ = _reply(engine, a, "chat-a")
        _reply(engine, b, "chat-b")
        again = _continued(a, first_a.text, "Which one matters most?")
        back, _ = _reply(engine, again, "chat-a")
    finally:
        engine.close()
    assert back.stats.prompt_cached >= 0.9 * back.stats.prompt_tokens, back.stats
    fresh = engine_with(saved_states_mib=-1)
    try:
        assert _reply(fresh, again, "chat-a")[0].text == back.text
    finally:
        fresh.close()


def test_an_api_client_never_finds_the_persons_conversation_in_the_cache(tiny_models):
    # Were it found, how fast a guessed prefix is answered would tell a client what the person wrote.
    engine = _engine(tiny_models)
    try:
        chat = _chat("secret", 3)[:-1]
        first, _ = _reply(engine, chat, "chat-p")
        guessed = _continued(chat, first.text, "Go on.")
        by_api, _ = _reply(engine, guessed, "api", history_book="api")
        by_person, _ = _reply(engine, _continued(chat, first.text, "Go on."), "chat-p")
    finally:
        engine.close()
    assert by_api.stats.prompt_cached < 0.1 * by_api.stats.prompt_tokens, by_api.stats
    assert by_person.stats.prompt_cached >= 0.9 * by_person.stats.prompt_tokens, by_person.stats  # still its own


def test_a_chat_going_on_from_its_last_turn_is_not_copied_out_first(tiny_models):
    """The next turn of a chat, as an agent's next request, finds its conversation in the cache but for the last
    reply's few tokens (a client renders a reply its own way): copying the whole state out before reading the new
    turn could never pay (a later request would gain those few tokens at most) and only delays the first token."""
    engine = _engine(tiny_models)
    try:
        a = _chat("apple", 3)[:-1]
        first, _ = _reply(engine, a, "chat-a")
        again = _continued(a, first.text[: len(first.text) // 2], "And one more thing about apples.")
        back, _ = _reply(engine, again, "chat-a")
    finally:
        engine.close()
    assert back.stats.prompt_cached >= 0.9 * back.stats.prompt_tokens, back.stats
    assert back.stats.kept_states == 0


@pytest.mark.parametrize("saved_states_mib", [0, -1], ids=["saved-on-disk", "no-disk"])
def test_a_branch_left_is_copied_out_only_when_no_saved_file_holds_it(tiny_models, saved_states_mib):
    """Editing the last message branches the chat. The branch left is in the file its reply's end saved, so it is
    not also copied out in memory (a copy takes 0.3-0.5 s before the first token on the 1.5B); without saved files
    it is. Either way, going back to it reads only its new tokens."""
    engine = _engine(tiny_models, saved_states_mib=saved_states_mib)
    try:
        chat = _chat("apple", 3)[:-1]
        first, _ = _reply(engine, chat, "chat-a")
        assert first.stats.prompt_tokens > DISK_MIN_TOKENS  # long enough to be saved
        edited = chat[:-1] + [{"role": "user", "content": "Something else entirely, about pears."}]
        branch, _ = _reply(engine, edited, "chat-a")
        back, _ = _reply(engine, _continued(chat, first.text, "And apples?"), "chat-a")
    finally:
        engine.close()
    assert branch.stats.kept_states == (0 if saved_states_mib == 0 else 1), branch.stats
    assert back.stats.prompt_cached >= 0.9 * back.stats.prompt_tokens, back.stats


def test_an_agents_next_turn_waits_for_no_save_and_no_copy(tiny_models):
    """Saving a reply's state takes 0.5-0.9 s on the 1.5B. It waits for a quiet moment, so it never holds back the
    reply's end; an agent's next turn, which goes on from inside the reply (rendered the client's own way), makes
    it needless and copies nothing either. The quiet moment, or closing, saves what is left for a restart."""
    engine = _engine(tiny_models)
    try:
        chat = _chat("apple", 3)[:-1]
        _reply(engine, chat, "api", history_book="api")
        assert not list(states_root().glob("*/*.kv"))  # not saved while the reply ends
        rendered = _continued(chat, "I'll read calc.py first, then fix add() in it.", "The file says: x - y.")
        turn, _ = _reply(engine, rendered, "api", history_book="api")
        assert not list(states_root().glob("*/*.kv"))  # the first reply's state was never saved
        assert turn.stats.prompt_cached >= 0.9 * turn.stats.prompt_tokens, turn.stats
        assert turn.stats.kept_states == 0  # nor copied out
        assert engine.idle_step()  # a quiet moment saves the second reply's state
        assert len(list(states_root().glob("*/*.kv"))) >= 1
    finally:
        engine.close()


def test_a_batch_that_starts_over_saves_no_state_it_no_longer_holds(tiny_models):
    """A reply decoded side by side ends, its state waiting for a quiet moment to be saved; then a failed step
    makes the batch start over, which empties the context. The state is not saved from the emptied context: a
    saved state that does not hold its tokens would change a later reply."""
    engine = _engine(tiny_models, n_parallel=2)
    try:
        events = iter(engine.chat(_chat("apple", 3)[:-1], GenerationConfig(max_tokens=12, session="chat-a")))
        finished = None
        while finished is None:
            for event in events:
                if isinstance(event, FinishedEvent):
                    finished = event
                if isinstance(event, (FinishedEvent, WaitingEvent)):
                    break
            engine.step()
        engine._batch.scheduler.reset()  # as a failed step does
        while engine.idle_step():
            pass
        assert not list(states_root().glob("*/*.kv"))
    finally:
        engine.close()
