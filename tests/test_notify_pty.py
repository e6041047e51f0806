"""Desktop notifications on a real terminal: ``ncui --api … --access …`` on a pty (tests/ptyterm.py: the raw bytes
the app writes, every OSC in them; tmux's capture-pane would drop them) against the box, with TERM_PROGRAM=WezTerm
(OSC 9). The terminal reports focus-out (``ESC [ O``, as a terminal with mode 1004 does); the box makes each moment
on demand (objects held in the cluster: tests/test_notify_scenarios.py makes them by the path a researcher walks);
the test reads one OSC 9 per moment, in order, with no raw control character from server text (hostile names held
in the cluster). With the focus in (``ESC [ I``): none. With ``--quiet``: none (in-app ones stay)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from ncui import limits as L

from .kc_support import busybox_job
from .ptyterm import FOCUS_IN, FOCUS_OUT, OSC9, Pty, ncui_argv, no_raw_controls, person

pytestmark = pytest.mark.peers("kubectl")

HOSTILE = "evil\x1b]0;PWNED\x07\x9b2J\u202e"  # in a name a cluster holds: ESC, BEL, an 8-bit CSI, a bidi override


def _hold(k, *objects: dict) -> None:
    r = k.sim_post(f"/_sim/k8s/hold?cluster={k.cluster}", {"objects": list(objects)})
    assert r.status_code == 200, r.text


def _limit_file(tmp: Path, k, usd: float) -> None:
    """A dated spending limit of ``usd``, set a second ago on the box's clock (as b on Lease saves it)."""
    who = httpx.get(f"{k.sim.api_url}/api/whoami", headers=k.headers).json()
    now = k.world.now()
    limit = L.Limit(int(usd * 1_000_000), now - timedelta(seconds=1), until=now + timedelta(days=30))
    L.save(L.key_for(k.sim.api_url, who["org_id"]), limit, path=tmp / "state" / "ncui" / "limits.json")


def _held_pod(name: str, node: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox:1.36"}]},
        "status": {
            "phase": "Failed",
            "conditions": [
                {
                    "type": "DisruptionTarget",
                    "status": "True",
                    "reason": "Reclaimed",
                    "message": f"node {node} reclaimed",
                }
            ],
        },
    }


def _held_deployment(name: str) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
            },
        },
        "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
    }


def _job_failed(k, name: str) -> bool:
    """The box's Job ``name`` has failed (its Failed condition), read from its API."""
    with k.world.lock:
        k.sim.app.state.kube.tick()
    job = k.api(f"/apis/batch/v1/namespaces/default/jobs/{name}")
    return any(c.get("type") == "Failed" and c.get("status") == "True" for c in job["status"].get("conditions") or ())


async def _app_watching(k, term: Pty, sentinel: str) -> None:
    """The app up, on Workloads, its watches caught up (the sentinel Job, held before it started, is drawn)."""
    await term.until(lambda raw: b"Halcyon" in raw, "the app with its account")
    term.send(b"4")
    await term.until(lambda raw: sentinel.encode() in raw, "Workloads drawing the cluster's jobs")


