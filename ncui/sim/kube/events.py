"""Core ``v1`` Events as a real cluster records them, at the box's clock.

``Recorder.emit`` writes one Event into the cluster's store (so ``get events``, ``get events -w`` and
``describe``'s field-selected list see it), folding a repeat of the same reason and message about the same
object into the existing one (``count``, ``lastTimestamp``: kubectl prints "x3 over 5m"), as the event
correlator does. ``expire`` deletes what was last seen more than ``TTL`` ago (the API server's one hour).
Nothing here draws from the cluster's random generator or uid counter: events never change a seeded run.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from .objects import iso
from .store import Store

TTL = timedelta(hours=1)  # kube-apiserver --event-ttl


def ref(obj: dict, field_path: str = "") -> dict:
    """An ``involvedObject`` for ``obj`` (a stored object: its kind, name, namespace, uid)."""
    meta = obj["metadata"]
    out = {
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace", "default") if obj.get("kind") != "Node" else "",
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion", "v1"),
    }
    if field_path:
        out["fieldPath"] = field_path
    return out


class Recorder:
    def __init__(self, store: Store, cluster: str, seed: int) -> None:
        self.store, self.cluster, self.seed = store, cluster, seed
        self.n = 0
        self.live: dict[tuple, str] = {}  # (namespace, involved uid or name, type, reason, message) → event name

    def emit(
        self,
        t: datetime,
        involved: dict,
        reason: str,
        message: str,
        *,
        warning: bool = False,
        component: str = "kubelet",
        host: str = "",
    ) -> None:
        ns = involved.get("namespace") or "default"
        type_ = "Warning" if warning else "Normal"
        key = (ns, involved.get("uid") or involved["name"], type_, reason, message)
        name = self.live.get(key)
        cur = self.store.peek("events", ns, name) if name else None
        if cur is not None:
            cur["count"] = int(cur.get("count", 1)) + 1
            cur["lastTimestamp"] = iso(t)
            self.store.put("events", cur)
            return
        self.n += 1
        stamp = int(t.timestamp() * 1e9) + self.n  # unique per recorder even within one instant
        name = f"{involved['name']}.{stamp:x}"
        source = {"component": component}
        if host:
            source["host"] = host
        self.store.put(
            "events",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"ncsim-event:{self.seed}:{self.cluster}:{self.n}")),
                    "creationTimestamp": iso(t),
                },
                "involvedObject": dict(involved),
                "reason": reason,
                "message": message,
                "source": source,
                "firstTimestamp": iso(t),
                "lastTimestamp": iso(t),
                "count": 1,
                "type": type_,
                "eventTime": None,
                "reportingComponent": component,
                "reportingInstance": host,
            },
        )
        self.live[key] = name

    def expire(self, now: datetime) -> None:
        cutoff = iso(now - TTL)
        old = [e for e in self.store.iter("events") if (e.get("lastTimestamp") or "") < cutoff]
        for e in old:
            self.store.delete("events", e["metadata"]["namespace"], e["metadata"]["name"])
        if old:
            gone = {e["metadata"]["name"] for e in old}
            self.live = {k: v for k, v in self.live.items() if v not in gone}
