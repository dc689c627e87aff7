"""Quitting after copying from the transcript ends the process normally.

The clipboard keeps the copied data until the process exits, after Python has shut down: if that data were an
object made in Python, deleting it then crashed the exit (a segfault after every test had passed).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import os
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication
    from app.ui.transcript.chat_view import ChatView
    from app.store.provenance import TokenRecord
    from app.ui.transcript.format import TranscriptMessage

    app = QApplication([])
    view = ChatView()
    view.show_messages([TranscriptMessage(1, "assistant", "Copied **text**", tokens=[TokenRecord("Copied **text**")])])
    view.selectAll()
    view.copy()
    assert "Copied" in QApplication.clipboard().text()
    print("copied", flush=True)
""")


def test_the_process_exits_cleanly_after_a_copy(tmp_path):
    child = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SPECCHAT_HOME": str(tmp_path)},
    )
    assert child.stdout.strip() == "copied", child.stderr
    assert child.returncode == 0, f"exit {child.returncode}: {child.stderr[-400:]}"
