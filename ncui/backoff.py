"""One backoff rule for everything that retries on its own (pollers, watches, log streams), and one way
to wait for an event with a timeout."""

from __future__ import annotations

import asyncio
import random
from typing import Any


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds pass (None: no limit); True when it is set.

    Not ``asyncio.wait_for(event.wait(), timeout)``: on Python 3.10/3.11 that returns normally when the
    task is cancelled just as the event is set, so the cancellation is lost (a poller kept running and
    ``q`` hung until its next poll). ``asyncio.wait`` never swallows a cancellation."""
    if event.is_set():
        return True
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()
    return event.is_set()


def backoff_delay(failures: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with "equal jitter": between half and all of min(cap, base × 2^(failures-1))."""
    d = min(cap, base * (2 ** min(max(failures, 1) - 1, 30)))
    return rng.uniform(d / 2, d)


class RetryLoop:
    """Mixin for a long-running ``run()`` task that retries with ``backoff_delay`` and can be stopped.

    The class sets ``self._task`` (the running task), ``self._stopped``, ``self.backoff`` (base, cap) and
    ``self._rng``.
    """

    _task: asyncio.Task[Any] | None  # from asyncio.current_task() in run(); any result type
    _stopped: bool
    backoff: tuple[float, float]
    _rng: random.Random

    async def _sleep(self, failures: int) -> None:
        await asyncio.sleep(backoff_delay(failures, *self.backoff, self._rng))

    def stop(self) -> None:
        self._stopped = True
        task = self._task
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
