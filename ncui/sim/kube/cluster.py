"""One simulated Kubernetes cluster: its objects and the controllers that move them on the virtual clock.

A discrete-event loop: every future change (a pod's next state, a node joining, the finance launcher's
next look) is a wake-up at a virtual instant; ``reconcile(now)`` runs the wake-ups due, in time order,
and after each instant the Job / ReplicaSet / Deployment controllers and the scheduler. Everything is
derived from those instants, never from when somebody looked, so the same seed and the same requests
give the same run. All of it runs under the World's lock.
"""

from __future__ import annotations

import copy
import hashlib
import heapq
import itertools
import json
import math
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ..money import usd
from ..world import K8sState, Node, OrgState, World
from . import profiles
from .events import Recorder, ref
from .objects import K8S_VERSION, KubeError, gpu_requests, iso, normalize_pod_spec, selector_to_text
from .store import Store

NS_DEFAULT = ("default", "kube-system", "kube-public", "kube-node-lease")
GATE = "nationalcompute.com/gpu-market"
TERMINAL = ("succeeded", "failed")
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
PRODUCT = {"H100-SXM-80GB": "NVIDIA-H100-80GB-HBM3", "MI300X-192GB": "AMD-Instinct-MI300X"}


@dataclass
class PodRun:
    ns: str
    name: str
    uid: str
    owner_kind: str  # Job | ReplicaSet | ""
    owner: str
    profile: str
    gpus: int
    created: datetime
    attempt: int
    obj: dict
    node: str | None = None
    bound: datetime | None = None
    start: datetime | None = None  # R: the node is ready, images start to pull
    plan: profiles.Plan | None = None
    state: str = "pending"  # gated | pending | creating | init:K | running | ready | succeeded | failed
    times: dict = field(default_factory=dict)
    ended: datetime | None = None
    exit_code: int | None = None
    disrupted: bool = False
    accounted: bool = False
    alive: bool = True
    deleting: datetime | None = None  # deleted while its containers ran: Terminating until this instant
    extra_logs: list = field(default_factory=list)  # (t, container, text)
    restarts: int = 0  # the containers' restartCount (the box's churn control bumps it: bench/pods.py)

    @property
    def key(self) -> tuple[str, str]:
        return (self.ns, self.name)

    @property
    def active(self) -> bool:
        return self.alive and self.deleting is None and self.state not in TERMINAL

    @property
    def holds(self) -> bool:
        """Its node is taken: running, or Terminating (its containers still stop)."""
        return self.alive and self.state not in TERMINAL

    def containers(self) -> list[str]:
        return [c["name"] for c in self.obj["spec"].get("containers", [])]

    def init_containers(self) -> list[str]:
        return [c["name"] for c in self.obj["spec"].get("initContainers") or []]


@dataclass
class JobCtl:
    ns: str
    name: str
    uid: str
    gpus: int
    waiting_since: datetime | None = None
    suspended_by_us: bool = False
    failed: int = 0
    attempts: int = 0
    done: bool = False


