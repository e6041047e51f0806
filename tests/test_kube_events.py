"""Events on the box's cluster, as the real kubectl and the Python client read them: the guide's Train run from
a waiting Job to a reclaim, `describe` explaining a waiting pod, `get events -w`, and expiry after an hour."""

from __future__ import annotations

import re

from kubernetes import client, config

from .conftest import wait_for


def _events(k, *args: str) -> str:
    return k.kubectl("get", "events", *args).stdout


def test_train_run_tells_its_story_in_events(kube_factory, monkeypatch):
    k = kube_factory("k8s-market")
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    k.set_bid(5.0)
    w = k.watch("get", "events", "-w")
    k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    # the Job waits suspended, with no pod: describe says why, in words, with the limit price
    desc = k.kubectl("describe", "job", "nanogpt").stdout
    assert re.search(r"Normal\s+Suspended\s+\S+\s+job-controller\s+Job suspended", desc), desc
    assert "WaitingForNode" in desc and "limit price ($5.00/GPU-hour)" in desc, desc
    # the market grants a node: the pod waits for it to join, and describe says so
    k.advance_until(lambda: any(n.startswith("nanogpt") for n in k.pod_statuses()), step=30, what="a pod")
    pod = next(n for n in k.pod_statuses() if n.startswith("nanogpt"))
    desc = k.kubectl("describe", "pod", pod).stdout
    assert re.search(r"Warning\s+FailedScheduling\s+.*to join the cluster", desc), desc
    k.advance_until(lambda: k.pod_statuses().get(pod, "").startswith("Running"), what="Running")
    out = _events(k)
    for reason, message in (
        ("Resumed", "Job resumed"),
        ("SuccessfulCreate", f"Created pod: {pod}"),
        ("Scheduled", f"Successfully assigned default/{pod} to halcyon-h100-"),
        ("Pulling", 'Pulling image "pytorch/pytorch:'),
        ("Pulled", 'Successfully pulled image "pytorch/pytorch:'),
        ("Created", "Created container: main"),
        ("Started", "Started container main"),
        ("NodeReady", "Node halcyon-h100-"),
    ):
        assert re.search(rf"\b{reason}\s+\S+/\S+\s+{re.escape(message)}", out), (reason, out)
    wait_for(lambda: "Started container main" in w.text(), 15, what=f"the watch streams events: {w.lines}")
    # the Python client reads the same, by field selector (as describe does)
    api = client.CoreV1Api(config.new_client_from_config(config_file=str(k.kubeconfig)))
    got = api.list_namespaced_event("default", field_selector=f"involvedObject.kind=Pod,involvedObject.name={pod}")
    reasons = [e.reason for e in got.items]
    assert reasons[:2] == ["FailedScheduling", "Scheduled"] and "Started" in reasons, reasons
    assert all(e.source.component and e.last_timestamp for e in got.items)
    # the reclaim story: the node, the eviction, the Killing, the DisruptionTarget condition on the pod
    node = k.kubectl("get", "pod", pod, "-o", "jsonpath={.spec.nodeName}").stdout
    assert k.sim_post("/_sim/k8s/reclaim", {"node": node}).json()["reclaimed"] == [node]
    out = _events(k)
    assert re.search(rf"Warning\s+Reclaimed\s+node/{node}\s+The market reclaimed node {node}.*{pod}", out), out
    assert re.search(rf"TaintManagerEviction\s+pod/{pod}\s+Marking for deletion Pod default/{pod}", out), out
    assert re.search(rf"Killing\s+pod/{pod}\s+Stopping container main", out), out
    assert re.search(rf"RemovingNode\s+node/{node}", out), out
    conds = k.kubectl("get", "pod", pod, "-o", "jsonpath={.status.conditions[0].type}").stdout
    assert conds == "DisruptionTarget"
    # repeats fold into one event with a count; an hour later, they are gone
    k.kubectl("delete", "job", "nanogpt")
    k.world.advance(3700)
    k.kubectl("get", "nodes")  # the box catches up with its clock on a request
    out = _events(k, "-o", "wide")
    assert "Job suspended" not in out and f"Created pod: {pod}" not in out, out


def test_describe_explains_a_pod_waiting_for_the_market(kube_factory):
    k = kube_factory("k8s-market")
    k.kubectl("apply", "-f", k.file("kimi-k3-weights-to-shared.yaml"))
    k.kubectl("apply", "-f", k.file("kimi-k3-serve-nvidia.yaml"))
    worker = next(n for n in k.pod_statuses() if n.startswith("kimi-k3-worker"))
    desc = k.kubectl("describe", "pod", worker).stdout
    assert re.search(r"Warning\s+FailedScheduling\s+.*no limit price is set.*PUT /api/k8s/bid", desc), desc
    deploy = k.kubectl("describe", "deploy", "kimi-k3-worker").stdout
    assert re.search(r"ScalingReplicaSet\s+\S+\s+deployment-controller\s+Scaled up replica set kimi-k3-worker-", deploy)
    k.set_bid(5.0)
    k.advance_until(lambda: "to join the cluster" in k.kubectl("describe", "pod", worker).stdout, step=30)
    desc = k.kubectl("describe", "pod", worker).stdout
    assert "no limit price is set" in desc  # the earlier reason stays, in order, under the new one
    assert desc.index("no limit price is set") < desc.index("to join the cluster")
