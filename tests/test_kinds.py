"""The one GPU count of a pod spec (``ncui.kube.kinds.spec_gpus``), as Kubernetes' scheduler counts it."""

from __future__ import annotations

from ncui.kube.kinds import spec_gpus
from ncui.recipes import gpus_of


def ctr(limits=None, requests=None, **kw) -> dict:
    res = {}
    if limits is not None:
        res["limits"] = limits
    if requests is not None:
        res["requests"] = requests
    return {"name": "c", "image": "x", "resources": res, **kw}


def test_limits_else_requests_summed_over_the_containers():
    assert spec_gpus({"containers": [ctr({"nvidia.com/gpu": 8})]}) == 8
    assert spec_gpus({"containers": [ctr({"amd.com/gpu": "4"}), ctr({"amd.com/gpu": 2, "cpu": "3"})]}) == 6
    assert spec_gpus({"containers": [ctr(requests={"nvidia.com/gpu": 2})]}) == 2  # a request alone
    # a limit wins over a request of the same resource (Kubernetes requires them equal)
    assert spec_gpus({"containers": [ctr({"nvidia.com/gpu": 4}, {"nvidia.com/gpu": 1})]}) == 4
    assert spec_gpus({"containers": [ctr({"cpu": "8", "memory": "1Gi"})]}) == 0
    assert spec_gpus({"containers": [{"name": "bare"}]}) == 0
    assert spec_gpus({}) == 0 and spec_gpus(None) == 0


def test_a_count_that_is_not_a_whole_number_counts_nothing():
    assert spec_gpus({"containers": [ctr({"nvidia.com/gpu": 8.0})]}) == 8  # YAML's 8.0 is the quantity 8
    for bad in ("1.5", "abc", "٣", -2, True, None, [1]):
        assert spec_gpus({"containers": [ctr({"nvidia.com/gpu": bad}), ctr({"nvidia.com/gpu": 1})]}) == 1, bad


def test_init_containers_run_first_so_the_pod_needs_the_most_of_either():
    app = [ctr({"nvidia.com/gpu": 2}), ctr({"nvidia.com/gpu": 2})]
    assert spec_gpus({"containers": app, "initContainers": [ctr({"nvidia.com/gpu": 8})]}) == 8
    assert spec_gpus({"containers": app, "initContainers": [ctr({"nvidia.com/gpu": 1})]}) == 4
    # a sidecar (restartPolicy Always) keeps running beside what starts after it
    sidecar = ctr({"nvidia.com/gpu": 1}, restartPolicy="Always")
    assert spec_gpus({"containers": app, "initContainers": [sidecar]}) == 5
    assert spec_gpus({"containers": app, "initContainers": [sidecar, ctr({"nvidia.com/gpu": 6})]}) == 7


def test_the_recipes_count_pods_times_the_template():
    tmpl = {"spec": {"containers": [ctr({"nvidia.com/gpu": 8})], "initContainers": [ctr({"cpu": "1"})]}}
    job = {"kind": "Job", "metadata": {"name": "j"}, "spec": {"parallelism": 2, "template": tmpl}}
    held = {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 0, "template": tmpl}}
    assert gpus_of([job], "nvidia") == 16 and gpus_of([held], "nvidia") == 8
