"""A pod's ``status`` from its run: the phase, the conditions and each container's state, as a kubelet of
Kubernetes 1.32 reports them. Pure functions of the ``PodRun`` (and the few facts of its cluster they name)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from .objects import iso
from .state import TERMINAL, PodRun


def pod_status(r: PodRun, nodes: int, host_ip: str, pod_ip: Callable[[PodRun], str]) -> dict:
    """The pod's ``status`` as the kubelet reports it for the run's state: ``nodes`` the cluster's node count (a
    pending pod's message), ``host_ip`` its node's address, ``pod_ip`` gives the pod its IP (asked for only once
    the pod is on a node: the asking is part of the seeded run)."""
    T = {k: iso(v) for k, v in r.times.items()}
    created = iso(r.created)
    st = r.state
    spec = r.obj["spec"]
    inits = spec.get("initContainers") or []
    mains = spec.get("containers") or []
    phase = {"succeeded": "Succeeded", "failed": "Failed", "running": "Running", "ready": "Running"}.get(st, "Pending")
    status: dict = {"phase": phase, "qosClass": qos_class(spec)}
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
        node = r.node  # bound to a node that is still joining (not yet among the nodes)
        msg = (
            f"0/{nodes} nodes are available: waiting for node {node} to join the cluster"
            if node
            else f"0/{nodes} nodes are available: no free GPU node; waiting for one"
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
    ip = pod_ip(r)
    status.update(hostIP=host_ip, hostIPs=[{"ip": host_ip}], podIP=ip, podIPs=[{"ip": ip}], startTime=start)
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
                "message": r.disruption,
                "lastProbeTime": None,
                "lastTransitionTime": T.get("disrupted", end),
            },
        )
    status["conditions"] = conds
    cur_init = int(st.split(":")[1]) if st.startswith("init:") else (-1 if st == "creating" else n_init)
    istat = []
    for i, c in enumerate(inits):
        s = container_status(r, c)
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
        s = container_status(r, c)
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
                    "reason": "Completed" if code == 0 else r.term_reason,
                    "startedAt": running_at or start,
                    "finishedAt": end,
                    "containerID": s["containerID"],
                }
            }
            s["ready"], s["started"] = False, False
        cstat.append(s)
    status["containerStatuses"] = cstat
    return status


def container_status(r: PodRun, c: dict) -> dict:
    """A container's status fields the state does not decide: its image, ids and restart count."""
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


def _init_end(r: PodRun, i: int) -> str:
    n = len(r.init_containers())
    nxt = f"init:{i + 1}" if i + 1 < n else "running"
    t = r.times.get(nxt) or r.times.get("failed") or r.times.get("succeeded")
    return iso(t) if t else iso(r.created)


def qos_class(spec: dict) -> str:
    any_res = False
    for c in spec.get("containers", []):
        res = c.get("resources") or {}
        if res.get("limits") or res.get("requests"):
            any_res = True
    return "Burstable" if any_res else "BestEffort"