class Cluster:
    def __init__(self, world: World, org: OrgState, st: K8sState, defaults: dict) -> None:
        self.world, self.org, self.st, self.spec = world, org, st, st.spec
        self.name = st.spec.name
        self.store = Store()
        self.defaults = defaults  # shared sim knobs (finance tune defect)
        self.rng = random.Random(f"kube:{world.seed}:{self.name}")
        self.uids = itertools.count(1)
        self.t: datetime = world.now()
        self.wakeups: list = []
        self.seq = itertools.count()
        self.runs: dict[tuple[str, str], PodRun] = {}
        self.jobs: dict[tuple[str, str], JobCtl] = {}
        self.nodes: dict[str, Node] = {}
        self.node_ips: dict[str, int] = {}
        self.removed_reason: dict[str, str] = {}
        self.shared: dict[str, list[tuple[datetime, bool, tuple]]] = {}
        self.node_local: dict[str, dict[str, datetime]] = {}
        self.warm: dict[str, datetime] = {}
        self.pod_ips = itertools.count(10)
        self.service_ips = itertools.count(20)
        self.claims: dict[tuple[str, str], datetime] = {}  # jobs waiting for a node: since when
        self.dirty = True
        self.events = Recorder(self.store, self.name, world.seed)
        self.expire_at = self.t  # the next look for expired events
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
        st.demand_fn = self.demand
        self._sync_nodes(self.t)

    # ---- ids and time ---------------------------------------------------------------------------

    def uid(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ncsim:{self.world.seed}:{self.name}:{next(self.uids)}"))

    def suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice(NAME_CHARS) for _ in range(n))

    def wake(self, t: datetime, fn: Callable[[datetime], None]) -> None:
        heapq.heappush(self.wakeups, (t, next(self.seq), fn))

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
        self._sync_nodes(now)
        self.controllers(now)
        if now >= self.expire_at:
            self.events.expire(now)
            self.expire_at = now + timedelta(minutes=1)

    # ---- the market's side: nodes and demand ------------------------------------------------

    def demand(self) -> int:
        """GPU nodes the workloads need now: held by running pods plus wanted by waiting ones."""
        gpn = self.spec.gpus_per_node
        need = 0
        for r in self.runs.values():
            if r.holds and r.gpus >= gpn:
                need += r.gpus // gpn
        for key, _since in self.claims.items():
            ctl = self.jobs.get(key)
            if ctl and ctl.gpus >= gpn:
                need += ctl.gpus // gpn
        return need + self.st.requested_nodes  # plus what /_sim/k8s/demand asks for by hand

    def node_busy(self, node: Node) -> bool:
        return any(r.holds and r.node == node.name for r in self.runs.values())

    def on_world_event(self, event: str, payload: object) -> None:
        if event in ("node-reclaimed", "node-released") and isinstance(payload, Node):
            if payload.cluster == self.name:
                self.removed_reason[payload.name] = event[5:]
        elif event == "step" and isinstance(payload, datetime):
            self.reconcile(payload)

    def _sync_nodes(self, t: datetime) -> None:
        current = {n.name: n for n in self.st.nodes}
        for name, n in current.items():
            if name not in self.nodes:
                self.nodes[name] = n
                self.node_ips[name] = len(self.node_ips) + 10
                obj = self.store.put("nodes", self._node_obj(n, n.ready(t)))
                at = min(t, n.granted_at)
                self.events.emit(
                    at,
                    ref(obj),
                    "RegisteredNode",
                    f"Node {name} event: Registered Node {name} in Controller",
                    component="node-controller",
                )
                if n.ready(t):
                    self._node_ready_event(obj, n, max(at, min(t, n.ready_at)))
                else:
                    self.wake(n.ready_at, lambda tt, n=n: self._node_ready(n, tt))
        for name in list(self.nodes):
            if name not in current:
                self._node_gone(self.nodes.pop(name), t)

    def _node_ready(self, n: Node, t: datetime) -> None:
        if n.name in self.nodes:
            self._node_ready_event(self.store.put("nodes", self._node_obj(n, True)), n, t)

    def _node_ready_event(self, obj: dict, n: Node, t: datetime) -> None:
        self.events.emit(t, ref(obj), "NodeReady", f"Node {n.name} status is now: NodeReady", host=n.name)

    def _node_gone(self, n: Node, t: datetime) -> None:
        reason = self.removed_reason.pop(n.name, "reclaimed")
        nobj = self.store.peek("nodes", "", n.name)
        if nobj is not None:
            nref = ref(nobj)
            if reason == "reclaimed":
                busy = sorted(r.name for r in self.runs.values() if r.node == n.name and r.active)
                self.events.emit(
                    t,
                    nref,
                    "Reclaimed",
                    f"The market reclaimed node {n.name} (a higher bid won it back): "
                    + (
                        f"its pods are stopped with a DisruptionTarget condition: {', '.join(busy)}"
                        if busy
                        else "no pod ran on it"
                    ),
                    warning=True,
                    component="nationalcompute-market",
                )
            else:
                self.events.emit(
                    t,
                    nref,
                    "Released",
                    f"The market released node {n.name} (no workload wants it)",
                    component="nationalcompute-market",
                )
            self.events.emit(
                t,
                nref,
                "RemovingNode",
                f"Node {n.name} event: Removing Node {n.name} from Controller",
                component="node-controller",
            )
        for r in sorted(self.runs.values(), key=lambda r: r.name):
            if r.node != n.name or not r.active:
                continue
            if r.start is None or r.start > t:  # never started there: wait for another node
                r.node, r.bound, r.start = None, None, None
                r.state = "pending"
                self._render_put(r, t)
                continue
            r.disrupted = True
            self._pod_event(
                r,
                t,
                "TaintManagerEviction",
                f"Marking for deletion Pod {r.ns}/{r.name}: the market {reason} node {n.name}",
                component="taint-eviction-controller",
                host="",
            )
            self._killing(r, t)
            self._terminate(r, t, 143, "Error", disruption=f"The market {reason} node {n.name}")
        self.node_local.pop(n.name, None)
        self.store.delete("nodes", "", n.name)

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

    def _node_obj(self, n: Node, ready: bool) -> dict:
        ip = f"10.0.{self.node_ips[n.name] // 250}.{self.node_ips[n.name] % 250}"
        labels = {
            "kubernetes.io/hostname": n.name,
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "beta.kubernetes.io/arch": "amd64",
            "nationalcompute.com/cluster": n.cluster,
        }
        taints = []
        if n.role == "cpu":
            labels.update(
                {
                    "nationalcompute.com/role": "cpu-worker",
                    "node-role.kubernetes.io/cpu-worker": "",
                    "node.kubernetes.io/instance-type": "cpu-64",
                }
            )
            capacity = {"cpu": "64", "memory": "528263440Ki", "pods": "110", "ephemeral-storage": "1967834676Ki"}
        else:
            vendor = n.gpu_vendor
            labels.update(
                {
                    "nationalcompute.com/role": "gpu-worker",
                    "node-role.kubernetes.io/gpu": "",
                    "nationalcompute.com/gpu-model": n.gpu_model,
                    "nationalcompute.com/gpu-vendor": vendor,
                    "nationalcompute.com/gpu-count": str(n.gpus),
                    "nationalcompute.com/node-source": n.source,
                    "node.kubernetes.io/instance-type": f"{n.gpu_model.lower()}-x{n.gpus}",
                }
            )
            if vendor == "nvidia":
                labels.update(
                    {
                        "nvidia.com/gpu.product": PRODUCT.get(n.gpu_model, n.gpu_model),
                        "nvidia.com/gpu.count": str(n.gpus),
                        "nvidia.com/gpu.present": "true",
                    }
                )
            else:
                labels.update(
                    {
                        f"{vendor}.com/gpu.product-name": PRODUCT.get(n.gpu_model, n.gpu_model),
                        f"{vendor}.com/gpu.count": str(n.gpus),
                    }
                )
            taints.append({"key": f"{vendor}.com/gpu", "value": "present", "effect": "NoSchedule"})
            capacity = {
                "cpu": "224",
                "memory": "2113516188Ki",
                "pods": "110",
                "ephemeral-storage": "27341987796Ki",
                f"{vendor}.com/gpu": str(n.gpus),
            }
        if not ready:
            taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
        hb = iso(max(self.t, n.granted_at))
        cond = {
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubelet is posting ready status"
            if ready
            else "the node is joining the cluster (building: 10 to 15 minutes)",
            "lastHeartbeatTime": hb,
            "lastTransitionTime": iso(n.ready_at if ready else n.granted_at),
        }
        pressure = [
            {
                "type": k,
                "status": "False",
                "reason": f"KubeletHasSufficient{k[:-8]}",
                "message": "kubelet has sufficient resources",
                "lastHeartbeatTime": hb,
                "lastTransitionTime": iso(n.granted_at),
            }
            for k in ("MemoryPressure", "DiskPressure", "PIDPressure")
        ]
        h = hashlib.sha256(n.name.encode()).hexdigest()
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": n.name,
                "uid": str(uuid.UUID(h[:32])),
                "creationTimestamp": iso(n.granted_at),
                "labels": labels,
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {"taints": taints, "providerID": f"nationalcompute://{n.cluster}/{n.name}"},
            "status": {
                "capacity": capacity,
                "allocatable": dict(capacity),
                "conditions": pressure + [cond],
                "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": n.name}],
                "nodeInfo": {
                    "machineID": h[:32],
                    "systemUUID": str(uuid.UUID(h[32:64])),
                    "bootID": str(uuid.UUID(h[:32][::-1])),
                    "kernelVersion": "6.8.0-1021-nvidia" if n.gpu_vendor == "nvidia" else "6.8.0-49-generic",
                    "osImage": "Ubuntu 22.04.5 LTS",
                    "containerRuntimeVersion": "containerd://1.7.24",
                    "kubeletVersion": K8S_VERSION,
                    "kubeProxyVersion": K8S_VERSION,
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                },
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            },
        }

    # ---- shared volume, node disks, compile caches ------------------------------------------

    def _shared_present(self, flag: str, t: datetime) -> bool:
        state = False
        for at, present, _ in self.shared.get(flag, []):
            if at <= t:
                state = present
        return state

    def _shared_from(self, flag: str, t: datetime) -> datetime | None:
        if self._shared_present(flag, t):
            return t
        for at, present, _ in sorted(self.shared.get(flag, []), key=lambda x: x[0]):
            if at > t and present:
                return at
        return None

    # ---- admission ----------------------------------------------------------------------------

    def price_for_admission(self) -> tuple[int, str]:
        if self.spec.market:
            if self.st.bid > 0:
                return self.st.bid, "your limit price"
            return self.world.markets[
                self.spec.gpu_model
            ].last.price, "the market's current price (no limit price is set)"
        typical = next((m.typical for m in self.world.scenario.markets if m.gpu_model == self.spec.gpu_model), 0)
        return typical, "the market's typical price (a fixed cluster has no limit price)"

    def admit(self, kind: str, name: str, pod_spec: dict, copies: int) -> None:
        """Refuse (403) a wrong GPU vendor, a partial node, and what the balance cannot cover for two hours."""
        gpn, vendor = self.spec.gpus_per_node, self.spec.gpu_vendor
        res = f"{vendor}.com/gpu"

        def deny(msg: str) -> KubeError:
            return KubeError(
                403,
                "Forbidden",
                f'admission webhook "gpu.nationalcompute.com" denied the request: {kind} "{name}": {msg}',
            )

        gpus = gpu_requests(pod_spec)
        for k, n in gpus.items():
            if k != res and n > 0:
                raise deny(
                    f"{k} is not offered on cluster {self.name}: its GPUs are {vendor} "
                    f"({self.spec.gpu_model}); ask for {res}"
                )
        g = gpus.get(res, 0)
        if g <= 0:
            return
        if g > gpn:
            raise deny(
                f"a pod asks for {g} {res} but a node has {gpn}: a pod runs on one node, so ask for {gpn} "
                f"per pod and run more pods"
            )
        if g % gpn:
            if not self.spec.reservation_packing:
                raise deny(
                    f"a pod asks for {g} {res}, a partial node: every pod must request a multiple of "
                    f"gpus_per_node ({gpn}) on this cluster"
                )
            if not any(n.source == "reserved" for n in self.st.gpu_nodes()):
                raise deny(
                    f"a pod asks for {g} {res}, fewer than a node ({gpn}); that runs only on a "
                    f"reservation, and this cluster has none"
                )
        total = g * max(0, copies)
        price, what = self.price_for_admission()
        need = total * price * 2
        if total and need > self.org.balance:
            raise deny(
                f"the balance ({usd(self.org.balance)}) does not cover two hours of this job at "
                f"{what}: {total} GPUs x {usd(price)} x 2 h = {usd(need)}. Top up on the "
                f"console's Billing page or lower the limit price"
            )

    # ---- object lifecycle hooks (the routes call these) --------------------------------------

    def created(self, resource: str, obj: dict, t: datetime) -> None:
        if resource == "pods" and not obj["metadata"].get("ownerReferences"):
            self.adopt_pod(obj, t)
        if resource == "jobs":
            tmpl = obj["spec"]["template"]["spec"]
            g = gpu_requests(tmpl).get(f"{self.spec.gpu_vendor}.com/gpu", 0)
            self.jobs[(obj["metadata"]["namespace"], obj["metadata"]["name"])] = JobCtl(
                obj["metadata"]["namespace"], obj["metadata"]["name"], obj["metadata"]["uid"], g
            )
        self.dirty = True

    def deleted(self, resource: str, ns: str, name: str, t: datetime) -> None:
        if resource == "jobs":
            self.jobs.pop((ns, name), None)
            self.claims.pop((ns, name), None)
            for r in list(self.runs.values()):
                if r.owner_kind == "Job" and r.owner == name and r.ns == ns:
                    self._kill(r, t)
        elif resource == "deployments":
            for rs in self.store.iter("replicasets", ns):
                if _owned_by(rs, "Deployment", name):
                    self.store.delete("replicasets", ns, rs["metadata"]["name"])
                    self.deleted("replicasets", ns, rs["metadata"]["name"], t)
        elif resource == "replicasets":
            for r in list(self.runs.values()):
                if r.owner_kind == "ReplicaSet" and r.owner == name and r.ns == ns:
                    self._kill(r, t)
        elif resource == "pods":
            r = self.runs.get((ns, name))
            if r is not None:  # its object is gone already (a namespace's deletion)
                if r.active:
                    r.ended, r.exit_code = t, 143
                    self._undo_future(r, t)
                r.accounted = True
                self._gone(r, t)
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

    # ---- controllers --------------------------------------------------------------------------

    def controllers(self, t: datetime) -> None:
        for _ in range(4):  # a change may wake another controller; settle in a few passes
            self.dirty = False
            for d in list(self.store.iter("deployments")):
                self._sync_deployment(d, t)
            for rs in list(self.store.iter("replicasets")):
                self._sync_rs(rs, t)
            for j in list(self.store.iter("jobs")):
                self._sync_job(j, t)
            self._schedule(t)
            if not self.dirty:
                break
        self._explain_waiting(t)

    # jobs

    def _sync_job(self, job: dict, t: datetime) -> None:
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        ctl = self.jobs.get((ns, name))
        if ctl is None or ctl.done:
            return
        spec = job["spec"]
        runs = [r for r in self.runs.values() if r.owner_kind == "Job" and r.owner == name and r.ns == ns]
        before = json.dumps(job.get("status", {}), sort_keys=True) + json.dumps(spec.get("suspend"))
        status = copy.deepcopy(job.get("status") or {})
        conds = list(status.get("conditions") or [])
        finished_at: datetime | None = None
        verdict: tuple[str, str, str] | None = None
        completions = int(spec.get("completions") or 1)
        succeeded = sum(1 for r in runs if r.ended is not None and r.exit_code == 0)
        for r in sorted(runs, key=lambda r: (r.ended or t, r.name)):
            if r.ended is None or r.accounted:
                continue
            r.accounted = True
            if r.exit_code == 0:
                if succeeded >= completions:
                    finished_at = r.ended
                    verdict = ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")
                continue
            action = _failure_action(spec, r)
            if action == "Ignore":
                continue
            if action == "FailJob":
                finished_at = r.ended
                verdict = (
                    "Failed",
                    "PodFailurePolicy",
                    f"Container main for pod {ns}/{r.name} failed with exit code {r.exit_code} matching FailJob rule",
                )
                continue
            ctl.failed += 1
            if ctl.failed > int(spec.get("backoffLimit", 6)):
                finished_at = r.ended
                verdict = ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
        active = [r for r in runs if r.active]
        status["active"] = len(active)
        status["ready"] = sum(1 for r in active if r.state == "ready" or (r.state == "running" and not _has_probe(r)))
        status["succeeded"] = succeeded
        status["failed"] = ctl.failed
        status["terminating"] = 0
        status["uncountedTerminatedPods"] = {}
        if verdict is not None:
            ctl.done = True
            self.claims.pop((ns, name), None)
            for r in active:
                self._kill(r, finished_at or t)
            kind, reason, msg = verdict
            target = "SuccessCriteriaMet" if kind == "Complete" else "FailureTarget"
            conds = [c for c in conds if c["type"] not in (target, kind)]
            for ctype in (target, kind):
                conds.append(
                    {
                        "type": ctype,
                        "status": "True",
                        "reason": reason,
                        "message": msg,
                        "lastProbeTime": iso(finished_at or t),
                        "lastTransitionTime": iso(finished_at or t),
                    }
                )
            if kind == "Complete":
                status["completionTime"] = iso(finished_at or t)
                self.events.emit(finished_at or t, ref(job), "Completed", "Job completed", component="job-controller")
            else:
                self.events.emit(finished_at or t, ref(job), reason, msg, warning=True, component="job-controller")
            status["active"] = 0
            status["ready"] = 0
        elif spec.get("suspend") and not ctl.suspended_by_us:
            pass  # the user suspended it
        elif ctl.gpus <= 0 and (want := min(int(spec.get("parallelism", 1)), completions - succeeded)) > len(active):
            for _ in range(want - len(active)):  # pods without GPUs run in parallel on the CPU worker
                self._new_pod(job, "Job", t, None)
        elif not active and (ns, name) not in self.claims:
            self._job_needs_pod(job, ctl, t, conds)
        status["conditions"] = conds
        if not conds:
            status.pop("conditions")
        if "startTime" not in status and not spec.get("suspend") and (active or runs):
            status["startTime"] = iso(min(r.created for r in runs))
        job["status"] = status
        after = json.dumps(status, sort_keys=True) + json.dumps(spec.get("suspend"))
        if after != before:
            self.store.put("jobs", job)
            self.dirty = True

    def _job_needs_pod(self, job: dict, ctl: JobCtl, t: datetime, conds: list) -> None:
        ns, name = ctl.ns, ctl.name
        if ctl.gpus <= 0:
            self._new_pod(job, "Job", t, None)
            return
        node = self._free_node(ctl.gpus, t)
        if node is not None:
            self._new_pod(job, "Job", t, node)
            return
        self.claims[(ns, name)] = t
        if ctl.attempts == 0 and not job["spec"].get("suspend"):
            job["spec"]["suspend"] = True
            ctl.suspended_by_us = True
            self.events.emit(t, ref(job), "Suspended", "Job suspended", component="job-controller")
            conds.append(
                {
                    "type": "Suspended",
                    "status": "True",
                    "reason": "JobSuspended",
                    "message": "Job suspended: waiting for a GPU node "
                    + ("from the market" if self.spec.market else "to free up"),
                    "lastProbeTime": iso(t),
                    "lastTransitionTime": iso(t),
                }
            )
        self.dirty = True

    def _resume_job(self, key: tuple[str, str], node: Node, t: datetime) -> None:
        self.claims.pop(key, None)
        job = self.store.peek("jobs", key[0], key[1])
        ctl = self.jobs.get(key)
        if job is None or ctl is None:
            return
        if ctl.suspended_by_us:
            ctl.suspended_by_us = False
            job["spec"]["suspend"] = False
            st = job.setdefault("status", {})
            st["conditions"] = [c for c in st.get("conditions", []) if c["type"] != "Suspended"] + [
                {
                    "type": "Suspended",
                    "status": "False",
                    "reason": "JobResumed",
                    "message": f"Job resumed: its node {node.name} was granted",
                    "lastProbeTime": iso(t),
                    "lastTransitionTime": iso(t),
                }
            ]
            st["startTime"] = iso(t)
            self.events.emit(t, ref(job), "Resumed", "Job resumed", component="job-controller")
        self._new_pod(job, "Job", t, node)
        self.store.put("jobs", job)

    # deployments and replicasets

    def _sync_deployment(self, d: dict, t: datetime) -> None:
        ns, name = d["metadata"]["namespace"], d["metadata"]["name"]
        spec = d["spec"]
        tmpl = spec["template"]
        h = hashlib.sha256(json.dumps(tmpl, sort_keys=True).encode()).hexdigest()
        phash = "".join(NAME_CHARS[int(h[i : i + 2], 16) % len(NAME_CHARS)] for i in range(0, 20, 2))
        rs_name = f"{name}-{phash}"
        replicas = int(spec.get("replicas", 1))
        cur = self.store.peek("replicasets", ns, rs_name)
        olds = [
            rs
            for rs in self.store.iter("replicasets", ns)
            if _owned_by(rs, "Deployment", name) and rs["metadata"]["name"] != rs_name
        ]
        if cur is None:
            labels = dict(tmpl.get("metadata", {}).get("labels") or {})
            labels["pod-template-hash"] = phash
            rtmpl = copy.deepcopy(tmpl)
            rtmpl.setdefault("metadata", {})["labels"] = labels
            sel = copy.deepcopy(spec["selector"])
            sel.setdefault("matchLabels", {})["pod-template-hash"] = phash
            revs = [
                int(r["metadata"].get("annotations", {}).get("deployment.kubernetes.io/revision", "0"))
                for r in self.store.iter("replicasets", ns)
                if _owned_by(r, "Deployment", name)
            ]
            cur = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": rs_name,
                    "namespace": ns,
                    "uid": self.uid(),
                    "creationTimestamp": iso(t),
                    "generation": 1,
                    "labels": labels,
                    "annotations": {
                        "deployment.kubernetes.io/desired-replicas": str(replicas),
                        "deployment.kubernetes.io/max-replicas": str(replicas),
                        "deployment.kubernetes.io/revision": str(max(revs, default=0) + 1),
                    },
                    "ownerReferences": [_owner_ref(d)],
                },
                "spec": {"replicas": 0, "selector": sel, "template": rtmpl},
                "status": {"replicas": 0},
            }
            self.store.put("replicasets", cur)
            cur = self.store.peek("replicasets", ns, rs_name)
            self.dirty = True
        self._roll(d, cur, olds, replicas, t)
        pods = [
            r
            for r in self.runs.values()
            if r.owner_kind == "ReplicaSet"
            and r.ns == ns
            and r.active
            and any(
                _owned_by(rs, "Deployment", name) and rs["metadata"]["name"] == r.owner
                for rs in self.store.iter("replicasets", ns)
            )
        ]
        updated = [r for r in pods if r.owner == rs_name]
        ready = [r for r in pods if _ready(r)]
        status = {
            "observedGeneration": d["metadata"].get("generation", 1),
            "replicas": len(pods),
            "updatedReplicas": len(updated),
            "readyReplicas": len(ready),
            "availableReplicas": len(ready),
        }
        if len(pods) - len(ready):
            status["unavailableReplicas"] = len(pods) - len(ready)
        status = {k: v for k, v in status.items() if v or k in ("observedGeneration", "replicas")}
        old = d.get("status") or {}
        avail = len(ready) >= replicas
        conds = []
        for c in old.get("conditions", []):
            conds.append(c)

        def cond(ctype, ok, reason, msg):
            for c in conds:
                if c["type"] == ctype:
                    if c["status"] != ("True" if ok else "False"):
                        c.update(
                            status="True" if ok else "False", reason=reason, message=msg, lastTransitionTime=iso(t)
                        )
                    c["lastUpdateTime"] = c.get("lastUpdateTime", iso(t))
                    return
            conds.append(
                {
                    "type": ctype,
                    "status": "True" if ok else "False",
                    "reason": reason,
                    "message": msg,
                    "lastUpdateTime": iso(t),
                    "lastTransitionTime": iso(t),
                }
            )

        cond(
            "Available",
            avail,
            "MinimumReplicasAvailable" if avail else "MinimumReplicasUnavailable",
            "Deployment has minimum availability." if avail else "Deployment does not have minimum availability.",
        )
        cond(
            "Progressing",
            True,
            "NewReplicaSetAvailable" if avail else "ReplicaSetUpdated",
            f'ReplicaSet "{rs_name}" ' + ("has successfully progressed." if avail else "is progressing."),
        )
        status["conditions"] = conds
        if json.dumps(status, sort_keys=True) != json.dumps(old, sort_keys=True):
            d["status"] = status
            self.store.put("deployments", d)

    def _rs_pods(self, rs: dict, *, present: bool = False) -> list[PodRun]:
        """The RS's active pods (``present``: also those still terminating)."""
        ns, name = rs["metadata"]["namespace"], rs["metadata"]["name"]
        return [
            r
            for r in self.runs.values()
            if r.owner_kind == "ReplicaSet"
            and r.owner == name
            and r.ns == ns
            and (r.active or (present and r.alive and r.deleting is not None))
        ]

    def _scale_rs(self, d: dict, rs: dict, n: int, t: datetime) -> None:
        was = int(rs["spec"].get("replicas", 0))
        if n == was:
            return
        rs["spec"]["replicas"] = n
        rs["metadata"]["generation"] = rs["metadata"].get("generation", 1) + 1
        ann = rs["metadata"].setdefault("annotations", {})
        ann["deployment.kubernetes.io/desired-replicas"] = str(d["spec"].get("replicas", 1))
        self.store.put("replicasets", rs)
        self.events.emit(
            t,
            ref(d),
            "ScalingReplicaSet",
            f"Scaled {'up' if n > was else 'down'} replica set {rs['metadata']['name']} from {was} to {n}",
            component="deployment-controller",
        )
        self.dirty = True

    def _roll(self, d: dict, new: dict, olds: list[dict], replicas: int, t: datetime) -> None:
        """The deployment controller's rollout: Recreate stops every old pod (and waits until they are gone)
        before the new ones start; RollingUpdate keeps at most replicas + maxSurge pods and at least
        replicas - maxUnavailable available, so old pods stay until new ones are Ready."""
        olds = sorted(olds, key=lambda rs: rs["metadata"]["creationTimestamp"])
        strategy = d["spec"].get("strategy") or {}
        if strategy.get("type", "RollingUpdate") == "Recreate":
            for rs in olds:
                self._scale_rs(d, rs, 0, t)
            if any(self._rs_pods(rs, present=True) for rs in olds):
                return
            self._scale_rs(d, new, replicas, t)
            return
        live_olds = [rs for rs in olds if int(rs["spec"].get("replicas", 0)) > 0]
        if not live_olds:
            self._scale_rs(d, new, replicas, t)
            return
        ru = strategy.get("rollingUpdate") or {}
        surge = _intstr(ru.get("maxSurge", "25%"), replicas, up=True)
        unavail = _intstr(ru.get("maxUnavailable", "25%"), replicas, up=False)
        if surge == 0 and unavail == 0:
            unavail = 1
        every = [new] + olds

        def total() -> int:
            return sum(int(rs["spec"].get("replicas", 0)) for rs in every)

        def available(rs: dict) -> int:
            return sum(1 for r in self._rs_pods(rs) if _ready(r))

        have = int(new["spec"].get("replicas", 0))
        if have > replicas:
            self._scale_rs(d, new, replicas, t)
        elif total() < replicas + surge:
            self._scale_rs(d, new, have + min(replicas + surge - total(), replicas - have), t)
        min_avail = replicas - unavail
        budget = total() - min_avail - (int(new["spec"].get("replicas", 0)) - available(new))
        if budget <= 0:
            return
        for rs in olds:  # old pods that are not available go first
            unhealthy = int(rs["spec"].get("replicas", 0)) - available(rs)
            cut = min(budget, max(0, unhealthy))
            if cut:
                self._scale_rs(d, rs, int(rs["spec"]["replicas"]) - cut, t)
                budget -= cut
        spare = sum(available(rs) for rs in every) - min_avail
        for rs in olds:
            if spare <= 0:
                break
            cut = min(spare, int(rs["spec"].get("replicas", 0)))
            if cut:
                self._scale_rs(d, rs, int(rs["spec"]["replicas"]) - cut, t)
                spare -= cut

    def _sync_rs(self, rs: dict, t: datetime) -> None:
        ns, name = rs["metadata"]["namespace"], rs["metadata"]["name"]
        want = int(rs["spec"].get("replicas", 1))
        pods = sorted(
            [
                r
                for r in self.runs.values()
                if r.owner_kind == "ReplicaSet" and r.owner == name and r.ns == ns and r.active
            ],
            key=lambda r: (r.created, r.name),
        )
        # the controller deletes unscheduled, then not yet running, then unready, then the newest pods first
        rank = sorted(
            pods,
            key=lambda r: (r.node is not None, r.state not in ("gated", "pending"), _ready(r), -r.created.timestamp()),
        )
        for r in rank[: max(0, len(pods) - want)]:
            self._kill(r, t)
            self.events.emit(
                t, ref(rs), "SuccessfulDelete", f"Deleted pod: {r.name}", component="replicaset-controller"
            )
            self.dirty = True
        for _ in range(want - len(pods)):
            self._new_pod(rs, "ReplicaSet", t, None)
            self.dirty = True
        pods = [
            r
            for r in self.runs.values()
            if r.owner_kind == "ReplicaSet" and r.owner == name and r.ns == ns and r.active
        ]
        ready = sum(1 for r in pods if _ready(r))
        status = {
            "replicas": len(pods),
            "fullyLabeledReplicas": len(pods),
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": rs["metadata"].get("generation", 1),
        }
        status = {k: v for k, v in status.items() if v or k in ("replicas", "observedGeneration")}
        if status != rs.get("status"):
            rs["status"] = status
            self.store.put("replicasets", rs)

    # pods

    def _new_pod(self, owner: dict, owner_kind: str, t: datetime, node: Node | None) -> PodRun:
        ns = owner["metadata"]["namespace"]
        oname = owner["metadata"]["name"]
        tmpl = copy.deepcopy(owner["spec"]["template"])
        name = f"{oname}-{self.suffix()}"
        while (ns, name) in self.runs or self.store.peek("pods", ns, name):
            name = f"{oname}-{self.suffix()}"
        spec = tmpl.get("spec", {})
        g = self._pod_defaults(spec)
        labels = dict(tmpl.get("metadata", {}).get("labels") or {})
        meta = {
            "name": name,
            "generateName": f"{oname}-",
            "namespace": ns,
            "uid": self.uid(),
            "creationTimestamp": iso(t),
            "labels": labels,
            "ownerReferences": [_owner_ref(owner)],
        }
        ann = tmpl.get("metadata", {}).get("annotations")
        if ann:
            meta["annotations"] = dict(ann)
        if owner_kind == "Job":
            meta["finalizers"] = ["batch.kubernetes.io/job-tracking"]
        if g > 0 and node is None:
            spec["schedulingGates"] = [{"name": GATE}]
        obj = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": {}}
        ctl = self.jobs.get((ns, oname)) if owner_kind == "Job" else None
        attempt = 0
        if ctl is not None:
            attempt = ctl.attempts
            ctl.attempts += 1
        r = self._run_pod(obj, owner_kind, oname, attempt, g, t, node)
        self.events.emit(
            t,
            ref(owner),
            "SuccessfulCreate",
            f"Created pod: {name}",
            component="job-controller" if owner_kind == "Job" else "replicaset-controller",
        )
        return r

    def _pod_defaults(self, spec: dict) -> int:
        """Complete a pod spec as the API server does; the GPUs of this cluster's vendor it asks for."""
        normalize_pod_spec(spec)
        spec.setdefault("serviceAccountName", spec.get("serviceAccount", "default"))
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        spec.setdefault("priority", 0)
        return gpu_requests(spec).get(f"{self.spec.gpu_vendor}.com/gpu", 0)

    def adopt_pod(self, obj: dict, t: datetime) -> None:
        """A bare pod (``kubectl run``, a pod manifest): it schedules and runs as a controller's pod does; one
        that asks for GPUs waits (gated) for a node like the rest."""
        g = self._pod_defaults(obj["spec"])
        node = self._free_node(g, t) if g > 0 else None
        if g > 0 and node is None:
            obj["spec"]["schedulingGates"] = [{"name": GATE}]
        self._run_pod(obj, "", "", 0, g, t, node)

    def _run_pod(
        self, obj: dict, owner_kind: str, oname: str, attempt: int, g: int, t: datetime, node: Node | None
    ) -> PodRun:
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
        self.runs[r.key] = r
        if g <= 0:
            cpu = self._cpu_node(spec)
            if cpu is not None:
                self._bind(r, cpu, t, put=False)
        elif node is not None:
            self._bind(r, node, t, put=False)
        self._render_put(r, t)
        self.dirty = True
        return r

    def _cpu_node(self, spec: dict) -> Node | None:
        sel = spec.get("nodeSelector") or {}
        cands = [n for n in self.st.nodes if all(_node_labels(n).get(k) == v for k, v in sel.items())]
        cands.sort(key=lambda n: (n.role != "cpu", n.ready_at, n.name))
        for n in cands:
            if n.role == "cpu" or _tolerates(spec, n):
                return n
        return None

    def _free_node(self, gpus: int, t: datetime) -> Node | None:
        gpn = self.spec.gpus_per_node
        used: dict[str, int] = {}
        for r in self.runs.values():
            if r.holds and r.node and r.gpus > 0:
                used[r.node] = used.get(r.node, 0) + r.gpus
        cands = []
        for n in self.st.gpu_nodes():
            free = n.gpus - used.get(n.name, 0)
            if gpus >= gpn and free < n.gpus:
                continue
            if gpus < gpn and (n.source != "reserved" or free < gpus):
                continue
            cands.append(n)
        cands.sort(key=lambda n: (not n.ready(t), n.source != "reserved", n.ready_at, n.name))
        return cands[0] if cands else None

    def _schedule(self, t: datetime) -> None:
        """Give free GPU nodes to what waits for one, oldest first."""
        waiting: list[tuple[datetime, str, object]] = []
        for key, since in self.claims.items():
            waiting.append((since, f"job/{key[1]}", key))
        for r in self.runs.values():
            if r.active and r.gpus > 0 and r.node is None:
                waiting.append((r.created, f"pod/{r.name}", r))
        for _since, _, w in sorted(waiting, key=lambda x: (x[0], x[1])):
            gpus = self.jobs[w].gpus if isinstance(w, tuple) and w in self.jobs else getattr(w, "gpus", 0)
            if isinstance(w, tuple) and w not in self.jobs:
                self.claims.pop(w, None)
                continue
            node = self._free_node(gpus, t)
            if node is None:
                continue
            if isinstance(w, tuple):
                self._resume_job(w, node, t)
            else:
                self._bind(w, node, t)
            self.dirty = True

    def _bind(self, r: PodRun, node: Node, t: datetime, put: bool = True) -> None:
        r.node, r.bound = node.name, t
        r.obj["spec"].pop("schedulingGates", None)
        r.start = max(t, node.ready_at)
        if r.state == "gated":
            r.state = "pending"
        r.times["bound"] = t
        run_key = r.key
        self.wake(r.start, lambda tt: self._start(run_key, tt))
        if put:
            self._render_put(r, t)

    def _start(self, key: tuple[str, str], t: datetime) -> None:
        r = self.runs.get(key)
        if r is None or not r.active or r.node is None or r.start is None or r.start > t:
            return
        R = r.start
        spec = r.obj["spec"]
        main = (spec.get("containers") or [{}])[0]
        env = {e["name"]: str(e.get("value", "")) for e in main.get("env") or [] if "name" in e}
        for ic in spec.get("initContainers") or []:
            for e in ic.get("env") or []:
                if "name" in e and "value" in e:
                    env.setdefault(e["name"], str(e["value"]))
        local = {k for k, at in self.node_local.get(r.node, {}).items() if at <= R}
        ctx = profiles.Context(
            seed=self.world.seed,
            pod=f"{r.owner}:{r.attempt}" if r.owner_kind == "Job" else r.name,
            node=r.node,
            gpus=r.gpus,
            vendor=self.spec.gpu_vendor,
            gpu_model=self.spec.gpu_model,
            attempt=r.attempt,
            shared_at=lambda flag: _offset(self._shared_from(flag, R), R),
            local=local,
            warm=lambda e: e in self.warm and self.warm[e] <= R,
            env=env,
            image=str(main.get("image", "")),
            command=[str(x) for x in (main.get("command") or []) + (main.get("args") or [])],
            defective=self._tune_defective() if r.profile == "tune" else False,
            backend_ready_at=self._backend_ready(R),
        )
        plan = profiles.make_plan(r.profile, ctx, r.containers())
        if r.profile == "generic" and spec.get("restartPolicy", "Always") == "Always" and plan.end() is not None:
            plan.steps = plan.steps[:-1]  # a Deployment's (or `kubectl run`'s) server keeps running
            plan.logs = {k: v[:-1] for k, v in plan.logs.items()}  # no "done"
        r.plan = plan
        self._pod_event(
            r,
            R,
            "Scheduled",
            f"Successfully assigned {r.ns}/{r.name} to {r.node}",
            component="default-scheduler",
            host="",
        )
        first = (spec.get("initContainers") or spec.get("containers") or [{}])[0]
        self._pod_event(r, R, "Pulling", f'Pulling image "{first.get("image", "")}"', container=first.get("name"))
        for flag, off, present in plan.shared:
            self.shared.setdefault(flag, []).append((R + timedelta(seconds=off), present, r.key))
        for flag, off in plan.node_local:
            self.node_local.setdefault(r.node, {})[flag] = R + timedelta(seconds=off)
        for eng, off in plan.warms:
            at = R + timedelta(seconds=off)
            if eng not in self.warm or self.warm[eng] > at:
                self.warm[eng] = at
        for off, state in plan.steps:
            self.wake(R + timedelta(seconds=off), lambda tt, s=state: self._to_state(key, s, tt))
        if r.profile == "tune":
            ready_off = next((off for f, off, p in plan.shared if p and f.endswith(".ready")), None)
            if ready_off is not None:
                self.wake(R + timedelta(seconds=ready_off), self._launcher_check)
        if r.profile == "launcher":
            run_off = plan.offset_of("running") or 0
            self.wake(R + timedelta(seconds=run_off), self._launcher_check)

    def _to_state(self, key: tuple[str, str], state: str, t: datetime) -> None:
        r = self.runs.get(key)
        if r is None or not r.active or r.start is None:
            return
        r.state = state
        r.times[state] = t
        if state in TERMINAL:
            r.ended = t
            r.exit_code = r.plan.exit_code if r.plan else 0
        self._render_put(r, t)
        self._container_events(r, state, t)
        self.dirty = True

    # ---- events about pods ----------------------------------------------------------------------

    def _pod_event(
        self,
        r: PodRun,
        t: datetime,
        reason: str,
        message: str,
        *,
        container: str | None = None,
        warning: bool = False,
        component: str = "kubelet",
        host: str | None = None,
    ) -> None:
        fp = ""
        if container:
            fp = f"spec.{'initContainers' if container in r.init_containers() else 'containers'}{{{container}}}"
        self.events.emit(
            t,
            ref(r.obj, fp),
            reason,
            message,
            warning=warning,
            component=component,
            host=r.node or "" if host is None else host,
        )

    def _container_events(self, r: PodRun, state: str, t: datetime) -> None:
        """Pulled, Created, Started for the containers a state starts; a readiness probe's first failure."""
        spec = r.obj["spec"]
        if state.startswith("init:"):
            i = int(state.split(":")[1])
            started = [(spec.get("initContainers") or [])[i]]
        elif state == "running":
            started = list(spec.get("containers") or [])
        else:
            return
        since = r.start or t
        first = ((spec.get("initContainers") or spec.get("containers") or [{}])[0]).get("name")
        for c in started:
            name, image = c.get("name", ""), c.get("image", "")
            took = (t - since).total_seconds() if name == first else 0
            if took > 0:
                self._pod_event(r, t, "Pulled", f'Successfully pulled image "{image}" in {took:g}s', container=name)
            else:
                self._pod_event(r, t, "Pulled", f'Container image "{image}" already present on machine', container=name)
            self._pod_event(r, t, "Created", f"Created container: {name}", container=name)
            self._pod_event(r, t, "Started", f"Started container {name}", container=name)
        for c in started if state == "running" else []:
            probe = (c.get("readinessProbe") or {}).get("httpGet")
            if probe:
                port = probe.get("port", "")
                self._pod_event(
                    r,
                    t,
                    "Unhealthy",
                    f'Readiness probe failed: Get "http://{self._pod_ip(r)}:{port}{probe.get("path", "/")}": '
                    f"dial tcp {self._pod_ip(r)}:{port}: connect: connection refused (the engine is still loading)",
                    container=c.get("name"),
                    warning=True,
                )

    def _killing(self, r: PodRun, t: datetime) -> None:
        if r.start is not None and r.start <= t and r.state not in ("gated", "pending"):
            for name in r.containers():
                self._pod_event(r, t, "Killing", f"Stopping container {name}", container=name)

    def waiting_words(self, gpus: int, node: str | None, t: datetime) -> str:
        """Why something that needs ``gpus`` GPUs has no node yet, in words (the FailedScheduling message)."""
        head = "no node can take it yet"  # no node count: it changes as nodes join, the reason does not
        if node is not None:
            n = self.nodes.get(node) or next((x for x in self.st.nodes if x.name == node), None)
            when = f" (granted at {iso(n.granted_at)})" if n is not None else ""
            return (
                f"{head}: waiting for GPU node {node} to join the cluster{when}; a new node takes 10 to 15 "
                f"minutes to build and join"
            )
        res = f"{gpus} {self.spec.gpu_vendor}.com/gpu"
        if not self.spec.market:
            return f"{head}: every GPU node is busy; the pod ({res}) waits for one to free up"
        org = self.org
        if org.balance - (org.owed.__floor__() - org.debited) <= 0:
            return f"{head}: the organization's balance is used up, so the market grants no node: top up on Billing"
        bid = self.st.bid
        if bid <= 0:
            return (
                f"{head}: waiting for the market to grant a GPU node ({res}), but no limit price is set, so nothing "
                f"bids for one: set it with PUT /api/k8s/bid"
            )
        price = self.world.markets[self.spec.gpu_model].last.price
        if bid < price:
            return (
                f"{head}: waiting for the market to grant a GPU node ({res}); your limit price "
                f"({usd(bid)}/GPU-hour) is below what the market clears at now: raise it or wait"
            )
        return (
            f"{head}: waiting for the market to grant a GPU node ({res}) at your limit price "
            f"({usd(bid)}/GPU-hour); a new node then takes 10 to 15 minutes to build and join"
        )

    def _explain_waiting(self, t: datetime) -> None:
        """A FailedScheduling event for each pod waiting for a node (and one on each Job waiting for one), when
        the reason changes: ``describe`` then says why it waits."""
        for r in list(self.runs.values()):
            if not r.active or r.state not in ("gated", "pending") or r.gpus <= 0:
                continue
            words = self.waiting_words(r.gpus, r.node, t)
            if getattr(r, "said", None) != words:
                r.said = words
                self._pod_event(r, t, "FailedScheduling", words, warning=True, component="default-scheduler", host="")
        for key in list(self.claims):
            ctl, job = self.jobs.get(key), self.store.peek("jobs", *key)
            if ctl is None or job is None:
                continue
            words = self.waiting_words(ctl.gpus, None, t).replace(" (", " for its pod (", 1)
            if getattr(ctl, "said", None) != words:
                ctl.said = words
                self.events.emit(t, ref(job), "WaitingForNode", words, component="job-controller")

    def _terminate(self, r: PodRun, t: datetime, code: int, reason: str, disruption: str | None = None) -> None:
        r.state = "failed"
        r.ended = t
        r.exit_code = code
        r.times["failed"] = t
        r.term_reason = reason
        if disruption:
            r.times["disrupted"] = t
            r.disruption = disruption
        self._undo_future(r, t)
        self._render_put(r, t)
        self.dirty = True
        if r.owner_kind == "ReplicaSet":  # the pod GC removes pods of a node that is gone
            self.store.delete("pods", r.ns, r.name)
            r.alive = False

    def _kill(self, r: PodRun, t: datetime, grace: int | None = None) -> bool:
        """Deleted (by a user or its owner). A pod whose containers run stays, Terminating, for its grace
        period (``grace``, else the pod's terminationGracePeriodSeconds) after a Killing event, then goes; one
        that never started or has ended goes at once. True when the pod is gone already."""
        if r.deleting is not None:
            if grace is not None and t + timedelta(seconds=grace) < r.deleting:
                r.deleting = t + timedelta(seconds=grace)
                self.wake(r.deleting, lambda tt, r=r: self._gone(r, tt))
            return False
        started = r.active and r.start is not None and r.start <= t and r.state not in ("gated", "pending")
        if grace is None:
            grace = int(r.obj["spec"].get("terminationGracePeriodSeconds", 30) or 0)
        if r.active:
            r.ended = t
            r.exit_code = 143
            self._undo_future(r, t)
        r.accounted = True
        self.dirty = True
        if started and grace > 0:
            self._killing(r, t)
            r.deleting = t + timedelta(seconds=grace)
            meta = r.obj["metadata"]
            meta["deletionTimestamp"] = iso(r.deleting)
            meta["deletionGracePeriodSeconds"] = grace
            self.store.put("pods", r.obj)
            self.wake(r.deleting, lambda tt, r=r: self._gone(r, tt))
            return False
        self._gone(r, t)
        return True

    def delete_pod(self, ns: str, name: str, grace: int | None, t: datetime) -> bool:
        """A user's DELETE of a pod the controllers run: True when it is gone at once, False while it is
        Terminating (None-run pods are the caller's to delete)."""
        r = self.runs.get((ns, name))
        if r is None or not r.alive:
            return True
        return self._kill(r, t, grace)

    def _gone(self, r: PodRun, t: datetime) -> None:
        if not r.alive:
            return
        r.alive = False
        if self.runs.get(r.key) is r:
            self.runs.pop(r.key, None)
        self.store.delete("pods", r.ns, r.name)
        self.dirty = True

    def _undo_future(self, r: PodRun, t: datetime) -> None:
        for flag, entries in self.shared.items():
            kept = []
            for at, present, owner in entries:
                if owner == r.key and at > t:
                    if not present:
                        kept.append((t, False, owner))  # an EXIT trap still runs
                    continue
                kept.append((at, present, owner))
            self.shared[flag] = kept
        if r.node and r.plan:
            for flag, _off in r.plan.node_local:
                at = self.node_local.get(r.node, {}).get(flag)
                if at is not None and at > t:
                    self.node_local[r.node].pop(flag, None)
        if r.plan and r.start:
            for eng, off in r.plan.warms:
                if self.warm.get(eng) == r.start + timedelta(seconds=off) and self.warm[eng] > t:
                    self.warm.pop(eng)

    # the finance-analyst launcher: scales the engine up once the tune wrote .ready

    def _launcher_check(self, t: datetime) -> None:
        for r in list(self.runs.values()):
            if r.profile != "launcher" or not r.active or "running" not in r.times:
                continue
            L = r.times["running"]
            if not self._shared_present("finance-analyst/model/.ready", t):
                continue
            S = max(t, L)
            k = math.ceil((S - L).total_seconds() / 20 - 1e-9)
            at = L + timedelta(seconds=20 * k)
            if at <= t:
                self._launcher_scale(r, t)
            else:
                self.wake(at, self._launcher_check)

    def _launcher_scale(self, launcher: PodRun, t: datetime) -> None:
        d = self.store.peek("deployments", launcher.ns, "finance-analyst")
        if d is None or int(d["spec"].get("replicas", 1)) != 0:
            return
        if not self._shared_present("finance-analyst/model/.ready", t):
            return
        d["spec"]["replicas"] = 1
        d["metadata"]["generation"] = d["metadata"].get("generation", 1) + 1
        self.store.put("deployments", d)
        launcher.extra_logs.append(
            (t, "launcher", f"{iso(t)} the tuned model is ready: scaling deploy/finance-analyst to 1")
        )
        launcher.extra_logs.append((t, "launcher", "deployment.apps/finance-analyst scaled"))
        self.dirty = True

    def _tune_defective(self) -> bool:
        """Whether the finance-analyst tune starting now comes out defective: the next ``tune_defects`` attempts
        are (a scenario's or a sim control's count, one used per attempt), else what the control forced, else
        not: a tune passes by default, and every new attempt gets its own outcome."""
        if self.defaults.get("tune_defects", 0) > 0:
            self.defaults["tune_defects"] -= 1
            return True
        return bool(self.defaults.get("tune_defective"))

    def _backend_ready(self, R: datetime) -> float | None:
        best = None
        for r in self.runs.values():
            if r.profile == "kimi-worker" and r.active and r.plan and r.start:
                off = r.plan.offset_of("ready")
                if off is not None:
                    at = r.start + timedelta(seconds=off)
                    best = at if best is None or at < best else best
        return None if best is None else (best - R).total_seconds()

    # ---- the pod object -----------------------------------------------------------------------

    def _render_put(self, r: PodRun, t: datetime) -> None:
        if not r.alive:
            return
        obj = r.obj
        obj["status"] = self._pod_status(r)
        if r.node and r.start and r.state not in ("gated", "pending"):
            obj["spec"]["nodeName"] = r.node
        elif r.state in ("gated", "pending"):
            obj["spec"].pop("nodeName", None)
        self.store.put("pods", obj)

    def _pod_status(self, r: PodRun) -> dict:
        T = {k: iso(v) for k, v in r.times.items()}
        created = iso(r.created)
        st = r.state
        spec = r.obj["spec"]
        inits = spec.get("initContainers") or []
        mains = spec.get("containers") or []
        phase = {"succeeded": "Succeeded", "failed": "Failed", "running": "Running", "ready": "Running"}.get(
            st, "Pending"
        )
        status: dict = {"phase": phase, "qosClass": _qos(spec)}
        conds = []
        if st == "gated":
            conds.append(
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates: waiting for the market "
                    "to grant a GPU node",
                    "lastProbeTime": None,
                    "lastTransitionTime": created,
                }
            )
            status["conditions"] = conds
            return status
        if st == "pending":
            node = r.node  # bound to a node that is still joining (not yet in self.nodes)
            msg = (
                f"0/{len(self.nodes)} nodes are available: waiting for node {node} to join the cluster"
                if node
                else f"0/{len(self.nodes)} nodes are available: no free GPU node; waiting for one"
            )
            conds.append(
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": msg,
                    "lastProbeTime": None,
                    "lastTransitionTime": T.get("bound", created),
                }
            )
            status["conditions"] = conds
            return status
        start = iso(r.start) if r.start else created
        ip = self._pod_ip(r)
        node_ip = f"10.0.{self.node_ips.get(r.node, 0) // 250}.{self.node_ips.get(r.node, 0) % 250}"
        status.update(hostIP=node_ip, hostIPs=[{"ip": node_ip}], podIP=ip, podIPs=[{"ip": ip}], startTime=start)
        n_init = len(inits)
        init_done = st not in ("creating",) and not st.startswith("init:")
        ready = st == "ready" or (st == "running" and not any(c.get("readinessProbe") for c in mains))
        running_at = T.get("running")
        end = T.get("succeeded") or T.get("failed")
        conds.append(
            {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None, "lastTransitionTime": start}
        )
        conds.append(
            {
                "type": "Initialized",
                "status": "True" if init_done else "False",
                "lastProbeTime": None,
                "lastTransitionTime": running_at if (init_done and n_init and running_at) else start,
                **(
                    {}
                    if init_done
                    else {
                        "reason": "ContainersNotInitialized",
                        "message": f"containers with incomplete status: [{' '.join(c['name'] for c in inits)}]",
                    }
                ),
            }
        )
        if st in TERMINAL:
            rc = {
                "type": "Ready",
                "status": "False",
                "reason": "PodCompleted" if st == "succeeded" else "PodFailed",
                "lastProbeTime": None,
                "lastTransitionTime": end,
            }
        else:
            rc = {
                "type": "Ready",
                "status": "True" if ready else "False",
                "lastProbeTime": None,
                "lastTransitionTime": T.get("ready", running_at) if ready else start,
            }
            if not ready:
                rc.update(
                    reason="ContainersNotReady",
                    message=f"containers with unready status: [{' '.join(c['name'] for c in mains)}]",
                )
        conds.append(rc)
        conds.append({**rc, "type": "ContainersReady"})
        conds.append(
            {
                "type": "PodScheduled",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": T.get("bound", created),
            }
        )
        if r.disrupted:
            conds.insert(
                0,
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "DeletionByTaintManager",
                    "message": getattr(r, "disruption", "The node was reclaimed"),
                    "lastProbeTime": None,
                    "lastTransitionTime": T.get("disrupted", end),
                },
            )
        status["conditions"] = conds
        cur_init = int(st.split(":")[1]) if st.startswith("init:") else (-1 if st == "creating" else n_init)
        istat = []
        for i, c in enumerate(inits):
            s = self._cstatus(r, c, ip)
            if i < cur_init:
                fin = _init_end(r, i)
                s["state"] = {
                    "terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": T.get(f"init:{i}", start),
                        "finishedAt": fin,
                        "containerID": s["containerID"],
                    }
                }
                s["ready"], s["started"] = True, False
            elif i == cur_init:
                s["state"] = {"running": {"startedAt": T.get(f"init:{i}", start)}}
                s["started"] = True
            else:
                s["state"] = {"waiting": {"reason": "PodInitializing"}}
                s.pop("containerID", None)
                s.pop("imageID", None)
                s["imageID"] = ""
            istat.append(s)
        if istat:
            status["initContainerStatuses"] = istat
        cstat = []
        for c in mains:
            s = self._cstatus(r, c, ip)
            if st == "creating" or st.startswith("init:"):
                s["state"] = {"waiting": {"reason": "PodInitializing" if n_init else "ContainerCreating"}}
                s.pop("containerID", None)
                s["imageID"] = ""
            elif st in ("running", "ready"):
                s["state"] = {"running": {"startedAt": running_at}}
                s["ready"], s["started"] = ready, True
            else:
                code = r.exit_code if r.exit_code is not None else 0
                s["state"] = {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else getattr(r, "term_reason", "Error"),
                        "startedAt": running_at or start,
                        "finishedAt": end,
                        "containerID": s["containerID"],
                    }
                }
                s["ready"], s["started"] = False, False
            cstat.append(s)
        status["containerStatuses"] = cstat
        return status

    def _cstatus(self, r: PodRun, c: dict, ip: str) -> dict:
        h = hashlib.sha256(f"{r.uid}:{c['name']}".encode()).hexdigest()
        img = str(c.get("image", ""))
        repo = img if "/" in img.split(":")[0] else f"docker.io/library/{img}"
        if repo.count("/") == 1 and not repo.split("/")[0].count("."):
            repo = "docker.io/" + repo
        return {
            "name": c["name"],
            "image": repo,
            "imageID": f"{repo.split(':')[0]}@sha256:{h[::-1]}",
            "containerID": f"containerd://{h}",
            "ready": False,
            "restartCount": r.restarts if c["name"] in r.containers() else 0,
            "started": False,
        }

    def _pod_ip(self, r: PodRun) -> str:
        if not hasattr(r, "ip"):
            n = next(self.pod_ips)
            r.ip = f"10.244.{self.node_ips.get(r.node, 0) % 250}.{n % 250 + 2}"
        return r.ip

    # ---- logs ---------------------------------------------------------------------------------

    def log_lines(self, r: PodRun, container: str, until: datetime) -> list[tuple[datetime, str]]:
        if r.plan is None or r.start is None:
            return []
        out = [(r.start + timedelta(seconds=off), text) for off, text in r.plan.logs.get(container, [])]
        per = r.plan.periodic.get(container)
        if per is not None and r.active:
            off0, fn = per
            k = 1
            while off0 + k * profiles.PERIODIC_EVERY < profiles.PERIODIC_MAX:
                at = r.start + timedelta(seconds=off0 + k * profiles.PERIODIC_EVERY)
                if at > until:
                    break
                out.append((at, fn(k)))
                k += 1
        out += [(at, text) for at, c, text in r.extra_logs if c == container]
        if r.ended is not None:
            out = [x for x in out if x[0] <= r.ended]
            if r.disrupted and container in r.containers():
                out.append((r.ended, "Terminated: the node was reclaimed (SIGTERM, exit code 143)"))
        out.sort(key=lambda x: x[0])
        return [x for x in out if x[0] <= until]

    def container_started(self, r: PodRun, container: str) -> bool:
        if container in r.init_containers():
            i = r.init_containers().index(container)
            return f"init:{i}" in r.times
        return "running" in r.times

    def container_done(self, r: PodRun, container: str, t: datetime) -> bool:
        if r.ended is not None and r.ended <= t:
            return True
        if container in r.init_containers():
            i = r.init_containers().index(container)
            nxt = f"init:{i + 1}" if i + 1 < len(r.init_containers()) else "running"
            return nxt in r.times
        return False


