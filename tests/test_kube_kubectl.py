"""The real kubectl against the simulated cluster: the guide's Train and Serve flows, admission, vendors."""

from __future__ import annotations

import json
import re

import httpx

from .conftest import wait_for
from .kube_support import statuses, subsequence

LOSS = re.compile(r"^iter (\d+): loss (\d+\.\d+), time (\d+\.\d+)ms$")


def test_train_nanogpt_end_to_end(kube_factory):
    k = kube_factory("k8s-market")
    nodes = k.kubectl("get", "nodes").stdout
    assert re.search(r"halcyon-cpu-worker-0\s+Ready\s+cpu-worker\s+\S+\s+v1\.32", nodes), nodes
    k.set_bid(5.0)
    out = k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml")).stdout
    assert "job.batch/nanogpt created" in out
    w = k.watch("get", "pods", "-w")
    # the job waits suspended with no pods while its node is granted and joins
    assert "No resources found" in k.kubectl("get", "pods").stderr
    assert re.search(r"nanogpt\s+Suspended\s+0/1", k.kubectl("get", "jobs").stdout)
    job = json.loads(k.kubectl("get", "job", "nanogpt", "-o", "json").stdout)
    uid = job["metadata"]["uid"]
    assert job["spec"]["selector"]["matchLabels"] == {"batch.kubernetes.io/controller-uid": uid}
    assert job["spec"]["template"]["metadata"]["labels"]["controller-uid"] == uid
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"
    # the market grants a node (the pod appears, Pending while the node joins), then it pulls and runs
    k.advance_until(lambda: any(s.startswith("Running") for s in k.pod_statuses().values()), what="Running")
    gpu = [line for line in k.kubectl("get", "nodes", "--show-labels").stdout.splitlines() if "gpu" in line]
    assert gpu and "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" in gpu[0] and " Ready " in gpu[0]
    wait_for(
        lambda: subsequence(["Pending", "ContainerCreating", "Running"], statuses(w.lines)),
        15,
        what=f"watch output: {w.lines}",
    )
    logs = k.watch("logs", "-f", "job/nanogpt")
    k.advance_until(lambda: "Completed 0/1" in k.pod_statuses().values(), step=120, what="Completed")
    assert logs.wait(20) == 0
    losses = [float(m.group(2)) for m in map(LOSS.match, logs.lines) if m]
    assert len(losses) > 100 and losses[-1] < losses[0] - 2, logs.lines[-5:]
    wait_for(lambda: "Completed 0/1" in statuses(w.lines), 15, what="Completed in the watch")
    assert re.search(r"nanogpt\s+Complete\s+1/1", k.kubectl("get", "jobs").stdout)
    tail = k.kubectl("logs", "job/nanogpt", "--tail=1", "--timestamps").stdout.strip()
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z iter 2000: loss", tail), tail
    out = k.kubectl("delete", "job", "nanogpt")
    assert 'job.batch "nanogpt" deleted' in out.stdout
    assert "No resources found" in k.kubectl("get", "pods").stderr


def test_serve_kimi_to_ready_and_a_completion(kube_factory):
    k = kube_factory("k8s-market")
    k.set_bid(5.0)
    k.kubectl("apply", "-f", k.file("kimi-k3-weights-to-shared.yaml"))
    out = k.kubectl("apply", "-f", k.file("kimi-k3-serve-nvidia.yaml")).stdout
    assert "deployment.apps/infera-router created" in out and "service/infera created" in out
    w = k.watch("get", "pods", "-w")
    wait_for(lambda: any("kimi-k3-worker" in line for line in w.lines), 15, what="the watch's first list")
    st = k.pod_statuses()
    worker = next(n for n in st if n.startswith("kimi-k3-worker"))
    assert st[worker].startswith("SchedulingGated")  # until the market grants its node
    k.world.advance(60)
    st = k.pod_statuses()
    router = next(n for n in st if n.startswith("infera-router"))
    assert st[router] == "Running 1/1"  # on the CPU worker, within a virtual minute
    weights = next(n for n in st if n.startswith("kimi-k3-weights"))
    k.advance_until(lambda: "Running 1/1" in k.pod_statuses().get(weights, ""), step=30)
    k.world.advance(300)
    prog = k.kubectl("logs", "job/kimi-k3-weights").stdout
    assert "staging moonshotai/Kimi-K3" in prog and "Fetching 64 files" in prog
    k.advance_until(lambda: k.pod_statuses().get(worker) == "Running 1/1", what="worker 1/1")
    wait_for(
        lambda: subsequence(
            ["SchedulingGated 0/1", "Pending 0/1", "Init:0/2 0/1", "Running 0/1", "Running 1/1"],
            statuses(w.lines, "kimi-k3-worker"),
        ),
        15,
        what=f"worker sequence in {w.lines}",
    )
    assert re.search(r"infera-router\s+1/1\s+1\s+1", k.kubectl("get", "deployments").stdout)
    body = k.tmp / "req.json"
    body.write_text(json.dumps({"model": "moonshotai/Kimi-K3", "messages": [{"role": "user", "content": "hi"}]}))
    out = k.kubectl(
        "create", "--raw", "/api/v1/namespaces/default/services/infera:8000/proxy/v1/chat/completions", "-f", str(body)
    ).stdout
    reply = json.loads(out)
    assert reply["object"] == "chat.completion" and reply["choices"][0]["message"]["content"]
    k.kubectl("apply", "-f", k.file("kimi-k3-loadtest.yaml"))
    k.advance_until(
        lambda: any(
            n.startswith("kimi-k3-loadtest") and v.startswith("Completed") for n, v in k.pod_statuses().items()
        ),
        step=120,
    )
    assert "Serving Benchmark Result" in k.kubectl("logs", "job/kimi-k3-loadtest").stdout


