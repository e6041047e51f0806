"""kubectl's printer cases: objects, each with the exact columns ``kubectl get`` prints for it, at a fixed ``NOW``.

The expectations are Kubernetes' own, not ncui's: most cases are the API server's printer tests
(kubernetes ``pkg/printers/internalversion/printers_test.go``: ``TestPrintPod``,
``TestPrintPodWithRestartableInitContainer``, ``TestPrintJob``, ``TestPrintDeployment``, ``TestPrintNodeStatus``,
``TestPrintNodeRole``; each case's ``source`` names the one it follows, with its ages moved to ``NOW``), the rest the
printer's rules as its source states them (``printers.go``: ``printPod``, ``printJob``, ``printDeployment``,
``printNode``; AGE and the "(5m ago)" of RESTARTS are ``translateTimestampSince``, i.e. apimachinery's
``duration.HumanDuration``) for the states a GPU job goes through (``Init:0/2``, ``ContainerCreating``,
``OOMKilled``, a reclaimed node's ``Evicted``…). A case's columns are the ones kubectl prints by default, by their
header: pods ``READY STATUS RESTARTS AGE``, jobs ``STATUS COMPLETIONS DURATION AGE``, deployments ``READY
UP-TO-DATE AVAILABLE AGE``, nodes ``STATUS ROLES AGE VERSION``.

Used by tests/test_printer_cases.py: ncui's status code (ncui/kube/status.py) and the box's tables
(ncui/sim/kube/tables.py, through the real kubectl) are each held to every case. Plain data: no ncui import.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

NOW = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)  # the box's clock in the test (tests/conftest.py START)


def ago(seconds: float) -> str:
    """The RFC 3339 time ``seconds`` before ``NOW``."""
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


MIN, HOUR, DAY = 60, 3600, 86400


@dataclass(frozen=True)
class Case:
    source: str  # where the expected columns come from
    obj: dict[str, Any]  # the object as the API server stores it
    columns: dict[str, str]  # the columns kubectl prints for it, by header

    @property
    def kind(self) -> str:
        return str(self.obj["kind"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])


# ---- pods ---------------------------------------------------------------------------------------------------


def _meta(name: str, age: float, **more: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "creationTimestamp": ago(age), **more}


def _containers(n: int, prefix: str = "c") -> list[dict[str, Any]]:
    return [{"name": f"{prefix}{i}", "image": "busybox"} for i in range(n)]


def pod(
    name: str,
    age: float,
    *,
    containers: int | list[dict[str, Any]] = 1,
    init: int | list[dict[str, Any]] = 0,
    status: dict[str, Any],
    **meta: Any,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": _containers(containers) if isinstance(containers, int) else containers}
    if init:
        spec["initContainers"] = _containers(init, "init") if isinstance(init, int) else init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": _meta(name, age, **meta), "spec": spec, "status": status}


def cs(
    name: str,
    *,
    ready: bool = False,
    restarts: int = 0,
    running: bool = False,
    waiting: str | None = None,
    terminated: dict[str, Any] | None = None,
    last_finished: float | None = None,
    started: bool | None = None,
) -> dict[str, Any]:
    """A container's status: its state (``running``, ``waiting`` with a reason, or ``terminated``), and its last
    termination ``last_finished`` seconds before NOW."""
    state: dict[str, Any] = {}
    if running:
        state["running"] = {"startedAt": ago(HOUR)}
    elif waiting is not None:
        state["waiting"] = {"reason": waiting} if waiting else {}
    elif terminated is not None:
        state["terminated"] = terminated
    out: dict[str, Any] = {"name": name, "ready": ready, "restartCount": restarts, "image": "busybox", "state": state}
    if last_finished is not None:
        out["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(last_finished)}}
    if started is not None:
        out["started"] = started
    return out


def cond(ctype: str, status: str = "True", reason: str | None = None) -> dict[str, Any]:
    return {"type": ctype, "status": status, **({"reason": reason} if reason else {})}


SIDECARS = [
    {"name": "sidecar1", "image": "busybox", "restartPolicy": "Always"},
    {"name": "sidecar2", "image": "busybox", "restartPolicy": "Always"},
]
INITIALIZED = [cond("Initialized"), cond("Ready"), cond("ContainersReady"), cond("PodScheduled")]

PODS = [
    Case(
        "TestPrintPod test1: ready 1 of 2, restarts summed",
        pod(
            "restarts-summed",
            45,
            containers=2,
            status={
                "phase": "podPhase",
                "containerStatuses": [cs("c0", ready=True, restarts=3, running=True), cs("c1", restarts=3)],
            },
        ),
        {"READY": "1/2", "STATUS": "podPhase", "RESTARTS": "6", "AGE": "45s"},
    ),
    Case(
        "TestPrintPod test3: the first container's state overrides the rest",
        pod(
            "first-container-wins",
            200,
            containers=2,
            status={
                "phase": "podPhase",
                "containerStatuses": [
                    cs("c0", restarts=3, waiting="ContainerWaitingReason"),
                    cs("c1", restarts=3, terminated={"reason": "ContainerTerminatedReason"}),
                ],
            },
        ),
        {"READY": "0/2", "STATUS": "ContainerWaitingReason", "RESTARTS": "6", "AGE": "3m20s"},
    ),
    Case(
        "TestPrintPod test5: the pod's reason over its phase",
        pod(
            "pod-reason",
            10 * MIN,
            containers=2,
            status={
                "reason": "podReason",
                "phase": "podPhase",
                "containerStatuses": [cs("c0", ready=True, restarts=3, running=True), cs("c1", ready=True, restarts=3)],
            },
        ),
        {"READY": "1/2", "STATUS": "podReason", "RESTARTS": "6", "AGE": "10m"},
    ),
    Case(
        "TestPrintPod test6: one container completed, one running, no Ready condition: NotReady",
        pod(
            "completed-and-running",
            5 * HOUR + 3 * MIN,
            containers=2,
            status={
                "phase": "Running",
                "containerStatuses": [
                    cs("c0", ready=True, restarts=3, terminated={"reason": "Completed", "exitCode": 0}),
                    cs("c1", ready=True, restarts=3, running=True),
                ],
            },
        ),
        {"READY": "1/2", "STATUS": "NotReady", "RESTARTS": "6", "AGE": "5h3m"},
    ),
    Case(
        "TestPrintPod test6 (with ready condition): one container completed, one running, Ready: Running",
        pod(
            "completed-and-running-ready",
            2 * DAY + 3 * HOUR,
            containers=2,
            status={
                "phase": "Running",
                "conditions": [cond("Ready")],
                "containerStatuses": [
                    cs("c0", ready=True, restarts=3, terminated={"reason": "Completed", "exitCode": 0}),
                    cs("c1", ready=True, restarts=3, running=True),
                ],
            },
        ),
        {"READY": "1/2", "STATUS": "Running", "RESTARTS": "6", "AGE": "2d3h"},
    ),
    Case(
        "TestPrintPod test8: 2 init containers, the first restarting: Init:0/2, init restarts with their age",
        pod(
            "init-0-of-2",
            400 * DAY,
            init=2,
            status={
                "phase": "Pending",
                "initContainerStatuses": [
                    cs("init0", restarts=3, running=True, last_finished=10),
                    cs("init1", waiting=""),
                ],
                "containerStatuses": [cs("c0", waiting="")],
            },
        ),
        {"READY": "0/1", "STATUS": "Init:0/2", "RESTARTS": "3 (10s ago)", "AGE": "400d"},
    ),
    Case(
        "TestPrintPod test9: the first init container done (terminated, exit code unset: 0), the second restarting",
        pod(
            "init-1-of-2",
            (3 * 365 + 120) * DAY,
            init=2,
            status={
                "phase": "Pending",
                "initContainerStatuses": [
                    cs("init0", terminated={}),
                    cs("init1", restarts=3, running=True, last_finished=10),
                ],
                "containerStatuses": [cs("c0", waiting="")],
            },
        ),
        {"READY": "0/1", "STATUS": "Init:1/2", "RESTARTS": "3 (10s ago)", "AGE": "3y120d"},
    ),
    Case(
        "TestPrintPod test10: both init containers restarted: their restarts summed, the latest one's age",
        pod(
            "init-restarts-summed",
            10 * 365 * DAY,
            init=2,
            status={
                "phase": "Pending",
                "initContainerStatuses": [
                    cs("init0", restarts=2, terminated={}, last_finished=2 * MIN),
                    cs("init1", restarts=3, running=True, last_finished=10),
                ],
                "containerStatuses": [cs("c0", waiting="")],
            },
        ),
        {"READY": "0/1", "STATUS": "Init:1/2", "RESTARTS": "5 (10s ago)", "AGE": "10y"},
    ),
    Case(
        "TestPrintPod test11: initialized: the init container's restarts no longer count",
        pod(
            "init-done-restarts",
            10 * MIN,
            init=1,
            status={
                "phase": "Running",
                "initContainerStatuses": [cs("init0", restarts=2, terminated={}, last_finished=2 * MIN)],
                "containerStatuses": [cs("c0", restarts=4, running=True, last_finished=20)],
            },
        ),
        {"READY": "0/1", "STATUS": "Running", "RESTARTS": "4 (20s ago)", "AGE": "10m"},
    ),
    Case(
        "TestPrintPod test14: restarts summed over the containers, the latest restart's age",
        pod(
            "restarted-days-ago",
            30 * DAY,
            containers=2,
            status={
                "phase": "Running",
                "containerStatuses": [
                    cs("c0", ready=True, restarts=6, running=True, last_finished=5 * DAY),
                    cs("c1", ready=True, restarts=3, running=True, last_finished=20 * DAY),
                ],
            },
        ),
        {"READY": "2/2", "STATUS": "Running", "RESTARTS": "9 (5d ago)", "AGE": "30d"},
    ),
    Case(
        "TestPrintPod test15: PodScheduled False for SchedulingGated (the market is granting the node)",
        pod(
            "scheduling-gated",
            90,
            containers=2,
            status={"phase": "Pending", "conditions": [cond("PodScheduled", "False", "SchedulingGated")]},
        ),
        {"READY": "0/2", "STATUS": "SchedulingGated", "RESTARTS": "0", "AGE": "90s"},
    ),
    Case(
        "TestPrintPod test16: Succeeded, the container Completed",
        pod(
            "completed",
            20 * MIN,
            status={
                "phase": "Succeeded",
                "containerStatuses": [cs("c0", terminated={"reason": "Completed", "exitCode": 0})],
            },
        ),
        {"READY": "0/1", "STATUS": "Completed", "RESTARTS": "0", "AGE": "20m"},
    ),
    Case(
        "TestPrintPod test17: Failed, the container's Error",
        pod(
            "error",
            20 * MIN,
            status={"phase": "Failed", "containerStatuses": [cs("c0", terminated={"reason": "Error", "exitCode": 1})]},
        ),
        {"READY": "0/1", "STATUS": "Error", "RESTARTS": "0", "AGE": "20m"},
    ),
    Case(
        "TestPrintPod test18: Succeeded and being deleted: still Completed (a terminal phase is not Terminating)",
        pod(
            "completed-deleted",
            20 * MIN,
            deletionTimestamp=ago(10),
            status={
                "phase": "Succeeded",
                "containerStatuses": [cs("c0", terminated={"reason": "Completed", "exitCode": 0})],
            },
        ),
        {"READY": "0/1", "STATUS": "Completed", "RESTARTS": "0", "AGE": "20m"},
    ),
    Case(
        "TestPrintPod test19: Running and being deleted: Terminating",
        pod(
            "terminating",
            3 * HOUR,
            deletionTimestamp=ago(10),
            status={"phase": "Running", "containerStatuses": [cs("c0", running=True)]},
        ),
        {"READY": "0/1", "STATUS": "Terminating", "RESTARTS": "0", "AGE": "3h"},
    ),
    Case(
        "printPod: being deleted with the reason NodeLost (its node stopped answering): Unknown",
        pod(
            "node-lost",
            2 * HOUR,
            deletionTimestamp=ago(MIN),
            status={
                "phase": "Running",
                "reason": "NodeLost",
                "containerStatuses": [cs("c0", ready=True, running=True)],
            },
        ),
        {"READY": "1/1", "STATUS": "Unknown", "RESTARTS": "0", "AGE": "120m"},
    ),
    Case(
        "TestPrintPodWithRestartableInitContainer test1: sidecars count in READY; the first not started: Init:0/2",
        pod(
            "sidecars-starting",
            5 * MIN,
            init=SIDECARS,
            status={
                "phase": "Pending",
                "conditions": [cond("Initialized", "False")],
                "initContainerStatuses": [
                    cs("sidecar1", restarts=3, running=True, started=False, last_finished=10),
                    cs("sidecar2", waiting="", started=False),
                ],
                "containerStatuses": [cs("c0", waiting="")],
            },
        ),
        {"READY": "0/3", "STATUS": "Init:0/2", "RESTARTS": "3 (10s ago)", "AGE": "5m"},
    ),
    Case(
        "TestPrintPodWithRestartableInitContainer test2: both sidecars started, the container ready: Running 1/3",
        pod(
            "sidecars-started",
            5 * MIN,
            init=SIDECARS,
            status={
                "phase": "Running",
                "conditions": [cond("Initialized")],
                "initContainerStatuses": [
                    cs("sidecar1", restarts=3, running=True, started=True, last_finished=10),
                    cs("sidecar2", running=True, started=True),
                ],
                "containerStatuses": [cs("c0", ready=True, restarts=4, running=True, last_finished=20)],
            },
        ),
        {"READY": "1/3", "STATUS": "Running", "RESTARTS": "7 (10s ago)", "AGE": "5m"},
    ),
    Case(
        "printPod: a sidecar started and ready counts in READY (a router beside the engine): Running 2/2",
        pod(
            "sidecar-ready",
            7 * MIN + 5,
            init=[{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}],
            status={
                "phase": "Running",
                "conditions": INITIALIZED,
                "initContainerStatuses": [cs("proxy", ready=True, running=True, started=True)],
                "containerStatuses": [cs("c0", ready=True, running=True)],
            },
        ),
        {"READY": "2/2", "STATUS": "Running", "RESTARTS": "0", "AGE": "7m5s"},
    ),
    Case(
        "printPod: an init container that failed: Init:<its reason>",
        pod(
            "init-error",
            4 * MIN,
            init=2,
            status={
                "phase": "Pending",
                "initContainerStatuses": [
                    cs("init0", terminated={"reason": "Error", "exitCode": 1}),
                    cs("init1", waiting="PodInitializing"),
                ],
                "containerStatuses": [cs("c0", waiting="PodInitializing")],
            },
        ),
        {"READY": "0/1", "STATUS": "Init:Error", "RESTARTS": "0", "AGE": "4m"},
    ),
    Case(
        "printPod: an init container in a crash loop: Init:CrashLoopBackOff, its restarts with their age",
        pod(
            "init-crashloop",
            15 * MIN,
            init=2,
            status={
                "phase": "Pending",
                "initContainerStatuses": [
                    cs("init0", restarts=4, waiting="CrashLoopBackOff", last_finished=30),
                    cs("init1", waiting="PodInitializing"),
                ],
                "containerStatuses": [cs("c0", waiting="PodInitializing")],
            },
        ),
        {"READY": "0/1", "STATUS": "Init:CrashLoopBackOff", "RESTARTS": "4 (30s ago)", "AGE": "15m"},
    ),
    Case(
        "printPod: the init containers done, the container waiting for them (PodInitializing)",
        pod(
            "pod-initializing",
            6 * MIN,
            init=2,
            status={
                "phase": "Pending",
                "conditions": [cond("Initialized"), cond("Ready", "False"), cond("PodScheduled")],
                "initContainerStatuses": [
                    cs("init0", terminated={"reason": "Completed", "exitCode": 0}),
                    cs("init1", terminated={"reason": "Completed", "exitCode": 0}),
                ],
                "containerStatuses": [cs("c0", waiting="PodInitializing")],
            },
        ),
        {"READY": "0/1", "STATUS": "PodInitializing", "RESTARTS": "0", "AGE": "6m"},
    ),
    Case(
        "printPod: the image pulling (ContainerCreating)",
        pod(
            "container-creating",
            100,
            status={"phase": "Pending", "containerStatuses": [cs("c0", waiting="ContainerCreating")]},
        ),
        {"READY": "0/1", "STATUS": "ContainerCreating", "RESTARTS": "0", "AGE": "100s"},
    ),
    Case(
        "printPod: a container exiting again and again: CrashLoopBackOff, 5 restarts, the last 5 minutes ago",
        pod(
            "crashloop",
            HOUR,
            status={
                "phase": "Running",
                "containerStatuses": [cs("c0", restarts=5, waiting="CrashLoopBackOff", last_finished=5 * MIN)],
            },
        ),
        {"READY": "0/1", "STATUS": "CrashLoopBackOff", "RESTARTS": "5 (5m ago)", "AGE": "60m"},
    ),
    Case(
        "printPod: the container killed out of memory (restartPolicy Never): OOMKilled",
        pod(
            "oom-killed",
            25 * MIN,
            status={
                "phase": "Failed",
                "containerStatuses": [cs("c0", terminated={"reason": "OOMKilled", "exitCode": 137})],
            },
        ),
        {"READY": "0/1", "STATUS": "OOMKilled", "RESTARTS": "0", "AGE": "25m"},
    ),
    Case(
        "printPod: evicted by its node (the pod's reason, no container state left)",
        pod(
            "evicted",
            DAY,
            status={
                "phase": "Failed",
                "reason": "Evicted",
                "message": "The node was low on resource: ephemeral-storage.",
            },
        ),
        {"READY": "0/1", "STATUS": "Evicted", "RESTARTS": "0", "AGE": "24h"},
    ),
    Case(
        "printPod: a container that exited without a reason: ExitCode:<code>",
        pod(
            "exit-code",
            8 * HOUR,
            status={"phase": "Failed", "containerStatuses": [cs("c0", terminated={"exitCode": 3})]},
        ),
        {"READY": "0/1", "STATUS": "ExitCode:3", "RESTARTS": "0", "AGE": "8h"},
    ),
    Case(
        "printPod: a container killed by a signal, without a reason: Signal:<n>",
        pod(
            "signal",
            8 * HOUR,
            status={"phase": "Failed", "containerStatuses": [cs("c0", terminated={"exitCode": 0, "signal": 9})]},
        ),
        {"READY": "0/1", "STATUS": "Signal:9", "RESTARTS": "0", "AGE": "8h"},
    ),
    Case(
        "printPod: running but not ready (an engine loading its weights): Running 0/1",
        pod(
            "running-not-ready",
            3 * MIN,
            status={"phase": "Running", "conditions": INITIALIZED[:1], "containerStatuses": [cs("c0", running=True)]},
        ),
        {"READY": "0/1", "STATUS": "Running", "RESTARTS": "0", "AGE": "3m"},
    ),
    Case(
        "printPod: the image cannot be pulled",
        pod(
            "image-pull-backoff",
            2 * MIN,
            status={"phase": "Pending", "containerStatuses": [cs("c0", waiting="ImagePullBackOff")]},
        ),
        {"READY": "0/1", "STATUS": "ImagePullBackOff", "RESTARTS": "0", "AGE": "2m"},
    ),
]


# ---- jobs ---------------------------------------------------------------------------------------------------


def job(
    name: str, age: float, *, spec: dict[str, Any] | None = None, status: dict[str, Any] | None = None, **meta: Any
) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(name, age, **meta),
        "spec": {"template": {"spec": {"containers": _containers(1), "restartPolicy": "Never"}}, **(spec or {})},
        "status": status or {},
    }


JOBS = [
    Case(
        "TestPrintJob job1: 1 of 2 completions, not started",
        job("job-running", 30, spec={"completions": 2}, status={"succeeded": 1}),
        {"STATUS": "Running", "COMPLETIONS": "1/2", "DURATION": "", "AGE": "30s"},
    ),
    Case(
        "TestPrintJob job4: no completions (a work queue), running for 20 minutes",
        job("job-queue", 10 * 365 * DAY, status={"startTime": ago(20 * MIN)}),
        {"STATUS": "Running", "COMPLETIONS": "0/1", "DURATION": "20m", "AGE": "10y"},
    ),
    Case(
        "TestPrintJob job3 / job5: Complete, its duration start to completion",
        job(
            "job-complete",
            HOUR,
            spec={"completions": 1},
            status={
                "succeeded": 1,
                "startTime": ago(40 * MIN),
                "completionTime": ago(10 * MIN),
                "conditions": [cond("SuccessCriteriaMet"), cond("Complete")],
            },
        ),
        {"STATUS": "Complete", "COMPLETIONS": "1/1", "DURATION": "30m", "AGE": "60m"},
    ),
    Case(
        "TestPrintJob job6: Failed (no completion time: its duration runs on)",
        job(
            "job-failed",
            HOUR,
            spec={"completions": 1},
            status={"failed": 1, "startTime": ago(12 * MIN), "conditions": [cond("FailureTarget"), cond("Failed")]},
        ),
        {"STATUS": "Failed", "COMPLETIONS": "0/1", "DURATION": "12m", "AGE": "60m"},
    ),
    Case(
        "TestPrintJob job7: Suspended (a market job waiting for its node)",
        job(
            "job-suspended",
            5 * MIN,
            spec={"completions": 1, "suspend": True},
            status={"conditions": [cond("Suspended")]},
        ),
        {"STATUS": "Suspended", "COMPLETIONS": "0/1", "DURATION": "", "AGE": "5m"},
    ),
    Case(
        "TestPrintJob job8: FailureTarget (its pods still stop)",
        job("job-failure-target", 5 * MIN, spec={"completions": 1}, status={"conditions": [cond("FailureTarget")]}),
        {"STATUS": "FailureTarget", "COMPLETIONS": "0/1", "DURATION": "", "AGE": "5m"},
    ),
    Case(
        "TestPrintJob job9: being deleted: Terminating",
        job("job-terminating", 5 * MIN, deletionTimestamp=ago(5)),
        {"STATUS": "Terminating", "COMPLETIONS": "0/1", "DURATION": "", "AGE": "5m"},
    ),
    Case(
        "printJob: a work queue of 3 in parallel: n/1 of 3",
        job("job-parallel", 5 * MIN, spec={"parallelism": 3}, status={"succeeded": 1, "startTime": ago(4 * MIN)}),
        {"STATUS": "Running", "COMPLETIONS": "1/1 of 3", "DURATION": "4m", "AGE": "5m"},
    ),
    Case(
        "printJob: SuccessCriteriaMet alone (the pods still stop) is none of the statuses printJob names: Running",
        job(
            "job-criteria-met",
            5 * MIN,
            spec={"completions": 1},
            status={"succeeded": 1, "conditions": [cond("SuccessCriteriaMet")]},
        ),
        {"STATUS": "Running", "COMPLETIONS": "1/1", "DURATION": "", "AGE": "5m"},
    ),
]


# ---- deployments --------------------------------------------------------------------------------------------


def deployment(name: str, age: float, replicas: int, status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, age, generation=1),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": _containers(2)}},
        },
        "status": status,
    }


DEPLOYMENTS = [
    Case(
        "TestPrintDeployment: 5 desired, 2 up to date, 1 available, none ready",
        deployment(
            "deploy-rolling",
            10,
            5,
            {"replicas": 10, "updatedReplicas": 2, "availableReplicas": 1, "unavailableReplicas": 4},
        ),
        {"READY": "0/5", "UP-TO-DATE": "2", "AVAILABLE": "1", "AGE": "10s"},
    ),
    Case(
        "printDeployment: the engine up",
        deployment(
            "deploy-ready",
            40 * MIN,
            1,
            {"replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1},
        ),
        {"READY": "1/1", "UP-TO-DATE": "1", "AVAILABLE": "1", "AGE": "40m"},
    ),
    Case(
        "printDeployment: held at zero replicas (the finance-analyst launcher's engine before the tune)",
        deployment("deploy-zero", 40 * MIN, 0, {}),
        {"READY": "0/0", "UP-TO-DATE": "0", "AVAILABLE": "0", "AGE": "40m"},
    ),
]


# ---- nodes --------------------------------------------------------------------------------------------------


def node(
    name: str, conditions: list[dict[str, Any]], *, cordoned: bool = False, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "creationTimestamp": ago(2 * DAY), "labels": labels or {}},
        "spec": {"unschedulable": True} if cordoned else {},
        "status": {"conditions": conditions, "nodeInfo": {"kubeletVersion": "v1.32.3"}},
    }


NODES = [
    Case(
        "TestPrintNodeStatus foo1: Ready",
        node("node-ready", [cond("Ready")]),
        {"STATUS": "Ready", "ROLES": "<none>", "AGE": "2d", "VERSION": "v1.32.3"},
    ),
    Case(
        "TestPrintNodeStatus foo2: Ready and cordoned",
        node("node-cordoned", [cond("Ready")], cordoned=True),
        {"STATUS": "Ready,SchedulingDisabled", "ROLES": "<none>", "AGE": "2d", "VERSION": "v1.32.3"},
    ),
    Case(
        "TestPrintNodeStatus foo4: NotReady",
        node("node-not-ready", [cond("Ready", "False")]),
        {"STATUS": "NotReady", "ROLES": "<none>", "AGE": "2d", "VERSION": "v1.32.3"},
    ),
    Case(
        "TestPrintNodeStatus foo5: NotReady and cordoned",
        node("node-not-ready-cordoned", [cond("Ready", "False")], cordoned=True),
        {"STATUS": "NotReady,SchedulingDisabled", "ROLES": "<none>", "AGE": "2d", "VERSION": "v1.32.3"},
    ),
    Case(
        "printNode: the kubelet stopped reporting (Ready Unknown, as the node controller sets it): NotReady",
        node("node-silent", [cond("Ready", "Unknown", "NodeStatusUnknown")]),
        {"STATUS": "NotReady", "ROLES": "<none>", "AGE": "2d", "VERSION": "v1.32.3"},
    ),
    Case(
        "TestPrintNodeStatus foo8: no Ready condition, cordoned: Unknown,SchedulingDisabled",
        node("node-unknown", [cond("InvalidValue")], cordoned=True),
        {"STATUS": "Unknown,SchedulingDisabled", "ROLES": "<none>", "AGE": "2d", "VERSION": "v1.32.3"},
    ),
    Case(
        "TestPrintNodeRole foo10: the role labels, sorted",
        node(
            "node-roles",
            [cond("Ready")],
            labels={
                "node-role.kubernetes.io/master": "",
                "node-role.kubernetes.io/control-plane": "",
                "node-role.kubernetes.io/proxy": "",
                "kubernetes.io/role": "node",
            },
        ),
        {"STATUS": "Ready", "ROLES": "control-plane,master,node,proxy", "AGE": "2d", "VERSION": "v1.32.3"},
    ),
]

CASES: list[Case] = PODS + JOBS + DEPLOYMENTS + NODES