async def test_each_moment_once_in_order_while_the_terminal_is_not_focused(kc_factory, pty_factory, tmp_path):
    k, kc = kc_factory()
    _hold(
        k,
        busybox_job("sentinel-done", "true")
        | {"status": {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}},
    )
    _limit_file(tmp_path, k, 10.0)
    term = pty_factory(ncui_argv(k.sim), person(tmp_path, k.sim, cache=k.auth_cache))
    await _app_watching(k, term, "sentinel-done")
    term.send(FOCUS_OUT)

    # 1. the spending limit at 80%, then 100% (the box charges $8.50, then $2 more; r reads the meter now)
    assert k.sim_post("/_sim/billing/charge", {"usd": 8.5}).status_code == 200
    term.send(b"r" + FOCUS_OUT)  # (a key is the focus back, as Textual reads it: the report follows it at once)
    await term.until(lambda raw: len(OSC9.findall(raw)) >= 1, "the 80% notification")
    assert k.sim_post("/_sim/billing/charge", {"usd": 2.0}).status_code == 200
    term.send(b"r" + FOCUS_OUT)
    await term.until(lambda raw: len(OSC9.findall(raw)) >= 2, "the 100% notification")

    # 2. a job fails (the box fails the next Job; its one pod exits 1)
    assert k.sim_post("/_sim/k8s/fail", {"count": 1}).status_code == 200
    res = await kc.apply([busybox_job("train-fails", "echo step 1: loss 2.5")])
    assert [r.error for r in res] == [None]
    await asyncio.to_thread(k.advance_until, lambda: _job_failed(k, "train-fails"), 30, 60, "the job's failure")
    await term.until(lambda raw: len(OSC9.findall(raw)) >= 3, "the job's failure")

    # 3. a reclaim, 4. READY 1/1, 5. a node joined: names a hostile server could hold
    _hold(k, _held_pod(f"pod-{HOSTILE}", "gpu-node-9"))
    await term.until(lambda raw: len(OSC9.findall(raw)) >= 4, "the reclaim")
    _hold(k, _held_deployment(f"web-{HOSTILE}"))
    await term.until(lambda raw: len(OSC9.findall(raw)) >= 5, "READY 1/1")
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"gpu-{HOSTILE}"},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    _hold(k, node)
    await term.until(lambda raw: len(OSC9.findall(raw)) >= 6, "the node joined")

    # 6. the cluster stops accepting the sign-in: its link waits for the human
    assert k.sim_post(f"/_sim/k8s/revoke?cluster={k.cluster}").status_code == 200
    await term.until(lambda raw: len(OSC9.findall(raw)) >= 7, "the sign-in link waiting")

    said = term.notifications()
    titles = [s.split(":", 1)[0] for s in said]
    assert titles == [
        "Spending limit 80%",
        "Spending limit reached",
        "Job failed",
        "Reclaimed",
        "READY 1/1",
        "A node joined",
        "Sign-in link waiting",
    ], said
    assert "job/train-fails on halcyon failed." in said[2]
    assert "pod-evil" in said[3] and "gpu-node-9" in said[3]
    no_raw_controls(term.bytes())


@pytest.mark.parametrize("how", ["focused", "quiet"])
async def test_none_while_focused_or_quiet(kc_factory, pty_factory, tmp_path, how):
    k, kc = kc_factory()
    _hold(
        k,
        busybox_job("sentinel-done", "true")
        | {"status": {"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1}},
    )
    flags = ("--quiet",) if how == "quiet" else ()
    term = pty_factory(ncui_argv(k.sim, *flags), person(tmp_path, k.sim, cache=k.auth_cache))
    await _app_watching(k, term, "sentinel-done")
    term.send(FOCUS_IN if how == "focused" else FOCUS_OUT)
    assert k.sim_post("/_sim/k8s/fail", {"count": 1}).status_code == 200
    res = await kc.apply([busybox_job("train-fails", "echo step 1: loss 2.5")])
    assert [r.error for r in res] == [None]
    await asyncio.to_thread(k.advance_until, lambda: _job_failed(k, "train-fails"), 30, 60, "the job's failure")
    # the in-app notification is what says the moment happened (the toast, drawn)
    await term.until(lambda raw: b"Job failed" in raw, "the in-app notification")
    _hold(k, _held_pod("pod-reclaimed", "gpu-node-9"))
    await term.until(lambda raw: b"pod-reclaimed" in raw, "the reclaim, in the app")
    assert term.notifications() == []
    assert b"\x1b]99;" not in term.bytes() and b"\x1b]777;" not in term.bytes()


async def test_the_research_node_assigned_on_public_research(sim_factory, pty_factory, tmp_path):
    """On a public research organization (no cluster): Marshall assigns the node (the box's control) while the
    terminal is not focused: one notification, the research node's."""
    sim = sim_factory("public-research")
    headers = {"Authorization": f"Bearer {sim.token}"}
    term = pty_factory(ncui_argv(sim), person(tmp_path, sim))
    await term.until(lambda raw: b"Puffin" in raw, "the app with its account")
    term.send(b"4")
    await term.until(lambda raw: b"queued for Marshall" in raw, "Workloads showing the node queued")
    term.send(FOCUS_OUT)
    r = httpx.post(f"{sim.api_url}/_sim/research/assign", headers=headers)
    assert r.status_code == 200 and r.json()["state"] in ("assigning", "assigned"), r.text
    term.send(b"r" + FOCUS_OUT)
    await term.until(lambda raw: len(OSC9.findall(raw)) >= 1, "the research node's notification")
    said = term.notifications()
    assert [s.split(":", 1)[0] for s in said] == ["Research node assigned"], said
