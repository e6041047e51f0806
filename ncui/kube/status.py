"""kubectl's STATUS and READY strings, and one-line explanations of a pod's state. One place for both.

``pod_status`` is kubectl's ``printPod`` (kubernetes/pkg/printers/internalversion): exactly what
``kubectl get pods`` prints. ncui's own reading of the object: the box's Tables are worked out apart
(ncui/sim/kube/tables.py), and both are held to Kubernetes' printer cases (tests/printer_cases.py).
Plain Python: no Textual, no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

from ..money import fmt_price

__all__ = [
    "pod_status",
    "pod_ready",
    "pod_restarts",
    "restarts_column",
    "pod_reason",
    "job_status",
    "job_completions",
    "deployment_ready",
    "node_status",
    "age",
    "human_duration",
    "parse_time",
    "explain",
    "explain_job_without_pods",
]


def parse_time(text: str) -> datetime:
    """An RFC 3339 timestamp (``Z`` or an offset, any fraction up to nanoseconds) as an aware datetime."""
    s = text.strip().replace("Z", "+00:00")
    if "." in s:  # Python takes at most 6 fractional digits
        head, rest = s.split(".", 1)
        i = 0
        while i < len(rest) and rest[i].isdigit():
            i += 1
        s = f"{head}.{rest[:i][:6].ljust(6, '0')}{rest[i:]}"
    t = datetime.fromisoformat(s)
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery/pkg/util/duration.HumanDuration (kubectl's AGE)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d{h % 24}h" if h % 24 else f"{h // 24}d"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8 and h // 24 % 365:
        return f"{h // 24 // 365}y{h // 24 % 365}d"
    return f"{h // 24 // 365}y"


def age(obj: dict[str, Any], now: datetime) -> str:
    """kubectl's AGE column: ``45s``, ``3m20s``, ``2d``, or ``<unknown>``. An object stamped after ``now`` (a
    service's clock read a moment before it made the object) is ``0s``, never ``<invalid>``."""
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    return human_duration(max(0.0, (now - parse_time(ts)).total_seconds()))


# ---- pods -------------------------------------------------------------------------------------


def _last_restart(c: dict[str, Any]) -> datetime | None:
    ts = (((c.get("lastState") or {}).get("terminated")) or {}).get("finishedAt")
    return parse_time(ts) if ts else None


def _latest(a: datetime | None, b: datetime | None) -> datetime | None:
    return b if a is None or (b is not None and b > a) else a


def _exit_reason(term: dict[str, Any], prefix: str = "") -> str:
    if term.get("reason"):
        return prefix + str(term["reason"])
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


def _pod_columns(pod: dict[str, Any]) -> tuple[str, int, int, int, datetime | None]:
    """kubectl's printPod: (STATUS, ready containers, containers, restarts, when the last restart was). A sidecar
    (an init container with ``restartPolicy: Always``) counts as a container; once the pod is initialized only
    the sidecars' and the containers' restarts count."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    sidecars = {c.get("name") for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(sidecars)
    ready = restarts = side_restarts = 0
    last: datetime | None = None
    side_last: datetime | None = None
    phase = status.get("phase", "")
    reason = status.get("reason") or phase
    conds = status.get("conditions") or []
    for c in conds:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    n_init = len(spec.get("initContainers") or [])
    initializing = False
    for i, c in enumerate(status.get("initContainerStatuses") or []):
        restarts += int(c.get("restartCount", 0))
        last = _latest(last, _last_restart(c))
        sidecar = c.get("name") in sidecars
        if sidecar:
            side_restarts += int(c.get("restartCount", 0))
            side_last = _latest(side_last, _last_restart(c))
        state = c.get("state") or {}
        term, wait = state.get("terminated"), state.get("waiting")
        if term is not None and int(term.get("exitCode") or 0) == 0:
            continue
        if sidecar and c.get("started") is True:
            ready += bool(c.get("ready"))
            continue
        if term is not None:
            reason = _exit_reason(term, "Init:")
        elif wait and wait.get("reason") and wait["reason"] != "PodInitializing":
            reason = "Init:" + wait["reason"]
        else:
            reason = f"Init:{i}/{n_init}"
        initializing = True
        break
    initialized = next((c.get("status") == "True" for c in conds if c.get("type") == "Initialized"), False)
    if not initializing or initialized:
        restarts, last = side_restarts, side_last
        has_running = False
        for c in reversed(status.get("containerStatuses") or []):
            restarts += int(c.get("restartCount", 0))
            last = _latest(last, _last_restart(c))
            state = c.get("state") or {}
            wait, term, run = state.get("waiting"), state.get("terminated"), state.get("running")
            if wait and wait.get("reason"):
                reason = wait["reason"]
            elif term is not None:
                reason = _exit_reason(term)
            elif c.get("ready") and run is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = (
                "Running" if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds) else "NotReady"
            )
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"
    return reason, ready, total, restarts, last


def pod_reason(pod: dict[str, Any]) -> tuple[str, int, int, int]:
    """(STATUS, ready containers, containers, restarts): kubectl's printPod."""
    return _pod_columns(pod)[:4]


