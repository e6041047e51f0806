"""The moments the store shows (no Textual): a subscriber that compares each slice with what it held before and
raises a moment for what changed, once. The first value of a slice (what stood when ncui connected, or when the
active cluster changed: the slice cleared) is only looked at, never announced.

- ``k8s_nodes``: a node Ready that was not (``node``); ``vm_capacity``: an allocation active (``node``) or
  reclaimed (``reclaim``);
- ``k8s_pods``: a pod stopped with a DisruptionTarget condition (``reclaim``: the market took its node back);
- ``k8s_deployments``: a serve READY 1/1 that was not (``ready``): a guide's serve once every Deployment behind
  its endpoint is (Kimi K3's is said by the lifecycle flow, with its next steps), any other Deployment READY n/n;
- ``k8s_jobs``: a Job Complete or Failed (``job``); ``slurm_jobs``: a job that left the queue (``job``);
- ``research``: the public research node assigned (``research``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..textsafe import clean
from . import Moment

if TYPE_CHECKING:
    from ..store import Slice, Store

KIMI = "infera"  # Kimi K3's READY 1/1 is the lifecycle flow's moment (flows/lifecycle.py: said with what follows)
SLICES = ("k8s_nodes", "k8s_pods", "k8s_deployments", "k8s_jobs", "vm_capacity", "slurm_jobs", "research")


def _name(obj: Mapping[str, Any]) -> str:
    return clean(str((obj.get("metadata") or {}).get("name") or "?"))[:120]


def _uid(key: str, obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or key)


def _node_ready(node: Mapping[str, Any]) -> bool:
    conds = (node.get("status") or {}).get("conditions") or ()
    return any(isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _disruption(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    conds = (pod.get("status") or {}).get("conditions") or ()
    return next(
        (c for c in conds if isinstance(c, dict) and c.get("type") == "DisruptionTarget" and c.get("status") == "True"),
        None,
    )


def _dep_ready(dep: Mapping[str, Any]) -> bool:
    spec, st = dep.get("spec") or {}, dep.get("status") or {}
    want = spec.get("replicas", 1)
    ready = st.get("readyReplicas") or 0
    return isinstance(want, int) and isinstance(ready, int) and want >= 1 and ready >= want


def _one(name: str, obj: dict[str, Any]) -> tuple[Any, ...]:
    """The state of one object of a slice whose moments are each object's own (``PER_OBJECT``)."""
    if name == "k8s_nodes":
        return (_name(obj), _node_ready(obj))
    if name == "k8s_pods":
        return (_name(obj), _disruption(obj), (obj.get("spec") or {}).get("nodeName"))
    from ..kube.status import job_status

    return (_name(obj), job_status(obj))


PER_OBJECT = ("k8s_nodes", "k8s_pods", "k8s_jobs")  # (a watch replaces the objects that changed, keeps the rest)


def _state(name: str, value: Any) -> dict[str, Any]:
    """What of ``value`` (slice ``name``) a moment is made of: {identity: state}."""
    if name in PER_OBJECT:
        return {_uid(k, o): _one(name, o) for k, o in value.items()}
    if name == "k8s_deployments":
        from ..kube.chat import ENDPOINTS, endpoint_ready

        out: dict[str, Any] = {}
        behind = {n for e in ENDPOINTS.values() for n in e.behind}
        for e in ENDPOINTS.values():  # a serve of the guide's: READY once every Deployment behind it is
            if e.service != KIMI and any(n in value for n in e.behind):
                out[f"serve:{e.service}"] = (e.recipe, endpoint_ready(e, value), 1)
        for k, o in value.items():  # any other Deployment: by itself
            if k not in behind:
                out[_uid(k, o)] = (f"deploy/{_name(o)}", _dep_ready(o), (o.get("status") or {}).get("readyReplicas"))
        return out
    if name == "vm_capacity":
        return {a.id: (clean(a.id), a.state, a.gpus) for a in value.allocations}
    if name == "slurm_jobs":
        return {j.id: (clean(j.id), clean(j.name), clean(j.state)) for j in value}
    if name == "research":
        return {"node": (clean(value.hostname or "the research node"), value.state, value.gpus, value.gpu_model)}
    return {}


