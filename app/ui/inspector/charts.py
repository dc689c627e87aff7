"""The inspector's four charts, drawn with pyqtgraph from a ReplyInspection (app/replies/inspector_data.py).

pyqtgraph gives axes with sensible ticks, legends, and panning and zooming along the rounds of a long reply; Qt's
own chart module (QtCharts) is not in PySide6-Essentials. It is imported only when an inspector opens, so the
window starts without it. GUI thread only.
"""

from __future__ import annotations

from typing import Optional, Sequence

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont

from app.replies.inspector_data import (
    ANY_DRAFTER,
    DRAFTER_NAMES,
    DRAFTERS,
    HISTORY,
    MODEL,
    NGRAM,
    PLAIN,
    ReplyInspection,
)
from app.ui.widgets import style

REFUSED_ALPHA = 70  # drafted-but-refused shows as a pale bar behind the kept one
LEGEND_NAMES = {**DRAFTER_NAMES, ANY_DRAFTER: "drafted (drafter not recorded)"}

pg.setConfigOptions(antialias=True)


def drafter_colors() -> dict[str, str]:
    """Each drafter's colour in the current theme: the transcript's own highlights (the Okabe-Ito palette's sky
    blue, orange and bluish green, distinct under the common colour-vision deficiencies), opaque here; grey for
    plain rounds; Okabe-Ito reddish purple for bars from stats alone, which do not say who drafted."""
    theme = style.current()
    opaque = {origin: QColor(*rgba[:3]).name() for origin, rgba in theme.highlights.items()}
    return {
        MODEL: opaque["draft"],
        NGRAM: opaque["ngram"],
        HISTORY: opaque["history"],
        PLAIN: theme.chart_plain,
        ANY_DRAFTER: theme.chart_any,
    }


def _color(drafter: str, alpha: int = 255) -> QColor:
    color = QColor(drafter_colors()[drafter])
    color.setAlpha(alpha)
    return color


class IntegerAxis(pg.AxisItem):
    """An axis of counts (tokens, rounds, positions): ticks only at whole numbers."""

    def tickValues(self, minVal, maxVal, size):  # noqa: N802 - pyqtgraph's override
        return [
            (max(spacing, 1.0), [v for v in values if float(v).is_integer()])
            for spacing, values in super().tickValues(minVal, maxVal, size)
        ]


class Chart(pg.PlotWidget):
    """One chart; remembers its bar series by key ("model:kept"...) and its verdict text, for tests to read."""

    def __init__(self, integer_x: bool):
        axes = {"left": IntegerAxis("left")}
        if integer_x:
            axes["bottom"] = IntegerAxis("bottom")
        super().__init__(background=style.SURFACE, axisItems=axes)
        self.bar_series: dict[str, pg.BarGraphItem] = {}
        self.verdict: Optional[pg.TextItem] = None


def _new_plot(title: str, x_label: str, y_label: str, integer_x: bool = True) -> Chart:
    """A quiet chart in the app's colours: no context menu, no auto-range button, zoom only where asked."""
    plot = Chart(integer_x)
    plot.setMinimumSize(320, 180)  # four fit a 1366x768 screen with their captions, above the fold
    item = plot.getPlotItem()
    item.setTitle(title, color=style.TEXT, size="10pt")
    item.setMenuEnabled(False)
    item.hideButtons()
    item.setMouseEnabled(x=False, y=False)
    for name, label in (("bottom", x_label), ("left", y_label)):
        axis = item.getAxis(name)
        axis.setPen(pg.mkPen(style.BORDER))
        axis.setTextPen(pg.mkPen(style.TEXT_MUTED))
        axis.setLabel(label, color=style.TEXT_MUTED)
    return plot


def _bars(
    plot: Chart,
    key: str,
    x: Sequence[float],
    heights: Sequence[float],
    width: float,
    brush: QColor,
    pen: Optional[QColor] = None,
    y0: Optional[Sequence[float]] = None,
) -> None:
    if not x:
        return
    options = dict(x=x, height=heights, width=width, brush=brush, pen=pg.mkPen(pen or brush))
    if y0 is not None:
        options["y0"] = y0
    bar = pg.BarGraphItem(**options)
    plot.bar_series[key] = bar
    plot.addItem(bar)


