"""One simulated Kubernetes cluster: its objects and the controllers that move them on the virtual clock.

A discrete-event loop: every future change (a pod's next state, a node joining, the finance launcher's
next look) is a wake-up at a virtual instant; ``reconcile(now)`` runs the wake-ups due, in time order,
and after each instant the Job / ReplicaSet / Deployment controllers and the scheduler. Everything is
derived from those instants, never from when somebody looked, so the same seed and the same requests
give the same run. All of it runs under the World's lock.

The cluster is its state (``state.ClusterState``) with its parts composed: ``nodesync`` (the market's
nodes), ``kubelet`` (a pod's run on its node), ``scheduler``, ``pods`` (making them), ``controllers``
(Jobs, Deployments, ReplicaSets); ``admission`` judges what is created, ``podstatus`` and ``podlogs``
read a run. The routes call what is here: the admission check, the hooks on a create or a delete, a pod's
deletion, the controllers' pass, and the sim's reclaim.
"""

from __future__ import annotations

import heapq
from datetime import datetime, timedelta

from ..world import K8sState, Node, OrgState, World
from . import admission
from .controllers import DeploymentController, JobController
from .kubelet import Kubelet
from .nodesync import NodeSync
from .objects import gpu_requests, iso, owned_by
from .pods import Pods
from .scheduler import Scheduler
from .state import ClusterState, JobCtl

NS_DEFAULT = ("default", "kube-system", "kube-public", "kube-node-lease")


