"""The flows' one bounded wait: until a condition on the store holds, or a deadline."""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..store import Store


async def until(cond: Callable[[], bool | Awaitable[bool]], timeout: float, every: float = 0.05) -> bool:
    """Wait (bounded) until ``cond()`` holds: True when it did, False at ``timeout`` seconds. The one bounded wait
    of the flows (the store's watches write every ~50 ms: ``every`` matches them). ``cond`` may be async (a read
    of the cluster's API); what it raises ends the wait."""
    deadline = time.monotonic() + timeout
    while True:
        held = cond()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(every)


async def settle(store: Store, *names: str, timeout: float = 5.0) -> bool:
    """Wait (bounded) until the watched slices ``names`` have their first snapshot."""
    return await until(lambda: all(store.get(n).loaded for n in names), timeout)
