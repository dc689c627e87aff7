"""Colours, fonts and the application style sheet: one light, calm look in one place."""

from __future__ import annotations

from PySide6.QtGui import QColor, QFont, QFontDatabase, QPalette, QTextCharFormat
from PySide6.QtWidgets import QApplication

ACCENT = "#2563eb"
ACCENT_SOFT = "#dbeafe"
TEXT = "#1f2937"
TEXT_MUTED = "#6b7280"
BORDER = "#e5e7eb"
SURFACE = "#ffffff"
SIDEBAR = "#f7f7f8"
USER_BUBBLE = "#f1f5f9"
CODE_BACKGROUND = "#f6f8fa"
INLINE_CODE_BACKGROUND = "#eef1f4"
# Kept draft tokens, by who drafted them: Okabe-Ito sky blue for the draft model, orange for n-gram copies and
# bluish green for history (earlier replies), colours that stay apart under every common colour-vision deficiency.
# Translucent, so the text keeps its contrast on white, on code blocks and on a dark background alike.
DRAFT_MODEL_RGBA = (86, 180, 233, 100)
NGRAM_RGBA = (230, 159, 0, 100)
HISTORY_RGBA = (0, 158, 115, 90)
# Refused proposals shown inline: faint, struck through.
GHOST_TEXT_RGBA = (107, 114, 128, 150)
ERROR = "#b91c1c"
ERROR_SOFT = "#fef2f2"
WARNING_SOFT = "#fffbeb"


def draft_color() -> QColor:
    """The highlight of tokens the draft model proposed and the target kept."""
    return QColor(*DRAFT_MODEL_RGBA)


def ngram_color() -> QColor:
    """The highlight of tokens copied by n-gram lookup and kept by the target."""
    return QColor(*NGRAM_RGBA)


def history_color() -> QColor:
    """The highlight of tokens drafted from the history of earlier replies and kept by the target."""
    return QColor(*HISTORY_RGBA)


def origin_color(origin: str) -> QColor | None:
    """The highlight of a token by its origin; None for the target's own tokens."""
    if origin == "draft":
        return draft_color()
    if origin == "ngram":
        return ngram_color()
    if origin == "history":
        return history_color()
    return None


def swatch_css(color: QColor, on: str = SURFACE) -> str:
    """An opaque "#rrggbb" of a translucent colour over `on`, for rich-text labels (which ignore alpha)."""
    base = QColor(on)
    a = color.alphaF()
    mix = [round(c * a + b * (1 - a)) for c, b in zip(color.getRgb()[:3], base.getRgb()[:3])]
    return QColor(*mix).name()


def muted_format(base: QFont, smaller: float = 1.5) -> QTextCharFormat:
    """Quiet transcript text (headers, links under a message, code labels): muted, `smaller` points below `base`,
    never under 7 points."""
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(TEXT_MUTED))
    fmt.setFontPointSize(max(7.0, base.pointSizeF() - smaller))
    return fmt


def monospace_font(point_size: float | None = None) -> QFont:
    font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    if point_size:
        font.setPointSizeF(point_size)
    return font


# Arrow images that ship inside QtWidgets itself; a style sheet that styles combo and spin boxes must name some.
_ARROWS = ":/qt-project.org/styles/commonstyle/images"