# ---- helpers ----------------------------------------------------------------------------------


def _offset(at: datetime | None, R: datetime) -> float | None:
    return None if at is None else (at - R).total_seconds()


def _owner_ref(o: dict) -> dict:
    return {
        "apiVersion": o["apiVersion"],
        "kind": o["kind"],
        "name": o["metadata"]["name"],
        "uid": o["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _owned_by(o: dict, kind: str, name: str) -> bool:
    return any(
        ref.get("kind") == kind and ref.get("name") == name for ref in o["metadata"].get("ownerReferences") or []
    )


def _intstr(v: object, total: int, up: bool) -> int:
    """maxSurge / maxUnavailable: a count, or a percentage of ``total`` (surge rounds up, unavailable down)."""
    text = str(v).strip()
    if text.endswith("%"):
        x = total * float(text[:-1] or 0) / 100
        return max(0, math.ceil(x) if up else math.floor(x))
    try:
        return max(0, int(text))
    except ValueError:
        return 0


def _has_probe(r: PodRun) -> bool:
    return any(c.get("readinessProbe") for c in r.obj["spec"].get("containers", []))


def _ready(r: PodRun) -> bool:
    return r.active and (r.state == "ready" or (r.state == "running" and not _has_probe(r)))


def _init_end(r: PodRun, i: int) -> str:
    n = len(r.init_containers())
    nxt = f"init:{i + 1}" if i + 1 < n else "running"
    t = r.times.get(nxt) or r.times.get("failed") or r.times.get("succeeded")
    return iso(t) if t else iso(r.created)


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


def _qos(spec: dict) -> str:
    any_res = False
    for c in spec.get("containers", []):
        res = c.get("resources") or {}
        if res.get("limits") or res.get("requests"):
            any_res = True
    return "Burstable" if any_res else "BestEffort"


def _failure_action(spec: dict, r: PodRun) -> str:
    """The Job's podFailurePolicy verdict on a failed pod: Ignore | FailJob | Count."""
    pfp = spec.get("podFailurePolicy") or {}
    for rule in pfp.get("rules") or []:
        for pc in rule.get("onPodConditions") or []:
            if pc.get("type") == "DisruptionTarget" and r.disrupted and str(pc.get("status", "True")) == "True":
                return rule.get("action", "Count")
        ec = rule.get("onExitCodes")
        if ec and r.exit_code is not None:
            vals = [int(v) for v in ec.get("values") or []]
            hit = r.exit_code in vals
            if (ec.get("operator", "In") == "In" and hit) or (
                ec.get("operator") == "NotIn" and not hit and r.exit_code != 0
            ):
                return rule.get("action", "Count")
    if r.disrupted and not pfp:
        return "Count"
    return "Count"


def selector_text(sel: dict) -> str:
    return selector_to_text(sel)
