"""The box at scale and under the soak's faults: a Job's pods in parallel, the churn control (bench/pods.py),
the stream drop control and the long-run hook (bench/soak.py), through the real kubectl and ncui's client."""

from __future__ import annotations

import asyncio

from ncui.kube.client import Gone
from ncui.kube.watch import ResourceWatcher

from .kc_support import advance_until, busybox_job, until


def _restarts(line: str) -> int | None:
    cols = line.split()  # NAME READY STATUS RESTARTS AGE
    return int(cols[3]) if len(cols) >= 5 and cols[3].isdigit() else None


async def test_parallel_job_and_churn(kc_factory):
    """A CPU Job with completions/parallelism 40 runs 40 pods at once and completes when all 40 have; the churn
    bumps running pods' RESTARTS at its rate (kubectl get pods -w sees it), and stops when told."""
    k, kc = kc_factory()
    job = busybox_job("many", "sleep 60")
    job["spec"].update(completions=40, parallelism=40)
    assert all(r.error is None for r in await kc.apply([job]))
    await advance_until(k, lambda: sum(s.startswith("Running") for s in k.pod_statuses().values()) == 40, step=30)
    w = k.watch("get", "pods", "-w", "--output-watch-events=false")
    await until(lambda: sum(1 for x in w.lines if x.startswith("many-")) >= 40, timeout=20, what="the listing")
    r = k.sim_post("/_sim/k8s/churn", {"rate": 200})
    assert r.status_code == 200, r.text
    await until(
        lambda: any((_restarts(x) or 0) >= 1 for x in w.lines[40:]), timeout=20, what="a restart count seen by kubectl"
    )
    assert k.sim_post("/_sim/k8s/churn", {"rate": 0}).json()["churned"] > 0
    churned = k.sim.app.state.kube.churned
    versions = k.versions("/api/v1/namespaces/default/pods")
    # (the churn stopped as the control answered: nothing changes now, checked at once, not after a pause)
    assert k.sim.app.state.kube.churn is None and k.sim.app.state.kube.churned == churned
    assert k.versions("/api/v1/namespaces/default/pods") == versions
    # the Job completes only when all 40 have succeeded, not at the first
    await advance_until(
        k, lambda: k.api("/apis/batch/v1/namespaces/default/jobs/many")["status"].get("succeeded") == 40
    )
    st = k.api("/apis/batch/v1/namespaces/default/jobs/many")["status"]
    assert any(c["type"] == "Complete" for c in st.get("conditions", [])) and st["active"] == 0
    assert len(k.pod_statuses()) == 40  # no extra pods were made past the completions


async def test_drop_ends_streams_and_long_run(kc_factory):
    """/_sim/k8s/drop ends an open watch without revoking the sign-in (the client watches again: no 401); after a
    compact the watch's old version is 410 Gone, and a ResourceWatcher re-lists and carries on. NCUI_SIM_ITERS
    makes nanoGPT log past its usual 2,000 iterations."""
    k, kc = kc_factory()
    job = busybox_job("long", "train")
    items, rv = await kc.list("pods")
    ended = asyncio.Event()

    async def watch_once() -> None:
        async for _ in kc.watch("pods", rv, timeout_seconds=60):
            pass
        ended.set()

    task = asyncio.ensure_future(watch_once())
    await until(lambda: k.sim.app.state.kube.streams >= 1, what="the watch open")
    assert k.sim_post("/_sim/k8s/drop").status_code == 200
    await asyncio.wait_for(ended.wait(), 10)
    await task
    assert k.kubectl("get", "pods").returncode == 0  # still signed in
    seen: list[int] = []
    w = ResourceWatcher(kc, "pods", lambda snap: seen.append(len(snap)))
    wt = asyncio.ensure_future(w.run())
    await until(lambda: w.synced, what="the first list")
    k.sim_post("/_sim/k8s/compact")
    await kc.apply([job])  # a change after the compact
    k.sim_post("/_sim/k8s/drop")
    await until(lambda: w.lists >= 2 and "long" in "".join(w.snapshot), timeout=20, what="a re-list after 410")
    w.stop()
    await asyncio.gather(wt, return_exceptions=True)
    try:
        async for _ in kc.watch("pods", rv, timeout_seconds=5):
            raise AssertionError("a compacted version must not stream")
    except Gone:
        pass
    # the long-run hook, on nanoGPT's profile (a GPU-less pod of it runs on the CPU worker at once)
    job2 = busybox_job("long2", "train", env={"NCUI_SIM_ITERS": "6000"})
    job2["spec"]["template"]["metadata"] = {
        "labels": {"app.kubernetes.io/name": "nanogpt", "first-job.nationalcompute.com/recipe": "train"}
    }
    await kc.apply([job2])
    c = k.sim.app.state.kube.clusters[k.cluster]
    run = await advance_until(k, lambda: next((r for r in c.runs.values() if r.owner == "long2" and r.plan), None))
    assert any("iter 6000:" in text for _, text in run.plan.logs["main"])


async def test_watcher_coalesces_a_burst_and_cleans_what_the_watch_sends(kc_factory):
    """With ``coalesce`` (the app's watches), a burst of watch events is one snapshot or a few, not one per event,
    and the last holds every change; a pod first seen on the watch (not the list) has its strings made safe;
    stop() drops a delivery still to come."""
    k, kc = kc_factory()
    job = busybox_job("many", "sleep 600")
    job["spec"].update(completions=40, parallelism=40)
    assert all(r.error is None for r in await kc.apply([job]))
    await advance_until(k, lambda: sum(s.startswith("Running") for s in k.pod_statuses().values()) == 40, step=30)
    seen: list[dict] = []
    w = ResourceWatcher(kc, "pods", lambda snap: seen.append(dict(snap)), coalesce=0.3)
    wt = asyncio.ensure_future(w.run())
    try:
        await until(lambda: len(seen) == 1 and len(seen[0]) == 40, what="the first list")
        c = k.sim.app.state.kube.clusters[k.cluster]
        with k.world.lock:  # a burst: every pod changes at once (40 watch events)
            for r in c.runs.values():
                r.restarts += 1
                c.kubelet.render_put(r, c.t)
        restarts = lambda p: sum(s.get("restartCount", 0) for s in p["status"].get("containerStatuses") or [])  # noqa: E731
        await until(lambda: all(restarts(p) == 1 for p in seen[-1].values()), what="the burst in a snapshot")
        assert len(seen) <= 4, len(seen)  # one or a few snapshots for 40 events (each its own without coalesce)
        nasty = "x[red: \x1b[31mred\x1b[0m title: \x1b]0;title\x07 end]"
        assert all(r.error is None for r in await kc.apply([busybox_job("nasty", nasty)]))
        await until(lambda: any(n.startswith("nasty-") for n in seen[-1]), what="the new pod on the watch")
        pod = next(p for n, p in seen[-1].items() if n.startswith("nasty-"))
        command = " ".join(pod["spec"]["containers"][0].get("command") or []) + " ".join(
            pod["spec"]["containers"][0].get("args") or []
        )
        assert "red" in command and "\x1b" not in command and "\x07" not in command, command
        n = len(seen)
        with k.world.lock:
            for r in c.runs.values():
                r.restarts += 1
                c.kubelet.render_put(r, c.t)
        await until(lambda: w._flush is not None, what="a delivery to come")
        w.stop()
        assert w._flush is None and len(seen) == n  # the delivery to come was cancelled with the watcher
    finally:
        w.stop()
        await asyncio.gather(wt, return_exceptions=True)
