"""Pollers: one async loop per slice, feeding the store.

Each has its own interval; backs off exponentially with jitter on errors and returns to its interval
when the service recovers. While slices fail, one of them (the one polled most often) keeps polling at
its own interval: the probe. The first success after failures wakes every failing poller at once, so
after an outage every slice is fresh within about one of its intervals, not after a minute of backoff.
Polls faster while something is changing (a node being granted), slower when no visible screen is
interested in its slice; ``refresh()`` wakes it at once (after an action changed the data, or when a
screen that needs it is shown). No Textual here: the app starts them on its loop.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .api.errors import NCError
from .backoff import backoff_delay, wait_event
from .store import Store

log = logging.getLogger("ncui.pollers")


@dataclass
class PollSpec:
    name: str
    fetch: Callable[[], Awaitable[Any]]
    interval: float  # while a shown screen needs it
    idle_interval: float  # while nobody looks (0 pauses until refreshed)
    fast_interval: float | None = None
    fast_when: Callable[[], bool] | None = None
    enabled: Callable[[], bool] = lambda: True  # e.g. only for Kubernetes clusters


class Pollers:
    def __init__(
        self,
        store: Store,
        specs: list[PollSpec],
        *,
        rng: random.Random | None = None,
        max_backoff: float = 60.0,
        base_backoff: float = 1.0,
    ) -> None:
        self.store = store
        self.specs = {s.name: s for s in specs}
        self._rng = rng or random.Random()
        self._wake: dict[str, asyncio.Event] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.failures: dict[str, int] = {}
        self.max_backoff, self.base_backoff = max_backoff, base_backoff
        self.polls: dict[str, int] = {}  # how many fetches each made (tests, bench)
        self.done: dict[str, int] = {}  # the number (as in ``polls``) of each one's last finished fetch

    def start(self) -> None:
        for name, spec in self.specs.items():
            if name not in self._tasks:
                self._wake[name] = asyncio.Event()
                self._tasks[name] = asyncio.get_running_loop().create_task(self._run(spec), name=f"poll-{name}")

    async def stop(self) -> None:
        tasks = list(self._tasks.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    def refresh(self, *names: str) -> None:
        """Fetch these slices now (all when none named)."""
        for name in names or tuple(self._wake):
            ev = self._wake.get(name)
            if ev is not None:
                ev.set()

    def next_delay(self, spec: PollSpec) -> float | None:
        """Seconds until the next fetch; None waits for a refresh."""
        fails = self.failures.get(spec.name, 0)
        if fails:
            delay = backoff_delay(fails, self.base_backoff, self.max_backoff, self._rng)
            usual = self._usual_delay(spec) if spec is self._probe() else None
            return min(delay, usual) if usual else delay
        return self._usual_delay(spec)

    def _probe(self) -> PollSpec | None:
        """The failing poller that probes at its own interval (the shortest) while the others back off."""
        failing = [s for s in self.specs.values() if self.failures.get(s.name) and s.enabled()]
        return min(failing, key=lambda s: (s.interval, s.name), default=None)

    def _usual_delay(self, spec: PollSpec) -> float | None:
        if self.store.interest(spec.name) == 0:
            return spec.idle_interval or None
        if spec.fast_interval and spec.fast_when is not None and spec.fast_when():
            return spec.fast_interval
        return spec.interval

    async def _run(self, spec: PollSpec) -> None:
        wake = self._wake[spec.name]
        while True:
            wake.clear()
            if spec.enabled():
                await self._once(spec)
            delay = self.next_delay(spec) if spec.enabled() else None
            await wait_event(wake, delay)

    async def _once(self, spec: PollSpec) -> None:
        n = self.polls[spec.name] = self.polls.get(spec.name, 0) + 1
        try:
            await self._fetch(spec)
        finally:  # (a read made for a question is one that started after it was asked for: ncui/flows/fresh.py)
            self.done[spec.name] = n

    async def _fetch(self, spec: PollSpec) -> None:
        try:
            value = await spec.fetch()
        except asyncio.CancelledError:
            raise
        except NCError as e:
            self.failures[spec.name] = self.failures.get(spec.name, 0) + 1
            self.store.fail(spec.name, str(e))
            return
        except Exception as e:  # a bug or an unexpected answer: shown as a sentence, logged in full (ncui.log)
            log.exception("poller %s failed", spec.name)
            self.failures[spec.name] = self.failures.get(spec.name, 0) + 1
            self.store.fail(spec.name, f"Unexpected error reading {spec.name} ({type(e).__name__}).")
            return
        recovered = self.failures.get(spec.name, 0) > 0
        self.failures[spec.name] = 0
        self.store.set(spec.name, value)
        failing = [n for n, f in self.failures.items() if f]
        if recovered and failing:  # the service answers again: the failing pollers try now, not after backoff
            self.refresh(*failing)
