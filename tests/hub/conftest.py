"""Fixtures for the hub tests: a fake Hub on 127.0.0.1, and a guard that fails any connection off this machine."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from fake_hf_server import GOOD_TOKEN, FakeHub


def _is_loopback(host) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """Every hub test may talk to 127.0.0.1 only: a connection or DNS lookup elsewhere fails the test."""
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
            raise AssertionError(f"test tried to reach {address!r}; hub tests must stay on 127.0.0.1")
        return real_connect(sock, address)

    def getaddrinfo(host, *args, **kwargs):
        if not _is_loopback(host):
            raise AssertionError(f"test tried to resolve {host!r}; hub tests must stay on 127.0.0.1")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def _reset_hf_session() -> None:
    """Drop huggingface_hub's pooled connections, so no test reuses a socket to another test's server."""
    from huggingface_hub import close_session

    close_session()
    from app.hub import environment

    environment.forget_reachability()


@pytest.fixture
def online(monkeypatch):
    """Undo the suite-wide HF_HUB_OFFLINE=1 (huggingface_hub read it once at import, so patch its copy too)."""
    import huggingface_hub.constants as hf_constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    _reset_hf_session()
    yield
    _reset_hf_session()


@pytest.fixture
def fake_hub(online, monkeypatch):
    """A running fake Hub with HF_ENDPOINT pointing at it. Add repos with `fake_hub.add_repo(...)`."""
    hub = FakeHub(valid_tokens=(GOOD_TOKEN,))
    hub.start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    yield hub
    _reset_hf_session()
    hub.stop()


@pytest.fixture
def make_panel(qtbot):
    """Get models panels as a test makes them; each one's background work must be done when the test ends."""
    from app.ui.get_models.panel import GetModelsPanel

    panels: list[GetModelsPanel] = []

    def make(**kwargs) -> GetModelsPanel:
        panel = GetModelsPanel(**kwargs)
        qtbot.addWidget(panel)
        panel.show()
        panels.append(panel)
        return panel

    yield make
    for panel in panels:  # no worker may outlive its test
        assert panel.shutdown(), "background work still running"
