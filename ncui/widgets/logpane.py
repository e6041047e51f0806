"""A log view for huge, fast logs: ``textual.widgets.Log`` with a line cap, fed in batches.

- ``write_batch(lines)`` takes a whole batch (plain strings, or ``(timestamp, text)`` pairs) in one
  ``Log.write_lines`` call: one call per line costs ~1,000 lines/s and hundreds of MB (PERF.md).
- Follow (auto-scroll) on/off, a substring filter, wrap on/off, timestamps on/off, jump to the end.
  The filter, wrap and timestamp toggles re-render from ``source`` (the follower's ring buffer), since
  the Log keeps only the newest ``max_lines`` lines.
- Textual 8.2.8's ``Log(max_lines=N)`` stops redrawing once the cap is reached (the lines are right, the
  screen keeps old ones until a resize): every batch ends with ``refresh()``.
- ``Log`` cannot wrap. Wrap is done here: each line is cut into chunks of the pane's width before it is
  written (so a wrapped line counts as several of the Log's lines), and a resize re-renders.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional, Sequence, Union

from textual.binding import Binding
from textual.events import Resize
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input, Log

Entry = Union[str, tuple[str, str]]  # a line, or (timestamp, text)


class FastLog(Log):
    """``Log`` measuring new lines' width in place: Textual 8.2.8 starts a thread worker per write to do it
    (``_update_size``), which dominates the cost of a fast log. Lines here are already cleaned of control
    sequences by the follower, and mostly ASCII, where the width is the length."""

    def _update_size(self, updates: int, lines: list[str]) -> None:  # type: ignore[override]
        if lines:
            from rich.cells import cell_len

            widest = max(len(line) if line.isascii() else cell_len(line.expandtabs()) for line in lines)
            self._update_maximum_width(updates, widest)

__all__ = ["LogPane", "Entry"]


class LogPane(Widget, can_focus=False):
    DEFAULT_CSS = """
    LogPane { height: 1fr; layout: vertical; }
    LogPane > Log { height: 1fr; }
    LogPane > #logpane-filter { dock: bottom; display: none; }
    LogPane.-filtering > #logpane-filter { display: block; }
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

    def __init__(self, source: Optional[Callable[[], Sequence[Entry]]] = None, *, max_lines: int = 20_000,
                 name: Optional[str] = None, id: Optional[str] = None, classes: Optional[str] = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.source = source
        self.max_lines = max_lines
        self.written = 0  # lines handed to the Log since the last re-render
        self._width = 0

    def compose(self):
        yield FastLog(max_lines=self.max_lines, auto_scroll=True, id="logpane-log")
        yield Input(placeholder="filter: show lines containing…", id="logpane-filter")

    @property
    def log(self) -> Log:
        return self.query_one(Log)

    # ---- feeding --------------------------------------------------------------------------------

    def _format(self, lines: Iterable[Entry]) -> list[str]:
        flt = self.filter_text
        stamps = self.timestamps
        out: list[str] = []
        for e in lines:
            if isinstance(e, tuple):
                ts, text = e
                if stamps and ts:
                    text = f"{ts} {text}"
            else:
                text = e
            if flt and flt not in text:
                continue
            out.append(text or " ")  # Log drops empty lines
        if self.wrap:
            w = max(10, self.log.scrollable_content_region.width or self.size.width or 80)
            wrapped: list[str] = []
            for line in out:
                if len(line) <= w:
                    wrapped.append(line)
                else:
                    wrapped.extend(line[i:i + w] for i in range(0, len(line), w))
            out = wrapped
        return out

    def write_batch(self, lines: Sequence[Entry]) -> None:
        """Append a batch (from the follower's ``on_lines`` / ``on_entries``)."""
        if not lines or not self.is_mounted:
            return
        out = self._format(lines)
        if not out:
            return
        log = self.log
        log.write_lines(out, scroll_end=self.follow)
        self.written += len(out)
        # Textual 8.2.8: once max_lines is reached write_lines refreshes line numbers past the pruned end
        # and the scroll offset no longer moves, so nothing repaints. Repaint the visible region.
        log.refresh()

    def rerender(self) -> None:
        """Show ``source``'s lines again (after a filter/wrap/timestamp change), the newest ``max_lines``."""
        if not self.is_mounted:
            return
        log = self.log
        log.clear()
        self.written = 0
        if self.source is None:
            log.refresh()
            return
        entries = list(self.source())
        out = self._format(entries)
        if len(out) > self.max_lines:
            out = out[-self.max_lines:]
        if out:
            log.write_lines(out, scroll_end=self.follow)
        self.written = len(out)
        log.refresh()

    def clear(self) -> None:
        self.log.clear()
        self.log.refresh()
        self.written = 0

    # ---- toggles ------------------------------------------------------------------------------------

    def watch_follow(self, follow: bool) -> None:
        if self.is_mounted:
            self.log.auto_scroll = follow
            if follow:
                self.log.scroll_end(animate=False, immediate=True, x_axis=False)

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
        self.log.scroll_end(animate=False, immediate=True, x_axis=False)

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
            self.log.focus()

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        if text:
            self.add_class("-filtering")
            self.query_one("#logpane-filter", Input).value = text
        else:
            self.remove_class("-filtering")
