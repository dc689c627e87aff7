"""One SpecChat window per chat database: a second launch hands over to the running one and exits.

The first instance listens on a local socket (QLocalServer) named after its user data folder, so separate
SPECCHAT_HOME folders (tests, the self-test) never meet. A later launch that reaches the socket sends "activate";
the running window comes to the front and the new process ends without touching the database.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

ACTIVATE = b"activate\n"
_READ_TIMEOUT_MS = 200


def server_name(data_folder: Path) -> str:
    """A short socket name unique to the folder and the user (the name becomes a path, which must stay short)."""
    key = f"{os.path.realpath(data_folder)}\0{os.getuid() if hasattr(os, 'getuid') else ''}"
    return "specchat-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


def ask_running_instance(name: str, timeout_ms: int = 1000) -> bool:
    """True if an instance listens on `name` and was asked to come to the front."""
    socket = QLocalSocket()
    socket.connectToServer(name)
    if not socket.waitForConnected(timeout_ms):
        return False
    socket.write(ACTIVATE)
    socket.flush()
    socket.waitForBytesWritten(timeout_ms)
    socket.disconnectFromServer()
    if socket.state() != QLocalSocket.LocalSocketState.UnconnectedState:
        socket.waitForDisconnected(timeout_ms)
    return True


class InstanceServer(QObject):
    """Listens for later launches. GUI thread only."""

    sig_activate = Signal()
    """Another launch asked for this window."""

    def __init__(self, name: str, parent: QObject | None = None):
        super().__init__(parent)
        self._server = QLocalServer(self)
        self._server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        self._server.newConnection.connect(self._accept)
        if not self._server.listen(name):
            # A socket file left by an instance that crashed: nobody answered on it, so it is safe to replace.
            QLocalServer.removeServer(name)
            self._server.listen(name)

    def is_listening(self) -> bool:
        return self._server.isListening()

    def close(self) -> None:
        self._server.close()

    def _accept(self) -> None:
        # A launch writes its one line right after connecting, so it is read here at once; no slot is connected to
        # the socket, which then cannot call back into Python while Qt destroys it.
        while self._server.hasPendingConnections():
            socket = self._server.nextPendingConnection()
            if socket.canReadLine() or socket.waitForReadyRead(_READ_TIMEOUT_MS):
                if socket.canReadLine() and socket.readLine().data() == ACTIVATE:
                    self.sig_activate.emit()
            socket.abort()
            socket.deleteLater()


def bring_to_front(window) -> None:
    """Show `window` restored and raised, as far as the window system lets a program do that."""
    if window.isMinimized():
        window.showNormal()
    window.show()
    window.raise_()
    window.activateWindow()
