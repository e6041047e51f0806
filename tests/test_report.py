"""Report back: ``ncui report`` (text, --json, --markdown) read off the box and its cluster, for a job applied by
hand with the real kubectl and for a Train run through the app (the same after a restart); the state files under
the XDG state dir (corrupt, future version, two writers, never the token)."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import httpx

from ncui import memory, statefile
from ncui.logfollow import parse_loss
from ncui.report import SCHEMA

# The documented shape of `ncui report --json` (README, "ncui report"): a change here is a change of the schema.
TOP = {
    "schema",
    "generated_at",
    "organization",
    "cluster",
    "job",
    "gpu_class",
    "node",
    "first_loss_lines",
    "completion",
    "reclaims",
    "rate",
    "spend_so_far",
    "cost",
    "stop",
    "standing",
    "unknown",
}
JOB = {
    "kind",
    "name",
    "recipe",
    "title",
    "state",
    "applied_at",
    "applied_by",
    "pod",
    "pod_status",
    "gpus",
    "first_loss_pod",
}
RATE = {"market", "metered", "charged", "class_price", "leading"}
NODE = {"name", "arrived_at", "source"}
MARKET = {"price_per_gpu_hour_ucredits", "gpus", "ucredits_per_hour", "as_of", "source"}
METERED = {"ucredits_per_hour", "per_gpu_hour_ucredits", "gpus", "assessed_at", "lag_seconds", "source"}
STANDING = {"what", "cluster", "price_per_gpu_hour_ucredits", "note", "withdraw", "in_ncui"}


def run_report(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ncui.cli", "report", *args],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )


def box_facts(k) -> dict:
    """What the box says, read over its own API and the cluster's (not through ncui)."""
    h = k.headers
    api = k.sim.api_url
    pod = next(
        p for p in k.api("/api/v1/namespaces/default/pods")["items"] if p["metadata"]["name"].startswith("nanogpt")
    )
    node = next(n for n in k.api("/api/v1/nodes")["items"] if n["metadata"]["name"] == pod["spec"]["nodeName"])
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    log = k.kubectl("logs", "job/nanogpt").stdout.splitlines()
    return {
        "cluster": httpx.get(f"{api}/api/k8s/cluster", params={"cluster": k.cluster}, headers=h).json(),
        "spend": httpx.get(f"{api}/api/k8s/market/spend", params={"cluster": k.cluster}, headers=h).json(),
        "balance": httpx.get(f"{api}/api/billing/balance", headers=h).json(),
        "bid": httpx.get(f"{api}/api/k8s/bid", params={"cluster": k.cluster}, headers=h).json(),
        "node": node["metadata"]["name"],
        "ready_at": ready["lastTransitionTime"],
        "loss_lines": [line for line in log if parse_loss(line)][:3],
    }


def row(text: str, label: str) -> list[str]:
    """The lines of one row of ``ncui report``'s plain text (its label in the first 18 columns)."""
    lines = text.splitlines()
    i = next(i for i, x in enumerate(lines) if x.startswith(label + " "))
    out = [lines[i][18:]]
    for x in lines[i + 1 :]:
        if x[:18].strip():
            break
        out.append(x[18:])
    return out


def same_time(a: str, b: str) -> bool:
    from ncui.kube.status import parse_time

    return parse_time(a) == parse_time(b)


