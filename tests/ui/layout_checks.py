"""What a person at a small screen would notice, as checks over a shown top-level widget: a control outside the
window (or outside its screen), a control the keyboard cannot reach, two visible widgets on top of each other."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractScrollArea,
    QAbstractSpinBox,
    QComboBox,
    QLabel,
    QLineEdit,
    QTabBar,
    QWidget,
)

CONTROLS = (QAbstractButton, QComboBox, QLineEdit, QAbstractSpinBox, QAbstractScrollArea, QTabBar)


def _name(widget: QWidget) -> str:
    text = widget.text() if hasattr(widget, "text") and callable(widget.text) else ""
    text = text if isinstance(text, str) else ""
    return f"{type(widget).__name__}({widget.objectName() or text[:30]!r})"


def _is_inner(widget: QWidget, top: QWidget) -> bool:
    """A part of another control (a combo's arrow, a scroll area's bars and contents' own frame)."""
    parent = widget.parentWidget()
    while parent is not None and parent is not top:
        if isinstance(parent, (QComboBox, QAbstractSpinBox, QAbstractItemView)) or parent.objectName().startswith(
            "qt_"
        ):
            return True
        parent = parent.parentWidget()
    return widget.objectName().startswith("qt_")


def _in_scroll_area(widget: QWidget, top: QWidget) -> bool:
    parent = widget.parentWidget()
    while parent is not None and parent is not top:
        if isinstance(parent, QAbstractScrollArea):
            return True
        parent = parent.parentWidget()
    return False


def _shown(top: QWidget) -> list[QWidget]:
    return [
        w
        for w in top.findChildren(QWidget)
        if w.isVisible() and not w.isWindow() and w.width() > 0 and not _is_inner(w, top)
    ]


def _rect_in(widget: QWidget, top: QWidget) -> QRect:
    return QRect(widget.mapTo(top, widget.rect().topLeft()), widget.size())


def _clipping_ancestor(widget: QWidget, top: QWidget):
    """The first ancestor (below `top`) that does not hold the whole of `widget`, which it then clips."""
    rect = _rect_in(widget, top)
    parent = widget.parentWidget()
    while parent is not None and parent is not top:
        if not _rect_in(parent, top).contains(rect):
            return parent
        parent = parent.parentWidget()
    return None


def focus_chain(top: QWidget) -> set[int]:
    """The widgets Tab visits from `top`, as ids (the chain Qt follows, once round)."""
    seen: set[int] = set()
    widget = top.nextInFocusChain()
    while widget is not None and widget is not top and id(widget) not in seen:
        seen.add(id(widget))
        widget = widget.nextInFocusChain()
    return {id(w) for w in top.findChildren(QWidget) if id(w) in seen}


def layout_problems(top: QWidget) -> list[str]:
    """Every problem found, one sentence each (empty: none)."""
    problems: list[str] = []
    area = top.rect()
    screen = top.screen().availableGeometry() if top.screen() is not None else None
    if screen is not None and not screen.contains(top.frameGeometry()):
        problems.append(f"{_name(top)} at {top.frameGeometry()} is not inside the screen's {screen}")
    shown = _shown(top)
    chain = focus_chain(top)
    controls = [w for w in shown if isinstance(w, CONTROLS)]
    for widget in controls:
        rect = _rect_in(widget, top)
        if not _in_scroll_area(widget, top) and not area.contains(rect):
            problems.append(f"{_name(widget)} at {rect} is outside the window's {area}")
        elif not _in_scroll_area(widget, top):
            clipper = _clipping_ancestor(widget, top)
            if clipper is not None:
                problems.append(f"{_name(widget)} is cut off by {_name(clipper)}")
        if isinstance(widget, QAbstractButton) and widget.width() < widget.minimumSizeHint().width() - 1:
            problems.append(f"{_name(widget)} is {widget.width()} px wide, too narrow for its text")
        if widget.isEnabled() and not isinstance(widget, QAbstractScrollArea) or isinstance(widget, QAbstractItemView):
            if not widget.focusPolicy() & Qt.FocusPolicy.TabFocus:
                problems.append(f"{_name(widget)} cannot be reached with Tab")
            elif id(widget) not in chain:
                problems.append(f"{_name(widget)} is not in the window's Tab order")
    for label in shown:
        if (
            isinstance(label, QLabel)
            and not label.wordWrap()
            and label.text()
            and not _in_scroll_area(label, top)
            and type(label).minimumSizeHint is QLabel.minimumSizeHint
            and label.width() < label.minimumSizeHint().width() - 1
        ):
            problems.append(f"{_name(label)} is {label.width()} px wide, too narrow for its text")
    leaves = [w for w in shown if isinstance(w, CONTROLS + (QLabel,)) and not _in_scroll_area(w, top)]
    for n, first in enumerate(leaves):
        for second in leaves[n + 1 :]:
            if first.isAncestorOf(second) or second.isAncestorOf(first):
                continue
            overlap = _rect_in(first, top).intersected(_rect_in(second, top))
            if overlap.width() > 1 and overlap.height() > 1:
                problems.append(f"{_name(first)} and {_name(second)} overlap by {overlap.width()}x{overlap.height()}")
    return problems
