"""An API client cannot read the person's chats through the history drafter: a phrase the person's history holds
gets no "history" tokens and no speed-up when a client asks for it, and `serve --history own` keeps the API's
own book apart and says once, in its log, when that file is damaged."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import TokenEvent
from app.engine.speculation.history_file import history_path
from tests.serve.api_fixtures import client, running_api

ASK = "write the config file again"


def _serve_defaults(history: str) -> GenerationConfig:
    """Every reply's speculation as `serve --target T --ngram --history H` sets it."""
    from app.cli.serve_cmd import _options

    args = argparse.Namespace(
        draft_max="auto",
        max_tokens=64,
        ctx=2048,
        threads=None,
        port=0,
        queue=2,
        api_key=None,
        host="127.0.0.1",
        draft=None,
        ngram=True,
        history=history,
        fetch_image_urls=False,
        image_url_hosts=None,
    )
    return _options(args).defaults


def _persons_chat(tiny_models, session: str) -> int:
    """A reply in one of the person's chats; how many of its tokens the history drafter proposed."""
    from app.engine.local.engine import SpecEngine

    engine = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1))
    try:
        engine.load_target(tiny_models.target)
        config = GenerationConfig(max_tokens=48, drafter="history", draft_max=8, session=session)
        events = list(engine.chat([{"role": "user", "content": ASK}], config))
    finally:
        engine.close()
    return sum(isinstance(e, TokenEvent) and e.drafter == "history" for e in events)


def _ask(url: str) -> dict:
    with client() as http:
        response = http.post(
            f"{url}/v1/chat/completions",
            json={"model": "tiny-target", "messages": [{"role": "user", "content": ASK}], "max_tokens": 48},
        )
    assert response.status_code == 200, response.text
    return response.json()


def test_a_phrase_in_the_persons_history_gives_an_api_client_no_history_tokens(tiny_models):
    with running_api(tiny_models, draft=False, defaults=_serve_defaults("off")) as api:
        before = _ask(api.url)  # the person has written nothing yet
        _persons_chat(tiny_models, "chat-1")
        assert _persons_chat(tiny_models, "chat-2") > 10  # the phrase is there: the person's next chat drafts it
        after = _ask(api.url)
    assert after["choices"][0]["message"]["content"] == before["choices"][0]["message"]["content"]
    assert [t["drafter"] for t in after["specchat"]["tokens"]].count("history") == 0
    # Each kept draft token names its drafter. How many the n-gram drafter's drafts give is the Auto controller's
    # call from the machine's timings, so only the history's count is asserted.


def test_serve_with_its_own_history_drafts_only_from_api_requests(tiny_models):
    _persons_chat(tiny_models, "chat-1")
    # The history drafter at a fixed length: whether drafting pays is the Auto controller's call from the
    # machine's timings (none under load), and this test is about which book the drafts come from.
    defaults = dataclasses.replace(_serve_defaults("own"), drafter="history", draft_max=8)
    with running_api(tiny_models, draft=False, defaults=defaults) as api:
        first = _ask(api.url)
        second = _ask(api.url)
    assert [t["drafter"] for t in first["specchat"]["tokens"]].count("history") == 0
    # Its own book, the first reply: drafts kept from it.
    assert [t["drafter"] for t in second["specchat"]["tokens"]].count("history") > 0
    assert history_path("api").is_file()


@pytest.mark.slow
def test_a_damaged_api_history_is_said_once_in_the_servers_log_and_never_to_a_client(tiny_models, capfd):
    path = history_path("api")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database" * 200)
    with running_api(tiny_models, draft=False, defaults=_serve_defaults("own")) as api:
        first, second = _ask(api.url), _ask(api.url)
    notes = [line for line in capfd.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "damaged" in notes[0] and "set aside" in notes[0]
    assert first["choices"][0]["message"]["content"] and second["choices"][0]["message"]["content"]
    assert "damaged" not in str(first) + str(second)
    assert list(path.parent.glob("history-api.sqlite3.damaged-*"))
