"""Sign-in expiry in place, below the TUI: when the cluster refuses the sign-in, the client closes its gate with
the plugin's new link, watchers and log followers wait there (no retries, one plugin run), and once the link is
approved the watch lists again and the log resumes with every line exactly once."""

from __future__ import annotations

import asyncio

import httpx

from ncui.kube import signin
from ncui.kube.logs import LogFollower
from ncui.kube.status import pod_status
from ncui.kube.watch import ResourceWatcher
from ncui.sim.kube import podlogs

from .conftest import wait_for
from .kc_support import advance_until, busybox_job, recipe, until


def box_log(k, pod: str, container: str) -> list[str]:
    """The texts the box has logged for a container so far, in order (read in-process)."""
    with k.world.lock:
        c = k.sim.app.state.kube.clusters[k.cluster]
        run = next(r for r in c.runs.values() if r.name == pod)
        return [text for _, text in podlogs.log_lines(run, container, k.world.now())]


def create_elsewhere(k, doc: dict) -> None:
    """Create an object with a sign-in of its own (another kubectl), while ncui's is refused."""
    code = signin.request_code(k.sim.api_url, k.cluster)
    assert k.approve(code["verification_uri_complete"]).status_code == 200
    verdict, token = signin.poll_once(k.sim.api_url, code["device_code"])
    assert verdict == "ok"
    r = httpx.post(
        f"{k.sim.kube_url}/k8s/{k.cluster}/apis/batch/v1/namespaces/default/jobs",
        json=doc,
        headers={"Authorization": f"Bearer {token}"},
        verify=False,
    )
    assert r.status_code == 201, r.text


async def test_a_refused_sign_in_holds_watch_and_log_at_the_gate_until_approved(kc_factory):
    k, kc = kc_factory()
    router = [d for d in recipe(k, "kimi-k3-serve-nvidia.yaml") if d["metadata"]["name"] == "infera-router"]
    assert all(r.error is None for r in await kc.apply(router))
    pw = ResourceWatcher(kc, "pods", lambda s: None)
    tasks = [asyncio.ensure_future(pw.run())]
    f = None
    try:
        await until(lambda: pw.synced, what="the first list")

        def router_pod():
            return next((n for n, p in pw.snapshot.items() if pod_status(p) == "Running"), None)

        pod = await advance_until(k, router_pod, step=30, what="the router running")
        got: list[str] = []
        f = LogFollower(kc, pod, "router", on_lines=got.extend, batch_interval=0.02)
        tasks.append(asyncio.ensure_future(f.run()))
        # the router logs a health line every 10 virtual minutes
        await advance_until(
            k,
            lambda: len(got) >= 6,
            step=600,
            what="health lines",
            caught_up=lambda: len(got) == len(box_log(k, pod, "router")),
        )
        runs, lists = kc.plugin_runs, pw.lists

        k.sim_post("/_sim/k8s/revoke")  # the box refuses the token and ends the open streams
        await until(lambda: not kc.gate.is_open, timeout=20, what="the gate closes")
        pend = wait_for(k.pending, 10, what="the plugin's new device code")
        assert kc.gate.link == pend["link"] and "401" in kc.gate.reason
        await until(lambda: f.state == "not signed in" and pw.error, timeout=20, what="both wait at the gate")
        assert pend["link"] in pw.error and pend["link"] in f.error  # what the screen will say: the link
        assert kc.plugin_runs == runs + 1  # one plugin run for every waiter, no retries meanwhile
        assert (await kc.check_sign_in()).signed_in is False and not kc.gate.is_open  # not approved yet

        create_elsewhere(k, busybox_job("during", "echo hi"))  # the cluster changes meanwhile
        await asyncio.to_thread(k.world.advance, 3600)  # the router logs six more lines; the link expires
        assert pw.lists == lists and "during" not in str(list(pw.snapshot))
        fresh = await kc.check_sign_in()  # what the app's sign-in flow polls: a fresh link for the expired one
        assert not fresh.signed_in and fresh.link and fresh.link != pend["link"] and kc.gate.link == fresh.link

        assert k.approve(kc.gate.link).status_code == 200
        wait_for(lambda: k.pending() is None, 15, what="the background poller caching the credential")
        assert (await kc.check_sign_in()).signed_in and kc.gate.is_open  # what the app's sign-in flow does
        await until(
            lambda: any(n.startswith("during") for n in pw.snapshot), timeout=20, what="the watch listing again"
        )
        assert pw.lists == lists + 1 and pw.error is None
        await asyncio.to_thread(k.world.advance, 1800)
        await until(lambda: len(got) == len(box_log(k, pod, "router")), timeout=20, what="the log resumed")
        assert got == box_log(k, pod, "router")  # every line once, in order, across the outage
        assert f.streams >= 2 and f.error is None and f.state == "following"
    finally:
        pw.stop()
        if f is not None:
            f.stop()
        done, pending = await asyncio.wait(tasks, timeout=10)  # stopped: they end (a failed assert is not hidden
        for t in pending:  # behind a hang: the test then fails on what it found, not on pytest's timeout)
            t.cancel()
        assert not pending, f"{len(pending)} task(s) still running 10 s after stop()"
