"""The Kubernetes kinds ncui and the box know: one table, used by the client and by the simulator; and how
the API server writes a quantity, which both follow; and the label that says whose recipe an object is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# On every object the catalog's manifests create (pods too, through their templates): whose recipe it is.
RECIPE_LABEL = "first-job.nationalcompute.com/recipe"


@dataclass(frozen=True)
class Kind:
    plural: str
    kind: str
    group: str
    version: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def base(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    @property
    def ref(self) -> str:
        """kubectl's resource.group name: ``job.batch``, ``deployment.apps``, ``service``."""
        return f"{self.kind.lower()}.{self.group}" if self.group else self.kind.lower()


KINDS: dict[str, Kind] = {
    k.plural: k
    for k in (
        Kind("pods", "Pod", "", "v1"),
        Kind("services", "Service", "", "v1"),
        Kind("nodes", "Node", "", "v1", False),
        Kind("namespaces", "Namespace", "", "v1", False),
        Kind("serviceaccounts", "ServiceAccount", "", "v1"),
        Kind("configmaps", "ConfigMap", "", "v1"),
        Kind("secrets", "Secret", "", "v1"),
        Kind("events", "Event", "", "v1"),
        Kind("persistentvolumeclaims", "PersistentVolumeClaim", "", "v1"),
        Kind("jobs", "Job", "batch", "v1"),
        Kind("deployments", "Deployment", "apps", "v1"),
        Kind("replicasets", "ReplicaSet", "apps", "v1"),
        Kind("roles", "Role", "rbac.authorization.k8s.io", "v1"),
        Kind("rolebindings", "RoleBinding", "rbac.authorization.k8s.io", "v1"),
    )
}


def quantity(v: Any) -> str:
    """A quantity as the API server stores it: a string (``8`` → ``"8"``, ``0.5`` → ``"500m"``)."""
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else f"{round(v * 1000)}m"
    return str(v)


GPU_RESOURCE_SUFFIX = ".com/gpu"  # nvidia.com/gpu, amd.com/gpu: the extended resources that are GPUs


def _whole(v: Any) -> int:
    """A GPU count as a manifest writes it (``8``, ``"8"``, ``8.0``); anything else (``"1.5"``, ``"abc"``, a
    negative) counts 0: the API server refuses such a manifest with its own words."""
    if isinstance(v, bool):
        return 0
    text = v.strip() if isinstance(v, str) else quantity(v)
    return int(text) if text.isascii() and text.isdigit() else 0


def _container_gpus(c: Any) -> int:
    if not isinstance(c, dict):
        return 0
    res = c.get("resources") or {}
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    return sum(
        _whole(limits[k] if k in limits else requests[k])
        for k in {**requests, **limits}
        if isinstance(k, str) and k.endswith(GPU_RESOURCE_SUFFIX)
    )


def spec_gpus(pod_spec: dict[str, Any] | None) -> int:
    """The GPUs a pod spec asks for, as the scheduler counts them: each container's GPU limit, else its request
    (for an extended resource Kubernetes defaults the request to the limit and requires them equal), summed
    over the containers; an init container runs before them, so the pod needs the most of either: max(sum of
    the containers, the largest init container), a sidecar (an init container with ``restartPolicy: Always``)
    counted beside everything that starts after it. The one count of ncui's client side (the box keeps its own)."""
    spec = pod_spec if isinstance(pod_spec, dict) else {}
    app = sum(_container_gpus(c) for c in spec.get("containers") or ())
    sidecars = peak = 0
    for c in spec.get("initContainers") or ():
        n = _container_gpus(c)
        if isinstance(c, dict) and c.get("restartPolicy") == "Always":
            sidecars += n
            peak = max(peak, sidecars)
        else:
            peak = max(peak, sidecars + n)
    return max(app + sidecars, peak)
