"""Every control that takes focus shows a clear ring in both themes, check boxes keep their box on dark, and file
dialogs under the dark theme are dark too. (Issue 36's dark-theme gaps and keyboard focus.)"""

from __future__ import annotations

import time

import pytest
from PySide6.QtCore import QRect, Qt, QTimer
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QDialog,
    QFileDialog,
    QGridLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from app.ui.widgets import style
from app.ui.widgets.themes import DARK, LIGHT
from app.ui.widgets.toggle_switch import ToggleSwitch


pytestmark = pytest.mark.usefixtures("restore_light")


def _button(name: str) -> QPushButton:
    button = QPushButton("Send" if name else "Button")
    button.setObjectName(name)
    return button


def _checkbox(checked: bool) -> QCheckBox:
    box = QCheckBox("Also list models")
    box.setChecked(checked)
    return box


def _combo() -> QComboBox:
    combo = QComboBox()
    combo.addItem("Qwen2.5-Coder 1.5B")
    return combo


CONTROLS = {
    "button": lambda: _button(""),
    "flat button": lambda: _button("FlatButton"),
    "send button": lambda: _button("PrimaryButton"),
    "line edit": lambda: QLineEdit("a chat"),
    "combo box": _combo,
    "spin box": QSpinBox,
    "check box": lambda: _checkbox(False),
    "checked box": lambda: _checkbox(True),
    "switch": ToggleSwitch,
    "switch on": lambda: _switch_on(),
}


def _switch_on() -> ToggleSwitch:
    switch = ToggleSwitch()
    switch.setChecked(True)
    return switch


def _pixels(image: QImage, colour: str) -> int:
    """How many pixels are within a few levels of `colour` (anti-aliasing blurs edges)."""
    want = QColor(colour)
    count = 0
    for y in range(image.height()):
        for x in range(image.width()):
            got = image.pixelColor(x, y)
            if abs(got.red() - want.red()) + abs(got.green() - want.green()) + abs(got.blue() - want.blue()) < 24:
                count += 1
    return count


def _focus(qtbot, widget: QWidget) -> None:
    widget.window().activateWindow()
    widget.setFocus()
    qtbot.waitUntil(widget.hasFocus, timeout=2000)


@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
@pytest.mark.parametrize("kind", list(CONTROLS))
def test_a_focused_control_shows_a_ring_an_unfocused_twin_does_not(qapp, qtbot, theme, kind):
    style.apply_style(qapp, theme)
    dialog = QDialog()
    qtbot.addWidget(dialog)
    layout = QGridLayout(dialog)
    focused, other = CONTROLS[kind](), CONTROLS[kind]()
    layout.addWidget(focused, 0, 0)
    layout.addWidget(other, 0, 1)
    dialog.show()
    qtbot.waitExposed(dialog)
    _focus(qtbot, focused)
    assert focused.size() == other.size()  # the ring takes no room: nothing moves when focus arrives
    with_focus, without = focused.grab().toImage(), other.grab().toImage()
    assert with_focus != without
    ring = theme.text if kind in ("send button", "checked box") else theme.accent
    # A ring is a line around the control: at least its perimeter's worth of the ring's colour more than the twin.
    perimeter = focused.width() + focused.height()
    assert _pixels(with_focus, ring) - _pixels(without, ring) >= perimeter // 2


@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
def test_the_chat_list_and_the_composer_show_focus(make_window, qapp, qtbot, theme):
    from app.store import ChatStore

    with ChatStore() as store:
        first = store.create_chat("A chat")
        store.create_chat("Another chat")
    window = make_window()
    style.apply_style(qapp, theme)  # the window's own switch skips a theme already current, styled or not
    window.open_chat(first.id)
    view = window.sidebar.list_view
    row = view.visualRect(view.currentIndex())
    _focus(qtbot, window.composer)
    unfocused_row = view.viewport().grab(row).toImage()
    frame = window.composer.edit.parentWidget()
    focused_frame = frame.grab().toImage()
    _focus(qtbot, view)
    focused_row = view.viewport().grab(row).toImage()
    unfocused_frame = frame.grab().toImage()
    for with_focus, without in ((focused_row, unfocused_row), (focused_frame, unfocused_frame)):
        assert _pixels(with_focus, theme.accent) - _pixels(without, theme.accent) > 40


def test_check_boxes_keep_their_box_on_dark(qapp, qtbot):
    style.apply_style(qapp, DARK)
    box = _checkbox(False)
    qtbot.addWidget(box)
    box.show()
    qtbot.waitExposed(box)
    image = box.grab().toImage()
    # The box's outline: a 14-pixel square's edges in the control border colour, never the near-black surface.
    assert _pixels(image, DARK.control_border) >= 30
    box.setChecked(True)
    assert _pixels(box.grab().toImage(), DARK.primary) >= 60  # a filled, ticked box