def rounds_chart(inspection: ReplyInspection) -> Chart:
    """Every round as a bar: drafted (pale) behind kept (solid), in its drafter's colour; plain rounds are gaps."""
    plot = _new_plot("Each round: drafted (pale) and kept", "round (gaps are plain rounds)", "tokens")
    for drafter in DRAFTERS:
        bars = [bar for bar in inspection.bars if bar.drafter == drafter and bar.drafted]
        x = [bar.index + 1 for bar in bars]
        _bars(
            plot,
            f"{drafter}:drafted",
            x,
            [bar.drafted for bar in bars],
            0.8,
            _color(drafter, REFUSED_ALPHA),
            _color(drafter),
        )
        _bars(plot, f"{drafter}:kept", x, [bar.kept for bar in bars], 0.8, _color(drafter))
    item = plot.getPlotItem()
    # A long reply has hundreds of rounds: drag and wheel along them, never below zero.
    item.setMouseEnabled(x=True, y=False)
    item.setXRange(0, len(inspection.bars) + 1, padding=0)
    item.getViewBox().setLimits(xMin=0, xMax=len(inspection.bars) + 1, yMin=0)
    return plot


def positions_chart(inspection: ReplyInspection) -> Chart:
    """Acceptance by draft position: the share of rounds that drafted at least i tokens whose i-th was kept."""
    plot = _new_plot("Kept by draft position", "position in the draft", "kept (% of rounds reaching it)")
    drafters = [d for d in DRAFTERS if any(p.drafter == d for p in inspection.positions)]
    width = 0.8 / max(1, len(drafters))
    for n, drafter in enumerate(drafters):
        points = [p for p in inspection.positions if p.drafter == drafter]
        offset = (n - (len(drafters) - 1) / 2) * width
        _bars(
            plot,
            f"{drafter}:position",
            [p.position + offset for p in points],
            [100 * p.fraction for p in points],
            width * 0.9,
            _color(drafter),
        )
    plot.getPlotItem().setYRange(0, 105, padding=0)
    return plot


def time_chart(inspection: ReplyInspection) -> Chart:
    """Tokens against time, beside the line plain decoding would have drawn, with what speculation saved or cost."""
    plot = _new_plot("Tokens against time", "seconds (rounds only, not the prompt)", "tokens", integer_x=False)
    # Both lines rise from the origin to the reply's last token, so the bottom right is free for the legend.
    plot.addLegend(offset=(-10, -10), labelTextColor=style.TEXT_MUTED)
    item = plot.getPlotItem()
    item.plot(inspection.times, inspection.tokens, pen=pg.mkPen(style.ACCENT, width=2), name="this reply")
    plain = inspection.plain
    if plain is not None:
        item.plot(
            list(plain.times),
            inspection.tokens,
            name=f"plain decoding ({plain.token_s:.3f} s/token)",
            pen=pg.mkPen(style.TEXT_MUTED, width=1.5, style=Qt.PenStyle.DashLine),
        )
        verdict = pg.TextItem(plain.verdict(), color=style.TEXT, anchor=(0, 0))
        font = QFont()
        font.setPointSizeF(11)
        font.setBold(True)
        verdict.setFont(font)
        verdict.setPos(0, max(inspection.tokens[-1], 1))
        item.addItem(verdict)
        plot.verdict = verdict
    return plot


def histogram_chart(inspection: ReplyInspection) -> Chart:
    """Rounds per draft length, stacked by drafter (length 0: plain rounds)."""
    plot = _new_plot("Draft lengths", "tokens drafted in the round", "rounds")
    lengths = sorted(inspection.histogram)
    stacked = {length: 0 for length in lengths}
    for drafter in (PLAIN, *DRAFTERS, ANY_DRAFTER):
        rows = [(length, inspection.histogram[length].get(drafter, 0)) for length in lengths]
        rows = [(length, count) for length, count in rows if count]
        _bars(
            plot,
            f"{drafter}:histogram",
            [length for length, _ in rows],
            [count for _, count in rows],
            0.8,
            _color(drafter),
            y0=[stacked[length] for length, _ in rows],
        )
        for length, count in rows:
            stacked[length] += count
    return plot


def legend_html(drafters: list[str]) -> str:
    """One legend for all the charts: a swatch and a name per drafter shown."""
    swatch = '<span style="background:{0}; color:{0};">&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;{1}'
    colors = drafter_colors()
    return "&nbsp;&nbsp;&nbsp;&nbsp;".join(swatch.format(colors[d], LEGEND_NAMES[d]) for d in drafters)


def drawn_bars(plot: Chart) -> dict[str, list[tuple[float, float, float]]]:
    """What a chart's bars show, by series ("model:kept"...): (x, bottom, height) per bar, as drawn."""
    out = {}
    for key, item in plot.bar_series.items():
        opts = item.opts
        bottoms = opts["y0"] if opts.get("y0") is not None else [0] * len(opts["x"])
        out[key] = [(float(x), float(b), float(h)) for x, b, h in zip(opts["x"], bottoms, opts["height"])]
    return out


def drawn_lines(plot: Chart) -> dict[str, tuple[list[float], list[float]]]:
    """A chart's lines by legend name: their x and y values, as drawn."""
    out = {}
    for item in plot.getPlotItem().listDataItems():
        x, y = item.getData()
        out[item.name()] = ([float(v) for v in x], [float(v) for v in y])
    return out