STYLE_SHEET = f"""
QMainWindow, QDialog {{ background: {SURFACE}; }}
QWidget {{ color: {TEXT}; }}
QToolTip {{ background: #111827; color: #f9fafb; border: none; padding: 4px 6px; }}

#Sidebar {{ background: {SIDEBAR}; border-right: 1px solid {BORDER}; }}
#Sidebar QListView {{ background: transparent; border: none; outline: none; }}
#Sidebar QListView::item {{ padding: 7px 8px; border-radius: 6px; margin: 1px 4px; }}
#Sidebar QListView::item:hover {{ background: #ececef; }}
#Sidebar QListView::item:selected {{ background: #e3e8f0; color: {TEXT}; }}
#AppTitle {{ font-size: 15px; font-weight: 600; padding: 2px 4px; }}

QLineEdit, QPlainTextEdit, QTextEdit, QSpinBox, QDoubleSpinBox, QComboBox {{
    background: {SURFACE}; border: 1px solid {BORDER}; border-radius: 6px; padding: 4px 6px;
    selection-background-color: {ACCENT_SOFT}; selection-color: {TEXT};
}}
QLineEdit:focus, QPlainTextEdit:focus, QSpinBox:focus, QDoubleSpinBox:focus, QComboBox:focus {{
    border: 1px solid {ACCENT};
}}
QComboBox {{ padding: 4px 8px; min-height: 20px; }}
QComboBox::drop-down {{ border: none; width: 22px; }}
QComboBox::down-arrow, QSpinBox::down-arrow, QDoubleSpinBox::down-arrow {{
    image: url({_ARROWS}/arrow-down-16.png); width: 10px; height: 10px;
}}
QSpinBox::up-arrow, QDoubleSpinBox::up-arrow {{ image: url({_ARROWS}/arrow-up-16.png); width: 10px; height: 10px; }}
QSpinBox, QDoubleSpinBox {{ padding-right: 20px; }}
QSpinBox::up-button, QDoubleSpinBox::up-button {{
    subcontrol-origin: border; subcontrol-position: top right; width: 18px; border: none; background: transparent;
}}
QSpinBox::down-button, QDoubleSpinBox::down-button {{
    subcontrol-origin: border; subcontrol-position: bottom right; width: 18px; border: none; background: transparent;
}}
QSpinBox::up-button:hover, QSpinBox::down-button:hover,
QDoubleSpinBox::up-button:hover, QDoubleSpinBox::down-button:hover {{ background: #f3f4f6; }}
QComboBox QAbstractItemView {{
    border: 1px solid {BORDER}; background: {SURFACE}; selection-background-color: {ACCENT_SOFT};
    selection-color: {TEXT}; outline: none;
}}

QPushButton {{
    background: {SURFACE}; border: 1px solid {BORDER}; border-radius: 6px; padding: 5px 12px;
}}
QPushButton:hover {{ background: #f3f4f6; }}
QPushButton:disabled {{ color: #9ca3af; }}
QPushButton#PrimaryButton {{ background: {ACCENT}; border: 1px solid {ACCENT}; color: white; font-weight: 600; }}
QPushButton#PrimaryButton:hover {{ background: #1d4ed8; }}
QPushButton#PrimaryButton:disabled {{ background: #93c5fd; border-color: #93c5fd; color: white; }}
QPushButton#StopButton {{ background: #111827; border: 1px solid #111827; color: white; font-weight: 600; }}
QPushButton#FlatButton {{ border: none; background: transparent; color: {TEXT_MUTED}; padding: 4px 6px; }}
QPushButton#FlatButton:hover {{ color: {TEXT}; background: #ececef; }}

#ModelBar {{ background: {SURFACE}; border-bottom: 1px solid {BORDER}; }}
#ModelBar QLabel#BarLabel {{ color: {TEXT_MUTED}; font-size: 11px; }}
#ComposerFrame {{ background: {SURFACE}; border: 1px solid {BORDER}; border-radius: 10px; }}
#ComposerFrame QPlainTextEdit {{ border: none; background: transparent; padding: 2px; }}
#Muted {{ color: {TEXT_MUTED}; }}
#StatusLine {{ color: {TEXT_MUTED}; font-size: 11px; }}
#LiveStats {{ color: {TEXT_MUTED}; font-size: 11px; }}
#EditBanner {{ background: {WARNING_SOFT}; border: 1px solid #fde68a; border-radius: 6px; padding: 4px 8px; }}
#ErrorBanner {{ background: {ERROR_SOFT}; color: {ERROR}; border: 1px solid #fecaca; border-radius: 6px; padding: 6px 10px; }}
#EmptyTitle {{ font-size: 22px; font-weight: 600; }}
#EmptyBody {{ color: {TEXT_MUTED}; font-size: 13px; }}

QTextBrowser#Transcript {{ border: none; background: {SURFACE}; }}
QProgressBar#ContextGauge {{
    border: none; background: #eef0f3; border-radius: 3px; max-height: 6px; min-height: 6px;
}}
QProgressBar#ContextGauge::chunk {{ background: #60a5fa; border-radius: 3px; }}
QProgressBar#ContextGauge[full="true"]::chunk {{ background: #f59e0b; }}
QScrollBar:vertical {{ background: transparent; width: 10px; margin: 0; }}
QScrollBar::handle:vertical {{ background: #d1d5db; border-radius: 4px; min-height: 24px; margin: 2px; }}
QScrollBar::add-line:vertical, QScrollBar::sub-line:vertical {{ height: 0; }}
QTableView {{ border: 1px solid {BORDER}; border-radius: 6px; gridline-color: {BORDER}; }}
QHeaderView::section {{ background: {SIDEBAR}; border: none; border-bottom: 1px solid {BORDER}; padding: 4px 6px; }}
"""


def apply_style(app: QApplication) -> None:
    """The Fusion style with a light palette and the sheet above, the same on every platform."""
    app.setStyle("Fusion")
    palette = app.palette()
    palette.setColor(QPalette.ColorRole.Window, QColor(SURFACE))
    palette.setColor(QPalette.ColorRole.Base, QColor(SURFACE))
    palette.setColor(QPalette.ColorRole.Text, QColor(TEXT))
    palette.setColor(QPalette.ColorRole.WindowText, QColor(TEXT))
    palette.setColor(QPalette.ColorRole.Button, QColor(SURFACE))
    palette.setColor(QPalette.ColorRole.ButtonText, QColor(TEXT))
    palette.setColor(QPalette.ColorRole.Highlight, QColor(ACCENT_SOFT))
    palette.setColor(QPalette.ColorRole.HighlightedText, QColor(TEXT))
    palette.setColor(QPalette.ColorRole.Link, QColor(ACCENT))
    palette.setColor(QPalette.ColorRole.PlaceholderText, QColor("#9ca3af"))
    app.setPalette(palette)
    app.setStyleSheet(STYLE_SHEET)
