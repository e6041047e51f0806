"""The cluster's nodes as the market grants and takes them: Node objects, their events, what a node's loss does to
its pods, and the market's side (how many GPU nodes the workloads need, whether a node is busy)."""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime

from ..world import Node
from .events import ref
from .kubelet import Kubelet
from .objects import K8S_VERSION, iso
from .state import ClusterState

PRODUCT = {"H100-SXM-80GB": "NVIDIA-H100-80GB-HBM3", "MI300X-192GB": "AMD-Instinct-MI300X"}


class NodeSync:
    """Keeps the Node objects of the cluster whose state is ``s`` in step with the market's grants (its
    ``st.nodes``); a node's loss stops its pods through ``kubelet``."""

    def __init__(self, s: ClusterState, kubelet: Kubelet) -> None:
        self.s, self.kubelet = s, kubelet

    def demand(self) -> int:
        """GPU nodes the workloads need now: held by running pods plus wanted by waiting ones."""
        gpn = self.s.spec.gpus_per_node
        need = 0
        for r in self.s.runs.values():
            if r.holds and r.gpus >= gpn:
                need += r.gpus // gpn
        for key, _since in self.s.claims.items():
            ctl = self.s.jobs.get(key)
            if ctl and ctl.gpus >= gpn:
                need += ctl.gpus // gpn
        return need + self.s.st.requested_nodes  # plus what /_sim/k8s/demand asks for by hand

    def node_busy(self, node: Node) -> bool:
        """Whether a pod holds ``node`` (the market releases only idle nodes)."""
        return any(r.holds and r.node == node.name for r in self.s.runs.values())

    def sync(self, t: datetime) -> None:
        """Register the nodes the market granted (Ready when built), remove the ones it took back."""
        current = {n.name: n for n in self.s.st.nodes}
        for name, n in current.items():
            if name not in self.s.nodes:
                self.s.nodes[name] = n
                self.s.node_ips[name] = len(self.s.node_ips) + 10
                obj = self.s.store.put("nodes", self._object(n, n.ready(t)))
                at = min(t, n.granted_at)
                self.s.events.emit(
                    at,
                    ref(obj),
                    "RegisteredNode",
                    f"Node {name} event: Registered Node {name} in Controller",
                    component="node-controller",
                )
                if n.ready(t):
                    self.node_ready_event(obj, n, max(at, min(t, n.ready_at)))
                else:
                    self.s.wake(n.ready_at, lambda tt, n=n: self.node_ready(n, tt))
        for name in list(self.s.nodes):
            if name not in current:
                self.node_gone(self.s.nodes.pop(name), t)

    def node_ready(self, n: Node, t: datetime) -> None:
        if n.name in self.s.nodes:
            self.node_ready_event(self.s.store.put("nodes", self._object(n, True)), n, t)

    def _object(self, n: Node, ready: bool) -> dict:
        return node_object(n, ready, self.s.node_ip(n.name), self.s.t)

    def node_ready_event(self, obj: dict, n: Node, t: datetime) -> None:
        self.s.events.emit(t, ref(obj), "NodeReady", f"Node {n.name} status is now: NodeReady", host=n.name)

    def node_gone(self, n: Node, t: datetime) -> None:
        """The market took ``n`` back: say why, evict its running pods (DisruptionTarget), re-queue the rest."""
        reason = self.s.removed_reason.pop(n.name, "reclaimed")
        nobj = self.s.store.peek("nodes", "", n.name)
        if nobj is not None:
            nref = ref(nobj)
            if reason == "reclaimed":
                busy = sorted(r.name for r in self.s.runs.values() if r.node == n.name and r.active)
                self.s.events.emit(
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
                self.s.events.emit(
                    t,
                    nref,
                    "Released",
                    f"The market released node {n.name} (no workload wants it)",
                    component="nationalcompute-market",
                )
            self.s.events.emit(
                t,
                nref,
                "RemovingNode",
                f"Node {n.name} event: Removing Node {n.name} from Controller",
                component="node-controller",
            )
        for r in sorted(self.s.runs.values(), key=lambda r: r.name):
            if r.node != n.name or not r.active:
                continue
            if r.start is None or r.start > t:  # never started there: wait for another node
                r.node, r.bound, r.start = None, None, None
                r.state = "pending"
                self.kubelet.render_put(r, t)
                continue
            r.disrupted = True
            self.kubelet.pod_event(
                r,
                t,
                "TaintManagerEviction",
                f"Marking for deletion Pod {r.ns}/{r.name}: the market {reason} node {n.name}",
                component="taint-eviction-controller",
                host="",
            )
            self.kubelet.killing(r, t)
            self.kubelet.terminate(r, t, 143, "Error", disruption=f"The market {reason} node {n.name}")
        self.s.node_local.pop(n.name, None)
        self.s.store.delete("nodes", "", n.name)


def node_object(n: Node, ready: bool, ip: str, now: datetime) -> dict:
    """The Node object of ``n`` at address ``ip``: its labels, taints, capacity and conditions (heartbeat ``now``)."""
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
    hb = iso(max(now, n.granted_at))
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
