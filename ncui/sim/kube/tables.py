"""``meta.k8s.io/v1`` Tables with the columns and cells the real API server prints (kubectl 1.32)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ...kube.status import (
    age,
    deployment_ready,
    human_duration,
    job_completions,
    job_status,
    node_status,
    parse_time,
    pod_reason,
)
from .objects import selector_to_text

__all__ = ["human_duration", "pod_reason", "table", "wants_table", "PRINTERS"]


def _age(obj: dict, now: datetime) -> str:
    return age(obj, now)


def _col(name: str, typ: str = "string", desc: str = "", priority: int = 0, fmt: str = "") -> dict:
    return {"name": name, "type": typ, "format": fmt, "description": desc or name, "priority": priority}


NAME = _col("Name", fmt="name", desc="Name must be unique within a namespace.")
AGE = _col("Age", desc="CreationTimestamp is a timestamp representing the server time when this object was created.")


# ---- pods -------------------------------------------------------------------------------------


def pod_row(pod: dict, now: datetime) -> list:
    reason, ready, total, restarts = pod_reason(pod)
    st = pod.get("status", {})
    ips = st.get("podIPs") or []
    return [
        pod["metadata"]["name"],
        f"{ready}/{total}",
        reason,
        str(restarts),
        _age(pod, now),
        ips[0]["ip"] if ips else "<none>",
        pod.get("spec", {}).get("nodeName") or "<none>",
        st.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


POD_COLS = [
    NAME,
    _col("Ready", desc="The aggregate readiness state of this pod for accepting traffic."),
    _col("Status", desc="The aggregate status of the containers in this pod."),
    _col(
        "Restarts",
        desc="The number of times the containers in this pod have been restarted and when "
        "the last container in this pod has restarted.",
    ),
    AGE,
    _col("IP", priority=1, desc="IP address allocated to the pod. Routable at least within the cluster."),
    _col("Node", priority=1, desc="NodeName is a request to schedule this pod onto a specific node."),
    _col("Nominated Node", priority=1, desc="nominatedNodeName is set when this pod preempts other pods."),
    _col("Readiness Gates", priority=1, desc="If specified, all readiness gates will be evaluated."),
]


# ---- jobs -------------------------------------------------------------------------------------


def job_row(job: dict, now: datetime) -> list:
    spec, st = job.get("spec", {}), job.get("status", {})
    completions = job_completions(job)
    dur = ""
    if st.get("startTime"):
        start = parse_time(st["startTime"])
        end = parse_time(st["completionTime"]) if st.get("completionTime") else now
        dur = human_duration((end - start).total_seconds())
    status = job_status(job)
    cs = spec.get("template", {}).get("spec", {}).get("containers", [])
    return [
        job["metadata"]["name"],
        status,
        completions,
        dur,
        _age(job, now),
        ",".join(c["name"] for c in cs),
        ",".join(str(c.get("image", "")) for c in cs),
        selector_to_text(spec.get("selector") or {}),
    ]


JOB_COLS = [
    NAME,
    _col("Status", desc="Status of the job."),
    _col("Completions", desc="The desired number of successfully finished pods the job should be run with."),
    _col("Duration", desc="Time required to complete the job."),
    AGE,
    _col("Containers", priority=1, desc="Names of each container in the template."),
    _col("Images", priority=1, desc="Images referenced by each container in the template."),
    _col("Selector", priority=1, desc="A label query over pods that should match the pod count."),
]


# ---- deployments, replicasets -----------------------------------------------------------------


def deploy_row(d: dict, now: datetime) -> list:
    spec, st = d.get("spec", {}), d.get("status", {})
    cs = spec.get("template", {}).get("spec", {}).get("containers", [])
    return [
        d["metadata"]["name"],
        deployment_ready(d),
        int(st.get("updatedReplicas", 0)),
        int(st.get("availableReplicas", 0)),
        _age(d, now),
        ",".join(c["name"] for c in cs),
        ",".join(str(c.get("image", "")) for c in cs),
        selector_to_text(spec.get("selector") or {}),
    ]


DEPLOY_COLS = [
    NAME,
    _col("Ready", desc="Number of the pod with ready state"),
    _col(
        "Up-to-date",
        "integer",
        "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
    ),
    _col(
        "Available",
        "integer",
        "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
    ),
    AGE,
    _col("Containers", priority=1),
    _col("Images", priority=1),
    _col("Selector", priority=1),
]


def rs_row(rs: dict, now: datetime) -> list:
    spec, st = rs.get("spec", {}), rs.get("status", {})
    cs = spec.get("template", {}).get("spec", {}).get("containers", [])
    return [
        rs["metadata"]["name"],
        int(spec.get("replicas", 1)),
        int(st.get("replicas", 0)),
        int(st.get("readyReplicas", 0)),
        _age(rs, now),
        ",".join(c["name"] for c in cs),
        ",".join(str(c.get("image", "")) for c in cs),
        selector_to_text(spec.get("selector") or {}),
    ]


RS_COLS = [
    NAME,
    _col("Desired", "integer", "Replicas is the number of desired replicas."),
    _col("Current", "integer", "Replicas is the most recently observed number of replicas."),
    _col("Ready", "integer", "The number of ready replicas for this replica set."),
    AGE,
    _col("Containers", priority=1),
    _col("Images", priority=1),
    _col("Selector", priority=1),
]


# ---- nodes ------------------------------------------------------------------------------------


def node_row(n: dict, now: datetime) -> list:
    status = node_status(n)
    roles = sorted(
        k.split("/", 1)[1]
        for k in n["metadata"].get("labels", {})
        if k.startswith("node-role.kubernetes.io/") and k.split("/", 1)[1]
    )
    info = n.get("status", {}).get("nodeInfo", {})
    addrs = {a["type"]: a["address"] for a in n.get("status", {}).get("addresses", [])}
    return [
        n["metadata"]["name"],
        status,
        ",".join(roles) or "<none>",
        _age(n, now),
        info.get("kubeletVersion", ""),
        addrs.get("InternalIP", "<none>"),
        addrs.get("ExternalIP", "<none>"),
        info.get("osImage", "<unknown>"),
        info.get("kernelVersion", "<unknown>"),
        info.get("containerRuntimeVersion", "<unknown>"),
    ]


NODE_COLS = [
    NAME,
    _col("Status", desc="The status of the node"),
    _col("Roles", desc="The roles of the node"),
    AGE,
    _col("Version", desc="Kubelet Version reported by the node."),
    _col("Internal-IP", priority=1),
    _col("External-IP", priority=1),
    _col("OS-Image", priority=1),
    _col("Kernel-Version", priority=1),
    _col("Container-Runtime", priority=1),
]


# ---- services, namespaces, the rest ----------------------------------------------------------


def svc_row(s: dict, now: datetime) -> list:
    spec = s.get("spec", {})
    ports = ",".join(
        f"{p['port']}/{p.get('protocol', 'TCP')}"
        if not p.get("nodePort")
        else f"{p['port']}:{p['nodePort']}/{p.get('protocol', 'TCP')}"
        for p in spec.get("ports") or []
    )
    sel = spec.get("selector")
    return [
        s["metadata"]["name"],
        spec.get("type", "ClusterIP"),
        spec.get("clusterIP", "<none>"),
        "<none>",
        ports or "<none>",
        _age(s, now),
        ",".join(f"{k}={v}" for k, v in sorted(sel.items())) if sel else "<none>",
    ]


SVC_COLS = [
    NAME,
    _col("Type"),
    _col("Cluster-IP"),
    _col("External-IP"),
    _col("Port(s)"),
    AGE,
    _col("Selector", priority=1),
]


def ns_row(n: dict, now: datetime) -> list:
    return [n["metadata"]["name"], n.get("status", {}).get("phase", "Active"), _age(n, now)]


NS_COLS = [NAME, _col("Status"), AGE]


def _since(ts: str | None, now: datetime) -> str:
    return human_duration((now - parse_time(ts)).total_seconds()) if ts else "<unknown>"


def event_row(e: dict, now: datetime) -> list:
    """The API server's printEvent: LAST SEEN ("5s (x3 over 2m)" when repeated), TYPE, REASON, OBJECT, …"""
    inv, src = e.get("involvedObject") or {}, e.get("source") or {}
    first = _since(e.get("firstTimestamp") or e.get("eventTime"), now)
    last = _since(e.get("lastTimestamp") or e.get("eventTime"), now)
    count = int(e.get("count") or 1)
    if count > 1:
        last = f"{last} (x{count} over {first})"
    source = src.get("component", "") + (f", {src['host']}" if src.get("host") else "")
    return [
        last,
        e.get("type", ""),
        e.get("reason", ""),
        f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        inv.get("fieldPath", ""),
        source,
        (e.get("message") or "").strip(),
        first,
        str(count),
        e["metadata"]["name"],
    ]


