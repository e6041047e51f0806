"""One backoff rule for everything that retries on its own (pollers, watches, log streams, the API client's
GETs), and one way to wait with a deadline that never loses a cancellation (``within``, ``wait_event``)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


async def within(aw: Awaitable[T], timeout: float | None) -> T:
    """``await aw`` with a deadline: its result, or ``asyncio.TimeoutError`` after ``timeout`` seconds (None: no
    limit), ``aw`` cancelled and finished either way before this returns or raises (pass ``asyncio.shield(f)`` for
    a future that must outlive the wait).

    Not ``asyncio.wait_for``: on Python 3.10/3.11, when the waiting task is cancelled just as ``aw`` finishes (a
    watch's bytes, a connection or a head arriving in the same turn of the loop), wait_for returns the result and
    the cancellation is lost. A watcher stopped at that moment went on watching for its 300 s, and whatever waited
    for it to end (a test, ``q``) waited with it. ``asyncio.wait`` never swallows a cancellation."""
    fut = asyncio.ensure_future(aw)
    try:
        done, _ = await asyncio.wait({fut}, timeout=timeout)
    finally:
        if not fut.done():  # timed out, or this task was cancelled: so is what it waited on, and it has ended
            fut.cancel()
            await asyncio.wait({fut})
    if not done:
        raise asyncio.TimeoutError
    return fut.result()


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds pass (None: no limit); True when it is set. (A poller
    cancelled as its event was set once kept running and ``q`` hung until its next poll: ``within``.)"""
    if event.is_set():
        return True
    try:
        await within(event.wait(), timeout)
    except asyncio.TimeoutError:
        pass
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
