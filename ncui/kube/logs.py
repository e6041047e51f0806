"""Follow one container's log in a pod: the Kubernetes transport of a ``logfollow.FollowCore``.

The follower asks for ``timestamps=true``. When the stream drops while the container still runs it asks
again with ``sinceTime`` = the last timestamp it saw and the core skips what it already delivered. It ends
when the container has terminated and every line is in (one last catch-up read makes sure of that).
Batching, the buffer and the resume bookkeeping are ``logfollow``'s (one place for both transports).
No Textual here.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

# What the UI and the tests import from here, kept where it was; it lives in logfollow (one place).
from ..logfollow import LOSS, FollowCore, FollowOptions, LossCurve, clean_line, entry_texts, parse_loss, split_entry
from .client import KubeClient, KubeError, NotSignedIn

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "LogFollower",
    "default_container",
    "LossCurve",
    "LOSS",
    "parse_loss",
    "clean_line",
    "entry_texts",
    "split_entry",
]


def default_container(pod: dict[str, Any]) -> str | None:
    """The container kubectl reads a pod's log from when none is named: its default-container annotation, else
    its first container."""
    spec = pod.get("spec") or {}
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    names = [c.get("name") for c in spec.get("containers") or []]
    return ann.get("kubectl.kubernetes.io/default-container") or (names[0] if names else None)


class LogFollower(FollowCore):
    """``f = LogFollower(kc, "nanogpt-x2k4z", on_lines=pane.write_batch)``; ``await f.run()``; ``f.stop()``."""

    def __init__(
        self,
        client: KubeClient,
        pod: str,
        container: str | None = None,
        *,
        previous: bool = False,
        namespace: str = "default",
        tail_lines: int | None = None,
        **opts: Unpack[FollowOptions],
    ) -> None:
        super().__init__(**opts)
        self.client, self.pod, self.container, self.namespace = client, pod, container, namespace
        self.previous = previous
        self.tail_lines = tail_lines

    async def _container(self) -> tuple[dict[str, Any] | None, str | None]:
        """(the pod, the container name to follow) — the default container when none was named."""
        pod = await self.client.get("pods", self.pod, self.namespace)
        if pod is None:
            return None, self.container
        return pod, self.container or default_container(pod)

    def _terminated(self, pod: dict[str, Any], name: str | None) -> bool:
        st = pod.get("status") or {}
        if st.get("phase") in ("Succeeded", "Failed"):
            return True
        for c in (st.get("containerStatuses") or []) + (st.get("initContainerStatuses") or []):
            if c.get("name") == name:
                return bool((c.get("state") or {}).get("terminated"))
        return False

    async def run(self) -> None:
        self._start()
        failures = 0
        terminated_at_open = False
        try:
            while True:
                try:
                    pod, name = await self._container()
                    break
                except NotSignedIn as e:
                    await self._signed_out(e)
            if pod is None:
                self._end("the pod is gone")
                return
            self.container = name
            while not self._stopped:
                resume = self._resume_point()
                try:
                    self.streams += 1
                    opened = got = 0
                    gen = self.client.pod_log_batches(
                        self.pod,
                        self.container,
                        follow=not self.previous,
                        timestamps=True,
                        since_time=self._last_ts if resume else None,
                        tail_lines=None if resume else self.tail_lines,
                        previous=self.previous,
                        namespace=self.namespace,
                    )
                    try:
                        async for raw in gen:
                            if not opened:  # the stream is open (its first batch may be empty)
                                opened = 1
                                self.error = None
                                self._say("following" if not self.previous else "previous")
                            if raw and not got:
                                got = 1
                                failures = 0
                            self._deliver(raw)
                    finally:
                        await gen.aclose()
                    dropped = False
                    empty = not got
                except NotSignedIn as e:  # wait for the approval, then resume from the last timestamp
                    await self._signed_out(e)
                    continue
                except KubeError as e:
                    if e.status == 404:
                        self._end("the pod is gone")
                        return
                    if e.status == 400 and "waiting to start" in e.message:
                        reason = e.message.rsplit(":", 1)[-1].strip() or "waiting"
                        self._say(f"waiting: {reason}")
                        failures += 1
                        await self._sleep(min(failures, 4))
                        continue
                    if e.status == 400 and self.previous:
                        self._end(e.message)
                        return
                    self.error = str(e)
                    dropped = empty = True
                if self.previous:
                    self._end("previous log read")
                    return
                # the stream ended: the container is done, or the connection dropped
                try:
                    pod = await self.client.get("pods", self.pod, self.namespace)
                except KubeError as e:
                    self.error = str(e)
                    pod = {}
                    dropped = True
                if pod is None:
                    self._end("the pod is gone")
                    return
                if pod and self._terminated(pod, self.container):
                    if terminated_at_open and not dropped:
                        self._end("the container terminated")
                        return
                    terminated_at_open = True  # one more read catches the lines a dropped stream missed
                    continue
                self._say("resuming")
                if dropped or empty:
                    failures += 1
                    await self._sleep(failures)
        except asyncio.CancelledError:
            if not self._stopped:
                raise
        finally:
            self._finish()

    async def _signed_out(self, e: NotSignedIn) -> None:
        self.error = str(e)
        self._say("not signed in")
        await self.client.gate.wait_open()
