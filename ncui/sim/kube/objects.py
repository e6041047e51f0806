"""Kubernetes object plumbing: the resource registry, Status errors, defaults, selectors and patches."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

K8S_VERSION = "v1.32.3"


@dataclass(frozen=True)
class Resource:
    """A kind as the API server serves it: its plural, kind, group and version, whether it lives in a namespace,
    and discovery's short names, verbs, categories."""

    plural: str
    kind: str
    group: str
    version: str
    namespaced: bool = True
    short: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
    categories: tuple[str, ...] = ()
    singular: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def gv_path(self) -> str:
        return f"apis/{self.group}/{self.version}" if self.group else f"api/{self.version}"


def quantity(v: Any) -> str:
    """A quantity as the API server stores it, its canonical string: a JSON number becomes one (``8`` → ``"8"``,
    ``0.5`` → ``"500m"``, ``2.0`` → ``"2"``); a string stays as written."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not v.is_integer():
        return f"{round(v * 1000)}m"
    if isinstance(v, (int, float)):
        return str(int(v))
    return str(v)


RO = ("get", "list", "watch")
_SERVED: dict[str, dict] = {  # plural → discovery extras; the order is discovery's order
    "pods": dict(short=("po",), categories=("all",)),
    "nodes": dict(short=("no",), verbs=RO),
    "namespaces": dict(short=("ns",), verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    "services": dict(
        short=("svc",), verbs=("create", "delete", "get", "list", "patch", "update", "watch"), categories=("all",)
    ),
    "serviceaccounts": dict(short=("sa",)),
    "configmaps": dict(short=("cm",)),
    "secrets": {},
    "events": dict(short=("ev",)),
    "jobs": dict(categories=("all",)),
    "deployments": dict(short=("deploy",), categories=("all",)),
    "replicasets": dict(short=("rs",), categories=("all",)),
    "roles": {},
    "rolebindings": {},
}
RESOURCES: list[Resource] = [
    Resource(plural, kind, group, "v1", namespaced, **_SERVED[plural])
    for plural, kind, group, namespaced in (
        ("pods", "Pod", "", True),
        ("nodes", "Node", "", False),
        ("namespaces", "Namespace", "", False),
        ("services", "Service", "", True),
        ("serviceaccounts", "ServiceAccount", "", True),
        ("configmaps", "ConfigMap", "", True),
        ("secrets", "Secret", "", True),
        ("events", "Event", "", True),
        ("jobs", "Job", "batch", True),
        ("deployments", "Deployment", "apps", True),
        ("replicasets", "ReplicaSet", "apps", True),
        ("roles", "Role", "rbac.authorization.k8s.io", True),
        ("rolebindings", "RoleBinding", "rbac.authorization.k8s.io", True),
    )
]
BY_GV: dict[tuple[str, str], list[Resource]] = {}
for _r in RESOURCES:
    BY_GV.setdefault((_r.group, _r.version), []).append(_r)
SUBRESOURCES = {
    "pods": ["log", "portforward", "status"],
    "jobs": ["status"],
    "deployments": ["scale", "status"],
    "replicasets": ["scale", "status"],
    "nodes": ["status"],
    "services": ["proxy", "status"],
}
GROUP_ORDER = ["apps", "batch", "rbac.authorization.k8s.io"]


def find(group: str, version: str, plural: str) -> Resource | None:
    for r in BY_GV.get((group, version), []):
        if r.plural == plural:
            return r
    return None


def by_kind(api_version: str, kind: str) -> Resource | None:
    for r in RESOURCES:
        if r.api_version == api_version and r.kind == kind:
            return r
    return None


class KubeError(Exception):
    """Becomes a ``Status`` with ``code``; kubectl prints its ``message``."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.details = code, reason, message, details

    def status(self) -> dict:
        s = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            s["details"] = self.details
        return s


def not_found(r: Resource, name: str) -> KubeError:
    gr = f"{r.plural}.{r.group}" if r.group else r.plural
    return KubeError(404, "NotFound", f'{gr} "{name}" not found', {"name": name, "group": r.group, "kind": r.plural})


