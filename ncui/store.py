"""The store: one object holding the latest value of every slice of data, with its age and last error.

Plain Python (no Textual): pollers write, screens subscribe. Values are immutable snapshots (frozen
pydantic models, tuples); nothing else keeps copies. Callbacks run in the thread that wrote (the app's
event loop), synchronously, in subscription order.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .formatting import fmt_age

Callback = Callable[["Slice"], None]
log = logging.getLogger("ncui.store")


@dataclass(frozen=True)
class Slice:
    """One slice: its value, when it was fetched (monotonic seconds), and the last error since."""

    name: str
    value: Any = None
    fetched_at: float | None = None  # time.monotonic() of the last success
    error: str | None = None  # a human sentence, never a traceback
    error_at: float | None = None
    version: int = 0  # bumps on every write, success or error

    @property
    def loaded(self) -> bool:
        return self.fetched_at is not None

    def age(self, now: float | None = None) -> float | None:
        if self.fetched_at is None:
            return None
        return max(0.0, (time.monotonic() if now is None else now) - self.fetched_at)

    @property
    def failing(self) -> bool:
        """The last read failed: an error newer than the last success."""
        return self.error is not None and (self.error_at or 0) >= (self.fetched_at or 0)

    def staleness(self, now: float | None = None) -> str | None:
        """The one rule for a value that could not be read: None while it is fresh (or still loading);
        "stale 12s: <reason>" when the last read failed and an older value is shown; "unknown (could not
        read: <reason>)" when it never was read. Never "none", zero or empty for a failed read."""
        if not self.failing:
            return None
        if not self.loaded:
            return f"unknown (could not read: {self.error})"
        return f"stale {fmt_age(self.age(now))}: {self.error}"


SLICES = (
    "whoami",
    "cluster",
    "summary",
    "balance",
    "transactions",
    "ladder",
    "ticks",
    "spend",
    "bid",
    "vm_capacity",
    "ssh_keys",
    "catalog",
    "pods",
    "balance_history",
    "research",
)


@dataclass
class _Sub:
    names: frozenset[str]
    fn: Callback
    active: bool = True


class Store:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._slices: dict[str, Slice] = {}
        self._subs: list[_Sub] = []
        self._interest: dict[str, int] = {}
        self.meta: dict[str, Any] = {}  # small settings: the active cluster, the mode (demo/real)

    # ---- reading ------------------------------------------------------------------------------

    def get(self, name: str) -> Slice:
        return self._slices.get(name) or Slice(name)

    def value(self, name: str, default: Any = None) -> Any:
        s = self._slices.get(name)
        return default if s is None or s.value is None else s.value

    def now(self) -> float:
        return self._clock()

    # ---- writing ------------------------------------------------------------------------------

    def set(self, name: str, value: Any) -> Slice:
        old = self.get(name)
        new = Slice(name, value, self._clock(), None, None, old.version + 1)
        self._slices[name] = new
        self._notify(new)
        return new

    def fail(self, name: str, error: str) -> Slice:
        """Record an error; the last good value stays (shown as stale)."""
        old = self.get(name)
        new = replace(old, error=error, error_at=self._clock(), version=old.version + 1)
        self._slices[name] = new
        self._notify(new)
        return new

    def clear(self, *names: str) -> None:
        """Forget slices (e.g. after switching the active cluster)."""
        for name in names:
            old = self.get(name)
            self._slices[name] = Slice(name, version=old.version + 1)
            self._notify(self._slices[name])

    # ---- subscribing --------------------------------------------------------------------------

    def subscribe(self, names: str | Iterable[str], fn: Callback, *, interested: bool = True) -> Callable[[], None]:
        """Call ``fn(slice)`` whenever one of ``names`` changes. Returns an unsubscribe function.

        ``interested`` subscriptions count as demand: a poller whose slice nobody is interested in
        slows down.
        """
        wanted = frozenset([names] if isinstance(names, str) else names)
        sub = _Sub(wanted, fn)
        self._subs.append(sub)
        if interested:
            for n in wanted:
                self._interest[n] = self._interest.get(n, 0) + 1

        def unsubscribe() -> None:
            if sub.active:
                sub.active = False
                self._subs.remove(sub)
                if interested:
                    for n in wanted:
                        self._interest[n] -= 1

        return unsubscribe

    def interest(self, name: str) -> int:
        return self._interest.get(name, 0)

    def _notify(self, s: Slice) -> None:
        for sub in list(self._subs):
            if sub.active and s.name in sub.names:
                try:
                    sub.fn(s)
                except Exception:  # one broken subscriber must not stop the writer (a poller) or the rest
                    log.exception("subscriber of %s failed", s.name)


@dataclass
class Interest:
    """A group of interests that can be turned on and off together (a screen while it is shown)."""

    store: Store
    names: tuple[str, ...]
    _undo: list[Callable[[], None]] = field(default_factory=list)

    def on(self) -> None:
        if not self._undo:
            self._undo.append(self.store.subscribe(self.names, lambda s: None))

    def off(self) -> None:
        while self._undo:
            self._undo.pop()()
