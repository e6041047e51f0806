"""A log view for huge, fast logs: ``textual.widgets.Log`` with a line cap, fed in batches.

- ``write_batch(lines)`` takes a whole batch (plain strings, or ``(timestamp, text)`` pairs) in one
  ``Log.write_lines`` call: one call per line costs ~1,000 lines/s and hundreds of MB (PERF.md).
- Follow (auto-scroll) on/off, a substring filter, wrap on/off, timestamps on/off, jump to the end.
  The filter, wrap and timestamp toggles re-render from ``source`` (the follower's ring buffer), since
  the Log keeps only the newest ``max_lines`` lines.
- Textual 8.2.8's ``Log(max_lines=N)`` stops redrawing once the cap is reached (the lines are right, the
  screen keeps old ones until a resize): every batch ends with ``refresh()``.
- ``Log`` cannot wrap. Wrap is done here: a line longer than the pane's width is cut into rows of that width
  (at a space where one is near the end of the row) before it is written, so a wrapped line counts as several
  of the Log's lines; a resize re-renders. A batch whose lines all fit (a training log) goes as it came.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.binding import Binding
from textual.cache import LRUCache
from textual.events import Resize
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Input, Log

from .field import Field
from .throttle import Throttle

Entry = str | tuple[str, str]  # a line, or (timestamp, text)


class FastLog(Log):
    """``Log`` for the pane's batches. Textual 8.2.8's ``write_lines`` splits every line again, forgets every
    line's cached rendering one by one, and starts a thread worker per call to measure the new lines'
    width (``_update_size``), which dominates the cost of a fast log. Here lines come from the pane: one
    line each (no newline), cleaned of control sequences, mostly ASCII (where the width is the length);
    and of a batch longer than ``max_lines`` only the newest ``max_lines`` can ever be shown."""

    def write_lines(self, lines: Iterable[str], scroll_end: bool | None = None) -> FastLog:
        new = lines if isinstance(lines, list) else list(lines)
        if not new:
            return self
        cap = self.max_lines
        if cap is not None and len(new) > cap:
            new = new[-cap:]
        is_end = self.is_vertical_scroll_end
        auto_scroll = self.auto_scroll if scroll_end is None else scroll_end
        self._lines.extend(new)
        if cap is not None and len(self._lines) > cap:
            self._prune_max_lines()
        self._update_size(self._updates, new)
        # The new size without a layout pass of the whole screen (Widget.virtual_size is a layout=True
        # reactive: ~40 ms a batch on a growing log); the Log's own size is its CSS's, only its
        # scrollbars follow the content.
        size = Size(self._width, len(self._lines))
        if size != self.virtual_size:
            self.set_reactive(Log.virtual_size, size)
            self._scroll_update(size)
        # The rendered-line cache is keyed by line number; the new lines are past anything it holds, and
        # pruning above re-keys it. Repaint what is on screen.
        if auto_scroll and not self.is_vertical_scrollbar_grabbed and is_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.paint()
        return self

    # ---- repaints: a burst writes a batch every few dozen milliseconds; a repaint costs ~10 ms, and nobody
    # reads lines that fly by faster than a few frames a second: at most every min_paint_interval.

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

    # ---- drawing: Textual 8.2.8 builds a rich Text per visible line on every repaint (and its line cache
    # is only ever filled while a selection is active), and works out the widget's style once per line.

    _frame_style: Style | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # Log's
        super().__init__(*args, **kwargs)
        self._strips: LRUCache[tuple[str, Style], Strip] = LRUCache(2048)
        self._paint = Throttle(self, self.refresh, 0.2)

    def render_lines(self, crop: Region) -> list[Strip]:
        self._frame_style = self.rich_style  # once per repaint, not once per line
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None

    def _render_line(self, y: int, scroll_x: int, width: int) -> Strip:
        rich_style = self._frame_style or self.rich_style
        if y >= len(self._lines):
            return Strip.blank(width, rich_style)
        line = self._render_line_strip(y, rich_style)
        return line.crop_extend(scroll_x, scroll_x + width, rich_style).apply_offsets(scroll_x, y)

    def _render_line_strip(self, y: int, rich_style: Style) -> Strip:
        if self.text_selection is not None or self.highlight:
            return super()._render_line_strip(y, rich_style)
        raw = self._lines[y]
        key = (raw, rich_style)  # by content, so nothing to re-key when lines are pruned or cleared
        strip = self._strips.get(key)
        if strip is None:
            text = self._process_line(raw)
            # one plain line in the widget's style: one segment (what Text(...).render gives, without Text)
            strip = Strip([Segment(text, rich_style)], len(text) if text.isascii() else cell_len(text))
            self._strips[key] = strip
        return strip

    def _update_size(self, updates: int, lines: list[str]) -> None:  # type: ignore[override]  # Log's is a @work thread worker; inline here
        if lines and updates == self._updates:
            if "".join(lines).isascii():
                widest = max(map(len, lines))
            else:
                widest = max(len(line) if line.isascii() else cell_len(line.expandtabs()) for line in lines)
            self._width = max(widest, self._width)


__all__ = ["LogPane", "Entry"]


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
    """Log drops empty lines: an empty one is shown as a space."""
    return [x or " " for x in lines] if "" in lines else lines


class LogPane(Widget, can_focus=False):
    DEFAULT_CSS = """
    LogPane { height: 1fr; layout: vertical; }
    LogPane > Log { height: 1fr; }
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
        self.written = 0  # lines handed to the Log since the last re-render
        self._width = 0
        self.set_reactive(LogPane.wrap, wrap)

    def compose(self) -> ComposeResult:
        from textual.widgets import Static

        yield FastLog(max_lines=self.max_lines, auto_scroll=True, id="logpane-log")
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
    def lines_log(self) -> Log:
        """The pane's Log widget (not ``log``: that is Textual's own logger on every widget)."""
        return self.query_one(Log)

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
        """``lines`` wrapped at the Log's width (the newest ``max_lines`` rows)."""
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
        # FastLog repaints the visible region after every batch (at most every min_paint_interval): Textual
        # 8.2.8's Log, once max_lines is reached, refreshes line numbers past the pruned end and the scroll
        # offset no longer moves, so nothing would repaint (PERF.md; tests/test_kc_logpane.py).
        self.lines_log.write_lines(out, scroll_end=self.follow)
        self.written += len(out)

    def rerender(self) -> None:
        """Show ``source``'s lines again (after a filter/wrap/timestamp change), the newest ``max_lines``."""
        if not self.is_mounted:
            return
        log = self.lines_log
        log.clear()
        self.written = 0
        if self.source is None:
            log.refresh()
            return
        entries = list(self.source())
        out = self._format(entries)
        if len(out) > self.max_lines:
            out = out[-self.max_lines :]
        if out:
            log.write_lines(out, scroll_end=self.follow)
        self.written = len(out)
        log.refresh()
        if self.follow:  # (a re-render on a resize: the end is known only once the new size is laid out)
            log.call_after_refresh(log.scroll_end, animate=False, immediate=True, x_axis=False)

    def clear(self) -> None:
        self.lines_log.clear()
        self.lines_log.refresh()
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