def iso(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_micro(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text: str) -> datetime:
    t = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


# ---- pod specs as the API server completes them ------------------------------------------------


def normalize_pod_spec(spec: dict) -> None:
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            res = c.get("resources")
            if isinstance(res, dict):
                for part in ("limits", "requests"):
                    if isinstance(res.get(part), dict):
                        res[part] = {k: quantity(v) for k, v in res[part].items()}
            for e in c.get("env") or []:
                if "value" in e and not isinstance(e["value"], str):
                    e["value"] = quantity(e["value"])
            c.setdefault("terminationMessagePath", "/dev/termination-log")
            c.setdefault("terminationMessagePolicy", "File")
            img = str(c.get("image", ""))
            c.setdefault(
                "imagePullPolicy",
                "Always" if img.endswith(":latest") or ":" not in img.split("/")[-1] else "IfNotPresent",
            )
            if not isinstance(c.get("resources"), dict):
                c["resources"] = {}
            for p in c.get("ports") or []:
                p.setdefault("protocol", "TCP")
    for v in spec.get("volumes") or []:
        ed = v.get("emptyDir")
        if isinstance(ed, dict) and "sizeLimit" in ed:
            ed["sizeLimit"] = quantity(ed["sizeLimit"])
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})


def gpu_requests(pod_spec: dict) -> dict[str, int]:
    """``{"nvidia.com/gpu": 8}``: the GPU resources a pod asks for (limits, else requests), summed."""
    out: dict[str, int] = {}
    for c in pod_spec.get("containers") or []:
        res = c.get("resources") or {}
        seen = dict(res.get("requests") or {})
        seen.update(res.get("limits") or {})
        for k, v in seen.items():
            if k.endswith("/gpu"):
                try:
                    n = int(float(str(v)))
                except ValueError:
                    n = 0
                out[k] = out.get(k, 0) + n
    return out


# ---- selectors --------------------------------------------------------------------------------


def parse_label_selector(text: str | None) -> list[tuple[str, str, list[str]]]:
    """``a=b,c!=d,e in (x,y),f,!g`` → requirements."""
    if not text:
        return []
    reqs = []
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    for p in (x.strip() for x in parts):
        if not p:
            continue
        for op, name in ((" notin ", "notin"), (" in ", "in")):
            if op in p:
                k, vals = p.split(op, 1)
                reqs.append((k.strip(), name, [v.strip() for v in vals.strip().strip("()").split(",") if v.strip()]))
                break
        else:
            if "!=" in p:
                k, v = p.split("!=", 1)
                reqs.append((k.strip(), "!=", [v.strip()]))
            elif "==" in p:
                k, v = p.split("==", 1)
                reqs.append((k.strip(), "=", [v.strip()]))
            elif "=" in p:
                k, v = p.split("=", 1)
                reqs.append((k.strip(), "=", [v.strip()]))
            elif p.startswith("!"):
                reqs.append((p[1:].strip(), "!exists", []))
            else:
                reqs.append((p, "exists", []))
    return reqs


def labels_match(labels: dict, reqs: list[tuple[str, str, list[str]]]) -> bool:
    for k, op, vals in reqs:
        has = k in labels
        v = labels.get(k)
        if op == "=" and v != vals[0]:
            return False
        if op == "!=" and v == vals[0]:
            return False
        if op == "in" and v not in vals:
            return False
        if op == "notin" and has and v in vals:
            return False
        if op == "exists" and not has:
            return False
        if op == "!exists" and has:
            return False
    return True


def selector_to_text(sel: dict) -> str:
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op = e.get("operator")
        if op == "In":
            parts.append(f"{e['key']} in ({','.join(e.get('values', []))})")
        elif op == "NotIn":
            parts.append(f"{e['key']} notin ({','.join(e.get('values', []))})")
        elif op == "Exists":
            parts.append(e["key"])
        elif op == "DoesNotExist":
            parts.append("!" + e["key"])
    return ",".join(parts)


