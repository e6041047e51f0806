"""A plotext chart drawn into a Static: sized to the widget, redrawn on resize and on new data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.timer import Timer
from textual.widgets import Static

from .throttle import Throttle


@dataclass(frozen=True)
class Series:
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    label: str = ""
    color: str = "cyan"


@dataclass(frozen=True)
class HLine:
    y: float
    color: str = "red"
    label: str = ""


@dataclass(frozen=True)
class ChartData:
    series: tuple[Series, ...] = ()
    hlines: tuple[HLine, ...] = ()
    xticks: tuple[tuple[float, ...], tuple[str, ...]] = ((), ())
    ylabel: str = ""
    empty: str = "no data yet"


class Chart(Static):
    DEFAULT_CSS = "Chart { height: 10; }"

    def __init__(self, *, id: str | None = None, classes: str = "", min_interval: float = 0.0) -> None:
        super().__init__("", id=id, classes=classes)
        self._data = ChartData()
        # what is on screen: the data at the size it was drawn at (None: data came while hidden or too small to
        # plot, so "no data yet" stands for it; drawn as soon as it shows, or on r, not only on a resize)
        self._drawn: tuple[tuple[int, int], ChartData] | None = ((0, 0), self._data)
        # a live log's chart plots at most every min_interval on new data
        self._redraw = Throttle(self, self._draw, min_interval)
        self._owing: Timer | None = None

    @property
    def pending(self) -> bool:
        """New data is in and its redraw is put off (at most ``min_interval``)."""
        return self._redraw.pending

    def set_data(self, data: ChartData) -> None:
        if data == self._data and self._drawn is not None:
            return
        self._data = data
        self._redraw()

    def on_resize(self) -> None:
        self._redraw.now()

    def _owe(self) -> None:
        """Data came while the chart was hidden (its view switched away: size 0) or too small: drawn once it has
        room. Textual sends no resize when a view shows again at the size it had, so the chart looks (4×/s) while
        it owes a drawing, and stops once drawn."""
        if self._owing is None and self.is_mounted:
            self._owing = self.set_interval(0.25, self._owed)

    def _owed(self) -> None:
        w, h = self.content_size.width, self.content_size.height
        if self._drawn is None and w >= 20 and h >= 5:
            self._redraw.now()
        if self._drawn is not None and self._owing is not None:
            self._owing.stop()
            self._owing = None

    def _draw(self) -> bool:
        """Draw the data; False when there was nothing to plot (plotting is what min_interval spaces out)."""
        w, h = self.content_size.width, self.content_size.height
        d = self._data
        has_data = any(s.xs for s in d.series)
        if w < 20 or h < 5 or not has_data:
            self.update(Text(d.empty, style="dim"), layout=False)  # the chart's size is its CSS's, not its text's
            self._drawn = None if has_data else ((w, h), d)  # data not drawn: owed when it shows
            if has_data:
                self._owe()
            return False
        self._drawn = ((w, h), d)
        import plotext as plt  # 30 ms: only when a chart is first drawn

        plt.clf()
        plt.plotsize(w, h)
        plt.theme("clear")
        for s in d.series:
            if s.xs:
                xs, ys = downsample(s.xs, s.ys, max(10, 2 * (w - 8)))
                plt.plot(xs, ys, marker="braille", color=s.color, label=s.label or None)
        for line in d.hlines:
            plt.hline(line.y, line.color)
        ys = [y for s in d.series for y in s.ys] + [line.y for line in d.hlines]
        lo, hi = min(ys), max(ys)
        if hi - lo <= 1e-9 * max(1.0, abs(hi)):  # flat: plotext would span ±50% (125–375 for $250); ±5% here
            pad = max(abs(hi) * 0.05, 0.01)
            plt.ylim(lo - pad, hi + pad)
        if d.xticks[0]:
            plt.xticks(list(d.xticks[0]), list(d.xticks[1]))
        if d.ylabel:
            plt.ylabel(d.ylabel)
        self.update(Text.from_ansi(plt.build().replace("\x1b[0m\n", "\n")), layout=False)
        return True


def downsample(xs: Sequence[float], ys: Sequence[float], n: int) -> tuple[list[float], list[float]]:
    """At most ``n`` points: the mean of each run of neighbours (a braille cell holds two columns)."""
    if len(xs) <= n:
        return list(xs), list(ys)
    out_x: list[float] = []
    out_y: list[float] = []
    size = len(xs) / n
    for i in range(n):
        a, b = int(i * size), max(int(i * size) + 1, int((i + 1) * size))
        out_x.append(sum(xs[a:b]) / (b - a))
        out_y.append(sum(ys[a:b]) / (b - a))
    return out_x, out_y
