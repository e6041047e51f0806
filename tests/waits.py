"""The one wait with a deadline in the tests: look at a condition until it holds, or fail saying what was waited
for, for how long, and what was seen. Never a fixed sleep to wait for something to be done: the interval here is
only how often to look.

``wait_until(cond, 10, "the socket")`` (a thread's wait) and ``await until(cond, 10, "the pod")`` (the event
loop runs between looks; ``cond`` may be async) return ``cond()``'s first true value. ``sleep``: what to wait
with between looks (``pilot.pause`` lets a Textual app run); ``give_up()``: a reason to fail now rather than at
the deadline (a daemon died), or ""; ``say()``: what the failure adds (the logs, the screen). Re-exported as
``conftest.wait_for``, ``kc_support.until`` and ``sshd_support.until``; ``apphelp.until`` and ``tmuxterm``'s
``until`` are built on it.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any

POLL = 0.01  # seconds between looks, unless a look is costly (a command, a tmux capture): then the caller says

__all__ = ["POLL", "until", "wait_until"]


class _Deadline:
    def __init__(self, cond: Callable[[], Any], timeout: float, what: str, give_up, say) -> None:
        self.end = time.monotonic() + timeout
        self.timeout, self.what = timeout, what or getattr(cond, "__qualname__", repr(cond))
        self.give_up: Callable[[], str] | None = give_up
        self.say: Callable[[], str] | None = say

    def check(self) -> None:
        """Raise AssertionError when the deadline has passed or ``give_up()`` gives a reason."""
        reason = self.give_up() if self.give_up is not None else ""
        if reason:
            head = f"gave up waiting for {self.what}: {reason}"
        elif time.monotonic() > self.end:
            head = f"timed out after {self.timeout:g}s waiting for {self.what}"
        else:
            return
        more = self.say() if self.say is not None else ""
        raise AssertionError(f"{head}{'; ' + more if more else ''}")


def wait_until(
    cond: Callable[[], Any],
    timeout: float = 10.0,
    what: str = "",
    interval: float = POLL,
    *,
    give_up: Callable[[], str] | None = None,
    say: Callable[[], str] | None = None,
) -> Any:
    """Block until ``cond()`` is true (its value is returned), looking every ``interval`` seconds; fail after
    ``timeout`` seconds (or when ``give_up()`` says why) with AssertionError."""
    deadline = _Deadline(cond, timeout, what, give_up, say)
    while not (value := cond()):
        deadline.check()
        time.sleep(interval)
    return value


async def until(
    cond: Callable[[], Any],
    timeout: float = 10.0,
    what: str = "",
    interval: float = POLL,
    *,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    give_up: Callable[[], str] | None = None,
    say: Callable[[], str] | None = None,
) -> Any:
    """``wait_until`` letting the event loop run between looks (``await sleep(interval)``); ``cond`` may return
    an awaitable (a check that is a command on a login node), which is awaited."""
    deadline = _Deadline(cond, timeout, what, give_up, say)
    while True:
        value = cond()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        deadline.check()
        await sleep(interval)
