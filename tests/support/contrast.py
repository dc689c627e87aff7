"""WCAG contrast between two colours, for the tests that check text stays readable on a background."""

from __future__ import annotations

from PySide6.QtGui import QColor


def luminance(color: QColor) -> float:
    """WCAG 2 relative luminance, 0 (black) to 1 (white)."""

    def channel(c: float) -> float:
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF()) + 0.0722 * channel(color.blueF())


def contrast(a: QColor, b: QColor) -> float:
    """The contrast ratio, 1 to 21 (body text wants 4.5)."""
    light, dark = sorted((luminance(a), luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)
