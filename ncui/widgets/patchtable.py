"""A DataTable for a big, busy list (Workloads' pods: a thousand, a hundred changes a second): a changed row
repaints that row alone, and a row out of sight changes without a repaint at all.

Textual's ``update_cell`` bumps the table's update count, which every render cache (cells, rows, lines, row
offsets) is keyed on, and repaints the whole table: after one change the next frame renders every cell in
sight anew, whatever made the frame (a key press, the log pane). ``set_cells`` instead puts the values in and
forgets only the cached renders of those cells and of that row's line, then repaints the line; a row out of
sight is only marked, and forgotten just before it is drawn again (``render_lines``).

Written against Textual 8.2.8's DataTable internals, the one place left in ncui's widgets that reads Textual's
private attributes (tests/test_textual_api.py lists them): ``_data`` (a cell's value put in place; the only
public way, ``update_cell``, bumps the update count) and the four render caches (``_cell_render_cache``,
``_row_render_cache``, ``_row_renderable_cache``, ``_line_cache``: the entries of the cells changed,
forgotten). Rows, columns and sizes are read through the public API. Users get a range of Textual: under a
version not in ``PATCHED_ON`` (those the suite has run on; the test extra pins one of them) ``set_cells`` takes
the public ``update_cell``, every cell in sight drawn anew on a change: slower on a busy table, never stale.
"""

from __future__ import annotations

from typing import Any

import textual
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowDoesNotExist, RowKey

__all__ = ["PatchTable", "PATCHED_ON"]

PATCHED_ON = frozenset({"8.2.8"})  # Textual versions whose DataTable internals set_cells was tested against


class PatchTable(DataTable[Any]):
    patching = textual.__version__ in PATCHED_ON  # else the public update_cell

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._unseen: dict[RowKey, set[ColumnKey]] = {}  # cells changed out of sight: their cached renders are stale

    def _in_sight(self, index: int) -> bool:
        """``index`` is among the rows in sight, or next to them: the height inside the table's border and
        padding (``container_size``, kept by layout) is at least its rows', and costs no lookup of its region
        (``size`` does, in the compositor's map: a hundred changes a second each asked it)."""
        top = int(self.scroll_y)
        return top <= index < top + self.container_size.height

    def set_cells(self, row: str, cells: dict[str, Any]) -> None:
        """Put ``cells`` (column key → value) into ``row`` (a key the table holds); repaint that row if it is
        in sight, else nothing until it scrolls in. Column widths stay as they are (``update_width=False``)."""
        key = RowKey(row)
        try:
            index = self.get_row_index(key)
        except RowDoesNotExist:
            raise KeyError(row) from None
        columns = {ColumnKey(c) for c in cells}
        if not all(c in self.columns for c in columns):
            raise KeyError(cells)
        if not self.patching:
            for column, value in cells.items():
                self.update_cell(key, ColumnKey(column), value)
            return
        data = self._data[key]
        for column, value in cells.items():
            data[ColumnKey(column)] = value
        if self._in_sight(index):
            self._forget({key: columns})
            self.refresh_row(index)
        else:
            self._unseen.setdefault(key, set()).update(columns)

    def _forget(self, cells: dict[RowKey, set[ColumnKey]]) -> None:
        """Drop the cached renders of ``cells`` (row → columns) and of their rows' lines, and the per-index and
        per-line caches (cheap to rebuild from the rows' and cells': only the lines repainted are asked again)."""
        stale = [k for k in self._cell_render_cache.keys() if k[0] in cells and k[1] in cells[k[0]]]
        for k in stale:
            self._cell_render_cache.discard(k)
        for r in [r for r in self._row_render_cache.keys() if r[0] in cells]:
            self._row_render_cache.discard(r)
        self._row_renderable_cache.clear()
        self._line_cache.clear()

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._unseen:  # rows changed out of sight that are in sight now: forget their old renders first
            top, rows = int(self.scroll_y), self.ordered_rows
            keys = (rows[y].key for y in range(top, min(top + self.size.height, len(rows))))
            here = {k: self._unseen.pop(k) for k in keys if k in self._unseen}
            if here:
                self._forget(here)
        return super().render_lines(crop)

    def clear(self, columns: bool = False) -> PatchTable:
        self._unseen.clear()
        super().clear(columns)
        return self
