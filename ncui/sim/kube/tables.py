"""``meta.k8s.io/v1`` Tables with the columns and cells the real API server prints (kubectl 1.32).

The cells are the API server's own printers (kubernetes ``pkg/printers/internalversion/printers.go``:
``printPod``, ``printJob``, ``printDeployment``, ``printNode``; AGE is ``translateTimestampSince``, that is
apimachinery's ``duration.HumanDuration`` of now less the timestamp), worked out here from the object alone, as a
server does: the box never asks ncui's client side what a row says (tests/printer_cases.py holds the cases both
are held to).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from .objects import parse_time, selector_to_text

__all__ = ["human_duration", "since", "table", "wants_table", "PRINTERS"]


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: about two or three significant figures (``45s``, ``3m20s``,
    ``10m``, ``5h3m``, ``2d3h``, ``400d``, ``3y120d``, ``10y``); up to a second in the future reads ``0s``,
    further ``<invalid>``."""
    whole = int(seconds)  # (Go's int(d.Seconds()): toward zero)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years, rest = days // 365, days % 365
    if hours < 24 * 365 * 8 and rest:
        return f"{years}y{rest}d"
    return f"{years}y"


def _time(ts: Any) -> datetime | None:
    """A timestamp field's time, None where it is unset (Go's zero ``metav1.Time``)."""
    return parse_time(ts) if isinstance(ts, str) and ts.strip() else None


def since(ts: Any, now: datetime) -> str:
    """``translateTimestampSince``: how long ago ``ts`` was, ``<unknown>`` for an unset time."""
    t = _time(ts)
    return "<unknown>" if t is None else human_duration((now - t).total_seconds())


def _age(obj: dict, now: datetime) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def _col(name: str, typ: str = "string", desc: str = "", priority: int = 0, fmt: str = "") -> dict:
    return {"name": name, "type": typ, "format": fmt, "description": desc or name, "priority": priority}


NAME = _col("Name", fmt="name", desc="Name must be unique within a namespace.")
AGE = _col("Age", desc="CreationTimestamp is a timestamp representing the server time when this object was created.")


def _true(conditions: Any, ctype: str) -> bool:
    """The first condition of type ``ctype`` says True (the printers' ``hasJobCondition``; for a pod's, any)."""
    for c in conditions or ():
        if isinstance(c, dict) and c.get("type") == ctype:
            return c.get("status") == "True"
    return False


# ---- pods -------------------------------------------------------------------------------------


def _finished(cs: dict) -> datetime | None:
    """When a container last terminated (its lastState), None when it never did or the time is unset."""
    return _time((((cs.get("lastState") or {}).get("terminated")) or {}).get("finishedAt"))


