"""Start the real window, stream one reply with a real model pair, and save a screenshot.

    python -m app.ui.devtools.screenshot [--out docs/screenshot.png] [--models DIR] [--prompt TEXT]
    python -m app.ui.devtools.screenshot --server http://127.0.0.1:8080 --out docs/screenshot-llama-server.png \
        --settings-out docs/settings-devices-servers.png
    python -m app.ui.devtools.screenshot --code-edit --out docs/screenshot-code-edit.png --inspector-out docs/inspector.png
    python -m app.ui.devtools.screenshot --theme dark --out docs/screenshot-dark.png --inspector-out docs/inspector-dark.png
    python -m app.ui.devtools.screenshot --code-edit --draft-max 4 --size 1366x768 --out docs/screenshots/main-window-light.png \
        --also 1366x768:dark:docs/screenshots/main-window-dark.png --also 800x600:light:docs/screenshots/small-window-light.png
    python -m app.ui.devtools.screenshot --attach app/common/units.py --prompt "Add type hints..." \
        --before-out docs/attachments-composer.png --out docs/attachments.png

Uses the Qwen2.5-Coder 1.5B + 0.5B pair from $SPECCHAT_TEST_MODELS or ~/.cache/specchat-test-models
(shared/models/fetch-models.sh) when present, else the synthetic models. Runs in a private SpecChat home, so the
user's chats and settings are never touched. Works offscreen (the default here) or under Xvfb.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import cast

from app.engine.events import GenerationStats
from app.engine.targets import LocalModel, ServerModel, Target

REAL_TARGET = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
REAL_DRAFT = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
DEFAULT_PROMPT = "Write a Python function that checks whether a string is a palindrome, ignoring case and spaces."
# Editing code the user pasted: the reply copies most of it, which n-gram lookup drafts (the inspector screenshot).
CODE_EDIT_PROMPT = (
    "Rename the parameter `values` to `samples` in both functions, and add a one-line docstring to each. Reply with "
    "the whole edited code only.\n\n```python\ndef mean(values):\n    total = 0\n    for v in values:\n"
    "        total = total + v\n    return total / len(values)\n\n\ndef variance(values):\n    m = mean(values)\n"
    "    total = 0\n    for v in values:\n        total = total + (v - m) ** 2\n    return total / len(values)\n```"
)


def real_models_dir() -> Path:
    return Path(os.environ.get("SPECCHAT_TEST_MODELS") or Path.home() / ".cache" / "specchat-test-models")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="docs/screenshot.png", help="where to save the PNG")
    parser.add_argument("--models", type=Path, default=None, help="folder with the real model pair")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT)
    parser.add_argument("--code-edit", action="store_true", help="send a code-editing request instead of --prompt")
    parser.add_argument("--max-tokens", type=int, default=320)
    parser.add_argument("--size", default="1280x820", help="window size, WIDTHxHEIGHT")
    parser.add_argument(
        "--draft-max", type=int, default=None, help="fix the draft length (default: the controller chooses each round)"
    )
    parser.add_argument(
        "--server",
        metavar="URL",
        default=None,
        help="chat with this server's first model instead (e.g. llama-server with -md DRAFT)",
    )
    parser.add_argument("--settings-out", default=None, help="also save the Settings dialog to this PNG")
    parser.add_argument("--settings-page", default="Servers and RPC", help="the Settings page to save")
    parser.add_argument("--inspector-out", default=None, help="also save the reply's inspector to this PNG")
    parser.add_argument("--theme", choices=("light", "dark"), default="light", help="the appearance to show")
    parser.add_argument(
        "--attach", metavar="FILE", action="append", default=[], help="attach this file to the message (repeatable)"
    )
    parser.add_argument(
        "--before-out",
        default=None,
        help="also save the window before sending, with the attachments waiting in the composer",
    )
    parser.add_argument(
        "--show-refused", action="store_true", help="show refused draft proposals inline (struck-through ghost text)"
    )
    parser.add_argument(
        "--also",
        metavar="WIDTHxHEIGHT:THEME:PNG",
        action="append",
        default=[],
        type=_also,
        help="after the reply, also save the window at this size and theme (repeatable; one model "
        "load and one reply for every picture)",
    )
    args = parser.parse_args(argv)

    os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp(prefix="specchat-screenshot-")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

    from app.ui.shell.qt_check import pyside_problem

    if pyside_problem():
        print(pyside_problem(), file=sys.stderr)
        return 1

    from PySide6.QtWidgets import QApplication

    from app.store import AppSettings, save_settings
    from app.ui.widgets import automation
    from app.ui.devtools.bench_modes import StallProbe
    from app.ui.models.library_model import NGRAM_KEY
    from app.ui.shell.main_window import MainWindow
    from app.ui.widgets.style import apply_style

    models = args.models or real_models_dir()
    target, draft = models / REAL_TARGET, models / REAL_DRAFT
    if not (target.is_file() and draft.is_file()):
        from app.testing.synthetic import make_model_set

        print(f"real models not in {models}; using the synthetic models", file=sys.stderr)
        synthetic = make_model_set(Path(tempfile.mkdtemp(prefix="specchat-synthetic-")))
        models, target, draft = synthetic.target.parent, synthetic.target, synthetic.draft_identical

    servers = [args.server] if args.server else []
    save_settings(
        AppSettings(
            model_folders=[str(models)], scan_hf_cache=False, context_size=4096, servers=servers, theme=args.theme
        )
    )
    app = cast(QApplication, QApplication.instance()) or QApplication(sys.argv[:1])
    app.setApplicationName("SpecChat")
    apply_style(app)
    window = MainWindow()
    width, height = _size(args.size)
    window.resize(width, height)
    window.show()
    stalls = StallProbe()
    stalls.start()
    try:
        chosen: Target = LocalModel(target)
        draft_key = str(draft)
        if args.server:
            chosen, draft_key = _server_model(window, args.server), NGRAM_KEY  # the server's own speculation
        automation.choose_pair(window, chosen, draft_key)
        if args.settings_out:
            _save_settings_dialog(window, args.settings_out, args.settings_page)
        window.update_chat_settings(max_tokens=args.max_tokens, draft_max=args.draft_max)
        window.set_show_refused(args.show_refused)
        if args.attach:
            window.composer.add_files([str(Path(path).resolve()) for path in args.attach])
        if args.before_out:
            window.composer.set_text(CODE_EDIT_PROMPT if args.code_edit else args.prompt)
            _save(window, args.before_out)
        message_id = automation.send_and_wait(window, CODE_EDIT_PROMPT if args.code_edit else args.prompt)
        message = window.store.get_message(message_id)
        if message is None:
            raise RuntimeError("the reply was not stored")
        stats = message.stats or GenerationStats()
        print(
            f"reply: {stats.tokens} tokens, {stats.tokens_per_second:.1f} tok/s, "
            f"{100 * stats.acceptance_rate:.0f}% accepted"
        )
        print(f"longest event-loop stall while loading and streaming: {stalls.longest_ms:.0f} ms")
        window.chat_view.scroll_to_end()
        app.processEvents()
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        if not window.grab().save(str(out)):
            print(f"could not write {out}", file=sys.stderr)
            return 1
        print(f"saved {out}")
        if args.inspector_out:
            _save_inspector(window, message_id, args.inspector_out)
        for (also_width, also_height), theme, also_out in args.also:
            _save_resized(window, also_width, also_height, theme, also_out)
        return 0
    finally:
        window.close()


def _size(text: str) -> tuple[int, int]:
    width, _, height = text.lower().partition("x")
    return int(width), int(height)


def _also(text: str) -> tuple[tuple[int, int], str, str]:
    """ "800x600:dark:out.png" as ((800, 600), "dark", "out.png")."""
    try:
        size, theme, out = text.split(":", 2)
        if theme in ("light", "dark") and out:
            return _size(size), theme, out
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT:light|dark:PNG, e.g. 800x600:dark:small.png")


def _save_resized(window, width: int, height: int, theme: str, out: str) -> None:
    """The window at another size and theme, the same reply shown; says so when the window could not be that small."""
    from PySide6.QtTest import QTest

    window.appearance.set_choice(theme)
    window.resize(width, height)
    QTest.qWait(300)  # the layout settles and the transcript is drawn again in the new colours
    window.chat_view.scroll_to_end()
    QTest.qWait(100)
    shown = window.size()
    if (shown.width(), shown.height()) != (width, height):
        print(f"asked for {width}x{height}, the window is {shown.width()}x{shown.height()}", file=sys.stderr)
    _save(window, out)


def _server_model(window, url: str) -> ServerModel:
    """The first model the server lists, once it is in the Model picker."""
    from app.engine.remote.http import list_models
    from app.ui.widgets import automation

    target = ServerModel.at(url, list_models(url)[0].id)
    automation.wait_until(lambda: window.library.entry_for(target) is not None, 30, "the server's models", window)
    return target


def _save(widget, out: str) -> None:
    from PySide6.QtWidgets import QApplication

    QApplication.processEvents()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    widget.grab().save(out)
    print(f"saved {out}")


def _save_settings_dialog(window, out: str, page: str) -> None:
    from PySide6.QtWidgets import QApplication

    from app.ui.engine_link.settings_answers import settings_linked
    from app.ui.settings.dialog import LISTING_DEVICES, AppSettingsDialog
    from app.ui.widgets import automation

    dialog = AppSettingsDialog(window.settings, window)
    dialog.pages.show_page(page)
    dialog.show()
    with settings_linked(dialog, window.engine_process):  # the devices, as the engine process lists them
        automation.wait_until(lambda: dialog.devices.text() != LISTING_DEVICES, 60, "the devices", window)
    QApplication.processEvents()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    dialog.grab().save(out)
    dialog.close()
    print(f"saved {out}")


def _save_inspector(window, message_id: int, out: str) -> None:
    from PySide6.QtWidgets import QApplication

    window.inspector.open_message(message_id)
    dialog = window.inspector.dialog
    QApplication.processEvents()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    dialog.grab().save(out)
    dialog.close()
    print(f"saved {out}")


if __name__ == "__main__":
    raise SystemExit(main())
