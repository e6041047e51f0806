"""Report back on the clusters reached over ssh, against the box: a VM cluster (capacity declared, a node granted,
the starter run on it over the box's ssh hub), the box's Slurm login node, and a public-research node. Each: the
Report screen (6) in the app, then ``ncui report --json`` on the command line (which reads the node's log, the
Slurm job's output file, itself), then the same after a restart of ncui; and what the command line says when it
cannot reach the node (a host key ncui never accepted): unknown with the reason, never none."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from ncui.sim.ssh.slurm import COMPLETING_SECONDS

from . import test_app_nodes
from .apphelp import app_for, loaded, screen_text, until
from .test_app_nodes import LOSS, Node, connect, open_nodes
from .test_report import run_report

human = test_app_nodes.human  # (the fixture: a temporary HOME with ~/.ssh)
pytestmark = pytest.mark.peers("ssh-keygen")


def cli(sim, *args: str) -> dict:
    p = run_report({**os.environ, "NC_TOKEN": sim.token}, "--json", "--api", sim.api_url, "--access", sim.access_url)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


async def report_of(pilot, app, ready) -> dict:
    await pilot.press("6")
    view = app.query_one("#report")
    view.read()
    await until(pilot, lambda: view.report is not None and ready(view.report), timeout=30, what="the report")
    return view.report


def kept(app) -> list[str]:
    return (app.flows.recall.remembered_job() or {}).get("first_loss_lines") or []


def ssh(sim, host: str, cmd: str, check: bool = True) -> str:
    """OpenSSH's own ssh to a box host (its NC_SSH_CONFIG, and the human's key), as a person would type it."""
    key = Path(os.environ["HOME"]) / ".ssh" / "id_ed25519"
    argv = ["ssh", "-F", str(sim.ssh.config_path), *(["-i", str(key)] if key.is_file() else []), host, cmd]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 or not check, p.stderr
    return p.stdout


def node_loss_lines(text: str) -> list[str]:
    return [x for x in text.splitlines() if LOSS.search(x)][:3]


async def test_vm_the_starter_on_a_granted_node_reported_in_the_app_the_cli_and_after_a_restart(
    sim_factory, human, monkeypatch
):
    node = Node(sim_factory("vm", volatility=0.0), human)
    sim = node.sim
    cap = node.http.get("/api/vm/capacity").json()
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_nodes(pilot, app, node)
        await connect(pilot, app, node, starter=True)
        await until(pilot, lambda: node.id in app.flows.nodes.sessions.runs, what="the starter started")
        sim.world.advance(300)
        await until(pilot, lambda: len(kept(app)) == 3, what="the first loss lines, followed and remembered")
        want = node_loss_lines(ssh(sim, node.id, "cat first-job/nanogpt.out"))
        assert kept(app) == want and len(want) == 3
        r = await report_of(pilot, app, lambda r: len(r["first_loss_lines"]) == 3)
        text = screen_text(app)
        login = f"ssh -p {node.alloc['ssh_port']} ubuntu@{node.alloc['public_ip']}"
        for fact in ["H100-SXM-80GB", node.id, want[0], f"{login} docker rm -f nanogpt", "declared capacity"]:
            assert fact in text, fact
    assert r["first_loss_lines"] == want and r["gpu_class"] == node.alloc["gpu_model"] == "H100-SXM-80GB"
    assert r["node"]["name"] == node.id and r["node"]["source"] == "the allocation's granted_at"
    assert r["job"]["name"] == "nanogpt" and r["job"]["applied_by"] == "ncui" and r["job"]["state"].startswith("Up")
    assert r["stop"] == [f"{login} docker rm -f nanogpt"]

    # the command line: the node read over ssh with ncui's known_hosts (the key accepted in the app)
    c = cli(sim)
    from ncui.kube.status import parse_time

    assert parse_time(c["node"]["arrived_at"]) == parse_time(node.alloc["granted_at"])
    for field in ("gpu_class", "node", "first_loss_lines", "stop", "cluster"):
        assert c[field] == r[field], field
    assert c["job"]["applied_by"] == "ncui" and c["job"]["applied_at"] == r["job"]["applied_at"]
    (st,) = c["standing"]
    assert st["what"] == "declared capacity" and st["gpus"] == 8 and st["cluster"] == "tern-vm"
    assert st["price_per_gpu_hour_ucredits"] == round(cap["max_price_per_gpu_hour"] * 1e6)
    assert '"max_gpus": 0' in st["withdraw"] and "/api/vm/capacity" in st["withdraw"]
    mk = c["rate"]["market"]
    tick = node.http.get("/api/market/ticks", params={"gpu_model": "H100-SXM-80GB"}).json()["ticks"][-1]
    assert mk["price_per_gpu_hour_ucredits"] == round(tick["price_per_gpu_hour"] * 1e6) and mk["gpus"] == 8
    assert c["rate"]["leading"] == "market"  # the guide's figure for a VM cluster: what winners are assessed
    p = run_report({**os.environ, "NC_TOKEN": sim.token}, "--api", sim.api_url, "--access", sim.access_url)
    assert "running rate (what winners are assessed now, as the guide reports it on a VM cluster): $" in p.stdout
    assert c["spend_so_far"]["ucredits"] > 0 and c["rate"]["charged"] is not None
    assert c["unknown"] == {}, c["unknown"]

    # the run ends by itself (its time box): the completion, and nothing left running to stop
    from ncui.sim.ssh.node import TIME_BOX

    sim.world.advance(TIME_BOX + 60)
    c = cli(sim)
    assert c["completion"] == {"state": "exited (0)", "at": None} and c["job"]["state"].startswith("Exited (0)")
    assert c["stop"] == [f"nothing to stop: nanogpt has ended; {login} docker rm -f nanogpt removes it"]

    # stopped by hand on the node (docker rm -f): the report says there is nothing to stop; the log's lines stay
    ssh(sim, node.id, "docker rm -f nanogpt")
    c = cli(sim)
    assert c["stop"] == [f"nothing to stop: nanogpt is no longer on {node.id}"] and c["first_loss_lines"] == want
    assert c["standing"][0]["what"] == "declared capacity"  # the node still bills: its release still stands

    # a restart: the same report, read again
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "vm_capacity"), what="the VM capacity")
        r2 = await report_of(pilot, app, lambda r: r["node"] is not None and r["job"] is not None)
    for field in ("gpu_class", "node", "first_loss_lines", "stop"):
        assert r2[field] == c[field], field

    # the withdraw command works as printed, with the credential the report ran on (NC_TOKEN)
    assert '"Authorization: Bearer $NC_TOKEN"' in st["withdraw"]
    env = {**os.environ, "NC_TOKEN": sim.token}
    subprocess.run(["sh", "-c", st["withdraw"]], check=True, capture_output=True, timeout=30, env=env)
    assert node.http.get("/api/vm/capacity").json()["max_gpus"] == 0
    # released: the node and its disk are gone, and the report still tells the run ncui saw there
    c = cli(sim)
    assert c["job"]["name"] == "nanogpt" and c["job"]["state"] == "ended: its node was released", c["job"]
    assert c["first_loss_lines"] == want and c["node"]["name"] == node.id and c["standing"] == []
    assert c["stop"] == [f"nothing to stop: {node.id} was released, its disk with it"]
    node.close()


async def test_slurm_a_job_submitted_by_hand_reported_from_its_output_file_then_in_the_app_and_after_a_restart(
    sim_factory, tmp_path, monkeypatch
):
    from ncui.config import known_hosts_path

    sim = sim_factory("slurm")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NC_SSH_CONFIG", str(sim.ssh.config_path))
    sim.ssh.sign("plover")  # the human's slurm-login, played by the box
    ssh(sim, "plover", f"curl -fsSL {sim.access_url}/first-job/prepare.sh | sh")
    jid = ssh(sim, "plover", "sbatch --nodes=1 ~/first-job/nanogpt.sbatch").split()[-1]

    # ncui never accepted the login node's host key: said, never asked, never "none"
    c = cli(sim)
    assert c["job"] is None and c["stop"] == [] and c["first_loss_lines"] == []
    assert "host key is not in ncui's known_hosts" in c["unknown"]["job"]
    assert "generated_at" in c and c["rate"]["metered"]["lag_seconds"] <= 600  # the box's clock, from its ticks

    # the human accepted it once (in ncui, as on Workloads): the report reads the queue and the job's output file
    pin = next(x for x in sim.ssh.known_hosts_path.read_text().splitlines() if x.endswith(" plover"))
    known_hosts_path().parent.mkdir(parents=True, exist_ok=True)
    known_hosts_path().write_text(pin + "\n")
    for _ in range(60):  # the box's clock: PENDING, then RUNNING and writing its log
        if len(node_loss_lines(ssh(sim, "plover", f"cat nanogpt-{jid}.out", False))) >= 3:
            break
        sim.world.advance(60)
    want = node_loss_lines(ssh(sim, "plover", f"cat nanogpt-{jid}.out"))
    c = cli(sim)
    assert c["job"]["id"] == jid and c["job"]["state"] == "RUNNING" and c["job"]["applied_by"] == "elsewhere"
    assert c["first_loss_lines"] == want and len(want) == 3
    assert c["stop"] == [f"ssh plover scancel {jid}"]
    queue = next(j for j in json.loads(ssh(sim, "plover", "squeue --json"))["jobs"] if str(j["job_id"]) == jid)
    from datetime import datetime, timezone

    start = datetime.fromtimestamp(queue["start_time"], timezone.utc).isoformat()
    assert c["node"] == {"name": queue["nodes"], "arrived_at": start, "source": "the Slurm job's start"}
    assert c["gpu_class"] is None and "Slurm names no GPU model" in c["unknown"]["gpu_class"]
    assert c["rate"]["market"] is None and "not priced by the market" in c["unknown"]["rate.market"]
    assert "first_loss_lines" not in c["unknown"] and "job" not in c["unknown"]

    # scancel by hand: the end is reported, and nothing is left to stop
    ssh(sim, "plover", f"scancel {jid}")
    sim.world.advance(COMPLETING_SECONDS)  # (CG while its processes stop, as Slurm's, then CANCELLED)
    c = cli(sim)
    assert c["completion"] is not None, c
    assert c["completion"]["state"] == "CANCELLED" and c["completion"]["at"] is not None
    assert c["stop"] == [f"nothing to stop: job {jid} has ended"] and c["first_loss_lines"] == want

    # the app shows the same on Report (6), and so does a restart once the job has left the queue
    r = await slurm_report_in_app(sim)
    assert r["first_loss_lines"] == want and r["node"] == c["node"] and r["completion"] == c["completion"]
    sim.world.advance(600)  # MinJobAge: the ended job leaves squeue
    assert f" {jid} " not in ssh(sim, "plover", "squeue")
    r = await slurm_report_in_app(sim)  # a restart: what ncui remembers holds where the queue forgot
    assert r["first_loss_lines"] == want and r["node"] == c["node"] and r["completion"] == c["completion"]
    assert r["job"]["state"] == "no longer in the queue (ended)" and r["stop"] == c["stop"]


async def slurm_report_in_app(sim) -> dict:
    """Start ncui, show Report (6): its report, once it names the job and its loss lines (checked on screen)."""
    app = app_for(sim, frozen=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "slurm_signin"), 30, "the Slurm sign-in")
        r = await report_of(pilot, app, lambda r: r["job"] is not None and r["first_loss_lines"])
        text = screen_text(app)
        assert r["first_loss_lines"][0] in text and f"slurm job nanogpt (id {r['job']['id']})" in text
    return r


async def test_research_node_the_starter_reported_in_the_app_the_cli_and_after_a_restart(
    sim_factory, tmp_path, monkeypatch
):
    from .test_app_research import Box, assigned_row, connect_and_start

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    sim = sim_factory("public-research")
    monkeypatch.setenv("NC_SSH_CONFIG", str(sim.ssh.config_path))
    box = Box(sim, home)
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        nodes, s = await assigned_row(pilot, app, box)
        await connect_and_start(pilot, app, box, nodes, s)
        sim.world.advance(300)
        await until(pilot, lambda: len(kept(app)) == 3, what="the first loss lines, followed and remembered")
        r = await report_of(pilot, app, lambda r: len(r["first_loss_lines"]) == 3)
        text = screen_text(app)
        for fact in [kept(app)[0], "research node lease", "public_research_release", "docker rm -f nanogpt"]:
            assert fact in text, fact
    want = node_loss_lines(box.file("first-job/nanogpt.out").read_text())
    login = f"ssh -p {s['ssh_port']} ubuntu@{s['public_ip']}"
    assert r["first_loss_lines"] == want and r["gpu_class"] == s["gpu_model"] and r["cluster"] is None
    assert r["node"]["name"] == s["hostname"] and r["node"]["source"] == "the node's assignment"
    assert r["stop"] == [f"{login} docker rm -f nanogpt"] and r["job"]["applied_by"] == "ncui"
    (st,) = r["standing"]
    assert st["what"] == "research node lease" and "ncui never does" in st["withdraw"]

    c = cli(sim)  # the command line: the node reached with the workspace key and pin (NC_SSH_CONFIG), over ssh
    for field in ("gpu_class", "node", "first_loss_lines", "stop", "standing"):
        assert c[field] == r[field], field
    assert c["rate"]["market"]["price_per_gpu_hour_ucredits"] == s["price_per_gpu_hour"]  # (µcredits already)
    assert c["unknown"] == {}, c["unknown"]

    ssh(sim, "research-node", "docker rm -f nanogpt")  # stopped by hand: nothing to stop, the lease still stands
    app = app_for(sim)  # and a restart says so too, with the same first lines
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "research"), what="the node's status")
        r = await report_of(pilot, app, lambda r: r["job"] is not None and r["stop"][0].startswith("nothing"))
    assert r["first_loss_lines"] == want and r["node"] == c["node"] and r["standing"] == c["standing"]
    assert box.status()["state"] == "assigned"  # never released
    box.http.close()
