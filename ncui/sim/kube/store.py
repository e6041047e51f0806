"""One cluster's Kubernetes objects: plain JSON dicts with resourceVersions and a bounded event history.

The store has its own small lock, separate from the World's: watchers read events under it without ever
waiting on the World. Writers hold the World lock first, then this one (never the other way round).
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

HISTORY = 2000  # watch events kept; an older resourceVersion gets 410 Gone


@dataclass(frozen=True)
class Event:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    resource: str
    namespace: str
    obj: dict


class Store:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rv = 1
        self.objects: dict[tuple[str, str, str], dict] = {}
        self.events: deque[Event] = deque(maxlen=HISTORY)
        self.oldest_rv = 1  # events after this are all in the history

    # ---- reads ------------------------------------------------------------------------------

    def get(self, resource: str, ns: str, name: str) -> dict | None:
        with self.lock:
            obj = self.objects.get((resource, ns, name))
            return copy.deepcopy(obj) if obj is not None else None

    def peek(self, resource: str, ns: str, name: str) -> dict | None:
        """The stored object itself (callers must not change it; used by the controller under its lock)."""
        return self.objects.get((resource, ns, name))

    def list(self, resource: str, ns: str | None = None) -> tuple[list[dict], int]:
        with self.lock:
            items = [
                copy.deepcopy(o)
                for (r, n, _), o in sorted(self.objects.items())
                if r == resource and (ns is None or n == ns)
            ]
            return items, self.rv

    def iter(self, resource: str, ns: str | None = None) -> Iterable[dict]:
        return [o for (r, n, _), o in sorted(self.objects.items()) if r == resource and (ns is None or n == ns)]

    def events_after(self, rv: int) -> list[Event] | None:
        """Events newer than ``rv``; None when ``rv`` is older than the history (410 Gone)."""
        with self.lock:
            if rv < self.oldest_rv:
                return None
            if not self.events or self.events[-1].rv <= rv:
                return []
            return [e for e in self.events if e.rv > rv]

    # ---- writes -----------------------------------------------------------------------------

    def _record(self, type_: str, resource: str, ns: str, obj: dict) -> None:
        if len(self.events) == self.events.maxlen:
            self.oldest_rv = self.events[0].rv
        self.events.append(Event(self.rv, type_, resource, ns, copy.deepcopy(obj)))

    def put(self, resource: str, obj: dict) -> dict:
        """Create or replace; bumps the resourceVersion and records ADDED or MODIFIED."""
        meta = obj["metadata"]
        ns = meta.get("namespace", "")
        key = (resource, ns, meta["name"])
        with self.lock:
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            type_ = "MODIFIED" if key in self.objects else "ADDED"
            self.objects[key] = obj
            self._record(type_, resource, ns, obj)
            return copy.deepcopy(obj)

    def delete(self, resource: str, ns: str, name: str) -> dict | None:
        key = (resource, ns, name)
        with self.lock:
            obj = self.objects.pop(key, None)
            if obj is None:
                return None
            self.rv += 1
            obj["metadata"]["resourceVersion"] = str(self.rv)
            self._record("DELETED", resource, ns, obj)
            return copy.deepcopy(obj)

    def compact(self) -> None:
        """Forget the event history (a test's way to make the next watch from an old rv get 410)."""
        with self.lock:
            self.events.clear()
            self.rv += 1  # the compaction's own revision: watching from any earlier one is too old
            self.oldest_rv = self.rv
