"""Settings fit a 1366x768 laptop screen: one page at a time, each scrolling on its own, no widget squeezed under
its minimum size or covering another."""

from __future__ import annotations

from itertools import combinations

from PySide6.QtCore import QRect, QSize
from PySide6.QtWidgets import QLayout, QScrollArea, QWidget

from app.store import AppSettings
from app.ui.settings.dialog import AppSettingsDialog
from app.ui.settings.pages import fitted_size
from app.ui.settings.remote_settings import RemoteSettingsSection

# A 1366x768 screen less a 40-pixel panel or task bar.
LAPTOP_AVAILABLE = QSize(1366, 768 - 40)
CONTAINERS = (RemoteSettingsSection,)  # widgets that only lay out others: their children are checked instead


def _laid_out(layout: QLayout) -> list[QWidget]:
    """Every widget `layout` places, looking into nested layouts and into plain containers."""
    found = []
    for index in range(layout.count()):
        item = layout.itemAt(index)
        if item.layout() is not None:
            found += _laid_out(item.layout())
        elif item.widget() is not None:
            widget = item.widget()
            if isinstance(widget, CONTAINERS) and widget.layout() is not None:
                found += _laid_out(widget.layout())
            else:
                found.append(widget)
    return found


def _rect_in(widget: QWidget, content: QWidget) -> QRect:
    return QRect(widget.mapTo(content, widget.rect().topLeft()), widget.size())


def test_every_page_fits_a_laptop_screen_and_no_two_widgets_overlap(qtbot):
    dialog = AppSettingsDialog(
        AppSettings(
            model_folders=["/models/a", "/models/b"],
            servers=["http://gpu-box:8080", "http://127.0.0.1:1234"],
            rpc_workers=["192.168.1.20:50052"],
        )
    )
    qtbot.addWidget(dialog)
    dialog.resize(fitted_size(LAPTOP_AVAILABLE))
    dialog.show()
    qtbot.waitExposed(dialog)
    assert dialog.width() <= LAPTOP_AVAILABLE.width() and dialog.height() <= LAPTOP_AVAILABLE.height()
    assert dialog.minimumSizeHint().height() <= LAPTOP_AVAILABLE.height()
    assert dialog.pages.page_names() == list(AppSettingsDialog.PAGES)

    for name in dialog.pages.page_names():
        dialog.pages.show_page(name)
        qtbot.wait(10)
        scroll: QScrollArea = dialog.pages.pages[name]
        assert scroll.isVisible(), name
        content = scroll.widget()
        # Nothing sideways: the page is as wide as the room it gets, so only up and down scroll.
        assert content.width() <= scroll.viewport().width(), name
        widgets = [w for w in _laid_out(content.layout()) if w.isVisible()]
        assert widgets, name
        for widget in widgets:
            hint = widget.minimumSizeHint()
            if hint.isValid():
                assert widget.height() >= hint.height(), (name, widget)  # never squeezed onto its neighbours
        for a, b in combinations(widgets, 2):
            assert not _rect_in(a, content).intersects(_rect_in(b, content)), (name, a, b)


def test_the_servers_list_is_not_covered_by_its_input_row(qtbot):
    dialog = AppSettingsDialog(AppSettings(servers=[f"http://box-{n}:8080" for n in range(6)]))
    qtbot.addWidget(dialog)
    dialog.resize(fitted_size(QSize(1024, 600)))  # smaller still: the page scrolls instead
    dialog.show()
    dialog.pages.show_page("Servers and RPC")
    qtbot.waitExposed(dialog)
    remote = dialog.remote
    servers = _rect_in(remote.servers, remote)
    assert servers.bottom() < _rect_in(remote.server_url, remote).top()
    assert remote.servers.height() >= remote.servers.minimumHeight()


def test_the_appearance_page_offers_system_light_and_dark(qtbot):
    dialog = AppSettingsDialog(AppSettings(theme="dark"))
    qtbot.addWidget(dialog)
    assert [dialog.theme.itemText(i) for i in range(dialog.theme.count())] == ["System", "Light", "Dark"]
    assert dialog.settings().theme == "dark"
    dialog.theme.setCurrentIndex(0)
    assert dialog.settings().theme == "system"
