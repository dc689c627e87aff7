"""The window's tools, wired in one place: the servers of the chosen mcp.json, the loop that runs a reply's calls,
and the Settings page. The main window makes one and hands it what it needs; nothing here reaches into the window's
other parts. GUI thread only."""

from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtCore import QObject

from app.ui.tools.servers import ToolServers
from app.ui.tools.tool_turns import ToolTurns
from app.ui.tools.tools_page import ToolsPage


class WindowTools(QObject):
    """`conversation`: the window's Conversation; `chat_settings`: its ChatSettingsBinding (the open chat's
    settings, where each chat's switched-off tools are kept); `set_busy`, `show_error`: the composer's and the
    window's."""

    def __init__(
        self,
        conversation,
        chat_settings,
        mcp_file: str,
        set_busy: Callable[[bool], None],
        show_error: Callable[[str], None],
        parent: Optional[QObject] = None,
        call_timeout_s: Optional[float] = None,
    ):
        super().__init__(parent)
        self.chat_settings = chat_settings
        self.servers = ToolServers(self, call_timeout_s=call_timeout_s)
        self.turns = ToolTurns(conversation, self.servers, conversation.view.tool_calls, self)
        self.turns.sig_busy_changed.connect(set_busy)
        self.turns.sig_error.connect(show_error)
        self.servers.use_file(mcp_file)

    def settings_page(self) -> ToolsPage:
        """A Tools page for the Settings dialog, over these servers and the open chat's switches."""
        settings = self.chat_settings.current()
        return ToolsPage(self.servers, list(settings.tools_off), settings.tools)

    def apply_page(self, page: ToolsPage) -> None:
        """The dialog was accepted: its file is used, and the open chat keeps its switches (a file turns no chat's
        tools on by itself)."""
        self.servers.use_file(page.path.text().strip())
        settings = self.chat_settings.current()
        changes: dict = {}
        if page.tools_off() != sorted(settings.tools_off):
            changes["tools_off"] = page.tools_off()
        if page.use_tools.isChecked() != settings.tools:
            changes["tools"] = page.use_tools.isChecked()
        if changes:
            self.chat_settings.update(**changes)

    def close(self) -> None:
        self.turns.stop()
        self.servers.close()