EVENT_COLS = [
    _col("Last Seen", desc="The time at which the most recent occurrence of this event was recorded."),
    _col("Type", desc="Type of this event (Normal, Warning), new types could be added in the future"),
    _col("Reason", desc="This should be a short, machine understandable string that gives the reason for the event."),
    _col("Object", desc="The object that this event is about."),
    _col("Subobject", priority=1, desc="The field of the object this event is about (a container)."),
    _col("Source", priority=1, desc="The component reporting this event."),
    _col("Message", desc="A human-readable description of the status of this operation."),
    _col("First Seen", priority=1, desc="The time at which the event was first recorded."),
    _col("Count", priority=1, desc="The number of times this event has occurred."),
    _col("Name", priority=1, fmt="name", desc="Name must be unique within a namespace."),
]


def generic_row(o: dict, now: datetime) -> list:
    return [o["metadata"]["name"], _age(o, now)]


GENERIC_COLS = [
    NAME,
    _col("Age", desc="CreationTimestamp is a timestamp representing the server time when this object was created."),
]

PRINTERS: dict[str, tuple[list, Callable]] = {
    "pods": (POD_COLS, pod_row),
    "jobs": (JOB_COLS, job_row),
    "deployments": (DEPLOY_COLS, deploy_row),
    "replicasets": (RS_COLS, rs_row),
    "nodes": (NODE_COLS, node_row),
    "services": (SVC_COLS, svc_row),
    "namespaces": (NS_COLS, ns_row),
    "events": (EVENT_COLS, event_row),
}


def wants_table(accept: str | None) -> bool:
    return bool(accept) and "as=Table" in accept


def table(
    resource: str, objs: list[dict], now: datetime, rv: str, include: str = "Metadata", columns: bool = True
) -> dict:
    cols, row = PRINTERS.get(resource, (GENERIC_COLS, generic_row))
    rows = []
    for o in objs:
        if include == "Object":
            embedded = o
        elif include == "None":
            embedded = None
        else:
            embedded = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}
        r = {"cells": row(o, now)}
        if embedded is not None:
            r["object"] = embedded
        rows.append(r)
    t = {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": rv}, "rows": rows}
    t["columnDefinitions"] = cols if columns else []
    return t
