"""Watch one kind of resource the way client-go's reflector does: list, then watch from the list's
resourceVersion; on 410 Gone, a dropped stream or an error, list again (with backoff and jitter when the
errors repeat) and carry on. Every change delivers a new immutable snapshot (name → object); with ``coalesce``,
the watch events of that many seconds go out as one snapshot (a big cluster's hundred changes a second: one
copy of the map and one store write, not a hundred; bench/pods.py).

No Textual here: ``on_snapshot`` and ``on_error`` are plain callables run on the event loop.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from ..backoff import RetryLoop
from ..textsafe import clean_json
from .client import Gone, KubeClient, KubeError, NotSignedIn

__all__ = ["ResourceWatcher"]


class ResourceWatcher(RetryLoop):
    def __init__(
        self,
        client: KubeClient,
        kind: str,
        on_snapshot: Callable[[Mapping[str, dict[str, Any]]], None],
        namespace: str = "default",
        *,
        on_error: Callable[[str], None] | None = None,
        label_selector: str | None = None,
        watch_timeout: int = 300,
        backoff: tuple[float, float] = (0.5, 30.0),
        coalesce: float = 0.0,
    ) -> None:
        self.client, self.kind, self.namespace = client, kind, namespace
        self.on_snapshot, self.on_error = on_snapshot, on_error
        self.label_selector = label_selector
        self.watch_timeout = watch_timeout
        self.backoff = backoff
        self.coalesce = coalesce
        self._flush: asyncio.TimerHandle | None = None  # the coalesced delivery to come
        self.error: str | None = None  # the last error, None once the cluster answers again
        self.lists = 0  # how many times it listed (1 + the re-lists)
        self.snapshot: Mapping[str, dict[str, Any]] = MappingProxyType({})
        self.synced = False  # a first list arrived
        self._objs: dict[str, dict[str, Any]] = {}
        self._delivered: dict[str, tuple[str, str]] | None = None  # name → (uid, resourceVersion) delivered
        self._stopped = False
        self._task = None  # RetryLoop's: the running task
        self._rng = random.Random()

    # ---- delivery ---------------------------------------------------------------------------------

    @staticmethod
    def _version(obj: dict[str, Any]) -> tuple[str, str]:
        m = obj.get("metadata") or {}
        return str(m.get("uid", "")), str(m.get("resourceVersion", ""))

    def _deliver(self, force: bool = False, event: tuple[str, str] | None = None) -> None:
        """Hand over a new snapshot when something changed (an object of another cluster, restarted behind the
        same address, has a new uid), or ``force``: the cluster answers again after errors, what it holds is
        current again even when it is what we had. ``event``: (type, name) of the watch event that changed one
        object (its version is noted alone: a big cluster's hundred changes a second do not each look at all)."""
        if event is not None and self._delivered is not None:
            typ, name = event
            if typ == "DELETED":
                self._delivered.pop(name, None)
            elif name in self._objs:
                if self._delivered.get(name) == (version := self._version(self._objs[name])):
                    return
                self._delivered[name] = version
            if self.coalesce > 0:
                if self._flush is None:
                    self._flush = asyncio.get_running_loop().call_later(self.coalesce, self._publish)
                return
        else:
            versions = {n: self._version(o) for n, o in self._objs.items()}
            if versions == self._delivered and not force:
                return  # nothing changed (a re-list that found what we had)
            self._delivered = versions
        self._publish()

    def _publish(self) -> None:
        self._cancel_flush()
        self.snapshot = MappingProxyType(dict(self._objs))
        self.on_snapshot(self.snapshot)

    def _cancel_flush(self) -> None:
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None

    def stop(self) -> None:
        self._cancel_flush()
        super().stop()

    def _fail(self, text: str) -> None:
        self.error = text
        if self.on_error is not None:
            self.on_error(text)

    # ---- the loop ---------------------------------------------------------------------------------

    async def run(self) -> None:
        self._task = asyncio.current_task()
        failures = 0
        try:
            while not self._stopped:
                try:
                    items, rv = await self.client.list(self.kind, self.namespace, self.label_selector)
                    self.lists += 1
                    # replace in one step: never an empty snapshot while re-listing. Every string of an object
                    # is made safe to show as it comes in (names, reasons, messages: textsafe; the watch's
                    # events come so from the client).
                    self._objs = {o["metadata"]["name"]: o for o in map(clean_json, items)}
                    self.synced = True
                    recovered, self.error = self.error is not None, None
                    failures = 0
                    self._deliver(force=recovered)
                    while not self._stopped:
                        async for typ, obj in self.client.watch(
                            self.kind,
                            rv,
                            self.namespace,
                            timeout_seconds=self.watch_timeout,
                            label_selector=self.label_selector,
                        ):
                            name = obj.get("metadata", {}).get("name")
                            if not name:
                                continue
                            rv = str(obj["metadata"].get("resourceVersion") or rv)
                            if typ == "DELETED":
                                self._objs.pop(name, None)
                            else:
                                self._objs[name] = obj
                            self._deliver(event=(typ, name))
                        # the server ended the watch (its timeout): watch again from where we are
                except Gone:
                    continue  # history compacted, or a cluster restarted behind the address: list again at once
                except asyncio.CancelledError:
                    raise
                except NotSignedIn as e:  # no retries: wait for the approval, then list what changed meanwhile
                    self._fail(str(e))
                    await self.client.gate.wait_open()
                except KubeError as e:
                    failures += 1
                    self._fail(str(e))
                    await self._sleep(failures)
                except Exception as e:  # a bad object, a bug: say so and keep trying
                    failures += 1
                    self._fail(f"watching {self.kind} failed: {type(e).__name__}: {e}")
                    await self._sleep(failures)
        except asyncio.CancelledError:
            if not self._stopped:
                raise
        finally:
            self._cancel_flush()  # (nothing delivered after the watcher ended)
