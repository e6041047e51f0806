"""Run a costly redraw now, or once ``interval`` has passed since it last ran: at most one waits, and when
its time comes it shows the newest state (the log pane's repaints, the loss chart's plots)."""

from __future__ import annotations

import time
from collections.abc import Callable

from textual.timer import Timer
from textual.widget import Widget


class Throttle:
    def __init__(self, widget: Widget, action: Callable[[], object], interval: float) -> None:
        self.widget, self.action, self.interval = widget, action, interval
        self.last = float("-inf")  # when the action last did its costly part
        self._timer: Timer | None = None

    @property
    def pending(self) -> bool:
        """A run is put off until its interval has passed."""
        return self._timer is not None

    def __call__(self) -> None:
        if self._timer is not None:
            return  # the run already due shows the newest state
        wait = self.last + self.interval - time.monotonic()
        if wait <= 0 or not self.widget.is_mounted:
            self._run()
        else:
            self._timer = self.widget.set_timer(wait, self._run)

    def now(self) -> None:
        """Run at once (a resize), counted like any run; one already due still comes."""
        t = time.monotonic()
        if self.action() is not False:  # False: it had nothing costly to do, so nothing to space out
            self.last = t

    def _run(self) -> None:
        self._timer = None
        self.now()
