"""`specchat-cli desktop install|uninstall`: add SpecChat to this user's application menu on Linux, or remove it."""

from __future__ import annotations

from app.platform import desktop_entry


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "desktop",
        help="add SpecChat to your application menu (Linux), or remove it",
        description="Write a .desktop entry and SpecChat's icons under $XDG_DATA_HOME (~/.local/share) so SpecChat "
        "appears in the application menu and starts this installation; `uninstall` removes exactly those files. "
        "Nothing system-wide, no root needed.",
    )
    desktop_entry.add_arguments(p)
    p.set_defaults(func=desktop_entry.run)
