"""The box refuses what a real API server refuses and reads what kubectl sends (issue 23), each through the client
that found it: the real kubectl 1.32 and the official Python client. A Job's template, selector and completions
are immutable (422); the GPU webhook judges updates; typed ``kubectl create`` (protobuf) works; ``kubectl apply
--server-side`` creates, records its fields and conflicts; history is compacted by the cluster's clock (410)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from ncui.sim.kube import protowire, store

from .conftest import wait_for
from .kc_support import kc_factory  # noqa: F401  (the fixture)

WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: nginx, image: "nginx:1.26"}]}
"""


def _python_client(k, monkeypatch) -> client.ApiClient:
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    return config.new_client_from_config(config_file=str(k.kubeconfig))


def _subset(want, have) -> bool:
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(map(_subset, want, have))
    return want == have


# ---- a Job's immutable fields -----------------------------------------------------------------------------


def test_a_jobs_template_completions_and_selector_cannot_change(kube_factory, monkeypatch):
    """Applying nanogpt-job-nvidia.yaml over the AMD cluster's nanogpt Job said "configured" and changed nothing;
    `kubectl patch job … image` said "(no change)". A real API server answers 422 field is immutable."""
    k = kube_factory("k8s-fixed-amd")
    k.kubectl("apply", "-f", k.file("nanogpt-job.yaml"))  # (the default: amd.com/gpu)
    k.kubectl("apply", "-f", k.file("nanogpt-job.yaml"))  # the same again is no change (the GPU count: "8" stored)
    p = k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"), check=False)
    err = p.stderr.strip()
    assert p.returncode == 1 and "configured" not in p.stdout, (p.stdout, err)
    assert err.startswith('The Job "nanogpt" is invalid: spec.template: Invalid value: core.PodTemplateSpec{'), err
    assert err.endswith(": field is immutable") and '"nvidia.com/gpu":"8"' in err, err[-300:]
    job = json.loads(k.kubectl("get", "job", "nanogpt", "-o", "json").stdout)
    assert job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"amd.com/gpu": "8"}

    image = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}}}
    p = k.kubectl("patch", "job", "nanogpt", "-p", json.dumps(image), check=False)
    assert p.returncode == 1 and "patched" not in p.stdout, p.stdout
    assert p.stderr.startswith('The Job "nanogpt" is invalid: spec.template: Invalid value: core.PodTemplateSpec{')
    assert 'Image:"busybox:1.36"' in p.stderr and p.stderr.strip().endswith("field is immutable")
    p = k.kubectl("patch", "job", "nanogpt", "--type=merge", "-p", '{"spec":{"completions":3}}', check=False)
    assert p.stderr.strip() == 'The Job "nanogpt" is invalid: spec.completions: Invalid value: 3: field is immutable'
    sel = '{"spec":{"selector":{"matchLabels":{"a":"b"}}}}'
    p = k.kubectl("patch", "job", "nanogpt", "--type=merge", "-p", sel, check=False)
    assert "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{" in p.stderr, p.stderr
    # what may change still does
    out = k.kubectl("patch", "job", "nanogpt", "--type=merge", "-p", '{"spec":{"activeDeadlineSeconds":7200}}')
    assert out.stdout.strip() == "job.batch/nanogpt patched"

    # the Status as the API server sends it: reason Invalid, a cause per field with its path
    batch = client.BatchV1Api(_python_client(k, monkeypatch))
    with pytest.raises(ApiException) as exc:
        batch.patch_namespaced_job("nanogpt", "default", image)
    status = json.loads(exc.value.body)
    assert exc.value.status == 422 and status["kind"] == "Status" and status["reason"] == "Invalid"
    assert status["message"].startswith('Job.batch "nanogpt" is invalid: spec.template: Invalid value: ')
    assert status["details"]["name"] == "nanogpt" and status["details"]["kind"] == "Job"
    [cause] = status["details"]["causes"]
    assert cause["field"] == "spec.template" and cause["reason"] == "FieldValueInvalid"
    assert cause["message"].endswith(": field is immutable")


def test_the_gpu_webhook_judges_a_jobs_update_as_its_create(kube_factory):
    """The GPU admission webhook ran on creates only: a Job patched to four times its pods was not judged."""
    k = kube_factory("k8s-market")  # $250 balance
    k.set_bid(5.0)  # one node: 8 GPUs × $5 × 2 h = $80
    k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    p = k.kubectl("patch", "job", "nanogpt", "--type=merge", "-p", '{"spec":{"parallelism":4}}', check=False)
    assert p.returncode == 1 and "Error from server (Forbidden)" in p.stderr, p.stderr
    assert 'admission webhook "gpu.nationalcompute.com" denied the request' in p.stderr
    assert "32 GPUs x $5.00 x 2 h = $320.00" in p.stderr
    assert k.kubectl("get", "job", "nanogpt", "-o", "jsonpath={.spec.parallelism}").stdout == "1"