class Cluster(ClusterState):
    """One cluster of the World: its state, its parts composed over that state, and the loop that moves it."""

    def __init__(self, world: World, org: OrgState, st: K8sState, defaults: dict) -> None:
        super().__init__(world, org, st, defaults)
        self.kubelet = Kubelet(self)
        self.scheduler = Scheduler(self, self.kubelet)
        self.nodesync = NodeSync(self, self.kubelet)
        self.pods = Pods(self, self.scheduler, self.kubelet)
        self.jobctl = JobController(self, self.pods, self.scheduler, self.kubelet)
        self.deployctl = DeploymentController(self, self.pods, self.kubelet)
        created = world.epoch
        for ns in NS_DEFAULT:
            self.store.put(
                "namespaces",
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {
                        "name": ns,
                        "uid": self.uid(),
                        "creationTimestamp": iso(created),
                        "labels": {"kubernetes.io/metadata.name": ns},
                    },
                    "spec": {"finalizers": ["kubernetes"]},
                    "status": {"phase": "Active"},
                },
            )
        self.store.put(
            "services",
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": "kubernetes",
                    "namespace": "default",
                    "uid": self.uid(),
                    "creationTimestamp": iso(created),
                    "labels": {"component": "apiserver", "provider": "kubernetes"},
                },
                "spec": {
                    "type": "ClusterIP",
                    "clusterIP": "10.96.0.1",
                    "clusterIPs": ["10.96.0.1"],
                    "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                    "sessionAffinity": "None",
                },
                "status": {"loadBalancer": {}},
            },
        )
        for ns in ("default",):
            self.store.put(
                "serviceaccounts",
                {
                    "apiVersion": "v1",
                    "kind": "ServiceAccount",
                    "metadata": {
                        "name": "default",
                        "namespace": ns,
                        "uid": self.uid(),
                        "creationTimestamp": iso(created),
                    },
                },
            )
        st.demand_fn = self.nodesync.demand
        self.nodesync.sync(self.t)

    def reconcile(self, now: datetime) -> None:
        """Run every wake-up due by ``now`` in time order, then the controllers at ``now``."""
        if now < self.t:
            now = self.t
        while self.wakeups and self.wakeups[0][0] <= now:
            t = self.wakeups[0][0]
            self.t = max(self.t, t)
            while self.wakeups and self.wakeups[0][0] == t:
                _, _, fn = heapq.heappop(self.wakeups)
                fn(self.t)
            self.controllers(self.t)
        self.t = now
        self.nodesync.sync(now)
        self.controllers(now)
        self.store.compact_due(now)
        if now >= self.expire_at:
            self.events.expire(now)
            self.expire_at = now + timedelta(minutes=1)

    def on_world_event(self, event: str, payload: object) -> None:
        if event in ("node-reclaimed", "node-released") and isinstance(payload, Node):
            if payload.cluster == self.name:
                self.removed_reason[payload.name] = event[5:]
        elif event == "step" and isinstance(payload, datetime):
            self.reconcile(payload)

    def reclaim(self, node_name: str | None = None) -> list[str]:
        """Take market nodes back now (a sim control): the named one, or every market node."""
        t = self.world.now()
        out = []
        for n in list(self.st.nodes):
            if n.source == "market" and (node_name is None or n.name == node_name):
                self.st.nodes.remove(n)
                self.removed_reason[n.name] = "reclaimed"
                self.world._emit("node-reclaimed", n)
                out.append(n.name)
        self.reconcile(t)
        return out

    # ---- what the routes and the World call ---------------------------------------------------

    def admit(self, kind: str, name: str, pod_spec: dict, copies: int) -> None:
        """Refuse (403) what the GPU admission webhook refuses (``admission.admit``)."""
        price = admission.price_for_admission(self.world, self.st)
        admission.admit(kind, name, pod_spec, copies, self.st, self.org.balance, price)

    def delete_pod(self, ns: str, name: str, grace: int | None, t: datetime) -> bool:
        """A user's DELETE of a pod the controllers run: True when it is gone at once, False while it is
        Terminating (None-run pods are the caller's to delete)."""
        return self.kubelet.delete_pod(ns, name, grace, t)

    def node_busy(self, node: Node) -> bool:
        return self.nodesync.node_busy(node)

    def created(self, resource: str, obj: dict, t: datetime) -> None:
        """The routes stored a new object: a bare pod is adopted (it runs as a controller's pod does), a Job gets
        its controller's bookkeeping."""
        if resource == "pods" and not obj["metadata"].get("ownerReferences"):
            self.pods.adopt(obj, t)
        if resource == "jobs":
            tmpl = obj["spec"]["template"]["spec"]
            g = gpu_requests(tmpl).get(f"{self.spec.gpu_vendor}.com/gpu", 0)
            ctl = JobCtl(obj["metadata"]["namespace"], obj["metadata"]["name"], obj["metadata"]["uid"], g)
            if self.defaults.get("fail_jobs", 0) > 0:  # /_sim/k8s/fail: the next N Jobs fail
                self.defaults["fail_jobs"] -= 1
                ctl.doomed = True
            self.jobs[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = ctl
        self.dirty = True

    HOLDABLE = ("pods", "jobs", "deployments", "replicasets", "nodes")

    def hold(self, resource: str, obj: dict, t: datetime) -> dict:
        """Store ``obj`` as given, its status included, and keep every controller off it (a sim control's): no
        kubelet runs a held pod, the Job and Deployment controllers leave a held Job, Deployment or ReplicaSet as
        it is, and the node controller a held Node (it keeps only the market's). It keeps its
        ``creationTimestamp`` (else ``t``) and gets a uid; its resourceVersion is the store's."""
        meta = obj["metadata"]
        meta.setdefault("creationTimestamp", iso(t))
        meta.setdefault("uid", self.uid())
        key = (resource, meta.get("namespace", ""), meta["name"])
        self.held.add(key)
        out = self.store.put(resource, obj)
        self.dirty = True
        return out

    def deleted(self, resource: str, ns: str, name: str, t: datetime) -> None:
        """The routes deleted an object: what it owned goes too (a Job's pods, a Deployment's ReplicaSets and their
        pods, everything in a namespace)."""
        self.held.discard((resource, ns, name))
        if resource == "jobs":
            self.jobs.pop((ns, name), None)
            self.claims.pop((ns, name), None)
            for r in list(self.runs.values()):
                if r.owner_kind == "Job" and r.owner == name and r.ns == ns:
                    self.kubelet.kill(r, t)
        elif resource == "deployments":
            for rs in self.store.iter("replicasets", ns):
                if owned_by(rs, "Deployment", name):
                    self.store.delete("replicasets", ns, rs["metadata"]["name"])
                    self.deleted("replicasets", ns, rs["metadata"]["name"], t)
        elif resource == "replicasets":
            for r in list(self.runs.values()):
                if r.owner_kind == "ReplicaSet" and r.owner == name and r.ns == ns:
                    self.kubelet.kill(r, t)
        elif resource == "pods":
            r = self.runs.get((ns, name))
            if r is not None:  # its object is gone already (a namespace's deletion)
                if r.active:
                    r.ended, r.exit_code = t, 143
                    self.kubelet.undo_future(r, t)
                r.accounted = True
                self.kubelet.gone(r, t)
        elif resource == "namespaces":
            for res in (
                "jobs",
                "deployments",
                "replicasets",
                "pods",
                "services",
                "serviceaccounts",
                "configmaps",
                "secrets",
                "roles",
                "rolebindings",
                "events",
            ):
                for o in list(self.store.iter(res, name)):
                    self.store.delete(res, name, o["metadata"]["name"])
                    self.deleted(res, name, o["metadata"]["name"], t)
        self.dirty = True

    def controllers(self, t: datetime) -> None:
        """The controllers and the scheduler at ``t``, in passes until nothing moves; then why pods still wait."""
        for _ in range(4):  # a change may wake another controller; settle in a few passes
            self.dirty = False
            for d in self._moved("deployments"):
                self.deployctl.sync_deployment(d, t)
            for rs in self._moved("replicasets"):
                self.deployctl.sync_rs(rs, t)
            for j in self._moved("jobs"):
                self.jobctl.sync(j, t)
            self.scheduler.schedule(t, self.jobctl.resume)
            if not self.dirty:
                break
        self.scheduler.explain_waiting(t)

    def _moved(self, resource: str) -> list[dict]:
        """The controllers' objects of ``resource``: all but the held ones (``hold``)."""
        objs = list(self.store.iter(resource))
        if not self.held:
            return objs
        return [
            o for o in objs if (resource, o["metadata"].get("namespace", ""), o["metadata"]["name"]) not in self.held
        ]
