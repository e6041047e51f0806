"""The scheduler: which node a pod goes to, when, and why one waits (its FailedScheduling words).

GPU pods and Jobs wait for a whole free GPU node (or part of a reservation's), oldest first; a pod without GPUs
goes to the CPU worker. ``waiting_words`` says in plain words why something has no node yet, from the market's
side (no limit price, a price below the market, a node still joining, the balance used up).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ..money import usd
from ..world import Node
from .events import ref
from .kubelet import Kubelet
from .objects import iso
from .state import ClusterState, PodRun


class Scheduler:
    """Places the pods of the cluster whose state is ``s``; ``kubelet`` runs them once placed."""

    def __init__(self, s: ClusterState, kubelet: Kubelet) -> None:
        self.s, self.kubelet = s, kubelet

    def schedule(self, t: datetime, resume: Callable[[tuple[str, str], Node, datetime], None]) -> None:
        """Give free GPU nodes to what waits for one, oldest first: a pod is bound to its node, a Job waiting for
        one (suspended, its pod not made yet) is handed to ``resume`` (the Job controller's)."""
        waiting: list[tuple[datetime, str, object]] = []
        for key, since in self.s.claims.items():
            waiting.append((since, f"job/{key[1]}", key))
        for r in self.s.runs.values():
            if r.active and r.gpus > 0 and r.node is None:
                waiting.append((r.created, f"pod/{r.name}", r))
        for _since, _, w in sorted(waiting, key=lambda x: (x[0], x[1])):
            gpus = self.s.jobs[w].gpus if isinstance(w, tuple) and w in self.s.jobs else getattr(w, "gpus", 0)
            if isinstance(w, tuple) and w not in self.s.jobs:
                self.s.claims.pop(w, None)
                continue
            node = self.free_node(gpus, t)
            if node is None:
                continue
            if isinstance(w, tuple):
                resume(w, node, t)
            else:
                self.bind(w, node, t)
            self.s.dirty = True

    def free_node(self, gpus: int, t: datetime) -> Node | None:
        """The GPU node a pod of ``gpus`` GPUs goes to now: a whole free node (part of a reservation's), ready
        ones first."""
        gpn = self.s.spec.gpus_per_node
        used: dict[str, int] = {}
        for r in self.s.runs.values():
            if r.holds and r.node and r.gpus > 0:
                used[r.node] = used.get(r.node, 0) + r.gpus
        cands = []
        for n in self.s.st.gpu_nodes():
            free = n.gpus - used.get(n.name, 0)
            if gpus >= gpn and free < n.gpus:
                continue
            if gpus < gpn and (n.source != "reserved" or free < gpus):
                continue
            cands.append(n)
        cands.sort(key=lambda n: (not n.ready(t), n.source != "reserved", n.ready_at, n.name))
        return cands[0] if cands else None

    def cpu_node(self, spec: dict) -> Node | None:
        """The node a pod without GPUs runs on: the CPU worker, else a GPU node its selector and tolerations allow."""
        sel = spec.get("nodeSelector") or {}
        cands = [n for n in self.s.st.nodes if all(_node_labels(n).get(k) == v for k, v in sel.items())]
        cands.sort(key=lambda n: (n.role != "cpu", n.ready_at, n.name))
        for n in cands:
            if n.role == "cpu" or _tolerates(spec, n):
                return n
        return None

    def bind(self, r: PodRun, node: Node, t: datetime, put: bool = True) -> None:
        """Put the pod on ``node``: its run starts when the node is ready (the kubelet's ``start``)."""
        r.node, r.bound = node.name, t
        r.obj["spec"].pop("schedulingGates", None)
        r.start = max(t, node.ready_at)
        if r.state == "gated":
            r.state = "pending"
        r.times["bound"] = t
        run_key = r.key
        self.s.wake(r.start, lambda tt: self.kubelet.start(run_key, tt))
        if put:
            self.kubelet.render_put(r, t)

    def waiting_words(self, gpus: int, node: str | None, t: datetime) -> str:
        """Why something that needs ``gpus`` GPUs has no node yet, in words (the FailedScheduling message)."""
        head = "no node can take it yet"  # no node count: it changes as nodes join, the reason does not
        if node is not None:
            n = self.s.nodes.get(node) or next((x for x in self.s.st.nodes if x.name == node), None)
            when = f" (granted at {iso(n.granted_at)})" if n is not None else ""
            return (
                f"{head}: waiting for GPU node {node} to join the cluster{when}; a new node takes 10 to 15 "
                f"minutes to build and join"
            )
        res = f"{gpus} {self.s.spec.gpu_vendor}.com/gpu"
        if not self.s.spec.market:
            return f"{head}: every GPU node is busy; the pod ({res}) waits for one to free up"
        org = self.s.org
        if org.balance - (org.owed.__floor__() - org.debited) <= 0:
            return f"{head}: the organization's balance is used up, so the market grants no node: top up on Billing"
        bid = self.s.st.bid
        if bid <= 0:
            return (
                f"{head}: waiting for the market to grant a GPU node ({res}), but no limit price is set, so nothing "
                f"bids for one: set it with PUT /api/k8s/bid"
            )
        price = self.s.world.markets[self.s.spec.gpu_model].last.price
        if bid < price:
            return (
                f"{head}: waiting for the market to grant a GPU node ({res}); your limit price "
                f"({usd(bid)}/GPU-hour) is below what the market clears at now: raise it or wait"
            )
        return (
            f"{head}: waiting for the market to grant a GPU node ({res}) at your limit price "
            f"({usd(bid)}/GPU-hour); a new node then takes 10 to 15 minutes to build and join"
        )

    def explain_waiting(self, t: datetime) -> None:
        """A FailedScheduling event for each pod waiting for a node (and one on each Job waiting for one), when
        the reason changes: ``describe`` then says why it waits."""
        for r in list(self.s.runs.values()):
            if not r.active or r.state not in ("gated", "pending") or r.gpus <= 0:
                continue
            words = self.waiting_words(r.gpus, r.node, t)
            if r.said != words:
                r.said = words
                self.kubelet.pod_event(
                    r, t, "FailedScheduling", words, warning=True, component="default-scheduler", host=""
                )
        for key in list(self.s.claims):
            ctl, job = self.s.jobs.get(key), self.s.store.peek("jobs", *key)
            if ctl is None or job is None:
                continue
            words = self.waiting_words(ctl.gpus, None, t).replace(" (", " for its pod (", 1)
            if ctl.said != words:
                ctl.said = words
                self.s.events.emit(t, ref(job), "WaitingForNode", words, component="job-controller")


def _node_labels(n: Node) -> dict:
    if n.role == "cpu":
        return {"nationalcompute.com/role": "cpu-worker", "kubernetes.io/hostname": n.name}
    return {
        "nationalcompute.com/role": "gpu-worker",
        "kubernetes.io/hostname": n.name,
        "nationalcompute.com/gpu-model": n.gpu_model,
    }


def _tolerates(spec: dict, n: Node) -> bool:
    if n.role == "cpu":
        return True
    key = f"{n.gpu_vendor}.com/gpu"
    return any(
        t.get("key") == key or (t.get("operator") == "Exists" and not t.get("key"))
        for t in spec.get("tolerations") or []
    )
