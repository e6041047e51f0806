"""The notifications in the scenarios where each moment really happens (issue 25): ncui on a real pty
(tests/ptyterm.py: the raw bytes, every OSC 9 in them) whose terminal reports focus-out, against the box, each moment
made by the path a researcher walks, not held in the cluster: the first Train job on k8s-market applied through the
app's keys (a node joined, the first loss line, the job succeeded) and a reclaim of its running node; a VM node
active, then reclaimed; a Slurm job leaving the queue; the sequence through a real tmux with passthrough on.

The box's clock is frozen: each test moves it (a step at a time) until the box shows the moment, then waits for
the notification, so the order asserted is the order the moments happen in. A key press is the focus back, as
Textual reads it: ``ESC [ O`` is sent again after keys."""

from __future__ import annotations

import asyncio

import pytest

from ncui.logfollow import parse_loss
from ncui.sim.kube import podlogs

from .ptyterm import FOCUS_OUT, ncui_argv, no_raw_controls, person

pytestmark = pytest.mark.peers("kubectl")


def _tick(k) -> None:
    with k.world.lock:
        k.sim.app.state.kube.tick()


def _gpu_nodes_ready(k) -> list[str]:
    """The box's GPU nodes that are Ready (read from its API)."""
    _tick(k)
    out = []
    for n in k.api("/api/v1/nodes")["items"]:
        conds = n.get("status", {}).get("conditions") or ()
        gpu = any(key.endswith(".com/gpu") for key in (n.get("status", {}).get("capacity") or {}))
        if gpu and any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
            out.append(n["metadata"]["name"])
    return out


def _loss_lines(k, job: str) -> list[str]:
    """The loss lines the box has logged so far for the pods of Job ``job`` (read in-process: no log request)."""
    with k.world.lock:
        k.sim.app.state.kube.tick()
        c = k.sim.app.state.kube.clusters[k.cluster]
        now = k.world.now()
        runs = [r for r in c.runs.values() if r.owner_kind == "Job" and r.owner == job]
        return [t for r in runs for _, t in podlogs.log_lines(r, "main", now) if parse_loss(t) is not None]


def _job_done(k, name: str, cond: str = "Complete") -> bool:
    _tick(k)
    job = k.api(f"/apis/batch/v1/namespaces/default/jobs/{name}")
    return any(c.get("type") == cond and c.get("status") == "True" for c in job["status"].get("conditions") or ())


async def _advance(k, pred, what: str, step: float = 30, steps: int = 120):
    return await asyncio.to_thread(k.advance_until, pred, step, steps, what)


async def _apply_train_by_keys(term) -> None:
    """Recipes (3), a on Train (the first recipe), Enter on the ceiling (the standing limit, prefilled), y to the
    apply question, as a person does it; then n to adding a kubectl context (asked once, after the first apply)."""
    m = term.mark()
    term.send(b"3")
    await term.drawing("What will be applied", m)
    m = term.mark()
    term.send(b"a")
    await term.drawing("clears now", m)
    m = term.mark()
    term.send(b"\r")
    await term.drawing("Apply (y)", m)
    m = term.mark()
    term.send(b"y")
    await term.drawing("Train nanoGPT applied: job/nanogpt", m)
    await term.drawing("Let your own kubectl use halcyon?", m)  # (asked once, after the first apply)
    term.send(b"n")


async def test_the_first_train_job_on_the_market_as_it_runs(kc_factory, pty_factory, tmp_path):
    """A limit price stands (another client's); Train applied through the app's keys; the box's clock moves until the
    market's node is Ready, the pod logs its first loss line, the Job completes: one notification each, in order."""
    k, _ = kc_factory()
    k.set_bid(6.0)
    term = pty_factory(ncui_argv(k.sim), person(tmp_path, k.sim, cache=k.auth_cache))
    await term.drawing("Halcyon")
    await _apply_train_by_keys(term)
    term.send(FOCUS_OUT)

    node = (await _advance(k, lambda: _gpu_nodes_ready(k), "the market's node Ready"))[0]
    await term.notified(1, "the node joined")
    first = (await _advance(k, lambda: _loss_lines(k, "nanogpt"), "the first loss line", step=10))[0]
    await term.notified(2, "the first loss line")
    await _advance(k, lambda: _job_done(k, "nanogpt"), "the Job Complete", step=60)
    await term.notified(3, "the job succeeded")

    said = term.notifications()
    assert term.titles() == ["A node joined", "First loss line", "Job succeeded"], said
    assert f"Node {node} is Ready on halcyon" in said[0]
    assert first in said[1] and said[1].startswith("First loss line: nanogpt-")
    assert "job/nanogpt on halcyon succeeded." in said[2]
    no_raw_controls(term.bytes())