def owner_ref(o: dict) -> dict:
    """The ``ownerReferences`` entry a controller puts on what it makes of ``o``."""
    return {
        "apiVersion": o["apiVersion"],
        "kind": o["kind"],
        "name": o["metadata"]["name"],
        "uid": o["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def owned_by(o: dict, kind: str, name: str) -> bool:
    """Whether the object ``o`` is owned by the ``kind`` named ``name``."""
    return any(
        ref.get("kind") == kind and ref.get("name") == name for ref in o["metadata"].get("ownerReferences") or []
    )


def field_value(obj: dict, path: str) -> str | None:
    cur: Any = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(p)
    return None if cur is None else str(cur)


def parse_field_selector(text: str | None) -> list[tuple[str, bool, str]]:
    out = []
    for p in (text or "").split(","):
        p = p.strip()
        if not p:
            continue
        if "!=" in p:
            k, v = p.split("!=", 1)
            out.append((k.strip(), False, v.strip()))
        else:
            k, v = p.replace("==", "=").split("=", 1)
            out.append((k.strip(), True, v.strip()))
    return out


def fields_match(obj: dict, reqs: list[tuple[str, bool, str]]) -> bool:
    for k, eq, v in reqs:
        got = field_value(obj, k) or ""
        if (got == v) != eq:
            return False
    return True


# ---- patches ----------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "tolerations": None,
    "imagePullSecrets": "name",
}


def strategic_merge(target: Any, patch: Any, key: str = "") -> Any:
    """A strategic merge patch, close enough for kubectl apply: lists of named things merge by name."""
    if isinstance(patch, dict):
        if patch.get("$patch") == "replace":
            return {k: v for k, v in patch.items() if k != "$patch"}
        if patch.get("$patch") == "delete":
            return None
        out = copy.deepcopy(target) if isinstance(target, dict) else {}
        for k, v in patch.items():
            if (
                k.startswith("$setElementOrder/")
                or k.startswith("$retainKeys")
                or k.startswith("$deleteFromPrimitiveList/")
            ):
                continue
            if v is None:
                out.pop(k, None)
            else:
                merged = strategic_merge(out.get(k), v, k)
                if merged is None:
                    out.pop(k, None)
                else:
                    out[k] = merged
        return out
    if isinstance(patch, list):
        mk = MERGE_KEYS.get(key)
        if mk and isinstance(target, list) and all(isinstance(x, dict) for x in patch):
            out = copy.deepcopy(target)
            for item in patch:
                if item.get("$patch") == "delete":
                    out = [x for x in out if x.get(mk) != item.get(mk)]
                    continue
                for i, x in enumerate(out):
                    if isinstance(x, dict) and x.get(mk) == item.get(mk):
                        out[i] = strategic_merge(x, item, "")
                        break
                else:
                    out.append({k: v for k, v in item.items() if not k.startswith("$")})
            return out
        return copy.deepcopy(patch)
    return copy.deepcopy(patch)


def json_patch(target: Any, ops: list) -> Any:
    doc = copy.deepcopy(target)

    def walk(path: str):
        parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
        cur = doc
        for p in parts[:-1]:
            cur = cur[int(p)] if isinstance(cur, list) else cur[p]
        return cur, parts[-1] if parts else ""

    for op in ops:
        kind, path = op.get("op"), op.get("path", "")
        parent, last = walk(path)
        if kind in ("add", "replace"):
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op.get("value"))
                elif kind == "add":
                    parent.insert(int(last), op.get("value"))
                else:
                    parent[int(last)] = op.get("value")
            else:
                parent[last] = op.get("value")
        elif kind == "remove":
            if isinstance(parent, list):
                parent.pop(int(last))
            else:
                parent.pop(last, None)
        elif kind == "test":
            got = parent[int(last)] if isinstance(parent, list) else parent.get(last)
            if got != op.get("value"):
                raise KubeError(422, "Invalid", f"the test of {path} failed")
    return doc


def to_json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()