def test_report_of_a_train_job_applied_by_hand_with_kubectl(kube_factory, tmp_path):
    k = kube_factory("k8s-market")
    k.set_bid(6.0)
    k.kubectl("--context", k.cluster, "apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    k.advance_until(lambda: any(s.startswith("Running") for s in k.pod_statuses().values()), what="Running")
    k.advance_until(
        lambda: len([x for x in k.kubectl("logs", "job/nanogpt").stdout.splitlines() if parse_loss(x)]) >= 3,
        step=30,
        what="three loss lines",
    )
    k.world.advance(600)  # the meter assesses: a metered rate to report
    box = box_facts(k)
    state = tmp_path / "state"
    env = {
        **k.env,
        "NC_TOKEN": k.sim.token,
        "XDG_STATE_HOME": str(state),
    }
    p = run_report(env, "--json", "--api", k.sim.api_url, "--access", k.sim.access_url)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)

    # the shape, as documented
    assert set(r) == TOP and r["schema"] == SCHEMA
    assert set(r["job"]) == JOB and set(r["node"]) == NODE and set(r["rate"]) == RATE
    assert set(r["rate"]["market"]) == MARKET and set(r["rate"]["metered"]) == METERED
    assert len(r["standing"]) == 1 and set(r["standing"][0]) == STANDING
    assert set(r["spend_so_far"]) == {"ucredits", "since", "at_least"} and isinstance(r["unknown"], dict)

    # the values, against the box
    assert r["cluster"] == {"name": k.cluster, "kind": "kubernetes", "market": True}
    assert r["gpu_class"] == box["cluster"]["gpu_model"]
    assert r["job"]["kind"] == "Job" and r["job"]["name"] == "nanogpt" and r["job"]["recipe"] == "nanogpt"
    assert r["job"]["applied_by"] == "elsewhere" and r["job"]["state"] == "Running"
    assert r["node"]["name"] == box["node"] and same_time(r["node"]["arrived_at"], box["ready_at"])
    assert r["node"]["source"] == "the Node's Ready condition"
    assert r["first_loss_lines"] == box["loss_lines"]
    mk, mt = r["rate"]["market"], r["rate"]["metered"]
    assert mk["price_per_gpu_hour_ucredits"] == round(box["spend"]["price_per_gpu_hour"] * 1e6)
    assert mk["gpus"] == box["spend"]["gpus_held"] == 8
    assert mt["ucredits_per_hour"] == box["balance"]["burn_ucredits_hr"] > 0
    assert mt["per_gpu_hour_ucredits"] == box["balance"]["burn_ucredits_hr"] // 8
    assert 0 <= mt["lag_seconds"] <= 600  # said, on the service's clock
    assert r["spend_so_far"]["ucredits"] > 0
    assert set(r["rate"]["charged"]) == {"price_per_gpu_hour_ucredits", "at", "source"}
    charges = httpx.get(f"{k.sim.api_url}/api/billing/transactions", headers=k.headers).json()["transactions"]
    newest = next(t for t in charges if t["kind"] == "charge" and t.get("price_per_gpu_hour"))
    assert r["rate"]["charged"]["price_per_gpu_hour_ucredits"] == round(newest["price_per_gpu_hour"] * 1e6)
    assert r["stop"] == [f"kubectl --context {k.cluster} delete job nanogpt"]
    standing = r["standing"][0]
    assert standing["what"] == "limit price" and standing["price_per_gpu_hour_ucredits"] == 6_000_000
    assert r["unknown"] == {}

    # the markdown says the same facts, commands and log lines as code
    md = run_report(env, "--markdown", "--api", k.sim.api_url, "--access", k.sim.access_url)
    assert md.returncode == 0, md.stderr
    for fact in [box["cluster"]["gpu_model"], box["node"], *box["loss_lines"], r["stop"][0], "$6.00/GPU-h"]:
        assert fact in md.stdout, (fact, md.stdout)
    assert md.stdout.startswith("### Report back") and md.stdout.count("```") == 4
    # the plain text too
    text = run_report(env, "--api", k.sim.api_url, "--access", k.sim.access_url).stdout
    assert "Node arrived" in text and box["loss_lines"][0] in text
    # three rates, the guide's for a Kubernetes cluster first (the market's live rate), each saying what it is
    assert r["rate"]["leading"] == "market" and r["rate"]["class_price"] is None
    live, charged, metered = row(text, "Assessed rate")
    assert live.startswith("running rate (the market's live rate, as the guide reports it on Kubernetes): $")
    assert "on 8 GPUs" in live and charged.startswith("charged, your newest charge: $")
    assert metered.startswith("metered, the organization's ten-minute average: $") and "min behind" in metered

    # what it learned is remembered (mode 600), the token nowhere in the state dir
    saved = state / "ncui" / "session.json"
    assert saved.stat().st_mode & 0o077 == 0
    assert k.sim.token not in "".join(f.read_text(errors="replace") for f in (state / "ncui").iterdir() if f.is_file())

    # the withdraw command works as printed, with the credential the report ran on: NC_TOKEN here, while the token
    # file holds another organization's
    home = Path(k.env["HOME"])
    (home / ".config" / "nationalcompute").mkdir(parents=True)
    (home / ".config" / "nationalcompute" / "token").write_text("ncsim_another_org_0000")
    assert '"Authorization: Bearer $NC_TOKEN"' in standing["withdraw"] and "token)" not in standing["withdraw"]
    subprocess.run(["sh", "-c", standing["withdraw"]], env=env, check=True, capture_output=True, timeout=30)
    assert box_facts(k)["bid"]["max_price_per_gpu_hour"] == 0
    # a report run on the token file prints a command that reads the file (as the guide keeps the token)
    k.set_bid(6.0)
    (home / ".config" / "nationalcompute" / "token").write_text(k.sim.token)
    on_file = {key: v for key, v in env.items() if key != "NC_TOKEN"}
    p = run_report(on_file, "--json", "--api", k.sim.api_url, "--access", k.sim.access_url)
    (standing,) = json.loads(p.stdout)["standing"]
    assert "$(cat ~/.config/nationalcompute/token)" in standing["withdraw"]
    subprocess.run(["sh", "-c", standing["withdraw"]], env=on_file, check=True, capture_output=True, timeout=30)
    assert box_facts(k)["bid"]["max_price_per_gpu_hour"] == 0


