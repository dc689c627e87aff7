"""Colours, fonts and the application style sheet: one calm look in one place, in the current theme (themes.py).

Colours are read when they are used (`style.TEXT`, `style.current().text`), so a theme switched live reaches
everything drawn after it. GUI thread only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontDatabase, QPalette, QTextCharFormat
from PySide6.QtWidgets import QApplication, QWidget

from app.ui.widgets.themes import LIGHT, RGBA, Theme

# The theme shown now; apply_style changes it. Colours are read from it when used, never copied at import.
_current: Theme = LIGHT

# The colour names the window's modules read as `style.TEXT` and so on: each is the current theme's field.
_COLOR_NAMES = {
    "ACCENT": "accent",
    "ACCENT_SOFT": "accent_soft",
    "TEXT": "text",
    "TEXT_MUTED": "text_muted",
    "TEXT_DISABLED": "text_disabled",
    "BORDER": "border",
    "SURFACE": "surface",
    "SIDEBAR": "sidebar",
    "USER_BUBBLE": "user_bubble",
    "CODE_BACKGROUND": "code_background",
    "INLINE_CODE_BACKGROUND": "inline_code_background",
    "ERROR": "error",
    "ERROR_SOFT": "error_soft",
    "WARNING_SOFT": "warning_soft",
    "GHOST_TEXT_RGBA": "ghost_text",
}


def __getattr__(name: str) -> Any:
    """`style.TEXT` and its siblings: the current theme's colour, so a live switch reaches every later use."""
    if name in _COLOR_NAMES:
        return getattr(_current, _COLOR_NAMES[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def current() -> Theme:
    """The theme shown now."""
    return _current


def highlight_rgba(origin: str) -> RGBA | None:
    """The highlight of kept tokens drafted by `origin`, as RGBA in the current theme; None for the target's own."""
    return _current.highlights.get(origin)


def draft_color() -> QColor:
    """The highlight of tokens the draft model proposed and the target kept."""
    return QColor(*_current.highlights["draft"])


def ngram_color() -> QColor:
    """The highlight of tokens copied by n-gram lookup and kept by the target."""
    return QColor(*_current.highlights["ngram"])


def history_color() -> QColor:
    """The highlight of tokens drafted from the history of earlier replies and kept by the target."""
    return QColor(*_current.highlights["history"])


def origin_color(origin: str) -> QColor | None:
    """The highlight of a token by its origin; None for the target's own tokens."""
    rgba = highlight_rgba(origin)
    return QColor(*rgba) if rgba is not None else None


def swatch_css(color: QColor, on: str | None = None) -> str:
    """An opaque "#rrggbb" of a translucent colour over `on` (default: the surface), for rich-text labels (which
    ignore alpha)."""
    base = QColor(on or _current.surface)
    a = color.alphaF()
    mix = [
        round(c * a + b * (1 - a))
        for c, b in zip((color.red(), color.green(), color.blue()), (base.red(), base.green(), base.blue()))
    ]
    return QColor(*mix).name()


def muted_format(base: QFont, smaller: float = 1.5) -> QTextCharFormat:
    """Quiet transcript text (headers, links under a message, code labels): muted, `smaller` points below `base`,
    never under 7 points."""
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(_current.text_muted))
    fmt.setFontPointSize(max(7.0, base.pointSizeF() - smaller))
    return fmt


# Maths in replies: italic serif, as typeset maths reads; the first family installed that has the glyph is used.
MATHS_FONT_FAMILIES = ["Cambria Math", "STIX Two Math", "DejaVu Serif", "Times New Roman", "serif"]


def monospace_font(point_size: float | None = None) -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    if point_size:
        font.setPointSizeF(point_size)
    return font


# A style sheet that styles combo and spin boxes must name their arrow images: ours, one pair per theme (Qt's own
# are black, invisible on dark). Forward slashes, as style sheet URLs want them on every platform. The check box's
# tick lives beside them: one white SVG on the primary colour in both themes, sharp at any scale.
_ARROWS = (Path(__file__).resolve().parents[2] / "data" / "arrows").as_posix()


def focus_rules(t: Theme) -> str:
    """Keyboard focus as a 2-pixel ring in the accent colour on every control that takes it, in both themes.
    A ring one pixel wider than the border it replaces takes one pixel of padding (a combo box: margin) back, so
    nothing moves when focus arrives. The composer's frame and the switches draw theirs the same way (composer.py, toggle_switch.py).
    Qt has no :focus-visible: a click focuses too, as in most desktop apps."""
    ring = f"border: 2px solid {t.accent}"
    return f"""
QLineEdit:focus, QPlainTextEdit:focus, QSpinBox:focus, QDoubleSpinBox:focus {{ {ring}; padding: 3px 5px; }}
QSpinBox:focus, QDoubleSpinBox:focus {{ padding-right: 19px; }}
/* A combo box's ring grows into its margin instead: a padding that changes with focus makes Qt size the open
   list for one and draw it with the other, clipping it behind scroll arrows. */
QComboBox:focus {{ {ring}; margin: 0px; }}
QPushButton:focus {{ {ring}; padding: 4px 11px; }}
/* On a control already filled with the accent (Send, a ticked box) the ring is in the text colour. */
QPushButton#PrimaryButton:focus, QPushButton#StopButton:focus {{ border: 2px solid {t.text}; padding: 4px 11px; }}
QPushButton#FlatButton:focus {{ {ring}; padding: 2px 4px; }}
QCheckBox::indicator:focus {{ {ring}; width: 12px; height: 12px; }}
QCheckBox::indicator:checked:focus {{ border-color: {t.text}; }}
QAbstractItemView:focus {{ border-color: {t.accent}; }}
#Sidebar QTreeView::item:focus {{ {ring}; padding: 5px 6px; }}
#SettingsPageList::item:focus {{ {ring}; padding: 5px 8px; }}
#ComposerFrame[focused="true"] {{ {ring}; }}
"""


def set_focused(frame: QWidget, focused: bool) -> None:
    """Ring `frame` as focused while the editor inside it has focus (Qt's sheets have no :focus-within)."""
    if frame.property("focused") != focused:
        frame.setProperty("focused", focused)
        frame.style().unpolish(frame)
        frame.style().polish(frame)


def style_sheet(t: Theme) -> str:
    """The application style sheet in theme `t`."""
    return f"""
QMainWindow, QDialog {{ background: {t.surface}; }}
QWidget {{ color: {t.text}; }}
QToolTip {{ background: {t.tooltip_background}; color: {t.tooltip_text}; border: none; padding: 4px 6px; }}

#Sidebar {{ background: {t.sidebar}; border-right: 1px solid {t.border}; }}
#Sidebar QTreeView {{ background: transparent; border: none; outline: none; }}
#Sidebar QTreeView::branch {{ background: transparent; }}
#Sidebar QTreeView::item {{ padding: 7px 8px; border-radius: 6px; margin: 1px 4px; }}
#Sidebar QTreeView::item:hover {{ background: {t.hover}; }}
#Sidebar QTreeView::item:selected {{ background: {t.selected}; color: {t.text}; }}
#AppTitle {{ font-size: 15px; font-weight: 600; padding: 2px 4px; }}

QLineEdit, QPlainTextEdit, QTextEdit, QSpinBox, QDoubleSpinBox, QComboBox {{
    background: {t.surface}; border: 1px solid {t.border}; border-radius: 6px; padding: 4px 6px;
    selection-background-color: {t.accent_soft}; selection-color: {t.text};
}}
QComboBox {{ padding: 4px 8px; min-height: 20px; margin: 1px; }}
/* The model pickers' two-line rows drop below the box; Fusion's default lays the list over the box, which at the
   screen's top clips it behind scroll arrows. */
#ModelBar QComboBox {{ combobox-popup: 0; }}
QComboBox::drop-down {{ border: none; width: 22px; }}
QComboBox::down-arrow, QSpinBox::down-arrow, QDoubleSpinBox::down-arrow {{
    image: url({_ARROWS}/arrow-down-{t.name}.png); width: 10px; height: 10px;
}}
QSpinBox::up-arrow, QDoubleSpinBox::up-arrow {{ image: url({_ARROWS}/arrow-up-{t.name}.png); width: 10px; height: 10px; }}
QSpinBox::up-button, QDoubleSpinBox::up-button {{
    subcontrol-origin: border; subcontrol-position: top right; width: 18px; border: none; background: transparent;
}}
QSpinBox::down-button, QDoubleSpinBox::down-button {{
    subcontrol-origin: border; subcontrol-position: bottom right; width: 18px; border: none; background: transparent;
}}
QSpinBox::up-button:hover, QSpinBox::down-button:hover,
QDoubleSpinBox::up-button:hover, QDoubleSpinBox::down-button:hover {{ background: {t.hover}; }}
QSpinBox, QDoubleSpinBox {{ padding-right: 20px; }}
QComboBox QAbstractItemView {{
    border: 1px solid {t.border}; background: {t.surface}; selection-background-color: {t.accent_soft};
    selection-color: {t.text}; outline: none;
}}

QPushButton {{
    background: {t.surface}; border: 1px solid {t.border}; border-radius: 6px; padding: 5px 12px;
}}
QPushButton:hover {{ background: {t.hover}; }}
QPushButton:disabled {{ color: {t.text_disabled}; }}
QPushButton#PrimaryButton {{ background: {t.primary}; border: 1px solid {t.primary}; color: {t.on_primary}; font-weight: 600; }}
QPushButton#PrimaryButton:hover {{ background: {t.primary_hover}; }}
QPushButton#PrimaryButton:disabled {{
    background: {t.primary_disabled}; border-color: {t.primary_disabled}; color: {t.on_primary_disabled};
}}
QPushButton#StopButton {{ background: {t.stop}; border: 1px solid {t.stop}; color: {t.surface}; font-weight: 600; }}
QPushButton#FlatButton {{ border: none; background: transparent; color: {t.text_muted}; padding: 4px 6px; }}
QPushButton#FlatButton:hover {{ color: {t.text}; background: {t.hover}; }}

QCheckBox {{ spacing: 7px; }}
QCheckBox::indicator {{
    width: 14px; height: 14px; border: 1px solid {t.control_border}; border-radius: 4px; background: {t.surface};
}}
QCheckBox::indicator:hover {{ border-color: {t.accent}; }}
QCheckBox::indicator:checked {{ background: {t.primary}; border-color: {t.primary}; image: url({_ARROWS}/check.svg); }}
QCheckBox::indicator:indeterminate {{ background: {t.primary}; border-color: {t.primary}; }}
QCheckBox::indicator:disabled {{ border-color: {t.border}; background: {t.sidebar}; }}
QCheckBox::indicator:checked:disabled {{ background: {t.primary_disabled}; border-color: {t.primary_disabled}; }}
QCheckBox:disabled {{ color: {t.text_disabled}; }}
/* A list's or tree's check boxes (Settings > Tools' switches) look like the dialogs' own: the style's default
   indicator was nearly invisible on the dark theme's surface. */
QTreeView::indicator, QListView::indicator {{
    width: 14px; height: 14px; border: 1px solid {t.control_border}; border-radius: 4px; background: {t.surface};
}}
QTreeView::indicator:checked, QListView::indicator:checked {{
    background: {t.primary}; border-color: {t.primary}; image: url({_ARROWS}/check.svg);
}}

{focus_rules(t)}

#ModelBar {{ background: {t.surface}; border-bottom: 1px solid {t.border}; }}
#ModelBar QLabel#BarLabel {{ color: {t.text_muted}; font-size: 11px; }}
#ComposerFrame {{ background: {t.surface}; border: 1px solid {t.border}; border-radius: 10px; }}
#ComposerFrame QPlainTextEdit {{ border: none; background: transparent; padding: 2px; }}
#Muted {{ color: {t.text_muted}; }}
#StatusLine {{ color: {t.text_muted}; font-size: 11px; }}
#LiveStats {{ color: {t.text_muted}; font-size: 11px; }}
#EditBanner {{ background: {t.warning_soft}; border: 1px solid {t.warning_border}; border-radius: 6px; padding: 4px 8px; }}
#ErrorBanner {{ background: {t.error_soft}; color: {t.error}; border: 1px solid {t.error_border}; border-radius: 6px; padding: 6px 10px; }}
#SettingsPageList {{ background: {t.sidebar}; border: none; border-radius: 8px; outline: none; padding: 4px; }}
#SettingsPageList::item {{ padding: 7px 10px; border-radius: 6px; }}
#SettingsPageList::item:selected {{ background: {t.selected}; color: {t.text}; }}
#PageTitle {{ font-size: 14px; padding-bottom: 4px; }}
#AttachmentChip {{ background: {t.inline_code_background}; border: 1px solid {t.border}; border-radius: 6px; }}
#AttachmentChip QPushButton {{ padding: 0 5px; }}
#PairCard {{ border: 1px solid {t.border}; border-radius: 8px; background: {t.surface}; }}
#EmptyTitle {{ font-size: 22px; font-weight: 600; }}
#EmptyBody {{ color: {t.text_muted}; font-size: 13px; }}

QTextBrowser#Transcript {{ border: none; background: {t.surface}; }}
QProgressBar#ContextGauge {{
    border: none; background: {t.gauge_track}; border-radius: 3px; max-height: 6px; min-height: 6px;
}}
QProgressBar#ContextGauge::chunk {{ background: {t.accent}; border-radius: 3px; }}
QProgressBar#ContextGauge[full="true"]::chunk {{ background: {t.gauge_full}; }}
QProgressBar#DocumentsProgress {{
    border: none; background: {t.gauge_track}; border-radius: 3px; max-height: 8px; min-height: 8px;
}}
QProgressBar#DocumentsProgress::chunk {{ background: {t.accent}; border-radius: 3px; }}
QScrollBar:vertical {{ background: transparent; width: 10px; margin: 0; }}
QScrollBar::handle:vertical {{ background: {t.scrollbar}; border-radius: 4px; min-height: 24px; margin: 2px; }}
QScrollBar::add-line:vertical, QScrollBar::sub-line:vertical {{ height: 0; }}
QTableView {{ border: 1px solid {t.border}; border-radius: 6px; gridline-color: {t.border}; }}
QHeaderView::section {{ background: {t.sidebar}; border: none; border-bottom: 1px solid {t.border}; padding: 4px 6px; }}
"""


def apply_style(app: QApplication, theme: Theme | None = None) -> None:
    """The Fusion style with `theme`'s palette and sheet (default: the current theme), the same on every platform.
    Called again with another theme, it restyles every open widget; what was painted into documents (the
    transcript) is redrawn by its owner (app/ui/shell/appearance.py)."""
    global _current
    t = theme or _current
    _current = t
    app.setStyle("Fusion")
    palette = QPalette()
    roles = QPalette.ColorRole
    for role, colour in (
        (roles.Window, t.surface),
        (roles.Base, t.surface),
        (roles.AlternateBase, t.sidebar),
        (roles.Text, t.text),
        (roles.WindowText, t.text),
        (roles.Button, t.surface),
        (roles.ButtonText, t.text),
        (roles.BrightText, t.text),
        (roles.ToolTipBase, t.tooltip_background),
        (roles.ToolTipText, t.tooltip_text),
        (roles.Highlight, t.accent_soft),
        (roles.HighlightedText, t.text),
        (roles.Link, t.accent),
        (roles.LinkVisited, t.accent),
        (roles.PlaceholderText, t.text_disabled),
        (roles.Mid, t.border),
        (roles.Midlight, t.border),
        (roles.Dark, t.scrollbar),
        (roles.Light, t.surface),
    ):
        palette.setColor(role, QColor(colour))
    for role in (roles.Text, roles.WindowText, roles.ButtonText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, QColor(t.text_disabled))
    app.setPalette(palette)
    app.setStyleSheet(style_sheet(t))
    # The system's file dialogs follow the system's colours, so under the dark theme they would open light: Qt's
    # own dialog takes the app's palette and sheet. The light theme keeps the native ones people know.
    app.setAttribute(Qt.ApplicationAttribute.AA_DontUseNativeDialogs, t.is_dark)
