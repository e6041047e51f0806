"""Whether the cluster still accepts kubectl's sign-in: the one place the client, the watchers and the log
followers consult when it does not.

The gate is open while the sign-in holds. When the cluster answers 401 (an idle day, a revoked token) and
the sign-in plugin hands back a link instead of a credential, the client closes it with that link and
why; watchers and followers then wait here instead of retrying, and the app shows the link. Once the
human approves it, the next plugin run gets a credential, the client opens the gate and every waiter
carries on where it stopped (a watch lists again, a log resumes from its last timestamp).

``SignInKeeper`` asks the cluster every few seconds whether it still accepts the sign-in: an open watch or
log stream never learns that it does not, so without it the link would only come at the next re-watch.
No Textual here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..backoff import RetryLoop, wait_event
from .errors import KubeError

if TYPE_CHECKING:
    from .client import KubeClient

__all__ = ["SignInGate", "SignInKeeper"]


class SignInGate:
    def __init__(self) -> None:
        self._open = asyncio.Event()
        self._open.set()
        self.link: str | None = None  # the sign-in link to approve while closed
        self.reason = ""  # why it closed, a human sentence
        self._listeners: list[Callable[[SignInGate], None]] = []

    @property
    def is_open(self) -> bool:
        return self._open.is_set()

    def close(self, link: str | None, reason: str) -> None:
        """The sign-in does not hold: wait for ``link`` (None: keep the one given before; the plugin prints a
        link once per caller) to be approved."""
        changed = self.is_open or bool(link and link != self.link)
        self.link = link or self.link
        self.reason = reason or self.reason
        self._open.clear()
        if changed:
            self._tell()

    def open(self) -> None:
        if self.is_open:
            return
        self.link, self.reason = None, ""
        self._open.set()
        self._tell()

    async def wait_open(self, timeout: float | None = None) -> bool:
        """Wait until the gate opens (or ``timeout`` seconds pass); True when open."""
        return await wait_event(self._open, timeout)

    def subscribe(self, fn: Callable[[SignInGate], None]) -> Callable[[], None]:
        """``fn(gate)`` on the event loop when it closes, opens, or its link changes; returns the unsubscribe."""
        self._listeners.append(fn)
        return lambda: self._listeners.remove(fn) if fn in self._listeners else None

    def _tell(self) -> None:
        for fn in list(self._listeners):
            fn(self)


class SignInKeeper(RetryLoop):
    """Every ``interval`` seconds: while the gate is open, one small request (a 401 closes it); while it
    is closed and nobody else got the approval in, one run of the plugin (the human may have approved
    after closing the link's window)."""

    def __init__(
        self, client: KubeClient, interval: float = 5.0, on_change: Callable[[SignInGate], None] | None = None
    ) -> None:
        self.client, self.interval, self.on_change = client, interval, on_change  # on_change: while it runs
        self._stopped = False
        self._task = None  # RetryLoop's: the running task

    async def run(self) -> None:
        self._task = asyncio.current_task()
        gate = self.client.gate
        unsubscribe = gate.subscribe(self.on_change) if self.on_change is not None else None
        try:
            while not self._stopped:
                if gate.is_open:
                    await asyncio.sleep(self.interval)
                    try:
                        await self.client.probe()
                    except KubeError:  # a NotSignedIn closed the gate; an unreachable cluster: the watchers say so
                        pass
                elif not await gate.wait_open(3 * self.interval):
                    await self.client.check_sign_in()
        except asyncio.CancelledError:
            if not self._stopped:
                raise
        finally:
            if unsubscribe is not None:
                unsubscribe()
