"""Pods as they are made: a controller's new pod from its owner's template, a bare pod adopted, the API
server's defaults on a pod spec, and the ``PodRun`` that follows each on the virtual clock."""

from __future__ import annotations

import copy
from datetime import datetime

from ..world import Node
from . import profiles
from .events import ref
from .kubelet import Kubelet
from .objects import gpu_requests, iso, normalize_pod_spec, owner_ref
from .scheduler import Scheduler
from .state import GATE, ClusterState, PodRun


class Pods:
    """Makes the pods of the cluster whose state is ``s``: ``scheduler`` places them, ``kubelet`` runs them."""

    def __init__(self, s: ClusterState, scheduler: Scheduler, kubelet: Kubelet) -> None:
        self.s, self.scheduler, self.kubelet = s, scheduler, kubelet

    def new_pod(self, owner: dict, owner_kind: str, t: datetime, node: Node | None) -> PodRun:
        """A pod of ``owner``'s template (a Job's or a ReplicaSet's), on ``node`` or waiting for one."""
        ns = owner["metadata"]["namespace"]
        oname = owner["metadata"]["name"]
        tmpl = copy.deepcopy(owner["spec"]["template"])
        name = f"{oname}-{self.s.suffix()}"
        while (ns, name) in self.s.runs or self.s.store.peek("pods", ns, name):
            name = f"{oname}-{self.s.suffix()}"
        spec = tmpl.get("spec", {})
        g = self.complete_spec(spec)
        labels = dict(tmpl.get("metadata", {}).get("labels") or {})
        meta = {
            "name": name,
            "generateName": f"{oname}-",
            "namespace": ns,
            "uid": self.s.uid(),
            "creationTimestamp": iso(t),
            "labels": labels,
            "ownerReferences": [owner_ref(owner)],
        }
        ann = tmpl.get("metadata", {}).get("annotations")
        if ann:
            meta["annotations"] = dict(ann)
        if owner_kind == "Job":
            meta["finalizers"] = ["batch.kubernetes.io/job-tracking"]
        if g > 0 and node is None:
            spec["schedulingGates"] = [{"name": GATE}]
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {}}
        ctl = self.s.jobs.get((ns, oname)) if owner_kind == "Job" else None
        attempt = 0
        if ctl is not None:
            attempt = ctl.attempts
            ctl.attempts += 1
        r = self.run(obj, owner_kind, oname, attempt, g, t, node)
        self.s.events.emit(
            t,
            ref(owner),
            "SuccessfulCreate",
            f"Created pod: {name}",
            component="job-controller" if owner_kind == "Job" else "replicaset-controller",
        )
        return r

    def complete_spec(self, spec: dict) -> int:
        """Complete a pod spec as the API server does; the GPUs of this cluster's vendor it asks for."""
        normalize_pod_spec(spec)
        spec.setdefault("serviceAccountName", spec.get("serviceAccount", "default"))
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
        return gpu_requests(spec).get(f"{self.s.spec.gpu_vendor}.com/gpu", 0)

    def adopt(self, obj: dict, t: datetime) -> None:
        """A bare pod (``kubectl run``, a pod manifest): it schedules and runs as a controller's pod does; one
        that asks for GPUs waits (gated) for a node like the rest."""
        g = self.complete_spec(obj["spec"])
        node = self.scheduler.free_node(g, t) if g > 0 else None
        if g > 0 and node is None:
            obj["spec"]["schedulingGates"] = [{"name": GATE}]
        self.run(obj, "", "", 0, g, t, node)

    def run(
        self, obj: dict, owner_kind: str, oname: str, attempt: int, g: int, t: datetime, node: Node | None
    ) -> PodRun:
        """The run of the pod object ``obj`` (``g`` GPUs): bound now when a node is given or it needs no GPU."""
        meta, spec = obj["metadata"], obj["spec"]
        labels = meta.get("labels") or {}
        r = PodRun(
            meta["namespace"],
            meta["name"],
            meta["uid"],
            owner_kind,
            oname,
            profiles.profile_of(labels),
            g,
            t,
            attempt,
            obj,
            state="gated" if g > 0 and node is None else "pending",
        )
        self.s.runs[r.key] = r
        if g <= 0:
            cpu = self.scheduler.cpu_node(spec)
            if cpu is not None:
                self.scheduler.bind(r, cpu, t, put=False)
        elif node is not None:
            self.scheduler.bind(r, node, t, put=False)
        self.kubelet.render_put(r, t)
        self.s.dirty = True
        return r