# ---- typed create: protobuf --------------------------------------------------------------------------------


def test_kubectl_create_sends_protobuf_and_the_box_stores_what_kubectl_meant(kube_factory, tmp_path):
    """`kubectl create secret generic hf-token --from-literal=token=…` (and configmap, job, deployment, namespace)
    failed with 415: kubectl sends these typed objects as protobuf and does not fall back on JSON. Each object the
    box stores holds everything kubectl's own JSON of it (`--dry-run=client -o json`) says."""
    k = kube_factory("k8s-market")
    notes = tmp_path / "notes.txt"
    notes.write_text("line one\nline two\n")
    cases = [
        (["secret", "generic", "hf-token", "--from-literal=token=hf_abc123"], "secret", "hf-token"),
        (["configmap", "settings", "--from-literal=a=1", f"--from-file={notes}"], "configmap", "settings"),
        (["job", "hello", "--image=busybox", "--", "sh", "-c", "echo hi"], "job", "hello"),
        (["deployment", "web", "--image=nginx:1.27", "--replicas=2", "--port=80"], "deployment", "web"),
        (["namespace", "team"], "namespace", "team"),
    ]
    for args, kind, name in cases:
        meant = json.loads(k.kubectl("create", "--dry-run=client", "-o", "json", *args).stdout)
        p = k.kubectl("-v=8", "create", *args)
        assert "Content-Type: application/vnd.kubernetes.protobuf" in p.stderr, args  # (what this is about)
        assert p.stdout.split("/", 1)[1] == f"{name} created\n", p.stdout
        got = json.loads(k.kubectl("get", kind, name, "-o", "json").stdout)
        meant.pop("status", None)
        meant["metadata"].pop("creationTimestamp")
        meant.get("spec", {}).get("template", {}).get("metadata", {}).pop("creationTimestamp", None)
        assert _subset(meant, got), (kind, meant, got)
    secret = json.loads(k.kubectl("get", "secret", "hf-token", "-o", "json").stdout)
    assert base64.b64decode(secret["data"]["token"]) == b"hf_abc123" and secret["type"] == "Opaque"
    cm = json.loads(k.kubectl("get", "configmap", "settings", "-o", "json").stdout)
    assert cm["data"] == {"a": "1", "notes.txt": "line one\nline two\n"}
    dep = json.loads(k.kubectl("get", "deployment", "web", "-o", "json").stdout)
    assert dep["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]

    # the Inkling weights Job reads the optional hf-token secret: its pod sees the token made this way
    k.kubectl("apply", "-f", k.file("inkling-weights-to-shared-nvidia.yaml"))
    k.advance_until(
        lambda: "staging nvidia/Inkling-NVFP4" in k.kubectl("logs", "job/inkling-weights", check=False).stdout,
        step=15,
        what="the staging Job's log",
    )
    log = k.kubectl("logs", "job/inkling-weights").stdout
    assert "HF_TOKEN is set (secret hf-token, key token): downloading as its user" in log, log


def test_a_body_that_is_not_the_protobuf_it_says_is_a_clear_400(kube_factory):
    import httpx

    k = kube_factory("k8s-market")
    url = f"{k.sim.kube_url}/k8s/{k.cluster}/api/v1/namespaces/default/secrets"
    for body, want in ((b"k8s\x00\x12\xff", "could not be read"), (b"junk", "could not be read")):
        r = httpx.post(
            url,
            content=body,
            headers={"Authorization": f"Bearer {k.token()}", "Content-Type": "application/vnd.kubernetes.protobuf"},
            verify=False,
        )
        assert r.status_code == 400 and want in r.json()["message"], r.text


def test_the_wire_schema_names_only_fields_the_official_client_knows():
    """proto_schema.json.gz (tools/gen_proto_schema.py, from k8s.io/api's struct tags) and the explain schema (from
    the official client's models) agree: every field the wire schema gives a JSON name is one the client knows."""
    ex = json.loads(gzip.decompress((Path(protowire.__file__).parent / "explain_schema.json.gz").read_bytes()))
    msgs = protowire.schema()["messages"]

    def names(msg: str) -> set[str]:
        out: set[str] = set()
        for _num, js, _go, flags, t in msgs[msg]["fields"]:
            out |= names(t["msg"]) if "i" in flags else {js}
        return out

    matched = 0
    for name in msgs:
        known = ex["types"].get(f"io.k8s.ncui.v1.{name.split('.', 1)[1]}")
        if known is not None:
            matched += 1
            assert names(name) <= set(known["properties"]), name
    assert matched > 100
    assert protowire.schema()["kinds"]["batch/v1/Job"] == "batch.Job"


# ---- server-side apply -------------------------------------------------------------------------------------


def test_server_side_apply_creates_records_its_fields_and_conflicts(kube_factory, tmp_path):
    """`kubectl apply --server-side` of a new object was a 404 on the PATCH; no managedFields, no conflicts."""
    k = kube_factory("k8s-market")
    two, three = tmp_path / "web2.yaml", tmp_path / "web3.yaml"
    two.write_text(WEB.replace("REPLICAS", "2"))
    three.write_text(WEB.replace("REPLICAS", "3"))
    assert (
        k.kubectl("apply", "--server-side", "-f", str(two)).stdout.strip() == "deployment.apps/web serverside-applied"
    )
    dep = json.loads(k.kubectl("get", "deploy", "web", "-o", "json", "--show-managed-fields").stdout)
    [entry] = dep["metadata"]["managedFields"]
    assert (entry["manager"], entry["operation"], entry["apiVersion"]) == ("kubectl", "Apply", "apps/v1")
    assert "f:replicas" in entry["fieldsV1"]["f:spec"]
    assert 'k:{"name":"nginx"}' in entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
    assert "progressDeadlineSeconds" in dep["spec"] and "f:progressDeadlineSeconds" not in entry["fieldsV1"]["f:spec"]

    # another manager changing a field kubectl owns: 409, until it forces the field over
    p = k.kubectl("apply", "--server-side", "--field-manager=deployer", "-f", str(three), check=False)
    assert p.returncode == 1 and 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas' in p.stderr
    assert "--force-conflicts" in p.stderr  # kubectl read the conflict as one
    assert k.kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.replicas}").stdout == "2"
    k.kubectl("apply", "--server-side", "--field-manager=deployer", "--force-conflicts", "-f", str(three))
    dep = json.loads(k.kubectl("get", "deploy", "web", "-o", "json", "--show-managed-fields").stdout)
    assert dep["spec"]["replicas"] == 3
    owners = {e["manager"]: e["fieldsV1"] for e in dep["metadata"]["managedFields"]}
    assert "f:replicas" in owners["deployer"]["f:spec"] and "f:replicas" not in owners["kubectl"]["f:spec"]
    # the same value is shared, not a conflict; an update's manager takes the field (kubectl scale)
    assert "serverside-applied" in k.kubectl("apply", "--server-side", "--field-manager=third", "-f", str(three)).stdout
    k.kubectl("scale", "deploy", "web", "--replicas=5")
    p = k.kubectl("apply", "--server-side", "--field-manager=deployer", "-f", str(three), check=False)
    assert 'conflict with "kubectl" with subresource "scale" using autoscaling/v1: .spec.replicas' in p.stderr

    # from client-side apply to server-side apply: kubectl's own manager takes over what its last apply set
    (tmp_path / "csa2.yaml").write_text(WEB.replace("REPLICAS", "2").replace("name: web}", "name: csa}"))
    (tmp_path / "csa3.yaml").write_text(WEB.replace("REPLICAS", "3").replace("name: web}", "name: csa}"))
    k.kubectl("apply", "-f", str(tmp_path / "csa2.yaml"))
    assert "serverside-applied" in k.kubectl("apply", "--server-side", "-f", str(tmp_path / "csa3.yaml")).stdout
    dep = json.loads(k.kubectl("get", "deploy", "csa", "-o", "json", "--show-managed-fields").stdout)
    owners = {e["manager"]: e["fieldsV1"] for e in dep["metadata"]["managedFields"]}
    assert dep["spec"]["replicas"] == 3 and "f:replicas" in owners["kubectl"]["f:spec"]
    assert "f:replicas" not in owners["kubectl-client-side-apply"]["f:spec"]