def _later(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None or (b is not None and b > a) else a


def _terminated_reason(term: dict, prefix: str) -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def pod_cells(pod: dict, now: datetime) -> tuple[str, str, str]:
    """printPod's READY, STATUS and RESTARTS: sidecars (init containers with ``restartPolicy: Always``) count
    in READY; an init container that is not done says ``Init:…``; the containers' states override the phase,
    the last container's first; ``5 (5m ago)`` when a container restarted."""
    spec, st = pod.get("spec") or {}, pod.get("status") or {}
    phase = str(st.get("phase") or "")
    reason = str(st.get("reason") or phase)
    conds = st.get("conditions") or []
    if any(
        isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated" for c in conds
    ):
        reason = "SchedulingGated"
    sidecars = {str(c.get("name", "")) for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or ()) + len(sidecars)
    ready = restarts = sidecar_restarts = 0
    last = sidecar_last = None
    initializing = False
    n_init = len(spec.get("initContainers") or ())
    for i, cs in enumerate(st.get("initContainerStatuses") or ()):
        sidecar = str(cs.get("name", "")) in sidecars
        state = cs.get("state") or {}
        term, wait = state.get("terminated"), state.get("waiting")
        count = int(cs.get("restartCount") or 0)
        restarts += count
        last = _later(last, _finished(cs))
        if sidecar:
            sidecar_restarts += count
            sidecar_last = _later(sidecar_last, _finished(cs))
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and cs.get("started") is True:
            ready += bool(cs.get("ready"))
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif wait is not None and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = f"Init:{wait['reason']}"
        else:
            reason = f"Init:{i}/{n_init}"
        initializing = True
        break
    if not initializing or _true(conds, "Initialized"):
        restarts, last = sidecar_restarts, sidecar_last
        running = False
        for cs in reversed(st.get("containerStatuses") or ()):
            state = cs.get("state") or {}
            term, wait = state.get("terminated"), state.get("waiting")
            restarts += int(cs.get("restartCount") or 0)
            last = _later(last, _finished(cs))
            if wait is not None and wait.get("reason"):
                reason = str(wait["reason"])
            elif term is not None:
                reason = _terminated_reason(term, "")
            elif cs.get("ready") and state.get("running") is not None:
                running = True
                ready += 1
        if reason == "Completed" and running:  # (a container still runs: any Ready condition that holds says so)
            ready_cond = any(
                isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") == "True" for c in conds
            )
            reason = "Running" if ready_cond else "NotReady"
    deleting = bool((pod.get("metadata") or {}).get("deletionTimestamp"))
    if deleting and st.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Succeeded", "Failed"):
        reason = "Terminating"
    told = str(restarts)
    if restarts and last is not None:
        told = f"{restarts} ({human_duration((now - last).total_seconds())} ago)"
    return f"{ready}/{total}", reason, told


def pod_row(pod: dict, now: datetime) -> list:
    ready, status, restarts = pod_cells(pod, now)
    spec, st = pod.get("spec") or {}, pod.get("status") or {}
    ips = st.get("podIPs") or []
    gates = spec.get("readinessGates") or []
    conds: dict[Any, Any] = {}
    for c in st.get("conditions") or ():
        if isinstance(c, dict):
            conds.setdefault(c.get("type"), c.get("status"))
    return [
        pod["metadata"]["name"],
        ready,
        status,
        restarts,
        _age(pod, now),
        (ips[0].get("ip") if ips else None) or "<none>",
        spec.get("nodeName") or "<none>",
        st.get("nominatedNodeName") or "<none>",
        f"{sum(conds.get(g.get('conditionType')) == 'True' for g in gates)}/{len(gates)}" if gates else "<none>",
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


def job_status(job: dict) -> str:
    """printJob's STATUS: Complete, Failed, Terminating (being deleted), Suspended, FailureTarget, else Running."""
    conds = (job.get("status") or {}).get("conditions")
    if _true(conds, "Complete"):
        return "Complete"
    if _true(conds, "Failed"):
        return "Failed"
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    if _true(conds, "Suspended"):
        return "Suspended"
    if _true(conds, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def job_completions(job: dict) -> str:
    """printJob's COMPLETIONS: ``succeeded/completions``; a work queue (no completions) ``n/1``, or ``n/1 of P``
    when it runs ``P`` pods in parallel."""
    spec, st = job.get("spec") or {}, job.get("status") or {}
    done = int(st.get("succeeded") or 0)
    if spec.get("completions") is not None:
        return f"{done}/{int(spec['completions'])}"
    parallel = int(spec.get("parallelism") or 0)
    return f"{done}/1 of {parallel}" if parallel > 1 else f"{done}/1"


def job_duration(job: dict, now: datetime) -> str:
    """printJob's DURATION: empty before it starts, since its start while it runs, start to completion after."""
    st = job.get("status") or {}
    start = _time(st.get("startTime"))
    if start is None:
        return ""
    end = _time(st.get("completionTime")) or now
    return human_duration((end - start).total_seconds())


def job_row(job: dict, now: datetime) -> list:
    spec = job.get("spec") or {}
    cs = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        job["metadata"]["name"],
        job_status(job),
        job_completions(job),
        job_duration(job, now),
        _age(job, now),
        ",".join(str(c.get("name", "")) for c in cs),
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
    """printDeployment: READY is ready/desired replicas, then UP-TO-DATE and AVAILABLE as the status counts them."""
    spec, st = d.get("spec") or {}, d.get("status") or {}
    cs = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    desired = spec.get("replicas")
    return [
        d["metadata"]["name"],
        f"{int(st.get('readyReplicas') or 0)}/{1 if desired is None else int(desired)}",
        int(st.get("updatedReplicas") or 0),
        int(st.get("availableReplicas") or 0),
        _age(d, now),
        ",".join(str(c.get("name", "")) for c in cs),
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


def node_status(n: dict) -> str:
    """printNode's STATUS: the Ready condition (the last one listed) as ``Ready`` or ``NotReady`` (a node whose
    kubelet stopped reporting reads Ready ``Unknown``: NotReady), ``Unknown`` without one; ``,SchedulingDisabled``
    when cordoned."""
    ready = None
    for c in (n.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == "Ready":
            ready = c.get("status") == "True"
    said = "Unknown" if ready is None else "Ready" if ready else "NotReady"
    return said + (",SchedulingDisabled" if (n.get("spec") or {}).get("unschedulable") else "")


def node_roles(n: dict) -> str:
    """printNode's ROLES: each ``node-role.kubernetes.io/<role>`` label and a ``kubernetes.io/role`` label's value,
    sorted, else ``<none>``."""
    roles = set()
    for k, v in ((n.get("metadata") or {}).get("labels") or {}).items():
        if k.startswith("node-role.kubernetes.io/") and k.split("/", 1)[1]:
            roles.add(k.split("/", 1)[1])
        elif k == "kubernetes.io/role" and v:
            roles.add(str(v))
    return ",".join(sorted(roles)) or "<none>"


def node_row(n: dict, now: datetime) -> list:
    st = n.get("status") or {}
    info = st.get("nodeInfo") or {}
    addrs: dict[str, str] = {}
    for a in st.get("addresses") or ():
        addrs.setdefault(a.get("type"), a.get("address"))  # (the first of each type)
    return [
        n["metadata"]["name"],
        node_status(n),
        node_roles(n),
        _age(n, now),
        info.get("kubeletVersion", ""),
        addrs.get("InternalIP") or "<none>",
        addrs.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
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


def event_row(e: dict, now: datetime) -> list:
    """The API server's printEvent: LAST SEEN ("5s (x3 over 2m)" when repeated), TYPE, REASON, OBJECT, …"""
    inv, src = e.get("involvedObject") or {}, e.get("source") or {}
    first = since(e.get("firstTimestamp") or e.get("eventTime"), now)
    last = since(e.get("lastTimestamp") or e.get("eventTime"), now)
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
