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
import re
import subprocess

import httpx
import pytest

from ncui.logfollow import parse_loss
from ncui.sim.kube import podlogs

from .kc_support import busybox_job, recipe
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
    await term.press(b"3", "What will be applied")
    await term.press(b"a", "clears now")
    await term.press(b"\r", "Apply (y)")
    m = term.mark()
    await term.press(b"y", "Train nanoGPT applied: job/nanogpt")
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


def _running_on(k, job: str) -> str | None:
    """The node the Job's pod runs on, once it runs (the box's API)."""
    _tick(k)
    for p in k.api("/api/v1/namespaces/default/pods")["items"]:
        labels = p["metadata"].get("labels") or {}
        if labels.get("job-name") == job and p.get("status", {}).get("phase") == "Running":
            return p["spec"].get("nodeName")
    return None


async def test_a_reclaim_of_the_running_node_and_its_replacement(kc_factory, pty_factory, tmp_path):
    """Train applied as the guide does it (kubectl apply of the catalog's file, another client); the market's node
    joins and the pod runs; the box's market takes the node back (its reclaim control): Reclaimed, naming the pod
    and the node; the Job replaces its pod, the standing limit pulls a new node: it joins."""
    k, kc = kc_factory()
    k.set_bid(6.0)
    term = pty_factory(ncui_argv(k.sim), person(tmp_path, k.sim, cache=k.auth_cache))
    await term.drawing("Halcyon")
    await term.press(b"4", "NAME")
    term.send(FOCUS_OUT)
    docs = recipe(k, "nanogpt-job-nvidia.yaml")
    assert [r.error for r in await kc.apply(docs)] == [None]

    node = (await _advance(k, lambda: _gpu_nodes_ready(k), "the market's node Ready"))[0]
    await term.notified(1, "the node joined")
    assert await _advance(k, lambda: _running_on(k, "nanogpt"), "the pod running", step=10) == node
    r = k.sim_post(f"/_sim/k8s/reclaim?cluster={k.cluster}", {"node": node})
    assert r.status_code == 200 and r.json()["reclaimed"] == [node], r.text
    await term.notified(2, "the reclaim")
    again = await _advance(k, lambda: [n for n in _gpu_nodes_ready(k) if n != node], "the replacement node Ready")
    await term.notified(3, "the replacement node joined")

    said = term.notifications()
    assert term.titles() == ["A node joined", "Reclaimed", "A node joined"], said
    assert said[1].startswith("Reclaimed: Pod nanogpt-") and f" on {node} was stopped" in said[1]
    assert f"Node {again[0]} is Ready" in said[2]
    no_raw_controls(term.bytes())


def _vm(sim, method: str, path: str, **kw):
    r = httpx.request(method, sim.api_url + path, headers={"Authorization": f"Bearer {sim.token}"}, **kw)
    assert r.status_code < 300, r.text
    return r.json()


def _declare(sim, gpus: int, price: float) -> dict:
    version = _vm(sim, "GET", "/api/vm/capacity")["version"]
    body = {"max_gpus": gpus, "max_price_per_gpu_hour": price, "expected_version": version}
    return _vm(sim, "PUT", "/api/vm/capacity", json=body)


def _allocations(sim, state: str) -> list[str]:
    return [a["id"] for a in _vm(sim, "GET", "/api/vm/capacity")["allocations"] if a["state"] == state]


async def test_a_vm_node_active_then_reclaimed(sim_factory, pty_factory, tmp_path):
    """On a VM cluster: a key registered and capacity declared through the API (as the guide's curl does); the box's
    clock moves until the allocation is active: A VM node is active. Then the market takes it back (the declaration
    outbid at the floor: the box's market reclaims at its next step): Reclaimed."""
    sim = sim_factory("vm")
    org = _vm(sim, "GET", "/api/whoami")["org_id"]
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ada@laptop"
    _vm(sim, "POST", f"/api/vm/orgs/{org}/ssh-keys", json={"name": "laptop", "public_key": key})
    term = pty_factory(ncui_argv(sim), person(tmp_path, sim))
    await term.drawing("Tern")
    await term.press(b"4", "No node: declare capacity")
    term.send(FOCUS_OUT)
    _declare(sim, 8, 4.5)

    def active() -> list[str]:
        return _allocations(sim, "active")

    (alloc,) = await asyncio.to_thread(_advance_world, sim, active, 60, "the allocation active")
    await term.notified(1, "the VM node active")
    vm = next(iter(sim.world.main_org.vm.values()))
    _declare(sim, 8, sim.world.markets[vm.spec.gpu_model].floor / 1e6)  # outbid: the market takes the node back
    assert await asyncio.to_thread(_advance_world, sim, lambda: _allocations(sim, "reclaimed"), 60, "the reclaim") == [
        alloc
    ]
    await term.notified(2, "the reclaim")

    said = term.notifications()
    assert term.titles() == ["A VM node is active", "Reclaimed"], said
    assert f"Allocation {alloc} (8 GPUs) is active" in said[0]
    assert f"Allocation {alloc} was reclaimed" in said[1]
    no_raw_controls(term.bytes())


def _advance_world(sim, pred, step: float, what: str, steps: int = 60):
    for _ in range(steps):
        v = pred()
        if v:
            return v
        sim.world.advance(step)
    raise AssertionError(f"never happened: {what}")


