"""Replies about pictures: greedy output equals llama.cpp's llama-mtmd-cli for the same files, picture and prompt,
plain and with speculation (n-gram lookup, a draft model that cannot see); the next turn reuses the cache, and a
different picture never does."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig
from app.engine.errors import PromptFormatError
from app.engine.events import FinishedEvent
from app.engine.image_files import ImageInput
from app.engine.local.engine import SpecEngine
from tests.vision.mtmd_reference import MARKER, mtmd_cli_reply, reply_matches

QUESTION = "What is in this picture?"
N = 32
CONFIGS = {
    "plain": GenerationConfig(max_tokens=N, speculative=False),
    "ngram": GenerationConfig(max_tokens=N, drafter="ngram", draft_max=4),
    "draft": GenerationConfig(max_tokens=N, drafter="model", draft_max=4),
}


@pytest.fixture(scope="module")
def engine(vision_models):
    engine = SpecEngine()
    engine.load_target(vision_models.target)
    engine.load_projector(vision_models.mmproj)
    engine.load_draft(vision_models.draft)
    yield engine
    engine.close()


def ask(picture, text: str = QUESTION) -> list[dict]:
    image = ImageInput(picture.read_bytes(), picture.name)
    return [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": text}]}]


def finished(events) -> FinishedEvent:
    return next(e for e in events if isinstance(e, FinishedEvent))


@pytest.mark.parametrize("mode", sorted(CONFIGS))
def test_greedy_reply_about_each_picture_equals_llama_mtmd_cli(engine, vision_models, pictures, mode):
    drafted = 0
    for picture in pictures:
        expected = mtmd_cli_reply(vision_models.target, vision_models.mmproj, [picture], MARKER + QUESTION, N)
        done = finished(engine.chat(ask(picture), CONFIGS[mode]))
        assert reply_matches(done.text, expected), (mode, picture.name, done.text, expected)
        drafted += done.stats.drafted
    if mode != "plain":
        assert drafted > 0  # drafted from the text around the pictures, and verified


def test_the_next_turn_reads_only_its_new_tokens(engine, pictures):
    first = ask(pictures[0])
    reply = finished(engine.chat(first, CONFIGS["plain"]))
    second = first + [{"role": "assistant", "content": reply.text}, {"role": "user", "content": "And the colours?"}]
    again = finished(engine.chat(second, CONFIGS["plain"]))
    new_text = engine.count_tokens(second) - reply.stats.prompt_tokens - reply.stats.tokens
    assert again.stats.prompt_tokens - again.stats.prompt_cached <= new_text + 1  # the reply is not read again


def test_another_picture_never_reuses_the_cache_of_this_one(engine, vision_models, pictures):
    finished(engine.chat(ask(pictures[0]), CONFIGS["plain"]))
    other = finished(engine.chat(ask(pictures[1]), CONFIGS["plain"]))
    assert other.stats.prompt_cached < 8  # only the chat template's opening is shared
    expected = mtmd_cli_reply(vision_models.target, vision_models.mmproj, [pictures[1]], MARKER + QUESTION, N)
    assert reply_matches(other.text, expected)


def test_the_projector_beside_the_model_is_loaded_at_the_first_picture(vision_models, pictures):
    engine = SpecEngine()
    try:
        engine.load_target(vision_models.target)  # mmproj-tiny-vision.gguf lies beside it
        assert engine.projector_path is None  # not loaded for a model that is never shown a picture
        done = finished(engine.chat(ask(pictures[0]), CONFIGS["plain"]))
        assert engine.projector_path == vision_models.mmproj
        assert reply_matches(
            done.text, mtmd_cli_reply(vision_models.target, vision_models.mmproj, [pictures[0]], MARKER + QUESTION, N)
        )
    finally:
        engine.close()


def test_a_model_that_cannot_see_says_so(tiny_models, pictures):
    engine = SpecEngine()
    try:
        engine.load_target(tiny_models.target)
        with pytest.raises(PromptFormatError, match="cannot see pictures"):
            list(engine.chat(ask(pictures[0]), CONFIGS["plain"]))
    finally:
        engine.close()


@pytest.mark.parametrize(
    "name, data, says",
    [
        ("cut.png", None, "damaged or cut-short"),
        ("notes.txt", b"just some words, not a picture at all", "not a picture"),
        ("drawing.svg", b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>', "SVG drawing"),
        (
            "huge.png",
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (20000).to_bytes(4, "big") * 2 + b"\x08\x02\x00\x00\x00",
            "20000 x 20000 pixels",
        ),
    ],
)
def test_bad_pictures_each_get_a_sentence(engine, pictures, name, data, says):
    if data is None:
        data = pictures[0].read_bytes()[:120]
    message = [
        {
            "role": "user",
            "content": [{"type": "image", "image": ImageInput(data, name)}, {"type": "text", "text": QUESTION}],
        }
    ]
    with pytest.raises(PromptFormatError, match=says) as raised:
        list(engine.chat(message, CONFIGS["plain"]))
    assert name in str(raised.value) and str(raised.value).count(". ") == 0


def _side_by_side(engine: SpecEngine, asks: list[tuple[list[dict], GenerationConfig]]) -> list[FinishedEvent]:
    """Each request's FinishedEvent, their replies read until each waits, then one step, as the engine process does."""
    from app.engine.events import WaitingEvent

    live = {i: iter(engine.chat(messages, config, request_id=i + 1)) for i, (messages, config) in enumerate(asks)}
    done: dict[int, FinishedEvent] = {}
    for _ in range(5000):
        if not live:
            break
        for i, events in list(live.items()):
            for event in events:
                if isinstance(event, WaitingEvent):
                    break
                if isinstance(event, FinishedEvent):
                    done[i] = event
            else:
                del live[i]
        engine.step()
    return [done[i] for i in range(len(asks))]


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(CONFIGS))
def test_pictures_are_answered_side_by_side_with_other_requests(engine, vision_models, pictures, mode):
    """With Requests at once above 1 a picture is read into its request's sequence of the batch: each reply, the
    picture's and a text request's beside it, is the one it gets alone, and a second turn reads only its new tokens."""
    from app.engine.config import LoadSettings

    batched = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1, n_parallel=3))
    try:
        batched.load_target(vision_models.target)
        batched.load_projector(vision_models.mmproj)
        batched.load_draft(vision_models.draft)
        config = CONFIGS[mode]
        text = [{"role": "user", "content": "Tell me about the weather in the mountains."}]
        asks = [(ask(pictures[0]), config), (text, config), (ask(pictures[1], "And this one?"), config)]
        alone = [finished(engine.chat(messages, c)) for messages, c in asks]
        together = _side_by_side(batched, asks)
        for a, b in zip(alone, together):
            assert reply_matches(b.text, a.text), (mode, a.text, b.text)
        first = asks[0][0]
        second = first + [{"role": "assistant", "content": together[0].text}, {"role": "user", "content": "Colours?"}]
        again = _side_by_side(batched, [(second, config)])[0]
        new_text = batched.count_tokens(second) - together[0].stats.prompt_tokens - together[0].stats.tokens
        assert again.stats.prompt_tokens - again.stats.prompt_cached <= new_text + 1
    finally:
        batched.close()