# ---- history compacted by the cluster's clock --------------------------------------------------------------


def test_a_watch_or_exact_list_from_a_compacted_version_is_410(kube_factory, monkeypatch):
    """A watch from an old resourceVersion replayed the box's last 2,000 events however old; a list at an exact
    compacted version returned the current one. Now, as etcd under a real API server: compacted every five minutes
    (of the cluster's clock) to the version of the compaction before; a watch already open is not cut."""
    k = kube_factory("k8s-market")
    v1 = client.CoreV1Api(_python_client(k, monkeypatch))
    v1.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="first")))
    old = v1.list_namespaced_config_map("default").metadata.resource_version
    v1.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="second")))
    open_watch = k.watch("get", "configmaps", "-w")
    wait_for(lambda: any(x.startswith("second") for x in open_watch.lines), 15, what=f"the watch: {open_watch.lines}")

    k.world.advance(4 * 60)  # within the window: the history since `old`, and the list as it was then
    events = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(v1.list_namespaced_config_map, "default", resource_version=old, timeout_seconds=1)
    ]
    assert events == [("ADDED", "second")], events
    then = v1.list_namespaced_config_map("default", resource_version=old, resource_version_match="Exact")
    assert [c.metadata.name for c in then.items] == ["first"] and then.metadata.resource_version == old

    k.world.advance(store.COMPACT_EVERY.total_seconds() * 2)  # two compactions later: `old` is gone
    with pytest.raises(ApiException) as exc:
        list(watch.Watch().stream(v1.list_namespaced_config_map, "default", resource_version=old, timeout_seconds=1))
    assert exc.value.status == 410 and exc.value.reason.startswith("Expired: too old resource version: ")
    with pytest.raises(ApiException) as exc:
        v1.list_namespaced_config_map("default", resource_version=old, resource_version_match="Exact")
    assert exc.value.status == 410 and json.loads(exc.value.body)["reason"] == "Expired"
    p = k.kubectl(
        "get",
        "--raw",
        f"/api/v1/namespaces/default/configmaps?resourceVersion={old}&resourceVersionMatch=Exact",
        check=False,
    )
    assert "Error from server (Expired): The resourceVersion for the provided list is too old." in p.stderr, p.stderr
    # the watch that was open all along still sees what comes next
    v1.create_namespaced_config_map("default", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="third")))
    wait_for(lambda: any(x.startswith("third") for x in open_watch.lines), 15, what=f"the watch: {open_watch.lines}")
    assert open_watch.proc.poll() is None and not open_watch.err, open_watch.err


