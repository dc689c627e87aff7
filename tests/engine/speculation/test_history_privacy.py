"""The history of the person's chats stays theirs: API requests neither draft from it nor add to it (by default
they keep no history; with their own history book, only theirs), and a damaged, read-only or full history file
turns history off, or starts it afresh, with one notice and no failed reply."""

from __future__ import annotations

import argparse
import sqlite3
import subprocess
from pathlib import Path

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import NoticeEvent, TokenEvent
from app.engine.speculation.history_file import HistoryFile, api_history_size, clear_api_history, history_path
from tests.support.processes import run_cli

ASK = [{"role": "user", "content": "write the config file again"}]


def _engine(tiny_models):
    from app.engine.local.engine import SpecEngine

    engine = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1))
    engine.load_target(tiny_models.target)
    return engine


def _reply(engine, **config):
    events = list(engine.chat(ASK, GenerationConfig(max_tokens=48, drafter="history", draft_max=8, **config)))
    history = [e for e in events if isinstance(e, TokenEvent) and e.drafter == "history"]
    notices = [e.text for e in events if isinstance(e, NoticeEvent)]
    return events[-1].text, history, notices


def test_an_api_request_never_drafts_from_the_persons_chats(tiny_models):
    engine = _engine(tiny_models)
    try:
        _reply(engine, session="chat-1")  # the person's chat wrote the reply once
        _, persons, _ = _reply(engine, session="chat-2")
        assert len(persons) > 10  # the person's next chat drafts from it: what a client must never see
        _, api_own, _ = _reply(engine, session="api", history_book="api")
        assert api_own == []  # API clients' own book holds nothing of the person's
        _, api_again, _ = _reply(engine, session="api", history_book="api")
        assert len(api_again) > 10  # ...only what API requests left in it
        assert api_history_size() > 0
        clear_api_history()
        _, cleared, _ = _reply(engine, session="api", history_book="api")
        assert cleared == []
    finally:
        engine.close()
    # The person's own file never got the API's text: one text per chat reply, none for "api".
    with sqlite3.connect(history_path()) as conn:
        sessions = {row[0] for row in conn.execute("SELECT session FROM texts")}
    assert sessions == {"chat-1", "chat-2"}


def test_serve_keeps_no_history_unless_asked_and_then_its_own():
    from app.cli.serve_cmd import _options

    def options(history: str):
        return _options(
            argparse.Namespace(
                draft_max="auto",
                max_tokens=64,
                ctx=2048,
                threads=None,
                port=0,
                queue=2,
                api_key=None,
                host="127.0.0.1",
                draft="d.gguf",
                ngram=False,
                history=history,
                fetch_image_urls=False,
                image_url_hosts=None,
            )
        ).defaults

    assert options("off").history is False
    own = options("own")
    assert own.history is True and own.history_book == "api"


def _damaged(path: Path) -> None:
    HistoryFile(path).add("chat-1", "some earlier reply " * 50)
    data = bytearray(path.read_bytes())
    data[:100] = b"\x00" * 100  # the header: no longer a database
    path.write_bytes(bytes(data))
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def test_a_damaged_history_is_set_aside_once_and_the_reply_goes_on(tiny_models):
    _damaged(history_path())
    engine = _engine(tiny_models)
    try:
        text, _, notices = _reply(engine, session="chat-1")
        assert text  # the reply itself is whole
        assert len(notices) == 1 and "damaged" in notices[0] and "set aside" in notices[0]
        _, _, later = _reply(engine, session="chat-2")
        assert later == []  # said once
        _, from_history, _ = _reply(engine, session="chat-3")
        assert from_history  # a new history started and works
    finally:
        engine.close()
    assert list(history_path().parent.glob("history.sqlite3.damaged-*"))


def test_a_damaged_history_never_breaks_generate(tiny_models):
    _damaged(history_path())
    done = run_cli(
        "generate",
        "--target",
        str(tiny_models.target),
        "--chat",
        "hello",
        "--max-tokens",
        "8",
        "--threads",
        "1",
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "was damaged" in notes[0] and "internal error" not in done.stderr


def test_a_full_disk_turns_history_off_with_one_notice(tiny_models, tmp_path, monkeypatch):
    import pytest

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a small disk here (needs root and tmpfs)")
    try:
        monkeypatch.setenv("SPECCHAT_HOME", str(disk))
        engine = _engine(tiny_models)
        try:
            _reply(engine, session="chat-1")
            with open(disk / "filler", "wb") as filler:
                try:
                    while True:
                        filler.write(b"\0" * 65536)
                        filler.flush()
                except OSError:
                    pass
            engine.history_file.add("chat-1", "a long reply the full disk cannot take " * 2000)
            text, _, notices = _reply(engine, session="chat-2")
            _, _, later = _reply(engine, session="chat-3")
        finally:
            engine.close()
        assert text and len(notices) == 1 and "history is off" in notices[0] and later == []
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_the_cap_counts_bytes_so_cjk_text_cannot_take_it_past_its_size(tmp_path):
    file = HistoryFile(tmp_path / "h.sqlite3", max_bytes=1000)
    first = file.add("chat-1", "漢" * 200)  # 200 characters, 600 bytes
    second = file.add("chat-1", "字" * 200)
    assert file.ids() == {second: 600} and first not in file.ids()


def test_a_history_from_before_sizes_were_kept_is_read_with_its_sizes(tmp_path):
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE texts (id INTEGER PRIMARY KEY AUTOINCREMENT, session TEXT NOT NULL, "
            "text TEXT NOT NULL, used REAL NOT NULL)"
        )
        conn.execute("CREATE TABLE changes (n INTEGER NOT NULL)")
        conn.execute("INSERT INTO changes VALUES (3)")
        conn.execute("INSERT INTO texts (session, text, used) VALUES ('chat-1', ?, 1.0)", ("é" * 10,))
    file = HistoryFile(path, max_bytes=25)
    assert list(file.ids().values()) == [20]
    file.add("chat-2", "x" * 10)
    assert sorted(file.ids().values()) == [10]  # 30 bytes: over the cap, so the oldest went
    file.add("chat-3", "y")
    assert sorted(file.ids().values()) == [1, 10]
