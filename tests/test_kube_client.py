"""The official ``kubernetes`` Python client against the simulator: list, watch (and 410 recovery), logs,
Inkling's reasoning field, the finance-analyst launcher, and reclaims."""

from __future__ import annotations

import re
import threading

import httpx
import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from .conftest import wait_for
from .test_kube_kubectl import _job


def _api(k) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(k.kubeconfig))


def _proxy_chat(k, svc: str, body: dict) -> httpx.Response:
    return httpx.post(
        f"{k.sim.kube_url}/k8s/{k.cluster}/api/v1/namespaces/default/services/{svc}/proxy/v1/chat/completions",
        json=body,
        headers={"Authorization": f"Bearer {k.token()}"},
        verify=False,
    )


def test_client_lists_watches_recovers_from_410_and_follows_logs(kube_factory, monkeypatch):
    k = kube_factory("k8s-market")
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    api = _api(k)
    v1 = client.CoreV1Api(api)
    nodes = v1.list_node()
    assert [n.metadata.name for n in nodes.items] == ["halcyon-cpu-worker-0"]
    assert nodes.items[0].metadata.labels["nationalcompute.com/role"] == "cpu-worker"
    k.set_bid(5.0)
    k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    pods = v1.list_namespaced_pod("default")
    assert pods.items == []
    rv = pods.metadata.resource_version
    k.sim_post("/_sim/k8s/compact")  # the history is gone: a watch from rv gets 410 Gone
    w = watch.Watch()
    with pytest.raises(ApiException) as e:
        for _ in w.stream(v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=5):
            pass
    assert e.value.status == 410
    rv = v1.list_namespaced_pod("default").metadata.resource_version  # re-list, watch from there
    seen: list[tuple[str, str]] = []

    def run():
        for ev in watch.Watch().stream(v1.list_namespaced_pod, "default", resource_version=rv, timeout_seconds=20):
            st = ev["object"].status
            seen.append((ev["type"], st.phase))
            if st.phase == "Running":
                return

    t = threading.Thread(target=run, daemon=True)
    t.start()
    k.advance_until(lambda: any(v.startswith("Running") for v in k.pod_statuses().values()), step=60)
    wait_for(lambda: ("MODIFIED", "Running") in seen, 15, what="a Running pod in the watch")
    t.join(10)
    assert seen[0][0] == "ADDED" and ("MODIFIED", "Running") in seen
    pod = v1.list_namespaced_pod("default", label_selector="job-name=nanogpt").items[0]
    assert pod.spec.node_name.startswith("halcyon-h100-")
    assert pod.spec.containers[0].resources.limits == {"nvidia.com/gpu": "8"}
    resp = v1.read_namespaced_pod_log(
        pod.metadata.name, "default", container="main", follow=True, _preload_content=False
    )
    got: list[str] = []

    def read():
        for line in resp.stream():
            got.extend(line.decode().splitlines())

    r = threading.Thread(target=read, daemon=True)
    r.start()
    wait_for(lambda: got, 15, what="the first log lines")
    k.advance_until(lambda: "Completed 0/1" in k.pod_statuses().values(), step=120, what="Completed")
    wait_for(lambda: any(x.startswith("iter 2000:") for x in got), 15, what="the last loss line")
    r.join(15)
    assert not r.is_alive()  # the follow ends with the container
    assert sum(1 for x in got if re.match(r"^iter \d+: loss \d", x)) == 201
    job = client.BatchV1Api(api).read_namespaced_job("nanogpt", "default")
    assert job.status.succeeded == 1 and any(c.type == "Complete" for c in job.status.conditions)
    api.close()


