"""Screenshots of MCP tools in the window, for the user guide: python tests/ui/shoot_tools.py OUT_DIR.
A chat whose replies called a tool is written straight into a fresh profile's store: one call ran (its block opened),
one waits for the person's answer; Settings > Tools shows the test tool server (tests/tool_servers) connected."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp()
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.engine.events import GenerationStats  # noqa: E402
from app.store import AppSettings, ChatSettings, ChatStore, save_settings  # noqa: E402
from app.store.tool_calls import ToolCallRecord  # noqa: E402
from app.ui.settings.dialog import AppSettingsDialog  # noqa: E402
from tests.support.mcp_files import write_mcp_file  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402


def _settle(app: QApplication, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()


def main() -> None:
    out = Path(sys.argv[1])
    mcp = write_mcp_file(Path(os.environ["SPECCHAT_HOME"]) / "mcp.json")
    store = ChatStore()
    chat = store.create_chat("My notes", settings=ChatSettings(tools=True))
    stats = GenerationStats(tokens=21, elapsed_s=0.5, tokens_per_second=42.0)
    store.add_message(chat.id, "user", "What does my note named monday say?")
    ran = store.add_message(chat.id, "assistant", "", stats=stats)
    store.set_tool_calls(
        ran.id,
        [
            ToolCallRecord(
                id="call_1",
                name="read_note",
                arguments='{"name": "monday"}',
                server="notes",
                tool="read_note",
                answer="once",
                result="Note monday: buy milk",
                seconds=0.04,
            )
        ],
    )
    store.add_message(chat.id, "assistant", "Your monday note says: **buy milk**.", stats=stats)
    store.add_message(chat.id, "user", "And add 2 and 40 for me.")
    asking = store.add_message(chat.id, "assistant", "", stats=stats)
    store.set_tool_calls(
        asking.id, [ToolCallRecord(id="call_2", name="add", arguments='{"a": 2, "b": 40}', server="notes", tool="add")]
    )
    save_settings(AppSettings(scan_hf_cache=False, last_chat_id=chat.id, threads=1, mcp_file=str(mcp)))
    app = QApplication([])
    window = MainWindow(store=store, scan_on_start=False)
    window.resize(900, 980)
    window.show()
    blocks = window.chat_view.tool_calls
    blocks.asking.add((asking.id, 0))
    blocks.handle(blocks._links.parse(window.chat_view.action_href("toolcall", f"{ran.id}.0")))
    end = time.monotonic() + 30
    while not window.tools.servers.tools() and time.monotonic() < end:
        app.processEvents()
    for theme in ("light", "dark"):
        window.appearance.set_choice(theme)
        window.conversation.reload()
        _settle(app, 1)
        window.chat_view.grab().save(str(out / f"tools-prompt-{theme}.png"))
        dialog = AppSettingsDialog(window.settings, window, api_state="Off", tools_page=window.tools.settings_page())
        dialog.resize(760, 480)
        dialog.pages.show_page("Tools")
        dialog.show()
        _settle(app, 0.5)
        dialog.grab().save(str(out / f"tools-page-{theme}.png"))
        dialog.close()
    window.shutdown()


if __name__ == "__main__":
    main()