async def test_train_in_the_app_then_the_report_holds_after_a_restart(sim):
    """A Train run through the app: Report (6) says the five facts; the same in `ncui report --json`; quit, start
    ncui again: the active cluster and the job are resumed (Workloads selects its pod), and the report holds."""

    from .apphelp import app_for, apply_train, screen_text, until

    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await apply_train(pilot, app, sim)

        def kept() -> list[str]:
            return (app.flows.recall.remembered_job() or {}).get("first_loss_lines") or []

        for _ in range(60):  # the node is granted and joins; the pod runs and logs loss lines
            if len(kept()) >= 3:
                break
            world.advance(60)
            await pilot.pause(0.2)
        await until(pilot, lambda: len(kept()) >= 3, what="the first loss lines remembered")
        await pilot.press("6")
        view = app.query_one("#report")
        await until(pilot, lambda: view.report is not None and view.report["node"] is not None, what="the report")
        first = view.report
        text = screen_text(app)
        for fact in [
            first["gpu_class"],
            first["node"]["name"],
            kept()[0],
            "kubectl --context halcyon delete job nanogpt",
        ]:
            assert fact in text, fact
        assert first["job"]["applied_by"] == "ncui" and first["first_loss_lines"] == kept()
        mem = app.flows.recall.remembered()
        assert mem["active_cluster"] == "halcyon" and mem["ceiling"]["cluster"] == "halcyon"
        assert mem["jobs"]["halcyon"]["object"] == ["Job", "nanogpt"] and mem["jobs"]["halcyon"]["node_arrived_at"]

    # the command line says the same
    p = run_report({**os.environ, "NC_TOKEN": sim.token}, "--json", "--api", sim.api_url, "--access", sim.access_url)
    assert p.returncode == 0, p.stderr
    cli = json.loads(p.stdout)
    for field in ("gpu_class", "node", "first_loss_lines", "stop", "cluster"):
        assert cli[field] == first[field], field
    assert cli["job"]["applied_by"] == "ncui" and cli["job"]["applied_at"] == first["job"]["applied_at"]

    # a restart: the same cluster, the same job selected, the same report
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.store.meta.get("cluster") is not None, what="the active cluster")
        assert app.store.meta["cluster"].name == "halcyon"
        await pilot.press("4")
        wl = app.query_one("#kube-pane")
        await until(pilot, lambda: (wl.pod or "").startswith("nanogpt-"), timeout=30, what="the job's pod selected")
        await pilot.press("6")
        view = app.query_one("#report")
        await until(pilot, lambda: view.report is not None and view.report["node"] is not None, what="the report")
        for field in ("gpu_class", "node", "first_loss_lines", "stop"):
            assert view.report[field] == first[field], field
        assert view.report["job"]["applied_at"] == first["job"]["applied_at"]

    # Report first, before Workloads: signed in before, it connects as kubectl would (silently) and reads the cluster
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.store.meta.get("cluster") is not None, what="the active cluster")
        await pilot.press("6")
        view = app.query_one("#report")
        await until(pilot, lambda: view.report is not None and view.report["node"] is not None, what="the report")
        assert "not signed in" not in screen_text(app) and view.report["job"]["state"] == first["job"]["state"]
        assert view.report["first_loss_lines"] == first["first_loss_lines"]

    # not signed in any more (the credential gone): the facts ncui saw are said as remembered, with the reason
    cache = Path(os.environ["NCUI_KUBE_CACHE"])
    cache.rename(cache.with_name("kube-aside"))
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.store.meta.get("cluster") is not None, what="the active cluster")
        await pilot.press("6")
        view = app.query_one("#report")
        await until(pilot, lambda: view.report is not None and view.report["job"] is not None, what="the report")
        for field in ("node", "first_loss_lines", "stop"):
            assert view.report[field] == first[field], field
        assert view.report["job"]["state"].startswith("not read now (not signed in to halcyon")
        assert "as remembered" in screen_text(app) and kept()[0] in screen_text(app)
    state = Path(os.environ["XDG_STATE_HOME"]) / "ncui"
    assert sim.token not in "".join(f.read_text(errors="replace") for f in state.iterdir() if f.is_file())


