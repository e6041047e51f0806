"""One backoff rule for everything that retries on its own (pollers, watches, log streams)."""

from __future__ import annotations

import random


def backoff_delay(failures: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with "equal jitter": between half and all of min(cap, base × 2^(failures-1))."""
    d = min(cap, base * (2 ** min(max(failures, 1) - 1, 30)))
    return rng.uniform(d / 2, d)


class RetryLoop:
    """Mixin for a long-running ``run()`` task that retries with ``backoff_delay`` and can be stopped.

    The class sets ``self._task`` (the running task), ``self._stopped``, ``self.backoff`` (base, cap) and
    ``self._rng``.
    """

    _task: "object | None"
    _stopped: bool
    backoff: tuple[float, float]
    _rng: random.Random

    async def _sleep(self, failures: int) -> None:
        import asyncio

        await asyncio.sleep(backoff_delay(failures, *self.backoff, self._rng))

    def stop(self) -> None:
        import asyncio

        self._stopped = True
        task = self._task
        if task is not None and not task.done() and task is not asyncio.current_task():
            task.cancel()
