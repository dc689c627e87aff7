"""The Model picker's server rows: the models each configured server offers, listed off the GUI thread.

A server that cannot be listed (down, refused key) contributes no rows and one sentence in `sig_listed`'s problems,
so the window can say why its models are missing. GUI thread only.
"""

from __future__ import annotations

from typing import Sequence

from PySide6.QtCore import QObject, Signal

from app import library
from app.ui.widgets.background import Background


def list_servers(urls: Sequence[str]) -> tuple[list, list[str]]:
    """Library entries for every model of every server, and one sentence per server that failed."""
    from app.engine.errors import EngineError
    from app.engine.remote.http import list_models, normalize_url
    from app.engine.remote.server_keys import api_key_for

    entries, problems = [], []
    for url in urls:
        try:
            base = normalize_url(url)
            models = list_models(base, api_key_for(base))
        except EngineError as exc:
            problems.append(str(exc))
            continue
        entries += library.server_entries(base, [m.id for m in models])
    return entries, problems


class ServerModelLister(QObject):
    """Lists the servers' models off the GUI thread; the latest request's answer wins."""

    sig_listed = Signal(object, object)
    """(list[ModelEntry], list[str]): the servers' models, and why some servers gave none."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._background = Background("server models", self)

    def refresh(self, urls: Sequence[str]) -> None:
        urls = list(urls)
        if not urls:
            self._background.supersede()
            self.sig_listed.emit([], [])
            return
        self._background.run(lambda: list_servers(urls), lambda listed: self.sig_listed.emit(*listed))


def attach(window) -> ServerModelLister:
    """Give `window` (MainWindow) its servers' models: listed now and whenever `refresh` is called again with the
    Settings' servers. A server model remembered as the chat's or the last target is chosen once it is listed."""
    lister = ServerModelLister(window)

    def on_listed(entries: list, problems: list) -> None:
        window.library.set_server_entries(entries)  # the window follows its library's resets (the empty page)
        if problems:
            window.show_error(" ".join(problems))
        wanted = window.chat_settings.current().target_path or window.settings.last_target
        entry = window.library.entry_for(wanted) if wanted else None
        if window.session.target is None and entry is not None and entry.source == "server":
            window.choose_target(entry.target, remember=False)

    lister.sig_listed.connect(on_listed)
    lister.refresh(window.settings.servers)
    return lister