# ---- the state files ------------------------------------------------------------------------------------


def test_a_corrupt_or_future_version_state_file_is_set_aside_with_a_message(tmp_path):
    from ncui import limits

    path = tmp_path / "ncui" / "session.json"
    path.parent.mkdir(parents=True)
    statefile.notices()
    for body, said in [
        ('{"version": 1, "orgs": {"k": {', "is not valid JSON"),
        ('{"version": 99, "orgs": {"k": {"active_cluster": "x"}}}', "written by a newer ncui (file version 99"),
        ("[1, 2]", "is not a JSON object"),
    ]:
        path.write_text(body)
        assert memory.recall("k", path) == {}  # never a crash, never the half-read value
        notes = statefile.notices()
        assert len(notes) == 1 and said in notes[0] and "set aside as session.json.bad-" in notes[0], notes
        assert not path.exists()
        bad = sorted(tmp_path.glob("ncui/session.json.bad-*"))
        assert bad and bad[-1].read_text() == body  # kept for the human to look at
        for b in bad:
            b.unlink()
    # an unreadable one (a folder where the file should be: no permission games as root)
    path.mkdir()
    assert memory.recall("k", path) == {} and "cannot be read" in statefile.notices()[0]
    # and a fresh one is written after it, mode 600, versioned
    memory.remember("k", path, active_cluster="halcyon")
    assert memory.recall("k", path) == {"active_cluster": "halcyon"}
    assert json.loads(path.read_text())["version"] == memory.FILE_VERSION and path.stat().st_mode & 0o077 == 0
    # limits.json goes through the same module: a future version is set aside, not misread
    lpath = tmp_path / "ncui" / "limits.json"
    lpath.write_text('{"version": 3, "limits": {"k": {"amount_ucredits": 5}}}')
    assert limits.load("k", lpath) is None and "newer ncui" in statefile.notices()[0]


def _writer(path: str, who: str, n: int) -> None:
    for i in range(n):
        memory.remember_job("k", f"{who}-{i}", {"recipe": who}, path=Path(path))


def test_two_ncui_processes_writing_at_once_lose_nothing(tmp_path):
    path = tmp_path / "ncui" / "session.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), who, 40)) for who in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    jobs = memory.recall("k", path)["jobs"]  # valid JSON, every write of both landed
    assert sorted(jobs) == sorted(f"{w}-{i}" for w in "ab" for i in range(40))
    assert not list(path.parent.glob(".*.tmp")) and not list(path.parent.glob("*.bad-*"))


# ---- a reclaim, a completion -----------------------------------------------------------------------------


def pods_of(k, prefix: str = "nanogpt-") -> list[dict]:
    items = k.api("/api/v1/namespaces/default/pods")["items"]
    return sorted(
        (p for p in items if p["metadata"]["name"].startswith(prefix)), key=lambda p: p["metadata"]["creationTimestamp"]
    )