def test_file_dialogs_under_the_dark_theme_are_dark(qapp, qtbot):
    # The system's dialog follows the system's colours; under the dark theme Qt's own dialog is used instead.
    style.apply_style(qapp, LIGHT)
    assert not qapp.testAttribute(Qt.ApplicationAttribute.AA_DontUseNativeDialogs)
    style.apply_style(qapp, DARK)
    assert qapp.testAttribute(Qt.ApplicationAttribute.AA_DontUseNativeDialogs)
    seen: list[tuple[QColor, QImage]] = []
    deadline = time.monotonic() + 10

    def look_and_close() -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, QFileDialog):
            if time.monotonic() < deadline:
                QTimer.singleShot(20, look_and_close)
            return
        qtbot.waitExposed(dialog)
        seen.append((dialog.palette().color(QPalette.ColorRole.Window), dialog.grab().toImage()))
        dialog.reject()

    QTimer.singleShot(0, look_and_close)
    QFileDialog.getOpenFileName(None, "Attach text or code files")  # the call the composer makes
    assert seen, "no file dialog opened"
    window_colour, image = seen[0]
    assert window_colour == QColor(DARK.surface)
    centre = image.pixelColor(image.width() // 2, image.height() // 2)
    assert centre.lightnessF() < 0.3  # its file list is dark too


def _first_ink_x(image: QImage) -> int:
    """The leftmost column with a pixel clearly unlike the background (text), or -1. The background is read from
    the second row, above any text; the first two columns are left out (a section's separator)."""
    background = image.pixelColor(image.width() // 2, 1)
    for x in range(2, image.width()):
        for y in range(image.height()):
            got = image.pixelColor(x, y)
            if abs(got.lightness() - background.lightness()) > 60:
                return x
    return -1


def test_the_librarys_status_header_sits_over_its_column(make_window, qapp, qtbot):
    from app.ui.models.library_dialog import LibraryDialog

    window = make_window()
    style.apply_style(qapp, DARK)
    window.library_ctl.open_library()
    dialog = window.findChild(LibraryDialog)
    qtbot.waitExposed(dialog)
    table, status = dialog.table, dialog.table.model().columnCount() - 1
    header = table.horizontalHeader()
    assert table.model().rowCount() > 0
    section = header.grab(
        QRect(header.sectionViewportPosition(status), 0, header.sectionSize(status), header.height())
    ).toImage()
    cell = table.viewport().grab(table.visualRect(table.model().index(0, status))).toImage()
    header_x, cell_x = _first_ink_x(section), _first_ink_x(cell)
    assert header_x >= 0 and cell_x >= 0
    assert abs(header_x - cell_x) <= 8  # "Status" starts where "Ready" does, not centred over a wide column
    dialog.close()


@pytest.mark.parametrize("theme", [LIGHT, DARK], ids=["light", "dark"])
def test_an_open_combo_box_shows_every_item(qapp, qtbot, theme):
    """Its list is as tall as its rows, focused or not (a focus rule that changed the padding clipped it)."""
    style.apply_style(qapp, theme)
    dialog = QDialog()
    qtbot.addWidget(dialog)
    combo = QComboBox()
    combo.addItems(["No preset", "Default", "Code review"])
    QGridLayout(dialog).addWidget(combo, 0, 0)
    dialog.resize(300, 300)
    dialog.show()
    qtbot.waitExposed(dialog)
    _focus(qtbot, combo)
    combo.showPopup()
    view = combo.view()
    qtbot.waitUntil(view.isVisible, timeout=2000)
    last = view.visualRect(combo.model().index(combo.count() - 1, 0))
    assert last.top() >= 0 and last.bottom() < view.viewport().height()
    combo.hidePopup()


def test_a_trees_check_boxes_keep_their_box_on_dark_and_send_reads_as_off(qapp, qtbot):
    """Issue 45, Polish: Settings > Tools' unticked tools were nearly invisible on dark, and Send with an empty
    message box looked like an enabled button."""
    from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

    style.apply_style(qapp, DARK)
    tree = QTreeWidget()
    tree.setHeaderHidden(True)
    item = QTreeWidgetItem(["read_note"])
    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
    item.setCheckState(0, Qt.CheckState.Unchecked)
    tree.addTopLevelItem(item)
    qtbot.addWidget(tree)
    tree.resize(200, 60)
    tree.show()
    qtbot.waitExposed(tree)
    row = tree.visualItemRect(item)
    assert _pixels(tree.viewport().grab(row).toImage(), DARK.control_border) >= 30
    # Off is grey, not a darker blue: its fill is no shade of the primary colour.
    off = QColor(DARK.primary_disabled)
    assert abs(off.red() - off.blue()) < 16 and abs(off.green() - off.blue()) < 16
