"""One cluster's Kubernetes objects: plain JSON dicts with resourceVersions and an event history compacted by time.

The store has its own small lock, separate from the World's: watchers read events under it without ever
waiting on the World. Writers hold the World lock first, then this one (never the other way round).

History, as etcd keeps it for a real API server: every ``COMPACT_EVERY`` of the cluster's clock the store compacts
to the revision it had at the previous compaction (the API server's compactor, storage/etcd3/compact.go, every
five minutes by default), so a revision stays readable for five to ten minutes. A new watch or an exact list from
a compacted revision is 410 Expired. The clock is the cluster's virtual one, the clock its pods run on: at speed
60 a Job's ten minutes pass in ten real seconds, and a watcher that fell ten minutes of the cluster's life behind
has missed ten minutes of its changes, as on a real cluster (a wall-clock window would keep ten hours of them at
that speed). A watch already open keeps reading whatever it has not read yet (the API server's watch cache feeds
an open watch; compaction does not cut it). ``MAX_EVENTS`` bounds memory when the clock stands still.
"""

from __future__ import annotations

import copy
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

COMPACT_EVERY = timedelta(minutes=5)  # kube-apiserver --etcd-compaction-interval's default
MAX_EVENTS = 10_000  # memory: beyond this many events kept, the oldest go (a frozen clock never compacts)


@dataclass(frozen=True)
class Event:
    rv: int
    type: str  # ADDED | MODIFIED | DELETED
    resource: str
    namespace: str
    obj: dict
    at: datetime | None = None  # the cluster's clock when it happened
    prev: dict | None = None  # the object before (MODIFIED, DELETED): what a list at an older version holds


class Store:
    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self.lock = threading.Lock()
        self.clock = clock
        self.rv = 1
        self.objects: dict[tuple[str, str, str], dict] = {}
        self.events: deque[Event] = deque()
        self.oldest_rv = 1  # the compaction: a new watch or an exact list from before it is 410
        self.kept_from = 1  # every event after this is in ``events`` (open watches read from here on)
        self._last: dict[tuple[str, str, str], dict] = {}  # each object's newest event object
        self._readers: dict[int, int] = {}  # an open watch → the version it has read up to
        self._reader_ids = itertools.count(1)
        start = clock() if clock is not None else None
        self._next_compaction = start + COMPACT_EVERY if start is not None else None
        self._compact_to = 1  # the revision at the last compaction tick: the next tick compacts to it

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

    def list_at(self, resource: str, ns: str | None, rv: int) -> list[dict] | None:
        """The objects as they were at revision ``rv`` (a list with ``resourceVersionMatch=Exact``); None when
        ``rv`` is compacted (410 Expired). ``rv`` must not be newer than the store's."""
        with self.lock:
            if rv < self.oldest_rv or rv < self.kept_from:
                return None
            state = {k: o for k, o in self.objects.items() if k[0] == resource and (ns is None or k[1] == ns)}
            for e in reversed(self.events):
                if e.rv <= rv:
                    break
                if e.resource != resource or (ns is not None and e.namespace != ns):
                    continue
                key = (e.resource, e.namespace, e.obj["metadata"]["name"])
                if e.prev is None:
                    state.pop(key, None)
                else:
                    state[key] = e.prev
            return [copy.deepcopy(o) for _, o in sorted(state.items())]

    def iter(self, resource: str, ns: str | None = None) -> Iterable[dict]:
        return [o for (r, n, _), o in sorted(self.objects.items()) if r == resource and (ns is None or n == ns)]

    def open_reader(self, rv: int) -> int:
        """An open watch from ``rv``: while it is open, no event after what it has read is forgotten."""
        with self.lock:
            token = next(self._reader_ids)
            self._readers[token] = rv
            return token

    def close_reader(self, token: int) -> None:
        with self.lock:
            self._readers.pop(token, None)
            self._prune()

    def events_after(self, rv: int, reader: int | None = None, first: bool = True) -> list[Event] | None:
        """Events newer than ``rv``; None when they are no longer all kept (410 Expired): on a watch's ``first``
        look, when ``rv`` is compacted; later, only when memory's bound dropped them. ``reader``: the open watch
        (``open_reader``) that has now read up to ``rv``."""
        with self.lock:
            if rv < self.kept_from or (first and rv < self.oldest_rv):
                return None
            if reader is not None:
                self._readers[reader] = rv
            if not self.events or self.events[-1].rv <= rv:
                return []
            return [e for e in self.events if e.rv > rv]

    # ---- writes -----------------------------------------------------------------------------

    def _record(self, type_: str, resource: str, ns: str, obj: dict) -> None:
        key = (resource, ns, obj["metadata"]["name"])
        snap = copy.deepcopy(obj)
        prev = None if type_ == "ADDED" else self._last.get(key)
        if type_ == "DELETED":
            self._last.pop(key, None)
        else:
            self._last[key] = snap
        self.events.append(Event(self.rv, type_, resource, ns, snap, self.clock() if self.clock else None, prev))
        if len(self.events) > MAX_EVENTS:
            self._prune()

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

    # ---- compaction -------------------------------------------------------------------------

    def compact_due(self, now: datetime) -> None:
        """Run the compactions due by ``now`` (the cluster's clock): at each tick, compact to the revision of the
        tick before."""
        if self._next_compaction is None or now < self._next_compaction:
            return
        with self.lock:
            while self._next_compaction <= now:
                tick = self._next_compaction
                self.oldest_rv = max(self.oldest_rv, self._compact_to)
                self._compact_to = self._rv_at(tick)
                self._next_compaction = tick + COMPACT_EVERY
                if not self.events or self.events[-1].at is None or self.events[-1].at <= tick:
                    # quiet since: every later tick compacts to the same revision; jump to now's
                    n = (now - tick) // COMPACT_EVERY
                    if n >= 1:
                        self.oldest_rv = max(self.oldest_rv, self._compact_to)
                        self._next_compaction = tick + COMPACT_EVERY * (n + 1)
            self._prune()

    def _rv_at(self, t: datetime) -> int:
        """The store's revision at ``t`` on the cluster's clock."""
        for e in reversed(self.events):
            if e.at is None or e.at <= t:
                return e.rv
        return self.events[0].rv - 1 if self.events else self.rv

    def _prune(self) -> None:
        """Forget the events no new watch may read and no open one still needs; past ``MAX_EVENTS``, the oldest."""
        floor = min([self.oldest_rv, *self._readers.values()])
        while self.events and (self.events[0].rv <= floor or len(self.events) > MAX_EVENTS):
            self.kept_from = max(self.kept_from, self.events.popleft().rv)
        self.oldest_rv = max(self.oldest_rv, self.kept_from)

    def compact(self) -> None:
        """Forget the event history now (a test's way to make the next watch from an old rv get 410)."""
        with self.lock:
            self.events.clear()
            self.rv += 1  # the compaction's own revision: watching from any earlier one is too old
            self.oldest_rv = self.kept_from = self._compact_to = self.rv