def loss_lines_of(k, pod: str) -> list[str]:
    return [x for x in k.kubectl("--context", k.cluster, "logs", pod).stdout.splitlines() if parse_loss(x)][:3]


def test_report_of_a_train_job_through_a_reclaim_and_its_completion(kube_factory, tmp_path):
    """Train applied with the real kubectl; the market reclaims its node while it trains; the Job replaces the pod
    and runs it on the next node to completion. The report says the job's 8 GPUs (never summed over the pods),
    the first node's arrival (from its pod's start once the Node is gone), the reclaim and its replacement, the
    loss lines of the pod that ran, and the end."""
    k = kube_factory("k8s-market")
    k.set_bid(6.0)
    k.kubectl("--context", k.cluster, "apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    k.advance_until(lambda: any(s.startswith("Running") for s in k.pod_statuses().values()), what="Running")
    k.advance_until(lambda: loss_lines_of(k, pods_of(k)[0]["metadata"]["name"]), step=30, what="a loss line")
    (first,) = pods_of(k)
    node = first["spec"]["nodeName"]
    assert k.sim_post("/_sim/k8s/reclaim", {"node": node}).json()["reclaimed"] == [node]
    k.advance_until(lambda: len(pods_of(k)) == 2, step=10, what="the replacement pod")
    env = {**k.env, "NC_TOKEN": k.sim.token, "XDG_STATE_HOME": str(tmp_path / "state")}

    def report() -> dict:
        p = run_report(env, "--json", "--api", k.sim.api_url, "--access", k.sim.access_url)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout)

    r = report()  # the replacement waits for its node: the reclaimed pod's lines, said as its
    assert r["job"]["gpus"] == 8 and r["job"]["pod"] != first["metadata"]["name"]
    assert r["node"]["name"] == node and same_time(r["node"]["arrived_at"], first["status"]["startTime"])
    assert r["first_loss_lines"] and r["job"]["first_loss_pod"] == first["metadata"]["name"]
    (rc,) = r["reclaims"]
    assert rc["pod"] == first["metadata"]["name"] and rc["node"] == node and rc["replaced_by"]["pod"] == r["job"]["pod"]
    assert "reclaimed" in rc["reason"] and rc["at"]
    text = run_report(env, "--api", k.sim.api_url, "--access", k.sim.access_url).stdout
    assert row(text, "Logged by") == [
        f"{first['metadata']['name']}, the pod before {r['job']['pod']} (which has logged no loss line yet)"
    ]

    k.advance_until(lambda: any(s.startswith("Running") for s in k.pod_statuses().values()), what="Running again")
    second = pods_of(k)[-1]["metadata"]["name"]
    k.advance_until(lambda: len(loss_lines_of(k, second)) >= 3, step=30, what="three loss lines of the replacement")
    r = report()
    assert r["job"]["pod"] == second and r["job"]["pod_status"] == "Running" and r["job"]["gpus"] == 8
    assert r["first_loss_lines"] == loss_lines_of(k, second) and r["job"]["first_loss_pod"] == second
    assert r["node"]["name"] == node  # the first node's arrival stays the report's
    (rc,) = r["reclaims"]
    started = k.api(f"/api/v1/namespaces/default/pods/{second}")["status"]["startTime"]
    assert rc["replaced_by"]["node"] not in (None, node) and same_time(rc["replaced_by"]["started_at"], started)
    text = run_report(env, "--api", k.sim.api_url, "--access", k.sim.access_url).stdout
    assert f"{first['metadata']['name']} on {node}" in text and f"replaced by {second}" in text, text

    k.advance_until(
        lambda: k.api("/apis/batch/v1/namespaces/default/jobs/nanogpt")["status"].get("completionTime"),
        step=120,
        what="the Job complete",
    )
    k.advance_until(
        lambda: not [n for n in k.api("/api/v1/nodes")["items"] if "h100" in n["metadata"]["name"]],
        step=120,
        what="the node released",
    )
    r = report()
    assert r["completion"]["state"] == "Complete" and r["job"]["pod"] == second
    assert r["job"]["pod_status"] == "Completed" and r["job"]["gpus"] == 8 and len(r["reclaims"]) == 1
    assert r["stop"] == [  # ended: nothing to stop, as a VM's or Slurm's ended job says
        "nothing to stop: job/nanogpt has ended (Complete); "
        f"kubectl --context {k.cluster} delete job nanogpt removes it"
    ]
    assert r["first_loss_lines"] == loss_lines_of(k, second) and r["node"]["name"] == node
    assert "node" not in r["unknown"] and "first_loss_lines" not in r["unknown"]
    # the market holds no node now: the running rate reported is what it ran at (the newest charge)
    assert r["rate"]["market"]["price_per_gpu_hour_ucredits"] is None and r["rate"]["leading"] == "charged"
    text = run_report(env, "--api", k.sim.api_url, "--access", k.sim.access_url).stdout
    rates = row(text, "Assessed rate")
    assert rates[0].startswith("running rate (your newest charge: the market holds no node for the cluster now): $")
    assert rates[1].startswith("market rate: none: no market node held now")


