"""Settings > Tools: the mcp.json whose servers the chats use, each server's state and tools, and which tools the
open chat offers the model. GUI thread only."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.mcp.records import ServerState
from app.ui.settings.pages import hint
from app.ui.tools.servers import ToolServers

FILE_HINT = (
    "Tool servers are listed in an mcp.json file, as Claude Desktop, Cursor and LM Studio write it: "
    '{"mcpServers": {"name": {"command": ..., "args": [...]}}} for a program, or {"url": ...} '
    "for a Streamable HTTP server. Choosing a file offers its tools to no chat: a chat (or its preset) turns them "
    "on, below or in its Chat settings. Before any call runs, the chat shows it and asks."
)


def state_words(state: ServerState) -> str:
    """A server's state in a few words: "starting…", "ready: 3 tools", or its failure's sentence."""
    if state.phase == "ready":
        n = len(state.tools)
        return f"ready: {n} tool{'' if n == 1 else 's'}"
    if state.phase == "failed":
        return state.problem or "failed"
    return "starting…" if state.phase == "starting" else "stopped"


class ToolsPage(QWidget):
    """The page. `tools_on`: whether the open chat offers tools; `tools_off`: its tools switched off (its settings);
    read back with `use_tools.isChecked()` and `tools_off()`."""

    def __init__(
        self, servers: ToolServers, tools_off: list[str], tools_on: bool = False, parent: Optional[QWidget] = None
    ):
        super().__init__(parent)
        self._servers = servers
        self._off = set(tools_off)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(hint(FILE_HINT))
        row = QHBoxLayout()
        self.path = QLineEdit(servers.path)
        self.path.setPlaceholderText("No mcp.json chosen: the model is offered no tools")
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._browse)
        use = QPushButton("Connect")
        use.setToolTip("Start the servers this file lists")
        use.clicked.connect(self._use)
        row.addWidget(self.path, 1)
        row.addWidget(browse)
        row.addWidget(use)
        layout.addLayout(row)
        self.problems = QLabel()
        self.problems.setWordWrap(True)
        self.problems.setObjectName("Muted")
        layout.addWidget(self.problems)
        self.use_tools = QCheckBox("Offer the model these tools in this chat")
        self.use_tools.setChecked(tools_on)
        layout.addWidget(self.use_tools)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Server and tools (checked: offered in this chat)", "State, or what the tool does"])
        self.tree.setMinimumHeight(200)
        self.tree.itemChanged.connect(self._on_item_changed)
        layout.addWidget(self.tree, 1)
        servers.sig_changed.connect(self._show)
        self._show()

    def tools_off(self) -> list[str]:
        return sorted(self._off)

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Choose mcp.json", self.path.text(), "JSON (*.json);;All files (*)")
        if path:
            self.path.setText(path)
            self._use()

    def _use(self) -> None:
        self._servers.use_file(self.path.text().strip())

    def _show(self) -> None:
        self.problems.setText(" ".join(self._servers.problems))
        self.problems.setVisible(bool(self._servers.problems))
        self.tree.blockSignals(True)
        self.tree.clear()
        names = {(tool.server, tool.tool): tool.name for tool in self._servers.tools()}
        for state in self._servers.states():
            server = QTreeWidgetItem([state.spec.name, state_words(state)])
            server.setToolTip(0, state.spec.describe())
            server.setToolTip(1, state_words(state))
            for tool in state.tools:
                name = names.get((state.spec.name, tool.tool), tool.name)
                item = QTreeWidgetItem([name, tool.description.split("\n")[0]])
                item.setData(0, Qt.ItemDataRole.UserRole, name)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(0, Qt.CheckState.Unchecked if name in self._off else Qt.CheckState.Checked)
                server.addChild(item)
            self.tree.addTopLevelItem(server)
            server.setExpanded(True)
        self.tree.resizeColumnToContents(0)
        self.tree.blockSignals(False)

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        name = item.data(0, Qt.ItemDataRole.UserRole)
        if column != 0 or not name:
            return
        if item.checkState(0) == Qt.CheckState.Checked:
            self._off.discard(name)
        else:
            self._off.add(name)
