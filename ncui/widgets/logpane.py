"""A log view for huge, fast logs: ``LogLines``, a Line API scroll view on Textual's public API, with a line
cap, fed in batches.

- ``write_batch(lines)`` takes a whole batch (plain strings, or ``(timestamp, text)`` pairs) in one
  ``LogLines.write_lines`` call: one call per line costs ~1,000 lines/s and hundreds of MB with Textual's
  ``Log`` (PERF.md), and a batch is what a stream reader hands over.
- Follow (auto-scroll) on/off, a substring filter, wrap on/off, timestamps on/off, jump to the end.
  The filter, wrap and timestamp toggles re-render from ``source`` (the follower's ring buffer), since
  the view keeps only the newest ``max_lines`` lines.
- Every batch repaints the visible region (at most every ``min_paint_interval``): Textual 8.2.8's
  ``Log(max_lines=N)``, which this pane was once built on, stops redrawing once the cap is reached (PERF.md).
- Wrap is done here: a line longer than the pane's width is cut into rows of that width (at a space where one
  is near the end of the row) before it is written, so a wrapped line counts as several of the view's lines;
  a resize re-renders. A batch whose lines all fit (a training log) goes as it came.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.cache import LRUCache
from textual.events import Resize
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input

from .field import Field
from .throttle import Throttle

Entry = str | tuple[str, str]  # a line, or (timestamp, text)

_controls = re.compile("[\u0000-\u0014]").sub


def shown_text(line: str) -> str:
    """A line as drawn: tabs expanded, C0 control characters up to DC4 as U+FFFD (as Textual's ``Log`` draws
    them; the follower has cleaned its lines of control sequences already)."""
    return _controls("\ufffd", line.expandtabs())


def widest(lines: Sequence[str]) -> int:
    """The widest of ``lines`` as drawn, in cells. Of a plain ASCII batch without tabs (a training log) the
    width of a line is its length: one pass over the batch, not a measure per line."""
    if not lines:
        return 0
    joined = "".join(lines)
    if joined.isascii() and "\t" not in joined:
        return max(map(len, lines))
    return max(len(x) if x.isascii() and "\t" not in x else cell_len(shown_text(x)) for x in lines)


class LogLines(ScrollView, can_focus=True):
    """The pane's lines: a Line API scroll view of its own (``render_line(y)`` and ``virtual_size``, Textual's
    public API, as toolong's ``LogLines`` is), not Textual's ``Log``, whose private drawing and sizing methods
    the pane once overrode. It looks and scrolls as ``Log`` does (its CSS, bindings, text selection).

    - ``write_lines(lines)`` appends a batch: lines from the pane, one line each (no newline), mostly ASCII; of
      a batch longer than ``max_lines`` only the newest ``max_lines`` are kept, and the oldest go past the cap.
      Widths are measured in place, once per batch (``Log`` starts a thread worker per write for it, the cost
      of a fast log: PERF.md).
    - The whole visible region is repainted after every batch, at most every ``min_paint_interval``: a burst
      writes a batch every few dozen milliseconds, a repaint costs ~10 ms, and nobody reads lines that fly by
      faster than a few frames a second. (Textual 8.2.8's ``Log(max_lines=N)`` stopped redrawing once its cap
      was reached, PERF.md: a repaint of the region itself never depends on line numbers.)
    - A line is drawn as one segment in the widget's style, cached by its text (so nothing to re-key when
      lines are pruned or cleared); the style is worked out once per repaint, not once per line.
    """

    ALLOW_SELECT = True
    DEFAULT_CSS = """
    LogLines {
        background: $surface;
        color: $text;
        overflow: scroll;
        &:focus {
            background-tint: $foreground 5%;
        }
    }
    """

    def __init__(
        self,
        max_lines: int | None = None,
        auto_scroll: bool = True,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.max_lines = max_lines
        self.auto_scroll = auto_scroll  # new lines scroll to the end (when the view is at the end)
        self._lines: list[str] = []
        self._width = 0  # the widest line held, in cells
        self._strips: LRUCache[tuple[str, Style], Strip] = LRUCache(2048)
        self._paint = Throttle(self, self.refresh, 0.2)
        self._frame: tuple[Style, Selection | None] | None = None  # during a repaint: its style and selection

    @property
    def lines(self) -> Sequence[str]:
        """The lines held (read only: changing it changes nothing on screen)."""
        return self._lines

    # ---- feeding ---------------------------------------------------------------------------------------

    def write_lines(self, lines: Sequence[str], scroll_end: bool | None = None) -> None:
        """Append a batch; scroll to its end if ``scroll_end`` (``auto_scroll`` when None) and the view was at
        the end, and the scrollbar is not held."""
        if not lines:
            return
        cap = self.max_lines
        new = lines[-cap:] if cap is not None and len(lines) > cap else lines
        at_end = self.is_vertical_scroll_end
        held = self._lines
        held.extend(new)
        if cap is not None and len(held) > cap:
            del held[: len(held) - cap]
        self._width = max(self._width, widest(new))
        self._resize()
        follow = self.auto_scroll if scroll_end is None else scroll_end
        if follow and at_end and not self.is_vertical_scrollbar_grabbed:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.paint()

    def clear(self) -> None:
        """Drop every line, and repaint at once."""
        self._lines.clear()
        self._width = 0
        self._resize()
        self.refresh()

    def _resize(self) -> None:
        """The virtual size to the lines held. Assigning ``virtual_size`` lays out the whole screen (~25 ms a
        batch on a busy screen, while a log grows to its cap): when the log only grows and both scrollbars
        are shown already (``overflow: scroll``; the view's own size is its CSS's), only the scrollbars'
        extents follow, set on them (tests/test_kc_logpane.py: what is drawn is what a layout then draws);
        anything else (a clear, a batch before the view's first layout) takes the layout."""
        size, old = Size(self._width, len(self._lines)), self.virtual_size
        if size == old:
            return
        if size.width >= old.width and size.height >= old.height and self.scrollbars_shown:
            self.set_reactive(ScrollView.virtual_size, size)
            self.vertical_scrollbar.window_virtual_size = size.height
            self.horizontal_scrollbar.window_virtual_size = size.width
        else:
            self.virtual_size = size

    @property
    def scrollbars_shown(self) -> bool:
        return self.show_vertical_scrollbar and self.show_horizontal_scrollbar

    # ---- repaints --------------------------------------------------------------------------------------

    def paint(self) -> None:
        """Repaint what is on screen: now, or when ``min_paint_interval`` has passed since the last repaint."""
        self._paint()

    @property
    def min_paint_interval(self) -> float:
        return self._paint.interval

    @min_paint_interval.setter
    def min_paint_interval(self, seconds: float) -> None:
        self._paint.interval = seconds

    @property
    def paint_pending(self) -> bool:
        return self._paint.pending

    # ---- drawing (the Line API) ------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        self._frame = (self.rich_style, self.text_selection)  # once per repaint, not once per line
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        style, selection = self._frame or (self.rich_style, self.text_selection)
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        if index >= len(self._lines):
            return Strip.blank(width, style)
        strip = self._strip(index, style) if selection is None else self._selected_strip(index, style, selection)
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, index)

    def _strip(self, index: int, style: Style) -> Strip:
        raw = self._lines[index]
        key = (raw, style)
        strip = self._strips.get(key)
        if strip is None:
            text = shown_text(raw)
            # one plain line in the widget's style: one segment (what Text(...).render gives, without Text)
            strip = Strip([Segment(text, style)], len(text) if text.isascii() else cell_len(text))
            self._strips[key] = strip
        return strip

    def _selected_strip(self, index: int, style: Style, selection: Selection) -> Strip:
        text = Text(shown_text(self._lines[index]), no_wrap=True)
        text.stylize(style)
        if (span := selection.get_span(index)) is not None:
            start, end = span
            text.stylize(
                self.screen.get_component_rich_style("screen--selection"), start, len(text) if end == -1 else end
            )
        return Strip(text.render(self.app.console), text.cell_len)

    # ---- text selection (the mouse) --------------------------------------------------------------------

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(self._lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()


__all__ = ["Entry", "LogLines", "LogPane", "wrap_lines"]


def wrap_lines(lines: list[str], width: int) -> list[str]:
    """``lines`` cut into rows of at most ``width`` cells: at the last space of a row when it is in the row's
    second half, else at the width. Lines that fit are passed through (the list itself when all do)."""
    if not lines or max(map(len, lines)) <= width:
        return lines
    out: list[str] = []
    for line in lines:
        while len(line) > width:
            cut = line.rfind(" ", width // 2, width + 1)
            if cut <= 0:
                out.append(line[:width])
                line = line[width:]
            else:
                out.append(line[:cut])
                line = line[cut + 1 :]
        out.append(line)
    return out


def _nonempty(lines: list[str]) -> list[str]:
    """An empty line is held as a space (as Textual's ``Log``, which drops empty lines, had it shown; what the
    pane's readers and tests see)."""
    return [x or " " for x in lines] if "" in lines else lines


class LogPane(Widget, can_focus=False):
    DEFAULT_CSS = """
    LogPane { height: 1fr; layout: vertical; }
    LogPane > LogLines { height: 1fr; }
    LogPane > #logpane-filter { dock: bottom; display: none; }
    LogPane.-filtering > #logpane-filter { display: block; }
    LogPane > #logpane-status { dock: bottom; height: 1; display: none; color: $text-muted; }
    LogPane.-status > #logpane-status { display: block; }
    """

    BINDINGS = [
        Binding("f", "toggle_follow", "Follow", id="logpane.follow", tooltip="Follow the end of the log"),
        Binding("w", "toggle_wrap", "Wrap", id="logpane.wrap", tooltip="Wrap long lines"),
        Binding("t", "toggle_timestamps", "Times", id="logpane.timestamps", tooltip="Show timestamps"),
        Binding("slash", "filter", "Filter", id="logpane.filter", tooltip="Show only lines containing a text"),
        Binding("G,end", "jump_end", "End", id="logpane.end", tooltip="Jump to the newest line and follow"),
    ]

    follow: reactive[bool] = reactive(True)
    wrap: reactive[bool] = reactive(False)
    timestamps: reactive[bool] = reactive(False)
    filter_text: reactive[str] = reactive("")

    def __init__(
        self,
        source: Callable[[], Sequence[Entry]] | None = None,
        *,
        max_lines: int = 20_000,
        wrap: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.source = source
        self.max_lines = max_lines
        self.written = 0  # lines handed to the view since the last re-render
        self._width = 0
        self.set_reactive(LogPane.wrap, wrap)

    def compose(self) -> ComposeResult:
        from textual.widgets import Static

        yield LogLines(max_lines=self.max_lines, auto_scroll=True, id="logpane-log")
        yield Static("", id="logpane-status", markup=False)
        yield Field(placeholder="filter: show lines containing…", id="logpane-filter")

    def set_status(self, text: str) -> None:
        """A line under the log about the stream itself (waiting, resuming, ended); '' hides it."""
        if not self.is_mounted:
            return
        from textual.widgets import Static

        self.query_one("#logpane-status", Static).update(text)
        if bool(text) != self.has_class("-status"):
            self.set_class(bool(text), "-status")
            if self.follow:  # the log is a row shorter or taller now: its end stays in view once laid out
                log = self.lines_log
                log.call_after_refresh(log.scroll_end, animate=False, immediate=True, x_axis=False)

    @property
    def lines_log(self) -> LogLines:
        """The pane's lines view (not ``log``: that is Textual's own logger on every widget)."""
        return self.query_one(LogLines)

    # ---- feeding --------------------------------------------------------------------------------

    def _format(self, lines: Sequence[Entry]) -> list[str]:
        """The lines to show of ``lines``: the newest ``max_lines`` of those the filter keeps, with their
        timestamps when asked for, wrapped when asked for."""
        flt, stamps, cap = self.filter_text, self.timestamps, self.max_lines
        if not flt and not stamps:  # the usual case, a whole batch at a time
            tail = lines[-cap:] if len(lines) > cap else lines
            texts = _nonempty([e if isinstance(e, str) else e[1] for e in tail])
            return self._wrapped(texts) if self.wrap else texts
        out: list[str] = []
        for e in reversed(lines):  # newest first, so a long source stops at the cap
            if isinstance(e, tuple):
                ts, text = e
                if stamps and ts:
                    text = f"{ts} {text}"
            else:
                text = e
            if flt and flt not in text:
                continue
            out.append(text or " ")
            if len(out) >= cap:
                break
        out.reverse()
        return self._wrapped(out) if self.wrap else out

    def _wrapped(self, lines: list[str]) -> list[str]:
        """``lines`` wrapped at the view's width (the newest ``max_lines`` rows)."""
        out = wrap_lines(lines, max(10, self.lines_log.scrollable_content_region.width or self.size.width or 80))
        return out[-self.max_lines :] if len(out) > self.max_lines else out

    def write_entries(self, entries: list[str]) -> None:
        """Append a batch of the follower's entries ("<timestamp> <text>", its ``on_entries``). Of a burst
        only the newest ``max_lines`` can be shown: only those are split (a filter looks further back)."""
        if not entries or not self.is_mounted:
            return
        from ..kube.logs import entry_texts, split_entry

        if self.filter_text or self.timestamps:
            self.write_batch(list(map(split_entry, entries)))
            return
        out = _nonempty(entry_texts(entries[-self.max_lines :], getattr(entries, "usual", False)))
        self._show(self._wrapped(out) if self.wrap else out)

    def write_batch(self, lines: Sequence[Entry]) -> None:
        """Append a batch (from the follower's ``on_lines`` / ``on_entries``)."""
        if not lines or not self.is_mounted:
            return
        out = self._format(lines)
        if out:
            self._show(out)

    def _show(self, out: list[str]) -> None:
        # LogLines repaints the visible region after every batch (at most every min_paint_interval), capped or
        # not (tests/test_kc_logpane.py).
        self.lines_log.write_lines(out, scroll_end=self.follow)
        self.written += len(out)

    def rerender(self) -> None:
        """Show ``source``'s lines again (after a filter/wrap/timestamp change), the newest ``max_lines``."""
        if not self.is_mounted:
            return
        log = self.lines_log
        log.clear()  # (repainted at once)
        self.written = 0
        if self.source is None:
            return
        entries = list(self.source())
        out = self._format(entries)
        if len(out) > self.max_lines:
            out = out[-self.max_lines :]
        if out:
            log.write_lines(out, scroll_end=self.follow)
        self.written = len(out)
        log.refresh()  # a re-render shows at once, whatever the batches' repaint interval
        if self.follow:  # (a re-render on a resize: the end is known only once the new size is laid out)
            log.call_after_refresh(log.scroll_end, animate=False, immediate=True, x_axis=False)

    def clear(self) -> None:
        self.lines_log.clear()
        self.written = 0

    # ---- toggles ------------------------------------------------------------------------------------

    def watch_follow(self, follow: bool) -> None:
        if self.is_mounted:
            self.lines_log.auto_scroll = follow
            if follow:
                self.lines_log.scroll_end(animate=False, immediate=True, x_axis=False)

    def watch_wrap(self, old: bool, new: bool) -> None:
        if old != new:
            self.rerender()

    def watch_timestamps(self, old: bool, new: bool) -> None:
        if old != new:
            self.rerender()

    def watch_filter_text(self, old: str, new: str) -> None:
        if old != new:
            self.rerender()

    def on_resize(self, event: Resize) -> None:
        if self.wrap and event.size.width != self._width:
            self._width = event.size.width
            self.rerender()

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow

    def action_toggle_wrap(self) -> None:
        self.wrap = not self.wrap

    def action_toggle_timestamps(self) -> None:
        self.timestamps = not self.timestamps

    def action_jump_end(self) -> None:
        self.follow = True
        self.lines_log.scroll_end(animate=False, immediate=True, x_axis=False)

    def action_filter(self) -> None:
        self.add_class("-filtering")
        inp = self.query_one("#logpane-filter", Input)
        inp.value = self.filter_text
        inp.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "logpane-filter":
            event.stop()
            self.filter_text = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "logpane-filter":
            event.stop()
            if not event.value:
                self.remove_class("-filtering")
            self.lines_log.focus()

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        if text:
            self.add_class("-filtering")
            self.query_one("#logpane-filter", Input).value = text
        else:
            self.remove_class("-filtering")