def changes(
    name: str, was: dict[str, Any], now: dict[str, Any], cluster: str = "", keys: Iterable[str] | None = None
) -> list[Moment]:
    """The moments between two looks at slice ``name`` (``_state``'s), in a stable order; ``keys``: only those
    identities can have changed (the rest of ``now`` is ``was``'s)."""
    on = f" on {clean(cluster)}" if cluster else ""
    out: list[Moment] = []
    for key in now if keys is None else keys:
        cur, old = now[key], was.get(key)
        if name == "k8s_nodes":
            if cur[1] and not (old and old[1]):
                out.append(Moment("node", "A node joined", f"Node {cur[0]} is Ready{on}: it bills from now."))
        elif name == "k8s_pods":
            if cur[1] is not None and not (old and old[1] is not None):
                why = clean(str(cur[1].get("message") or cur[1].get("reason") or "DisruptionTarget"))[:160]
                where = f" on {clean(str(cur[2]))}" if cur[2] else ""
                out.append(Moment("reclaim", "Reclaimed", f"Pod {cur[0]}{where} was stopped: {why}", "warning"))
        elif name == "k8s_deployments":
            if cur[1] and not (old and old[1]):
                n = cur[2]
                out.append(Moment("ready", f"READY {n}/{n}", f"{cur[0]}{on} is READY {n}/{n}: it answers now."))
        elif name == "k8s_jobs":
            if cur[1] in ("Complete", "Failed") and not (old and old[1] == cur[1]):
                ok = cur[1] == "Complete"
                out.append(
                    Moment(
                        "job",
                        "Job succeeded" if ok else "Job failed",
                        f"job/{cur[0]}{on} {'succeeded' if ok else 'failed'}.",
                        "information" if ok else "error",
                    )
                )
        elif name == "vm_capacity":
            if cur[1] == "active" and not (old and old[1] == "active"):
                out.append(
                    Moment(
                        "node",
                        "A VM node is active",
                        f"Allocation {cur[0]} ({cur[2]} GPUs) is active: ssh in; it bills from now.",
                    )
                )
            elif cur[1] == "reclaimed" and old and old[1] != "reclaimed":
                out.append(
                    Moment(
                        "reclaim",
                        "Reclaimed",
                        f"Allocation {cur[0]} was reclaimed: its node and disk are gone.",
                        "warning",
                    )
                )
        elif name == "research":
            if cur[1] == "assigned" and not (old and old[1] == "assigned"):
                gpus = f" ({cur[2]}× {clean(str(cur[3]))})" if cur[2] and cur[3] else ""
                out.append(
                    Moment("research", "Research node assigned", f"{cur[0]}{gpus} is yours: ssh in (Workloads, 4).")
                )
    if name == "slurm_jobs":
        for key, old in was.items():
            if key not in now:
                out.append(
                    Moment(
                        "job",
                        "Slurm job ended",
                        f"Slurm job {old[0]} ({old[1]}) left the queue (last {old[2]}): Workloads (4) shows its log.",
                    )
                )
    return out


class StoreMoments:
    """Raise ``moment(m)`` for what the store's slices show changing (see the module's docstring)."""

    def __init__(self, store: Store, moment: Callable[[Moment], None]) -> None:
        self.store = store
        self.moment = moment
        self._seen: dict[str, dict[str, Any]] = {}
        # PER_OBJECT slices: each key's object as last looked at, its identity and state (a 1,000-pod watch that
        # changes one pod looks again at that pod alone: the rest are the same objects)
        self._objects: dict[str, dict[str, tuple[object, str, tuple[Any, ...]]]] = {}

    def start(self) -> Callable[[], None]:
        """Subscribe (counting as no interest: a slice polls as fast as its screens want); returns the unsubscribe."""
        for name in SLICES:  # what stands already is looked at, not announced
            self._look(self.store.get(name), announce=False)
        return self.store.subscribe(SLICES, self._look, interested=False)

    def _look(self, s: Slice, announce: bool = True) -> None:
        if s.value is None:
            self._seen.pop(s.name, None)  # cleared (another cluster): its next value is looked at afresh
            self._objects.pop(s.name, None)
            return
        if s.failing and s.name in self._seen:
            return  # (a failed read keeps the last value: nothing changed)
        keys: list[str] | None = None
        if s.name in PER_OBJECT:
            now, keys = self._per_object(s.name, s.value)
        else:
            now = _state(s.name, s.value)
        was = self._seen.get(s.name)
        self._seen[s.name] = now
        if was is None or not announce:
            return
        ref = self.store.meta.get("cluster")
        cluster = getattr(ref, "name", "") if s.name.startswith("k8s_") else ""
        for m in changes(s.name, was, now, cluster, keys):
            self.moment(m)

    def _per_object(self, name: str, value: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
        """``_state`` of a PER_OBJECT slice, worked out again only for the objects that are not the ones last looked
        at; and those objects' identities."""
        last = self._objects.get(name, {})
        kept: dict[str, tuple[object, str, tuple[Any, ...]]] = {}
        changed: list[str] = []
        for k, o in value.items():
            hit = last.get(k)
            if hit is None or hit[0] is not o:
                hit = (o, _uid(k, o), _one(name, o))
                changed.append(hit[1])
            kept[k] = hit
        self._objects[name] = kept
        return {uid: state for _, uid, state in kept.values()}, changed