def test_a_batch_reads_one_picture_a_step_so_other_replies_go_on_between(engine, vision_models, pictures, monkeypatch):
    """Decoding a picture's embeddings costs a step what a prompt chunk does: a message of three pictures is read
    over three steps, the text request beside it gets tokens between them, and both replies are the ones they get
    alone."""
    from app.engine.config import LoadSettings
    from app.engine.events import TokenEvent, WaitingEvent
    from app.engine.local.vision.projector import Projector

    steps = 0
    read_at: list[int] = []
    original = Projector.decode_into
    monkeypatch.setattr(Projector, "decode_into", lambda self, *args: (read_at.append(steps), original(self, *args))[1])
    images = [{"type": "image", "image": ImageInput(p.read_bytes(), p.name)} for p in pictures]
    three = [{"role": "user", "content": [*images, {"type": "text", "text": QUESTION}]}]
    text = [{"role": "user", "content": "Tell me about the weather in the mountains."}]
    batched = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1, n_parallel=2))
    try:
        batched.load_target(vision_models.target)
        batched.load_projector(vision_models.mmproj)
        config = CONFIGS["plain"]
        texts: list[list[str]] = [[], []]
        tokens_at: list[int] = []
        live = {0: iter(batched.chat(text, config, request_id=1))}
        for _ in range(3):  # the text reply is under way before the pictures come
            for event in live[0]:
                if isinstance(event, WaitingEvent):
                    break
            batched.step()
            steps += 1
        live[1] = iter(batched.chat(three, config, request_id=2))
        for _ in range(5000):
            if not live:
                break
            for i, events in list(live.items()):
                for event in events:
                    if isinstance(event, WaitingEvent):
                        break
                    if isinstance(event, TokenEvent):
                        texts[i].append(event.text)
                        tokens_at += [steps] if i == 0 else []
                else:
                    del live[i]
            batched.step()
            steps += 1
    finally:
        batched.close()
    assert len(read_at) == 3 and len(set(read_at)) == 3, read_at
    assert any(read_at[0] < step <= read_at[-1] for step in tokens_at), (read_at, tokens_at)
    assert reply_matches("".join(texts[1]), finished(engine.chat(three, config)).text)


def test_a_picture_being_encoded_holds_no_other_request(engine, vision_models, pictures, monkeypatch):
    """A picture's encoding (seconds on a CPU with a real projector) runs beside the batch's steps: held until the
    text request beside it has written tokens, it is released by them, not by its deadline; and both replies are
    the ones they get alone."""
    import threading

    from app.engine.config import LoadSettings
    from app.engine.events import TokenEvent, WaitingEvent
    from app.engine.local.vision.projector import Projector

    written = threading.Event()
    released: list[bool] = []
    original = Projector._encode

    def held_encode(self, picture):
        released.append(written.wait(timeout=60))
        return original(self, picture)

    monkeypatch.setattr(Projector, "_encode", held_encode)
    config = CONFIGS["plain"]
    text = [{"role": "user", "content": "Tell me about the weather in the mountains."}]
    batched = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1, n_parallel=2))
    try:
        batched.load_target(vision_models.target)
        batched.load_projector(vision_models.mmproj)
        live = {
            0: iter(batched.chat(ask(pictures[0]), config, request_id=1)),
            1: iter(batched.chat(text, config, request_id=2)),
        }
        texts: list[list[str]] = [[], []]
        for _ in range(5000):
            if not live:
                break
            for i, events in list(live.items()):
                for event in events:
                    if isinstance(event, WaitingEvent):
                        break
                    if isinstance(event, TokenEvent):
                        texts[i].append(event.text)
                        if i == 1 and len(texts[1]) >= 4:
                            written.set()
                else:
                    del live[i]
            batched.step()
    finally:
        written.set()
        batched.close()
    assert released == [True]
    assert reply_matches("".join(texts[0]), finished(engine.chat(ask(pictures[0]), config)).text)
    assert reply_matches("".join(texts[1]), finished(engine.chat(text, config)).text)