def test_admission_refusals_print_their_message(kube_factory):
    k = kube_factory("k8s-market")  # $250 balance
    k.set_bid(20.0)  # 8 GPUs x $20 x 2 h = $320 > $250
    p = k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"), check=False)
    assert p.returncode != 0
    assert "Error from server (Forbidden)" in p.stderr and "does not cover two hours" in p.stderr
    assert "$320.00" in p.stderr
    k.set_bid(5.0)
    p = k.kubectl("apply", "-f", k.file("nanogpt-job.yaml"), check=False)  # the amd variant
    assert p.returncode != 0 and "amd.com/gpu is not offered on cluster halcyon" in p.stderr
    half = k.tmp / "half.yaml"
    half.write_text(_job("half", "nvidia.com/gpu", 4))
    p = k.kubectl("apply", "-f", str(half), check=False)
    assert p.returncode != 0 and "partial node" in p.stderr
    assert "No resources found" in k.kubectl("get", "jobs").stderr


def test_packing_cluster_runs_a_partial_pod_on_its_reservation(kube_factory):
    k = kube_factory("k8s-packing")
    half = k.tmp / "half.yaml"
    half.write_text(_job("half", "nvidia.com/gpu", 4))
    k.kubectl("apply", "-f", str(half))
    k.advance_until(lambda: any(v.startswith("Running") for v in k.pod_statuses().values()), step=30)
    wide = k.kubectl("get", "pods", "-o", "wide").stdout
    assert "osprey-h100-r0" in wide  # the reservation, no market node


def test_fixed_amd_cluster_vendor_fallback_and_not_offered(kube_factory):
    k = kube_factory("k8s-fixed-amd")
    p = k.kubectl("apply", "-f", k.file("nanogpt-job-amd.yaml"), check=False)
    assert p.returncode != 0 and "404" in p.stderr  # no amd variant: apply the default
    k.kubectl("apply", "-f", k.file("nanogpt-job.yaml"))
    k.world.advance(1)
    st = k.pod_statuses()  # idle reserved nodes host it at once: no suspension
    assert len(st) == 1 and list(st.values())[0].startswith("ContainerCreating")
    assert "marlin-mi300x-r" in k.kubectl("get", "pods", "-o", "wide").stdout
    for name in ("kimi-k3-serve-amd.yaml", "kimi-k3-serve.yaml"):  # not offered on amd
        assert httpx.get(k.file(name)).status_code == 404


def test_other_organizations_cluster_never_resolves(kube_factory):
    k = kube_factory("k8s-market")
    r = httpx.get(
        f"{k.sim.kube_url}/k8s/kestrel/api/v1/nodes", verify=False, headers={"Authorization": f"Bearer {k.token()}"}
    )
    assert r.status_code == 404 and r.json()["kind"] == "Status"
    r = httpx.get(f"{k.sim.api_url}/api/k8s/cluster/kubeconfig", params={"cluster": "kestrel"}, headers=k.headers)
    assert r.status_code == 404
    r = httpx.post(f"{k.sim.api_url}/api/k8s/device/code", json={"cluster": "kestrel"})
    assert r.status_code == 404
    r = httpx.get(f"{k.sim.kube_url}/k8s/halcyon/api/v1/nodes", verify=False, headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401 and r.json()["reason"] == "Unauthorized"


def _job(name: str, resource: str, gpus: int, policy: bool = False) -> str:
    pol = (
        """
  podReplacementPolicy: Failed
  podFailurePolicy:
    rules:
      - action: Ignore
        onPodConditions:
          - type: DisruptionTarget
            status: "True"
      - action: Ignore
        onExitCodes:
          operator: In
          values: [143]"""
        if policy
        else ""
    )
    return f"""apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  backoffLimit: 0{pol}
  template:
    spec:
      restartPolicy: Never
      tolerations:
        - key: {resource}
          operator: Exists
          effect: NoSchedule
      containers:
        - name: main
          image: ghcr.io/example/thing:1.0
          command: ["sh", "-c", "echo hello"]
          resources:
            limits:
              {resource}: {gpus}
"""