def _slurm_job(sim, name: str = "nanogpt"):
    """The human's job ``name`` as the box's login node holds it (read in-process, synced to the box's clock), its
    state (None once slurmctld forgot it) and the loss lines it has written to its output file."""
    login = sim.ssh._nodes[f"slurm:{sim.world.main_org.spec.clusters[0].name}"].sim
    login.sync()
    q = login.queue
    job = next((j for j in q.jobs.values() if j.name == name and j.user == login.spec.user), None)
    if job is None:
        return None, None, []
    out = login.local(job.out_path())
    lines = out.read_text().splitlines() if out.is_file() else []
    state = None if job.gone(q.now()) else job.state(q.now())
    return job.id, state, [x for x in lines if parse_loss(x) is not None]


@pytest.mark.peers("ssh")
async def test_a_slurm_job_leaving_the_queue(sim_factory, pty_factory, tmp_path):
    """The box's Slurm cluster (its login node over real ssh, the box's certificate signed as slurm-login does): the
    first job submitted through the app (Workloads, n, y); its first loss line followed from the node's file; it
    leaves the queue: Slurm job ended, saying what squeue last said (not that it succeeded: squeue --me cannot
    tell)."""
    sim = sim_factory("slurm")
    sim.ssh.sign("plover")
    term = pty_factory(ncui_argv(sim), person(tmp_path, sim, ("NC_SSH_CONFIG", str(sim.ssh.config_path))))
    await term.drawing("host key")  # the login node's, first use: asked wherever the human is
    term.send(b"y")
    await term.press(b"4", "No job of yours in the queue")
    await term.press(b"n", "sbatch --nodes=1 ~/first-job/nanogpt.sbatch")
    await term.press(b"y", "Submitted batch job")
    term.send(FOCUS_OUT)
    m = term.mark()

    def losses():
        return _slurm_job(sim)[2]

    first = (await asyncio.to_thread(_advance_world, sim, losses, 30, "the first loss line"))[0]
    await term.notified(1, "the first loss line")
    jid, state, _ = _slurm_job(sim)
    assert state == "RUNNING"
    await term.drawing("RUNNING", m)  # (squeue --me read while it runs, as in the minutes a real run takes)
    await asyncio.to_thread(_advance_world, sim, lambda: _slurm_job(sim)[1] is None, 60, "the job gone", 120)
    await term.notified(2, "the job leaving the queue")

    said = term.notifications()
    assert term.titles() == ["First loss line", "Slurm job ended"], said
    assert said[1] == (
        f"Slurm job ended: Slurm job {jid} (nanogpt) left the queue (last RUNNING): Workloads (4) shows its log."
    ), said
    assert first in said[0]
    assert "succeeded" not in said[1] and "failed" not in said[1]
    no_raw_controls(term.bytes())


_OSC_ANY = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def _bells(raw: bytes) -> int:
    """BELs on their own (not the end of an OSC)."""
    return _OSC_ANY.sub(b"", raw).count(b"\x07")


@pytest.mark.peers("tmux")
@pytest.mark.parametrize("passthrough", ["on", "off"])
async def test_inside_a_real_tmux_the_sequence_passes_through_only_when_allowed(
    kc_factory, pty_factory, tmp_path, passthrough
):
    """ncui inside a real tmux (3.3+) that runs on a pty, as in a WezTerm: the outer terminal's bytes are read.
    With ``allow-passthrough on`` the job's failure reaches it as the OSC 9 ncui wrapped (tmux unwraps it); with it
    off, a bell (tmux passes it on) and no OSC 9. The focus-out is the outer terminal's, through tmux's focus-events."""
    k, kc = kc_factory()
    sock, conf = str(tmp_path / "tmux.sock"), tmp_path / "tmux.conf"
    conf.write_text(
        f"set -g allow-passthrough {passthrough}\nset -g focus-events on\nset -g status off\n"
        'set -g default-terminal "screen-256color"\nset -g bell-action any\nset -g visual-bell off\n'
    )
    env = person(tmp_path, k.sim, ("WEZTERM_PANE", "0"), cache=k.auth_cache)
    argv = ["tmux", "-S", sock, "-f", str(conf), "new-session", "-s", "t", "-x", "120", "-y", "40"]
    term = pty_factory([*argv, "env", "-u", "COLUMNS", "-u", "LINES", *ncui_argv(k.sim)], env)
    try:
        await term.drawing("Halcyon")
        await term.press(b"4", "NAME")
        term.send(FOCUS_OUT)
        before = term.mark()
        assert k.sim_post("/_sim/k8s/fail", {"count": 1}).status_code == 200
        assert [r.error for r in await kc.apply([busybox_job("train-fails", "echo step 1: loss 2.5")])] == [None]
        await _advance(k, lambda: _job_done(k, "train-fails", "Failed"), "the job's failure", step=30)
        if passthrough == "on":
            await term.notified(1, "the job's failure, through tmux")
            assert term.titles() == ["Job failed"], term.notifications()
            assert "job/train-fails on halcyon failed." in term.notifications()[0]
        else:
            await term.drawing("Job failed", before)  # the in-app toast: the moment came
            await term.until(lambda raw: _bells(raw[before:]) >= 1, "the bell, through tmux")
            assert term.notifications() == []
        assert b"\x1bPtmux;" not in term.bytes()  # (tmux's own wrapping never reaches the outer terminal)
        no_raw_controls(term.bytes())
    finally:
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True, timeout=30)