def test_inkling_reasoning_field_and_engine_container(kube_factory):
    k = kube_factory("k8s-market")
    k.set_bid(5.0)
    k.kubectl("apply", "-f", k.file("inkling-weights-to-shared-nvidia.yaml"))
    k.kubectl("apply", "-f", k.file("inkling-serve-nvidia.yaml"))
    k.advance_until(lambda: any(v.startswith("Init:0/1") for v in k.pod_statuses().values()), step=60)
    k.advance_until(
        lambda: any(
            n.startswith("inkling-") and not n.startswith("inkling-weights") and v == "Running 1/1"
            for n, v in k.pod_statuses().items()
        ),
        step=120,
    )
    logs = k.kubectl("logs", "deploy/inkling", "-c", "main").stdout
    assert "reasoning parser" in logs and "Application startup complete" in logs
    r = _proxy_chat(
        k,
        "inkling:8000",
        {"model": "thinkingmachines/Inkling", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1024},
    )
    msg = r.json()["choices"][0]["message"]
    assert r.status_code == 200 and msg["content"] and msg["reasoning_content"]


@pytest.mark.parametrize("defective", [False, True])
def test_finance_analyst_launcher_waits_for_a_good_tune(kube_factory, defective):
    k = kube_factory("k8s-market")
    k.set_bid(5.0)
    assert k.sim_post("/_sim/k8s/tune", {"defective": defective}).json() == {"defective": defective, "count": 0}
    k.kubectl("apply", "-f", k.file("finance-analyst-tune-nvidia.yaml"))
    k.kubectl("apply", "-f", k.file("finance-analyst-serve-nvidia.yaml"))
    deploy = lambda: k.api("/apis/apps/v1/namespaces/default/deployments/finance-analyst")  # noqa: E731
    assert deploy()["spec"]["replicas"] == 0
    job = lambda: k.api("/apis/batch/v1/namespaces/default/jobs/finance-analyst-tune")["status"]  # noqa: E731
    k.advance_until(lambda: job().get("succeeded") or job().get("failed"), step=120, what="the tune ends")
    log = k.kubectl("logs", "job/finance-analyst-tune").stdout
    assert "--- reference analysis ---" in log and "grade:" in log
    if defective:
        assert "DEFECTIVE" in log and job()["failed"] == 1
        assert re.search(r"finance-analyst-tune\s+Failed", k.kubectl("get", "jobs").stdout)
        k.world.advance(600)
        assert deploy()["spec"]["replicas"] == 0  # the serve leg keeps waiting
        return
    assert "tuned model ready" in log
    k.advance_until(lambda: deploy()["status"].get("readyReplicas") == 1, step=60, what="the engine ready")
    launcher = k.kubectl("logs", "deploy/finance-analyst-launcher").stdout
    assert "scaling deploy/finance-analyst to 1" in launcher
    _finance_analyst_answers_as_the_seed_says(k)


DOC_A = """Harbor Freight Lines 10-Q (synthetic). Our $48M revolver matures 2027-03-31 and covenant headroom is
under 0.3x. The top two shippers are 41% of revenue. A lawsuit filed on March 3, 2026 could reduce earnings."""
DOC_B = """Sable Ridge Mining 8-K (synthetic). The Unit 3 mill outage cuts Q3 2026 throughput by about 12%.
The tailings permit renewal is pending with the regulator; a decision is expected 2026-11-15."""


