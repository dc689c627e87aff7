"""The app's colours as one table keyed by theme: Light and Dark. Plain data; style.py turns it into Qt's palette
and style sheet, and every widget, the transcript, the code colours and the inspector's charts read it there.

A new colour is one line in each theme. Highlights are keyed by drafter ("draft", "ngram"), so a new drafter's
colour is one entry per theme too. tests/ui/widgets/test_themes.py checks that text keeps its contrast (WCAG AA, 4.5:1) on
every highlight over the transcript's and the code blocks' backgrounds in both themes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.store.settings import THEME_CHOICES

RGBA = tuple[int, int, int, int]

# What the user can choose in Settings > Appearance (THEME_CHOICES); "system" follows the OS colour scheme.
THEME_LABELS: Mapping[str, str] = {choice: choice.capitalize() for choice in THEME_CHOICES}


@dataclass(frozen=True)
class Theme:
    """One appearance. Colours are "#rrggbb"; highlights are RGBA, translucent so they sit on any background."""

    name: str
    is_dark: bool
    surface: str  # windows, dialogs, the transcript
    sidebar: str
    text: str
    text_muted: str
    text_disabled: str
    border: str
    control_border: str  # the box of a check box: darker than `border`, so it shows on the surface (3:1)
    hover: str
    selected: str
    accent: str  # links, keyboard focus rings, the gauge
    accent_soft: str  # text selection, the chosen row
    primary: str  # the Send button
    primary_hover: str
    primary_disabled: str
    on_primary: str  # text on the Send and Stop buttons
    on_primary_disabled: str  # text on Send while there is nothing to send: dimmer, so it reads as off
    stop: str  # the Stop button
    user_bubble: str
    code_background: str
    inline_code_background: str
    error: str
    error_soft: str
    error_border: str
    warning_soft: str
    warning_border: str
    warning_text: str
    tooltip_background: str
    tooltip_text: str
    gauge_track: str
    gauge_full: str
    scrollbar: str
    switch_off: str
    switch_knob: str
    state_ready: str  # the model bar's load-state dot
    state_busy: str
    state_failed: str
    chart_plain: str  # the inspector's bars for rounds without a draft
    chart_any: str  # ... and for drafted tokens whose drafter was not recorded
    ghost_text: RGBA  # refused proposals shown inline
    code_style: str  # the Pygments style of code blocks (foreground colours only)
    # Kept draft tokens, by who drafted them: Okabe-Ito sky blue for the draft model and orange for n-gram copies,
    # a pair that stays apart under every common colour-vision deficiency.
    highlights: Mapping[str, RGBA] = field(default_factory=dict)


LIGHT = Theme(
    name="light",
    is_dark=False,
    surface="#ffffff",
    sidebar="#f7f7f8",
    text="#1f2937",
    text_muted="#6b7280",
    text_disabled="#9ca3af",
    border="#e5e7eb",
    control_border="#8b929e",
    hover="#ececef",
    selected="#e3e8f0",
    accent="#2563eb",
    accent_soft="#dbeafe",
    primary="#2563eb",
    primary_hover="#1d4ed8",
    primary_disabled="#93c5fd",
    on_primary="#ffffff",
    on_primary_disabled="#ffffff",
    stop="#111827",
    user_bubble="#f1f5f9",
    code_background="#f6f8fa",
    inline_code_background="#eef1f4",
    error="#b91c1c",
    error_soft="#fef2f2",
    error_border="#fecaca",
    warning_soft="#fffbeb",
    warning_border="#fde68a",
    warning_text="#92400e",
    tooltip_background="#111827",
    tooltip_text="#f9fafb",
    gauge_track="#eef0f3",
    gauge_full="#f59e0b",
    scrollbar="#d1d5db",
    switch_off="#d1d5db",
    switch_knob="#ffffff",
    state_ready="#16a34a",
    state_busy="#f59e0b",
    state_failed="#dc2626",
    chart_plain="#9ca3af",
    chart_any="#cc79a7",
    ghost_text=(107, 114, 128, 150),
    code_style="default",  # dark, saturated colours, readable on the light code background and both highlights
    highlights={
        "draft": (86, 180, 233, 100),
        "ngram": (230, 159, 0, 100),
        "history": (0, 158, 115, 90),  # Okabe-Ito bluish green: earlier replies (the history drafter)
    },
)

DARK = Theme(
    name="dark",
    is_dark=True,
    surface="#1c1c1f",
    sidebar="#151517",
    text="#e5e7eb",
    text_muted="#9ca3af",
    text_disabled="#6b7280",
    border="#34353b",
    control_border="#7b8290",
    hover="#2a2b30",
    selected="#2e3340",
    accent="#60a5fa",
    accent_soft="#1e3a5f",
    primary="#2563eb",
    primary_hover="#3b82f6",
    primary_disabled="#2a2b30",
    on_primary="#ffffff",
    on_primary_disabled="#7c8494",
    stop="#e5e7eb",
    user_bubble="#26272c",
    code_background="#25262b",
    inline_code_background="#2e3036",
    error="#f87171",
    error_soft="#3a1c1c",
    error_border="#7f1d1d",
    warning_soft="#33290f",
    warning_border="#78591a",
    warning_text="#fcd34d",
    tooltip_background="#f3f4f6",
    tooltip_text="#111827",
    gauge_track="#2c2d33",
    gauge_full="#f59e0b",
    scrollbar="#4b4d55",
    switch_off="#4b5563",
    switch_knob="#f9fafb",
    state_ready="#22c55e",
    state_busy="#fbbf24",
    state_failed="#f87171",
    chart_plain="#6b7280",
    chart_any="#cc79a7",
    ghost_text=(156, 163, 175, 150),
    code_style="github-dark",  # light, soft colours made for a near-black background
    # The same hues, a little denser than on white so they still stand out on a dark background; the light text
    # keeps over 4.5:1 on them (the test above).
    highlights={
        "draft": (86, 180, 233, 115),
        "ngram": (230, 159, 0, 110),
        "history": (0, 158, 115, 115),
    },
)

THEMES: Mapping[str, Theme] = {"light": LIGHT, "dark": DARK}


def resolve_theme(choice: str, system_is_dark: bool) -> Theme:
    """The theme to show for a Settings choice ("system", "light", "dark"); an unknown choice is "system"."""
    if choice in THEMES:
        return THEMES[choice]
    return DARK if system_is_dark else LIGHT