def test_a_completed_train_whose_node_was_released_says_when_the_node_arrived(kube_factory, tmp_path):
    """No reclaim; the Job completes and the market releases its node (the Node object is gone): the node's arrival
    is its pod's start there, never "no node yet". (No state dir remembered it: the cluster alone says it.)"""
    k = kube_factory("k8s-market")
    k.set_bid(6.0)
    k.kubectl("--context", k.cluster, "apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    k.advance_until(
        lambda: k.api("/apis/batch/v1/namespaces/default/jobs/nanogpt")["status"].get("completionTime"),
        step=120,
        what="the Job complete",
    )
    (pod,) = pods_of(k)
    k.advance_until(
        lambda: not [n for n in k.api("/api/v1/nodes")["items"] if "h100" in n["metadata"]["name"]],
        step=120,
        what="the node released",
    )
    env = {**k.env, "NC_TOKEN": k.sim.token, "XDG_STATE_HOME": str(tmp_path / "state")}
    p = run_report(env, "--json", "--api", k.sim.api_url, "--access", k.sim.access_url)
    r = json.loads(p.stdout)
    assert r["node"]["name"] == pod["spec"]["nodeName"] and same_time(
        r["node"]["arrived_at"], pod["status"]["startTime"]
    )
    assert "the Node object is gone" in r["node"]["source"] and "node" not in r["unknown"]
    assert r["reclaims"] == [] and r["completion"]["state"] == "Complete" and r["job"]["gpus"] == 8
    text = run_report(env, "--api", k.sim.api_url, "--access", k.sim.access_url).stdout
    assert "no node yet" not in text and pod["spec"]["nodeName"] in text


def test_a_fixed_clusters_report_leads_with_the_meter_and_says_the_market_does_not_price_it(kube_factory, tmp_path):
    """A fixed cluster (k8s-fixed-amd): its reserved nodes host Train with no limit price. The market's spend read
    says 16 GPUs held at no price: the report says the cluster is fixed and its nodes are not priced by the market
    (never "no node held"), leads with the organization's meter, and names the GPU class's market price the apply
    checks the balance against."""
    k = kube_factory("k8s-fixed-amd")
    k.kubectl("--context", k.cluster, "apply", "-f", k.file("nanogpt-job.yaml"))  # (no AMD variant: the default)
    k.advance_until(lambda: any(s.startswith("Running") for s in k.pod_statuses().values()), what="Running")
    k.world.advance(600)  # the meter assesses
    env = {**k.env, "NC_TOKEN": k.sim.token, "XDG_STATE_HOME": str(tmp_path / "state")}
    r = json.loads(run_report(env, "--json", "--api", k.sim.api_url, "--access", k.sim.access_url).stdout)
    tick = httpx.get(
        f"{k.sim.api_url}/api/market/ticks", params={"gpu_model": "MI300X-192GB"}, headers=k.headers
    ).json()["ticks"][-1]
    assert r["cluster"] == {"name": k.cluster, "kind": "kubernetes", "market": False}
    assert r["rate"]["market"]["gpus"] == 16 and r["rate"]["market"]["price_per_gpu_hour_ucredits"] is None
    assert r["rate"]["leading"] in ("metered", "charged") and r["rate"]["metered"] is not None
    cp = r["rate"]["class_price"]
    assert cp["gpu_model"] == "MI300X-192GB" and cp["price_per_gpu_hour_ucredits"] == round(
        tick["price_per_gpu_hour"] * 1e6
    )
    text = run_report(env, "--api", k.sim.api_url, "--access", k.sim.access_url).stdout
    assert row(text, "Cluster")[0].startswith(f"{k.cluster} (kubernetes, fixed)")
    rates = row(text, "Assessed rate")
    assert rates[0].startswith("running rate (the organization's meter: no market prices this cluster's nodes): $")
    assert f"market rate: none — {k.cluster} is a fixed cluster: its 16 GPUs are not priced by the market" in rates
    assert any(x.startswith("market price of MI300X-192GB: $") for x in rates)
    assert "no node held" not in text, text


