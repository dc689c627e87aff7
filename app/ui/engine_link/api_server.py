"""The window's switch for the local API: it starts the API server in the window's process (app.ui.engine_link.
api_bridge, answered by the engine process), shows in the status footer whether it listens and when it is answering a request, with Stop, and opens the API
server page. GUI thread only.
"""

from __future__ import annotations

import dataclasses
from html import escape
from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QObject, QSize, Qt, Signal
from PySide6.QtGui import QTextDocumentFragment
from PySide6.QtWidgets import QDialog

from app.common.units import plural
from app.serve.key_store import save_key, saved_key
from app.store import AppSettings
from app.ui.engine_link.api_bridge import ApiSpec, ApiState, WindowApi
from app.ui.engine_link.engine_process import EngineProcess
from app.ui.engine_link.settings_answers import api_history_linked
from app.ui.settings.api_server_page import ApiServerChoice, ApiServerDialog
from app.ui.widgets.link_label import LinkLabel


# The widest a model's name is shown in the footer's API indicator.
MODEL_NAME_PX = 180


def state_text(state: ApiState, enabled: bool) -> str:
    """What the API server is doing, in words."""
    if state.error:
        return f"The API server is off: {state.error}"
    if state.serving:
        return f"Answering a request with {state.model or 'the loaded model'} for another program.{_waits(state)}"
    if state.url:
        last = f" Last request: {state.last_kept}." if state.last_kept else ""
        return f"Listening at {state.url}/v1 ({state.answered} requests answered).{last}{_waits(state)}"
    return "Starting…" if enabled else "Off."


def waiting_words(waiting: int) -> str:
    """ "1 API request waiting" ("" for none)."""
    return f"{plural(waiting, 'API request')} waiting" if waiting else ""


def _waits(state: ApiState) -> str:
    if not state.waiting:
        return ""
    return (
        f" Waiting for their turn behind the replies being written: {plural(state.waiting, 'request')}. Requests "
        "at once (Settings › API server) says how many are answered side by side."
    )


class ApiServerControl(QObject):
    """Keeps the window's API server as the settings say; it keeps listening across engine restarts."""

    sig_state_changed = Signal(object)
    """The ApiState now."""

    def __init__(
        self,
        engine_process: EngineProcess,
        settings: Callable[[], AppSettings],
        apply_settings: Callable[[AppSettings], None],
        parent=None,
    ):
        super().__init__(parent)
        self._settings = settings
        self._apply_settings = apply_settings
        self.api = WindowApi(engine_process, self)
        self.indicator: Optional[ApiServerIndicator] = None  # set by attach()
        self.api.sig_state_changed.connect(self.sig_state_changed.emit)

    @property
    def state(self) -> ApiState:
        return self.api.state

    @property
    def enabled(self) -> bool:
        return self._settings().api_server

    def choice(self) -> ApiServerChoice:
        s = self._settings()
        return ApiServerChoice(s.api_server, s.api_host, s.api_port, saved_key(), s.api_own_history)

    def state_text(self) -> str:
        """What the server is doing now, in words (for the Settings page)."""
        return state_text(self.state, self.enabled)

    def start(self) -> None:
        """Serve when the settings say so (at the window's start)."""
        if self.enabled:
            self._send()

    def set_choice(self, choice: ApiServerChoice) -> None:
        """Keep `choice` (the key in its owner-only file) and start, restart or stop the server to match it.
        Raises OSError when the key cannot be saved."""
        save_key(choice.api_key)
        self._apply_settings(
            dataclasses.replace(
                self._settings(),
                api_server=choice.enabled,
                api_host=choice.host,
                api_port=choice.port,
                api_own_history=choice.own_history,
            )
        )
        self._send()

    def stop_request(self) -> None:
        """Stop the API request being answered, at its next round (the client hears why)."""
        self.api.stop_request()

    def close(self) -> None:
        """Stop listening (the window is closing)."""
        self.api.stop()

    def _send(self) -> None:
        s = self._settings()
        if s.api_server:
            self.api.start(
                ApiSpec(host=s.api_host, port=s.api_port, api_key=saved_key(), own_history=s.api_own_history)
            )
        else:
            self.api.stop()
            self.sig_state_changed.emit(self.state)


