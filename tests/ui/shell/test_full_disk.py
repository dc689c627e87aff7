"""The disk fills up while SpecChat runs (a real, small tmpfs as the data folder): the message that could not be
stored stays in the composer with one sentence, and once there is room again the next send works."""

from __future__ import annotations

import errno
import subprocess

import pytest
from PySide6.QtCore import Qt

from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("cannot mount a small disk here (needs root and tmpfs)")
    monkeypatch.setenv("SPECCHAT_HOME", str(mount))
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(folder) -> None:
    with open(folder / "filler", "wb") as filler:
        try:
            while True:
                filler.write(b"\0" * 65536)
                filler.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_a_full_disk_keeps_the_message_and_says_so(
    make_window, qtbot, fake_engine, model_folder, tiny_models, small_disk
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "first, while there is room")
    _fill(small_disk)
    question = "a long question the disk will not take " * 400
    window.composer.edit.setPlainText(question)
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.error_banner.isVisible(), timeout=10000)
    assert "full" in window.error_banner.text().lower()
    assert window.composer.text() == question  # nothing the person wrote is lost
    assert not window.conversation.is_busy()  # nothing was sent: Enter stores first, synchronously
    (small_disk / "filler").unlink()
    send_and_wait(qtbot, window, "room again")
    texts = [m.content for m in window.store.messages(window.conversation.chat_id)]
    assert texts[0] == "first, while there is room" and "room again" in texts