async def test_ncuis_watcher_lists_again_when_time_has_compacted_its_version(kc_factory):  # noqa: F811
    """Item 5: ncui survives the stricter box. Its Job watcher, back from a dropped watch on a version the
    cluster's clock has since compacted (no compact control: time alone), gets 410 and lists again at once; it
    says no error and holds what changed meanwhile."""
    import asyncio

    from ncui.kube.watch import ResourceWatcher

    from .kc_support import busybox_job, until

    k, kc = kc_factory()
    errors: list[str] = []
    w = ResourceWatcher(kc, "jobs", lambda snap: None, on_error=errors.append)
    task = asyncio.ensure_future(w.run())
    try:
        await until(lambda: w.synced and k.sim.app.state.kube.streams >= 1, what="the first list and its watch")
        k.kubectl("create", "configmap", "unrelated")  # (the cluster moves on; no Job changes)
        k.world.advance(store.COMPACT_EVERY.total_seconds() * 2 + 1)
        assert k.kubectl("get", "jobs").returncode == 0  # (a request: the cluster's clock catches up, compacts)
        assert k.sim_post("/_sim/k8s/drop").status_code == 200  # the watch ends; ncui watches again from its version
        await until(lambda: w.lists == 2, what="a second list after the 410")
        assert all(r.error is None for r in await kc.apply([busybox_job("later", "true")]))
        await until(lambda: "later" in w.snapshot, what="the watch after the new list")
        assert errors == [] and w.error is None and w.lists == 2
    finally:
        w.stop()
        await asyncio.gather(task, return_exceptions=True)


def test_the_store_keeps_a_version_five_to_ten_minutes_and_an_open_reader_reads_on():
    """store.py's schedule, on its own clock: each compaction (every COMPACT_EVERY) goes to the version of the one
    before, so a version is readable at least five minutes and at most ten; an open watch reads what it has not."""
    from datetime import datetime, timedelta, timezone

    now = [datetime(2026, 1, 1, tzinfo=timezone.utc)]
    s = store.Store(clock=lambda: now[0])

    def put(name: str) -> int:
        return int(
            s.put("configmaps", {"metadata": {"name": name, "namespace": "default"}})["metadata"]["resourceVersion"]
        )

    def at(minutes: float) -> None:
        now[0] = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=minutes)
        s.compact_due(now[0])

    a = put("a")
    reader = s.open_reader(a)
    at(1)
    b = put("b")
    at(5.5)  # the first compaction: to the version at the start
    assert s.events_after(a) is not None and s.events_after(b) is not None
    at(9.9)
    assert s.events_after(a) is not None  # (no compaction since: a is 9.9 minutes old and still there)
    at(10)  # the second: to the version at 5 minutes, which is b's
    assert s.events_after(a) is None and s.list_at("configmaps", "default", a) is None
    assert [o["metadata"]["name"] for o in s.list_at("configmaps", "default", b) or []] == ["a", "b"]
    assert [e.obj["metadata"]["name"] for e in s.events_after(a, reader, first=False) or []] == ["b"]
    s.close_reader(reader)
    at(60)  # quiet for long: compacted up to the newest version; nothing older kept
    assert s.events_after(b) == [] and not s.events