def test_a_public_research_report_says_the_organization_has_no_cluster_by_design(sim_factory, tmp_path):
    sim = sim_factory("public-research")
    env = {**os.environ, "NC_TOKEN": sim.token, "XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    r = json.loads(run_report(env, "--json", "--api", sim.api_url, "--access", sim.access_url).stdout)
    assert r["cluster"] is None and r["organization"]["kind"] == "public_research" and "cluster" not in r["unknown"]
    text = run_report(env, "--api", sim.api_url, "--access", sim.access_url).stdout
    (cluster,) = row(text, "Cluster")
    assert cluster.startswith("none: a public-research organization has no cluster (one whole node from Marshall")
    assert "unknown" not in cluster
    headers = {"Authorization": f"Bearer {sim.token}"}
    if httpx.get(f"{sim.api_url}/_sim/research/status", headers=headers).json()["state"] == "queued":
        # queued: no lease price yet, so the meter leads, said as the organization's (no cluster to name)
        assert r["rate"]["leading"] == "metered" and r["rate"]["market"] is None
        rates = row(text, "Assessed rate")
        assert rates[0].startswith("running rate (the organization's meter: no node leased now): $"), rates
        assert any(x.startswith("lease price: unknown (the node is queued") for x in rates), rates
        for label in ("Job", "First loss lines", "Stop it"):  # why, not "unknown (not read)"
            assert row(text, label) == ["unknown (the node is queued: a job runs on it once it is assigned)"], text
        httpx.post(f"{sim.api_url}/_sim/research/assign", headers=headers).raise_for_status()
        r = json.loads(run_report(env, "--json", "--api", sim.api_url, "--access", sim.access_url).stdout)
        text = run_report(env, "--api", sim.api_url, "--access", sim.access_url).stdout
    # a node is leased: its price is the running rate
    assert r["rate"]["leading"] == "market" and r["rate"]["market"]["source"] == "the lease's price"
    assert row(text, "Assessed rate")[0].startswith("running rate (the lease's price): $")


def _pollers(api: str) -> list[int]:
    """The pids of background sign-in pollers (``python -m ncui.kube.signin … --poll``) for the box at ``api``."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            args = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"ncui.kube.signin" in args and b"--poll" in args and api.encode() in args:
            found.append(int(d.name))
    return found


def test_a_report_not_signed_in_gives_the_link_and_leaves_no_sign_in_poller_behind(kube_factory, tmp_path):
    from .conftest import wait_for

    k = kube_factory("k8s-market", signed_in=False)
    env = {**k.env, "NC_TOKEN": k.sim.token, "XDG_STATE_HOME": str(tmp_path / "state")}
    p = run_report(env, "--api", k.sim.api_url, "--access", k.sim.access_url)
    try:
        job = " ".join(row(p.stdout, "Job"))
        assert "not signed in to the cluster: open " in job and "/device?code=" in job, p.stdout
        wait_for(lambda: not _pollers(k.sim.api_url), 5, what="no sign-in poller left by the report")
    finally:
        for pid in _pollers(k.sim.api_url):  # (what the report left, without the fix)
            os.kill(pid, 15)
    # the human approves the link; the next report finds it without any poller
    code = job.split("/device?code=", 1)[1].split()[0]
    assert httpx.post(k.sim.api_url + "/device", data={"code": code}).status_code == 200
    again = run_report(env, "--api", k.sim.api_url, "--access", k.sim.access_url)
    assert "not signed in" not in " ".join(row(again.stdout, "Job")), again.stdout
    assert not _pollers(k.sim.api_url)