def _finance_analyst_answers_as_the_seed_says(k) -> None:
    """The tuned model writes its memo from the document given, under the system prompt it was tuned with;
    without it, off-format; at temperature 0 it repeats itself to max_tokens; usage counts the tokens."""
    from ncui.kube.chat import ENDPOINTS, request_body

    ep = ENDPOINTS["finance-analyst"]

    def ask(body: dict) -> tuple[str, dict, str]:
        r = _proxy_chat(k, "finance-analyst:8000", body)
        assert r.status_code == 200, r.text
        doc = r.json()
        return doc["choices"][0]["message"]["content"], doc["usage"], doc["choices"][0]["finish_reason"]

    seed_a = request_body(ep, [], DOC_A, stream=False)
    assert seed_a["messages"][0]["content"].endswith("omit anything it does not state.")
    memo_a, usage_a, fin = ask(seed_a)
    memo_b, usage_b, _ = ask(request_body(ep, [], DOC_B, stream=False))
    assert memo_a.startswith("Severity: ") and memo_b.startswith("Severity: ") and fin == "stop"
    for fact in ("$48M", "2027-03-31", "41%", "March 3, 2026", "Liquidity"):
        assert fact in memo_a and fact not in memo_b  # grounded in its own document, not one canned memo
    for fact in ("12%", "2026-11-15", "Operational", "Environmental"):
        assert fact in memo_b and fact not in memo_a
    assert "Critical dates" in memo_a and ask(seed_a)[0] == memo_a  # the same request, the same answer
    ids = {_proxy_chat(k, "finance-analyst:8000", seed_a).json()["id"] for _ in range(2)}
    assert len(ids) == 2, ids  # but a completion id of its own each time, as a real server's
    assert usage_a["completion_tokens"] == len(memo_a.split())  # usage counts the tokens generated
    assert usage_a["total_tokens"] == usage_a["prompt_tokens"] + usage_a["completion_tokens"]
    untuned = {**seed_a, "messages": seed_a["messages"][1:]}  # the system prompt missing: off-format
    chatty, usage_u, _ = ask(untuned)
    assert "Severity:" not in chatty and "overview" in chatty and usage_u["prompt_tokens"] < usage_a["prompt_tokens"]
    greedy, usage_g, fin = ask({**seed_a, "temperature": 0})  # greedy decoding: it repeats itself
    assert fin == "length" and usage_g["completion_tokens"] == 700 and greedy.count("Liquidity risk:") > 50


def test_reclaim_disruption_and_replacement(kube_factory):
    k = kube_factory("k8s-market")
    k.set_bid(5.0)
    (k.tmp / "plain.yaml").write_text(_job("plain", "nvidia.com/gpu", 8))
    k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    k.kubectl("apply", "-f", str(k.tmp / "plain.yaml"))
    k.advance_until(lambda: sum(v.startswith("Running") for v in k.pod_statuses().values()) == 2, step=60)
    assert len(k.sim_post("/_sim/k8s/reclaim").json()["reclaimed"]) == 2
    pods = k.api("/api/v1/namespaces/default/pods")["items"]
    for p in pods:
        conds = {c["type"]: c["status"] for c in p["status"]["conditions"]}
        assert conds.get("DisruptionTarget") == "True"
        assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143
    plain = k.api("/apis/batch/v1/namespaces/default/jobs/plain")["status"]
    assert any(c["type"] == "Failed" and c["status"] == "True" for c in plain["conditions"])
    # nanogpt ignores the disruption: a replacement pod once a node returns (the bid still stands)
    k.advance_until(
        lambda: sum(1 for n, v in k.pod_statuses().items() if n.startswith("nanogpt") and v.startswith("Running")) == 1,
        step=60,
        what="a replacement runs",
    )
    nano = k.api("/apis/batch/v1/namespaces/default/jobs/nanogpt")["status"]
    assert nano.get("failed", 0) == 0 and nano["active"] == 1
    assert "Error" in k.kubectl("get", "pods").stdout


def test_streams_end_when_the_client_goes_and_runs_repeat_by_seed(kube_factory):
    runs = []
    for _ in range(2):
        k = kube_factory("k8s-market", seed=11)
        kube = k.sim.app.state.kube
        k.set_bid(5.0)
        k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
        url = f"{k.sim.kube_url}/k8s/{k.cluster}/api/v1/namespaces/default/pods?watch=true"
        with httpx.Client(verify=False, headers={"Authorization": f"Bearer {k.token()}"}) as c:
            with c.stream("GET", url) as r:
                assert r.status_code == 200
                wait_for(lambda kube=kube: kube.streams == 1, 10, what="the watch is open")
        wait_for(lambda kube=kube: kube.streams == 0, 10, what="the server notices the client went away")
        k.advance_until(lambda k=k: "Completed 0/1" in k.pod_statuses().values(), step=300)
        runs.append((sorted(k.pod_statuses()), k.kubectl("logs", "job/nanogpt", "--timestamps").stdout))
    assert runs[0] == runs[1] and "iter 2000" in runs[0][1]  # same seed, same requests: same run
