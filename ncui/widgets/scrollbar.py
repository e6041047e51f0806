"""Scrollbars in whole cells, for every scrollbar of the app (Textual's documented ``ScrollBar.renderer`` hook)."""

from __future__ import annotations

from typing import ClassVar

from textual.scrollbar import ScrollBar, ScrollBarRender


class CellScrollBarRender(ScrollBarRender):
    """Scrollbars in whole cells. Textual draws a thumb's ends with eighth blocks (▂, ▅, ▊) for smoothness;
    beside a chart's or a list's border, and in a terminal of few colours, those read as stray blocks."""

    VERTICAL_BARS: ClassVar[list[str]] = [" "] * 8
    HORIZONTAL_BARS: ClassVar[list[str]] = [" "] * 8


ScrollBar.renderer = CellScrollBarRender  # every scrollbar of the app (Textual's documented hook)


def install() -> None:
    ScrollBar.renderer = CellScrollBarRender  # every scrollbar of the app
