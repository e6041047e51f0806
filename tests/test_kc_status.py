"""kubectl's STATUS/READY strings as ncui reads them through the box's lifecycles, and the one-line explanations.

ncui's reading and the box's Tables are worked out apart (each held to Kubernetes' printer cases in
test_printer_cases.py); here both follow the guide's two lifecycles, each against the guide's sequence."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta, timezone

from ncui.kube.status import (
    age,
    deployment_ready,
    explain,
    explain_job_without_pods,
    job_status,
    node_status,
    pod_ready,
    pod_restarts,
    pod_status,
)
from ncui.sim.kube import tables

from .kc_support import advance_until, recipe
from .kube_support import subsequence

LIMIT, WIN = 4_100_000, 3_800_000


def _pods(k) -> list[dict]:
    c = k.sim.app.state.kube.clusters[k.cluster]
    return c.store.list("pods", "default")[0]


def _nodes(k) -> list[dict]:
    return k.sim.app.state.kube.clusters[k.cluster].store.list("nodes")[0]


async def test_seed_lifecycles_status_and_explanations(kc_factory):
    k, kc = kc_factory()
    k.set_bid(5.0)
    for name in ("nanogpt-job-nvidia.yaml", "kimi-k3-serve-nvidia.yaml"):
        assert all(r.error is None for r in await kc.apply(recipe(k, name)))
    job = await kc.get("jobs", "nanogpt")
    assert explain_job_without_pods(job, limit_price_ucredits=LIMIT, price_to_win_ucredits=WIN) == (
        "no pods yet: the job waits suspended until its node is granted; the first node takes 10–15 minutes"
        " — your limit $4.10/GPU-h, price to win $3.80/GPU-h"
    )
    seen: dict[str, list[str]] = {}  # ncui's reading, as it changes
    printed: dict[str, list[str]] = {}  # the box's Table row (what kubectl prints), as it changes
    said: dict[str, str] = {}

    def look() -> bool:
        nodes = _nodes(k)
        for p in _pods(k):
            who = (
                p["metadata"]["name"].rsplit("-", 1)[0]
                if p["metadata"]["name"].startswith("nanogpt")
                else p["metadata"]["name"].split("-")[0] + "-" + p["metadata"]["name"].split("-")[2]
            )
            v = f"{pod_status(p)} {pod_ready(p)}"
            row = tables.pod_row(p, k.world.now())
            if not printed.setdefault(who, []) or printed[who][-1] != f"{row[2]} {row[1]}":
                printed[who].append(f"{row[2]} {row[1]}")
            if not seen.setdefault(who, []) or seen[who][-1] != v:
                seen[who].append(v)
                j = job if who == "nanogpt" else None
                said[f"{who} {v}"] = explain(
                    p, job=j, nodes=nodes, limit_price_ucredits=LIMIT, price_to_win_ucredits=WIN
                )
        return [x for x in seen.get("kimi-worker", []) if x == "Running 1/1"] and "Completed 0/1" in seen.get(
            "nanogpt", []
        )

    await advance_until(k, look, step=60, max_steps=400, what="both lifecycles")
    train = ["Pending 0/1", "ContainerCreating 0/1", "Running 1/1", "Completed 0/1"]  # the guide's words
    serve = ["SchedulingGated 0/1", "Pending 0/1", "Init:0/2 0/1", "Running 0/1", "Running 1/1"]
    for view in (seen, printed):
        assert subsequence(train, view["nanogpt"]) and subsequence(serve, view["kimi-worker"]), view
    assert said["kimi-worker SchedulingGated 0/1"] == (
        "SchedulingGated: the market is granting its node — your limit $4.10/GPU-h, price to win $3.80/GPU-h"
    )
    assert (
        said["nanogpt Pending 0/1"].startswith("Pending: its node")
        and "(10–15 minutes for a first node)" in said["nanogpt Pending 0/1"]
    )
    assert said["kimi-worker Init:0/2 0/1"].startswith("Init:0/2: staging the weights")
    w = next(p for p in _pods(k) if p["metadata"]["name"].startswith("kimi-k3-worker"))
    w = copy.deepcopy(w)  # the same pod one init container later
    w["status"]["initContainerStatuses"][0]["state"] = {"terminated": {"exitCode": 0, "reason": "Completed"}}
    w["status"]["initContainerStatuses"][1]["state"] = {"running": {}}
    w["status"]["conditions"] = [c for c in w["status"]["conditions"] if c["type"] != "Initialized"]
    assert explain(w) == "Init:1/2: copying weights from the shared volume"
    assert said["nanogpt ContainerCreating 0/1"] == "ContainerCreating: pulling the image"
    assert (
        said["kimi-worker Running 0/1"] == "Running 0/1: the engine is loading (about 5 minutes, 10 on a first start)"
    )
    assert said["nanogpt Completed 0/1"].startswith("Completed")
    dep = await kc.get("deployments", "kimi-k3-worker")
    assert deployment_ready(dep) == "1/1"
    assert job_status(await kc.get("jobs", "nanogpt")) == "Complete"
    assert all(node_status(n) == "Ready" for n in _nodes(k))


def _pod(**status) -> dict:
    return {
        "metadata": {"name": "p", "creationTimestamp": "2026-11-02T09:00:00Z"},
        "spec": {"containers": [{"name": "main"}]},
        "status": status,
    }


def test_status_strings_edge_cases():
    cs = lambda **state: {"name": "main", "ready": False, "restartCount": 4, "state": state}  # noqa: E731
    crash = _pod(phase="Running", containerStatuses=[cs(waiting={"reason": "CrashLoopBackOff"})])
    assert (pod_status(crash), pod_ready(crash), pod_restarts(crash)) == ("CrashLoopBackOff", "0/1", 4)
    assert "4 restarts" in explain(crash)
    err = _pod(phase="Failed", containerStatuses=[cs(terminated={"exitCode": 2, "reason": "Error"})])
    assert pod_status(err) == "Error" and explain(err) == "Error: the container exited with code 2; see its log"
    nr = _pod(phase="Failed", containerStatuses=[cs(terminated={"exitCode": 3})])
    assert pod_status(nr) == "ExitCode:3"
    term = copy.deepcopy(
        _pod(phase="Running", containerStatuses=[{"name": "main", "ready": True, "state": {"running": {}}}])
    )
    assert pod_status(term) == "Running" and pod_ready(term) == "1/1"
    term["metadata"]["deletionTimestamp"] = "2026-11-02T09:05:00Z"
    assert pod_status(term) == "Terminating" and explain(term).startswith("Terminating")
    pull = _pod(phase="Pending", containerStatuses=[cs(waiting={"reason": "ImagePullBackOff"})])
    assert explain(pull).startswith("ImagePullBackOff: the image cannot be pulled")
    gated = _pod(phase="Pending", conditions=[{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}])
    assert explain(gated, limit_price_ucredits=3_000_000, price_to_win_ucredits=WIN) == (
        "SchedulingGated: the market is granting its node — your limit $3.00/GPU-h is below the price to win "
        "$3.80/GPU-h: it waits until the price falls or you raise the limit"
    )
    assert "no limit price is set" in explain(gated, limit_price_ucredits=0, price_to_win_ucredits=WIN)
    now = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
    assert age(term, now + timedelta(seconds=200)) == "3m20s" and age({"metadata": {}}, now) == "<unknown>"
    assert age(term, now - timedelta(seconds=30)) == "0s"  # stamped after the now read: never <invalid>
    done = {"metadata": {}, "status": {"conditions": [{"type": "Complete", "status": "True"}]}}
    assert job_status(done) == "Complete" and explain_job_without_pods(done) == "no pods: the job completed"
    reclaimed = _pod(
        phase="Failed",
        conditions=[{"type": "DisruptionTarget", "status": "True"}],
        containerStatuses=[cs(terminated={"exitCode": 143, "reason": "Error"})],
    )
    running_job = {"metadata": {}, "status": {}}
    assert explain(reclaimed, job=running_job) == (
        "Error: its node was reclaimed (exit code 143): the job starts a replacement once a node returns"
    )
    assert (
        node_status({"status": {"conditions": [{"type": "Ready", "status": "False"}]}, "spec": {"unschedulable": True}})
        == "NotReady,SchedulingDisabled"
    )