class ApiServerIndicator(LinkLabel):
    """The status footer's word on the API: off, listening where, or answering a request (with Stop)."""

    def __init__(
        self,
        control: ApiServerControl,
        open_page: Callable[[], None],
        loaded_model: Callable[[], str] = lambda: "",
        parent=None,
    ):
        super().__init__(parent)
        self.setObjectName("StatusLine")
        self.setWordWrap(True)  # two lines on a narrow window, rather than holding it wide (sizeHint: one line)
        self._control = control
        self._loaded_model = loaded_model  # the name of the model the API answers with ("" when none is loaded)
        self.linkActivated.connect(lambda href: control.stop_request() if href == "#stop" else open_page())
        control.sig_state_changed.connect(self._show)
        self._show(control.state)

    def sizeHint(self) -> QSize:
        # One line wherever there is room: a wrapped label's own hint is narrower, and the footer would wrap it
        # (and place it) by that. Its minimum stays the wrapped one.
        plain = QTextDocumentFragment.fromHtml(self.text()).toPlainText()
        margins = self.contentsMargins()
        width = self.fontMetrics().horizontalAdvance(plain) + margins.left() + margins.right() + 2
        return QSize(width, super().sizeHint().height())

    def refresh(self) -> None:
        """The loaded model changed: say which one answers."""
        self._show(self._control.state)

    def _show(self, state: ApiState) -> None:
        model = self._loaded_model()
        # A model's file name is one long word: whole, it held the window wider than 800 pixels (issue 55, item 3).
        # The footer shows it shortened in the middle; the tooltip has it whole.
        shown = self.fontMetrics().elidedText(model, Qt.TextElideMode.ElideMiddle, MODEL_NAME_PX)
        answers = f" · answers with {escape(shown)}" if model else " · no model loaded"
        if state.serving:
            text = "API: answering a request · <a href='#stop'>Stop</a>"
        elif state.waiting:
            text = f"<a href='#page'>API: {waiting_words(state.waiting)}</a>"
        elif state.url:
            text = f"<a href='#page'>API at {escape(state.url.split('://', 1)[-1])}</a>{answers}"
        elif state.error:
            text = "<a href='#page'>API off (failed)</a>"
        else:
            text = "<a href='#page'>API server</a>" if not self._control.enabled else "API starting…"
        if state.serving and state.waiting:
            text += f" · {waiting_words(state.waiting)}"
        self.setText(text)
        answering = f"\n\nIt answers with {model}." if model else ""
        self.setToolTip(escape(state_text(state, self._control.enabled) + answering))


def attach(window) -> ApiServerControl:
    """The API switch for `window`: the control, its footer indicator, and the page it opens."""
    control = ApiServerControl(window.engine_process, lambda: window.settings, window.apply_app_settings, window)

    def open_page() -> None:
        dialog = ApiServerDialog(control.choice(), state_text(control.state, control.enabled), window)
        show = control.sig_state_changed.connect(
            lambda state: dialog.page.set_state(state_text(state, control.enabled))
        )
        try:
            with api_history_linked(dialog.page, window.engine_process):
                accepted = dialog.exec() == QDialog.DialogCode.Accepted
        finally:
            control.sig_state_changed.disconnect(show)
            dialog.deleteLater()
        if accepted:
            try:
                control.set_choice(dialog.page.choice())
            except (OSError, ValueError) as exc:
                window.show_error(f"The API server's key could not be saved: {exc}")

    def loaded_model() -> str:
        target = window.session.loaded_target()
        entry = window.library.entry_for(target)
        return (entry.name if entry else Path(target.key).stem) if target else ""

    control.indicator = ApiServerIndicator(control, open_page, loaded_model)
    window.engine_process.sig_models_loaded.connect(lambda _loaded: control.indicator.refresh())
    window.engine_process.sig_worker_died.connect(lambda _death: control.indicator.refresh())
    window.footer.add_indicator(control.indicator)
    control.start()
    return control
