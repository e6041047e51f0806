"""What a kubectl user types beyond the guide, against the box's cluster with the real kubectl (and the Python
client): auth can-i, run, a rolling update and rollout status, Terminating, "(no change)". (Typed create, sent as
protobuf: tests/test_kube_strict.py.)"""

from __future__ import annotations

import re

from kubernetes import client, config

WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.26"}]}
"""


def _pods(k, prefix: str) -> dict[str, str]:
    return {n: s for n, s in k.pod_statuses().items() if n.startswith(prefix)}


def test_auth_can_i_answers(kube_factory, monkeypatch):
    k = kube_factory("k8s-market")
    assert k.kubectl("auth", "can-i", "create", "jobs").stdout.strip() == "yes"
    assert k.kubectl("auth", "can-i", "get", "pods", "--subresource=log").stdout.strip() == "yes"
    p = k.kubectl("auth", "can-i", "delete", "nodes", check=False)
    assert p.returncode == 1 and p.stdout.startswith("no - nodes are managed by National Compute's market"), p
    p = k.kubectl("auth", "can-i", "create", "cronjobs", check=False)
    assert p.returncode == 1 and p.stdout.startswith("no"), p
    rules = k.kubectl("auth", "can-i", "--list").stdout
    assert re.search(r"^jobs\.batch\s+\[\]\s+\[\]\s+\[create delete deletecollection get list", rules, re.M), rules
    assert re.search(r"^nodes\s+\[\]\s+\[\]\s+\[get list watch\]", rules, re.M), rules
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    authz = client.AuthorizationV1Api(config.new_client_from_config(config_file=str(k.kubeconfig)))
    review = client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(namespace="default", verb="patch", resource="nodes")
        )
    )
    out = authz.create_self_subject_access_review(review)
    assert out.status.allowed is False and "market" in out.status.reason


def test_run_rollout_terminating_and_no_change(kube_factory):
    k = kube_factory("k8s-market")
    # kubectl run: a bare pod schedules, runs, and has logs
    assert "pod/hello created" in k.kubectl("run", "hello", "--image=busybox", "--", "sh", "-c", "echo hi").stdout
    k.advance_until(lambda: k.pod_statuses().get("hello") == "Running 1/1", step=15, what="hello runs")
    assert "command: sh -c echo hi" in k.kubectl("logs", "hello").stdout
    # deleted, it is Terminating for its grace period (30 s), then gone
    k.kubectl("delete", "pod", "hello", "--wait=false")
    assert re.search(r"hello\s+1/1\s+Terminating", k.kubectl("get", "pod", "hello").stdout)
    k.world.advance(31)
    assert "NotFound" in k.kubectl("get", "pod", "hello", check=False).stderr
    # a rolling update keeps the old pods until the new ones are Ready (maxSurge 1, maxUnavailable 0)
    (k.tmp / "web.yaml").write_text(WEB)
    k.kubectl("apply", "-f", str(k.tmp / "web.yaml"))
    k.advance_until(lambda: list(_pods(k, "web").values()) == ["Running 1/1"] * 2, step=15, what="web up")
    old = set(_pods(k, "web"))
    k.kubectl("set", "image", "deploy/web", "nginx=nginx:1.27")
    pods = _pods(k, "web")
    assert len(pods) == 3 and all(pods[n] == "Running 1/1" for n in old), pods
    status = k.kubectl("rollout", "status", "deploy/web", "--watch=false").stdout
    assert 'Waiting for deployment "web" rollout to finish' in status, status
    seen_old_running = []

    def rolled() -> bool:
        pods = _pods(k, "web")
        seen_old_running.append(sum(1 for n in old if pods.get(n) == "Running 1/1"))
        ready_new = sum(1 for n, s in pods.items() if n not in old and s == "Running 1/1")
        assert ready_new + seen_old_running[-1] >= 2, pods  # never fewer than 2 available
        return "successfully rolled out" in k.kubectl("rollout", "status", "deploy/web", "--watch=false").stdout

    k.advance_until(rolled, step=10, what="the rollout")
    assert seen_old_running[0] == 2
    desc = k.kubectl("describe", "deploy", "web").stdout
    assert re.search(r"Scaled down replica set web-\S+ from 2 to 1", desc), desc
    # a repeated identical patch changes nothing
    patch = '{"spec":{"minReadySeconds":0}}'
    assert k.kubectl("patch", "deploy", "web", "-p", patch).stdout.strip() == "deployment.apps/web patched"
    assert k.kubectl("patch", "deploy", "web", "-p", patch).stdout.strip() == "deployment.apps/web patched (no change)"


def test_explain_gives_the_fields_of_the_kinds_served(kube_factory):
    k = kube_factory("k8s-market")
    out = k.kubectl("explain", "pods.spec.containers.resources").stdout
    assert "FIELD: resources <ResourceRequirements>" in out and re.search(r"limits\s+<map\[string\]string>", out), out
    out = k.kubectl("explain", "jobs.spec.podFailurePolicy.rules").stdout
    assert "FIELD: rules <[]PodFailurePolicyRule>" in out and "onPodConditions" in out, out
    out = k.kubectl("explain", "events").stdout
    assert "involvedObject\t<ObjectReference> -required-" in out, out  # core/v1 Event, not events.k8s.io's
