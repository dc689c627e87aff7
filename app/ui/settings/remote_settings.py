"""Settings for models elsewhere: OpenAI-compatible servers (URL and optional API key) and llama.cpp RPC workers.

API keys never enter AppSettings: they are kept owner-only by app.engine.remote.server_keys when the dialog is accepted.
GUI thread only.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.engine.remote.http import normalize_url
from app.engine.targets import server_url_problem
from app.engine.placement.rpc import TRUSTED_NETWORK_ONLY, parse_endpoints

RPC_WARNING = (
    f"{TRUSTED_NETWORK_ONLY} The model's layers are spread over these ggml-rpc-server workers; the draft stays here."
)
NO_RPC_BACKEND = (
    'This llama.cpp build has no RPC backend: reinstall it with CMAKE_ARGS="-DGGML_RPC=ON" (docs/gpu-and-remote.md).'
)


def _hint(text: str) -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setProperty("muted", True)
    return label


class RemoteSettingsSection(QWidget):
    """The Servers and RPC workers lists of the Settings dialog."""

    def __init__(self, servers: list[str], rpc_workers: list[str], parent=None, rpc_supported: Optional[bool] = None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.problem = QLabel("")
        self.problem.setWordWrap(True)
        self.problem.setProperty("error", True)

        layout.addWidget(QLabel("<b>Servers</b>"))
        layout.addWidget(
            _hint(
                "llama-server or any OpenAI-compatible server; its models appear in the Model picker "
                "under its address. The API key, if any, is kept in a file only you can read."
            )
        )
        self.servers = QListWidget()
        self.servers.addItems(servers)
        self.servers.setMinimumHeight(72)
        self.servers.setMaximumHeight(140)
        layout.addWidget(self.servers)
        row = QHBoxLayout()
        self.server_url = QLineEdit()
        self.server_url.setPlaceholderText("http://gpu-box:8080")
        self.api_key = QLineEdit()
        self.api_key.setPlaceholderText("API key (optional)")
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        add = QPushButton("Add")
        add.clicked.connect(lambda: self.add_server(self.server_url.text(), self.api_key.text()))
        remove = QPushButton("Remove")
        remove.clicked.connect(lambda: self._remove(self.servers))
        for widget in (self.server_url, self.api_key, add, remove):
            row.addWidget(widget)
        layout.addLayout(row)

        layout.addWidget(QLabel("<b>RPC workers</b>"))
        self.rpc_warning = _hint(RPC_WARNING)
        self.set_rpc_supported(rpc_supported)
        layout.addWidget(self.rpc_warning)
        self.workers = QListWidget()
        self.workers.addItems(rpc_workers)
        self.workers.setMinimumHeight(56)
        self.workers.setMaximumHeight(120)
        layout.addWidget(self.workers)
        row = QHBoxLayout()
        self.worker_address = QLineEdit()
        self.worker_address.setPlaceholderText("192.168.1.20:50052")
        add = QPushButton("Add")
        add.clicked.connect(lambda: self.add_worker(self.worker_address.text()))
        remove = QPushButton("Remove")
        remove.clicked.connect(lambda: self._remove(self.workers))
        for widget in (self.worker_address, add, remove):
            row.addWidget(widget)
        layout.addLayout(row)
        layout.addWidget(self.problem)
        # Keys typed here, saved only when the dialog is accepted (URL -> key; "" forgets a saved one).
        self.new_keys: dict[str, str] = {}

    @staticmethod
    def _items(widget: QListWidget) -> list[str]:
        return [widget.item(i).text() for i in range(widget.count())]

    def _remove(self, widget: QListWidget) -> None:
        for item in widget.selectedItems():
            widget.takeItem(widget.row(item))

    def set_rpc_supported(self, supported: Optional[bool]) -> None:
        """Whether this llama.cpp build has the RPC backend (None: not known yet, or unknown)."""
        self.rpc_warning.setText(NO_RPC_BACKEND if supported is False else RPC_WARNING)

    def add_server(self, url: str, api_key: str = "") -> bool:
        url = url.strip()
        if not url:
            self.problem.setText("Type the server's address, e.g. http://gpu-box:8080.")
            return False
        url = normalize_url(url)
        problem = server_url_problem(url)
        if problem is not None:
            self.problem.setText(problem)
            return False
        if url not in self._items(self.servers):
            self.servers.addItem(url)
        if api_key.strip():
            self.new_keys[url] = api_key.strip()
        self.server_url.clear()
        self.api_key.clear()
        self.problem.setText("")
        return True

    def add_worker(self, address: str) -> bool:
        try:
            endpoints = parse_endpoints(address)
        except ValueError as exc:
            self.problem.setText(str(exc))
            return False
        for endpoint in endpoints:
            if endpoint not in self._items(self.workers):
                self.workers.addItem(endpoint)
        self.worker_address.clear()
        self.problem.setText("")
        return bool(endpoints)

    def server_urls(self) -> list[str]:
        return self._items(self.servers)

    def rpc_workers(self) -> list[str]:
        return self._items(self.workers)

    def save_keys(self) -> Optional[str]:
        """Keep the keys typed for servers still listed; a sentence when that failed, else None."""
        from app.engine.remote.server_keys import save_api_key

        try:
            for url, key in self.new_keys.items():
                if url in self.server_urls():
                    save_api_key(url, key)
        except OSError as exc:
            return f"Could not save the API key: {exc.strerror or exc}"
        return None
