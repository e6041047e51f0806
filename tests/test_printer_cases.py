"""Kubernetes' printer cases (tests/printer_cases.py) against ncui's status code and against the box's tables as
the real kubectl prints them: two readings of the same objects, each held to kubectl's own lines, never to the
other's."""

from __future__ import annotations

import pytest

from ncui.kube import status as S

from .kube_support import columns
from .printer_cases import CASES, DEPLOYMENTS, JOBS, NODES, NOW, PODS, Case

# ---- ncui's status code -------------------------------------------------------------------------------------


def _ncui_columns(c: Case) -> dict[str, str]:
    """The columns of ``c`` as ncui works them out (those it has a reading of)."""
    o = c.obj
    if c.kind == "Pod":
        return {
            "READY": S.pod_ready(o),
            "STATUS": S.pod_status(o),
            "RESTARTS": S.restarts_column(o, NOW),
            "AGE": S.age(o, NOW),
        }
    if c.kind == "Job":
        return {"STATUS": S.job_status(o), "COMPLETIONS": S.job_completions(o), "AGE": S.age(o, NOW)}
    if c.kind == "Deployment":
        return {"READY": S.deployment_ready(o), "AGE": S.age(o, NOW)}
    return {"STATUS": S.node_status(o), "AGE": S.age(o, NOW)}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_ncui_reads_each_case_as_kubectl_prints_it(case: Case):
    got = _ncui_columns(case)
    want = {k: v for k, v in case.columns.items() if k in got}
    assert got == want, case.source


def test_the_cases_cover_what_a_first_job_meets():
    assert len(CASES) >= 25
    statuses = {c.columns["STATUS"] for c in PODS}
    assert {
        "Init:0/2",
        "Init:Error",
        "Init:CrashLoopBackOff",
        "PodInitializing",
        "SchedulingGated",
        "Terminating",
        "Completed",
        "Error",
        "CrashLoopBackOff",
        "ContainerCreating",
        "OOMKilled",
        "Unknown",
        "Evicted",
        "NotReady",
        "Running",
    } <= statuses
    assert any(c.columns["RESTARTS"] == "5 (5m ago)" for c in PODS)
    assert any(c.obj["spec"].get("initContainers", [{}])[0].get("restartPolicy") == "Always" for c in PODS)
    assert {"Complete", "Failed", "Suspended", "Terminating", "Running"} <= {c.columns["STATUS"] for c in JOBS}
    assert {"Ready", "NotReady", "Ready,SchedulingDisabled"} <= {c.columns["STATUS"] for c in NODES}
    assert DEPLOYMENTS


# ---- the box's tables, through the real kubectl --------------------------------------------------------------


def test_columns_cuts_at_the_header():
    out = (
        "NAME        READY   STATUS             RESTARTS     AGE\n"
        "crashloop   0/1     CrashLoopBackOff   5 (5m ago)   60m\n"
        "job-a       1/2                        0            3s\n"
    )
    assert columns(out) == {
        "crashloop": {
            "NAME": "crashloop",
            "READY": "0/1",
            "STATUS": "CrashLoopBackOff",
            "RESTARTS": "5 (5m ago)",
            "AGE": "60m",
        },
        "job-a": {"NAME": "job-a", "READY": "1/2", "STATUS": "", "RESTARTS": "0", "AGE": "3s"},
    }


def test_the_box_prints_each_case_as_kubectl_does(kube_factory):
    # Each object goes into the box as it is (the /_sim/k8s/hold control: most of these states no lifecycle of
    # the box reaches) at the cases' NOW, the box's frozen clock; the real kubectl lists them and prints the
    # box's Tables.
    k = kube_factory("k8s-market", start=NOW)
    r = k.sim_post("/_sim/k8s/hold", {"objects": [c.obj for c in CASES]})
    assert r.status_code == 200, r.text
    assert len(r.json()["held"]) == len(CASES)
    k.world.advance(0)  # (a step of the clock: the controllers' pass runs, and leaves the held objects be)
    wrong = []
    for resource, cases in (("pods", PODS), ("jobs", JOBS), ("deployments", DEPLOYMENTS), ("nodes", NODES)):
        table = columns(k.kubectl("get", resource).stdout)
        for c in cases:
            got = {h: table.get(c.name, {}).get(h) for h in c.columns}
            if got != c.columns:
                wrong.append(f"{resource}/{c.name} ({c.source}): kubectl printed {got}, not {c.columns}")
    assert wrong == [], "\n".join(wrong)
    k.world.advance(600)  # ten virtual minutes on: no controller has moved what the control holds
    pods = columns(k.kubectl("get", "pods").stdout)
    assert {n: p["STATUS"] for n, p in pods.items()} == {c.name: c.columns["STATUS"] for c in PODS}
    assert "No resources found" in k.kubectl("get", "replicasets").stderr  # (the held Deployments made none)


def test_the_hold_control_refuses_what_it_cannot_hold(kube_factory):
    k = kube_factory("k8s-market")
    r = k.sim_post("/_sim/k8s/hold", {"objects": [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}]})
    assert r.status_code == 422 and "only a Pod, Job, Deployment, ReplicaSet or Node" in r.json()["message"]
    assert k.sim_post("/_sim/k8s/hold", {}).status_code == 422
    one = PODS[0].obj
    assert k.sim_post("/_sim/k8s/hold", {"objects": [one]}).status_code == 200
    r = k.sim_post("/_sim/k8s/hold", {"objects": [one]})
    assert r.status_code == 409 and "already exists" in r.json()["message"]
    k.kubectl("delete", "pod", PODS[0].name)  # a held object is deleted as any other
    assert "No resources found" in k.kubectl("get", "pods").stderr
