"""A DataTable for a big, busy list (Workloads' pods: a thousand, a hundred changes a second): a changed row
repaints that row alone, and a row out of sight changes without a repaint at all.

Textual's ``update_cell`` bumps the table's update count, which every render cache (cells, rows, lines, row
offsets) is keyed on, and repaints the whole table: after one change the next frame renders every cell in
sight anew, whatever made the frame (a key press, the log pane). ``set_cells`` instead puts the values in and
forgets only that row's cached renders (its cells and lines), then repaints its line; a row out of sight is
only marked, and forgotten just before it is drawn again (``render_lines``). Written against Textual 8.2.8's
DataTable internals (pinned): ``_data``, the render caches, ``_row_locations``.
"""

from __future__ import annotations

from typing import Any

from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

__all__ = ["PatchTable"]


class PatchTable(DataTable[Any]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unseen: set[RowKey] = set()  # rows changed out of sight: their cached renders are stale

    def _in_sight(self, index: int) -> bool:
        top = int(self.scroll_y)
        return top <= index < top + self.size.height

    def set_cells(self, row: str, cells: dict[str, Any]) -> None:
        """Put ``cells`` (column key → value) into ``row`` (a key the table holds); repaint that row if it is
        in sight, else nothing until it scrolls in. Column widths stay as they are (``update_width=False``)."""
        key = RowKey(row)
        index = self._row_locations.get(key)
        data = self._data.get(key)
        if index is None or data is None:
            raise KeyError(row)
        for column, value in cells.items():
            if ColumnKey(column) not in self._column_locations:
                raise KeyError(column)
            data[ColumnKey(column)] = value
        if self._in_sight(index):
            self._forget({key})
            self.refresh_row(index)
        else:
            self._unseen.add(key)

    def _forget(self, keys: set[RowKey]) -> None:
        """Drop the cached renders of ``keys``' rows (keyed by row first) and the per-line and per-index caches
        (cheap to rebuild from the rows': only lines repainted are asked for again)."""
        caches: tuple[Any, ...] = (self._cell_render_cache, self._row_render_cache)
        for cache in caches:
            for k in [k for k in cache.keys() if k[0] in keys]:
                cache.discard(k)
        self._row_renderable_cache.clear()
        self._line_cache.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._unseen:  # rows changed out of sight that are in sight now: forget their old renders first
            top = int(self.scroll_y)
            here = {
                k for y in range(top, top + self.size.height) if (k := self._row_locations.get_key(y)) in self._unseen
            }
            if here:
                self._unseen -= here
                self._forget(here)
        return super().render_lines(crop)

    def clear(self, columns: bool = False) -> PatchTable:
        self._unseen.clear()
        super().clear(columns)
        return self