def pod_status(pod: dict[str, Any]) -> str:
    """kubectl's STATUS: SchedulingGated, Pending, Init:0/2, ContainerCreating, Running, Completed, Error, …"""
    return pod_reason(pod)[0]


def pod_ready(pod: dict[str, Any]) -> str:
    """kubectl's READY: ``0/1``."""
    _, ready, total, _ = pod_reason(pod)
    return f"{ready}/{total}"


def pod_restarts(pod: dict[str, Any]) -> int:
    return pod_reason(pod)[3]


def restarts_column(pod: dict[str, Any], now: datetime) -> str:
    """kubectl's RESTARTS: ``0``, or ``5 (5m ago)`` since the last restart."""
    *_, restarts, last = _pod_columns(pod)
    return f"{restarts} ({human_duration((now - last).total_seconds())} ago)" if restarts and last else str(restarts)


# ---- jobs, deployments, nodes -------------------------------------------------------------------


def _has(conds: Iterable[dict[str, Any]] | None, ctype: str) -> bool:
    return any(c.get("type") == ctype and c.get("status") == "True" for c in conds or [])


def owned_by(pod: dict[str, Any], kind: str, name: str) -> bool:
    """The pod belongs to Job ``name``, or to Deployment ``name`` (through its ReplicaSet ``name-<hash>``)."""
    for ref in pod["metadata"].get("ownerReferences") or ():
        if kind == "Job" and ref.get("kind") == "Job" and ref.get("name") == name:
            return True
        if kind == "Deployment" and ref.get("kind") == "ReplicaSet" and ref.get("name", "").rpartition("-")[0] == name:
            return True
    return False


def job_status(job: dict[str, Any]) -> str:
    """kubectl's Job STATUS (1.32): Complete, Failed, Terminating, Suspended, FailureTarget, Running (printJob names
    no other: a Job whose success criteria are met while its pods still stop reads Running)."""
    conds = (job.get("status") or {}).get("conditions")
    if _has(conds, "Complete"):
        return "Complete"
    if _has(conds, "Failed"):
        return "Failed"
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    if _has(conds, "Suspended"):
        return "Suspended"
    if _has(conds, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def job_completions(job: dict[str, Any]) -> str:
    """kubectl's Job COMPLETIONS: ``0/1``."""
    spec, st = job.get("spec") or {}, job.get("status") or {}
    comp = spec.get("completions")
    succ = st.get("succeeded", 0)
    if comp is not None:
        return f"{succ}/{comp}"
    par = spec.get("parallelism", 0)
    return f"{succ}/1 of {par}" if par > 1 else f"{succ}/1"


def deployment_ready(dep: dict[str, Any]) -> str:
    """kubectl's Deployment READY: ``ready/desired``."""
    spec, st = dep.get("spec") or {}, dep.get("status") or {}
    return f"{st.get('readyReplicas', 0)}/{spec.get('replicas', 1)}"


def node_status(node: dict[str, Any]) -> str:
    """kubectl's Node STATUS: Ready, NotReady, Unknown (``,SchedulingDisabled`` when cordoned)."""
    status = "Unknown"
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            status = "Ready" if c.get("status") == "True" else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        status += ",SchedulingDisabled"
    return status


def is_gpu_node(node: dict[str, Any]) -> bool:
    """A node with GPUs (``<vendor>.com/gpu`` in its capacity): the kind the market grants and bills."""
    return any(k.endswith(".com/gpu") for k in ((node.get("status") or {}).get("capacity") or {}))


# ---- explanations (the guide's words, live numbers) ------------------------------------------------

FIRST_NODE = "10–15 minutes for a first node"


def _market(limit: int | None, win: int | None) -> str:
    if limit is None and win is None:
        return ""
    if not limit:
        return (
            " — no limit price is set"
            + (f"; price to win {fmt_price(win)}" if win is not None else "")
            + ": set one to bid"
        )
    if win is not None and win > limit:
        return (
            f" — your limit {fmt_price(limit)} is below the price to win {fmt_price(win)}: it waits until "
            f"the price falls or you raise the limit"
        )
    return f" — your limit {fmt_price(limit)}" + (f", price to win {fmt_price(win)}" if win is not None else "")


def _init_words(pod: dict[str, Any], i: int) -> str:
    inits = (pod.get("spec") or {}).get("initContainers") or []
    name = str(inits[i].get("name", "")) if i < len(inits) else ""
    if "copy" in name:
        return "copying weights from the shared volume"
    if "stage" in name or "weights" in name or "download" in name:
        return "staging the weights (from the shared volume, or a download onto the node)"
    return f"running init container {name}" if name else "running its init containers"


def _condition(pod: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    conds: list[dict[str, Any]] = (pod.get("status") or {}).get("conditions") or []
    for c in conds:
        if c.get("type") == ctype:
            return c
    return None


def _terminated(pod: dict[str, Any]) -> dict[str, Any] | None:
    statuses: list[dict[str, Any]] = (pod.get("status") or {}).get("containerStatuses") or []
    for c in statuses:
        term: dict[str, Any] | None = (c.get("state") or {}).get("terminated")
        if term:
            return term
    return None


def _is_engine(pod: dict[str, Any]) -> bool:
    return any(c.get("readinessProbe") for c in (pod.get("spec") or {}).get("containers") or [])


def explain(
    pod: dict[str, Any],
    *,
    job: dict[str, Any] | None = None,
    nodes: Iterable[dict[str, Any]] = (),
    limit_price_ucredits: int | None = None,
    price_to_win_ucredits: int | None = None,
) -> str:
    """One line on what the pod is doing and what comes next, in the guide's words with live numbers."""
    status, ready, total, restarts = pod_reason(pod)
    rd = f"{ready}/{total}"
    if status == "SchedulingGated":
        return "SchedulingGated: the market is granting its node" + _market(limit_price_ucredits, price_to_win_ucredits)
    if status == "Pending":
        cond = _condition(pod, "PodScheduled") or {}
        msg = str(cond.get("message") or "")
        if "no free GPU node" in msg:
            return "Pending: waiting for a free GPU node" + _market(limit_price_ucredits, price_to_win_ucredits)
        joining = [n for n in nodes if node_status(n) != "Ready"]
        which = ""
        for n in joining:
            if n.get("metadata", {}).get("name", "") in msg:
                which = f" ({n['metadata']['name']})"
        return f"Pending: its node{which} is joining the cluster ({FIRST_NODE})"
    if status.startswith("Init:"):
        part = status[5:]
        if "/" in part and part.split("/")[0].isdigit():
            return f"{status}: {_init_words(pod, int(part.split('/')[0]))}"
        return f"{status}: an init container failed ({part}); see its log"
    if status == "ContainerCreating":
        return "ContainerCreating: pulling the image"
    if status == "PodInitializing":
        return "PodInitializing: the init containers are done; starting the main container"
    if status in ("ErrImagePull", "ImagePullBackOff"):
        return f"{status}: the image cannot be pulled; check its name and tag"
    if status == "CrashLoopBackOff":
        return f"CrashLoopBackOff: the container keeps exiting ({restarts} restarts); see its previous log"
    if status == "Running":
        if ready < total:
            if _is_engine(pod):
                return f"Running {rd}: the engine is loading (about 5 minutes, 10 on a first start)"
            return f"Running {rd}: starting up"
        if job is not None:
            return f"Running {rd}: the job runs; its log shows progress (loss lines for Train)"
        if _is_engine(pod):
            return f"Running {rd}: the model is up; send a request"
        return f"Running {rd}"
    if status == "Completed":
        return "Completed: the container exited successfully" + (
            " — the job succeeded" if job is not None and job_status(job) == "Complete" else ""
        )
    if status == "Terminating":
        return "Terminating: the pod is being stopped"
    term = _terminated(pod) or {}
    if _condition(pod, "DisruptionTarget") and (_condition(pod, "DisruptionTarget") or {}).get("status") == "True":
        return f"{status}: its node was reclaimed (exit code {term.get('exitCode', 143)})" + (
            ": the job starts a replacement once a node returns"
            if job is not None and job_status(job) not in ("Failed", "Complete")
            else ""
        )
    if status in ("Error", "OOMKilled") or status.startswith("ExitCode:"):
        code = term.get("exitCode")
        return f"{status}: the container exited" + (f" with code {code}" if code is not None else "") + "; see its log"
    if status == "Failed":
        return "Failed: the pod failed; see its log"
    if status == "Succeeded":
        return "Succeeded: the pod finished"
    return status


def explain_job_without_pods(
    job: dict[str, Any], *, limit_price_ucredits: int | None = None, price_to_win_ucredits: int | None = None
) -> str:
    """Why a Job shows no pods: usually it waits suspended for its node (``kubectl get pods`` stays empty)."""
    st = job_status(job)
    if st == "Complete":
        return "no pods: the job completed"
    if st == "Failed":
        return "no pods: the job failed; its pods are gone"
    if st == "Terminating":
        return "no pods: the job is being deleted"
    return (
        "no pods yet: the job waits suspended until its node is granted; the first node takes 10–15 minutes"
        + _market(limit_price_ucredits, price_to_win_ucredits)
    )
