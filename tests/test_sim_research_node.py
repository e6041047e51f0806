"""The box's public-research node: Marshall's assignment stood in for (a queue position and an estimate, then
the node's address), then the guide's lines over OpenSSH's own ssh and scp: the starter, tail -F, scp -r of the
results, docker rm -f; and the starter's answer when docker is missing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from .conftest import wait_for
from .test_sim_ssh import LOSS, Follower

pytestmark = pytest.mark.peers("ssh", "scp", "ssh-keygen")
NO_AGENT = ["-o", "BatchMode=yes", "-o", "IdentityAgent=none", "-o", "ConnectTimeout=10"]
STARTER = "curl -fsSL https://access.nationalcompute.com/first-job/nanogpt-node.sh | sh"


class Research:
    def __init__(self, sim) -> None:
        self.sim = sim
        self.http = httpx.Client(base_url=sim.api_url, headers={"Authorization": f"Bearer {sim.token}"}, timeout=20)
        self.config = str(sim.ssh.config_path)

    def status(self) -> dict:
        r = self.http.get("/_sim/research/status")
        assert r.status_code == 200, r.text
        return r.json()

    def assign(self) -> dict:
        return self.http.post("/_sim/research/assign").json()

    def advance(self, seconds: float) -> None:
        assert self.http.post("/_sim/advance", json={"seconds": seconds}).status_code == 200

    def ssh(self, command: str) -> subprocess.CompletedProcess:
        argv = ["ssh", "-F", self.config, *NO_AGENT, "research-node", command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)


@pytest.fixture
def research(sim_factory):
    box = Research(sim_factory("public-research"))
    yield box
    box.http.close()


def test_the_queue_then_the_assignment_by_the_clock(research):
    s = research.status()
    assert s["state"] == "queued" and s["queue_position"] >= 1 and s["estimated_wait_seconds"] > 0
    assert s["public_ip"] is None and s["ssh_user"] is None and "research-node" not in Path(research.config).read_text()
    assert s["lease_ucredits"] == s["price_per_gpu_hour"] * s["gpus"] * s["lease_seconds"] // 3600
    balance = research.http.get("/api/billing/summary").json()["balance_ucredits"]
    assert balance >= s["lease_ucredits"]  # the request needed a balance for one full lease
    wait = s["estimated_wait_seconds"]
    research.advance(wait // 2)
    later = research.status()
    assert later["state"] == "queued" or later["queue_position"] is None
    research.advance(wait)  # the estimate assumes every lease ahead runs its full length: the node came by then
    s = research.status()
    assert s["state"] == "assigned" and s["public_ip"] == "127.12.0.1" and s["ssh_user"] == "ubuntu"
    assert s["ssh_host"] == "research-node" and s["ssh_port"] == research.sim.ssh.host("research-node")[1]
    config = Path(research.config).read_text()
    assert "Host research-node 127.12.0.1\n" in config and f"IdentityFile {research.sim.ssh.key_path}" in config
    r = research.ssh("whoami; hostname")  # the workspace key is on the node; its host key is pinned
    assert r.returncode == 0 and r.stdout == f"ubuntu\n{s['hostname']}\n", r.stderr
    # the guide's own form, ssh <ssh_user>@<public_ip>: the Host block names the address too (its port, key, pin)
    argv = ["ssh", "-F", research.config, *NO_AGENT, f"{s['ssh_user']}@{s['public_ip']}", "whoami"]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout == "ubuntu\n", r.stderr
    research.advance(3600)  # the meter runs while the node is held
    after = research.http.get("/api/billing/summary").json()["balance_ucredits"]
    assert after < balance


def test_the_starter_the_log_the_results_and_the_stop(research, tmp_path):
    key = tmp_path / "mine"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    org = research.http.get("/api/whoami").json()["org_id"]
    body = {"name": "mine", "public_key": key.with_suffix(".pub").read_text()}
    assert research.http.post(f"/api/vm/orgs/{org}/ssh-keys", json=body).status_code == 201
    s = research.assign()
    assert s["state"] == "assigned"
    # As the guide says it: ssh <ssh_user>@<public_ip>, here with the human's own key (registered before assignment).
    ssh = ["ssh", "-F", "/dev/null", *NO_AGENT, "-o", "IdentitiesOnly=yes", "-i", str(key)]
    ssh += ["-o", f"UserKnownHostsFile={research.sim.ssh.known_hosts_path}", "-p", str(s["ssh_port"])]
    login = f"{s['ssh_user']}@{s['public_ip']}"
    r = subprocess.run([*ssh, login, STARTER], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "started container nanogpt" in r.stdout, r.stderr

    f = Follower([*ssh, login, "tail -F ~/first-job/nanogpt.out"])
    try:
        research.advance(600)
        wait_for(lambda: sum(bool(LOSS.fullmatch(x)) for x in f.lines) >= 5, 20, what="loss lines in tail -F")
    finally:
        f.stop()

    scp = ["scp", "-F", research.config, *NO_AGENT]
    r = subprocess.run([*scp, "-r", "research-node:first-job/nanoGPT/out-shakespeare-char", str(tmp_path)],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.returncode == 0 and "checkpoint" in (tmp_path / "out-shakespeare-char" / "ckpt.pt").read_text(), r.stderr
    assert research.ssh("docker rm -f nanogpt").stdout == "nanogpt\n"
    log = research.ssh("cat first-job/nanogpt.out").stdout
    research.advance(600)  # stopped: the log grows no more
    assert research.ssh("cat first-job/nanogpt.out").stdout == log and "nanogpt" not in research.ssh("docker ps").stdout
    r = subprocess.run([*scp, "research-node:first-job/nanogpt.out", str(tmp_path)], capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.returncode == 0 and (tmp_path / "nanogpt.out").read_text() == log

    released = research.http.post("/_sim/research/release").json()  # Marshall's release (ncui never does it)
    assert released["state"] == "released" and "research-node" not in Path(research.config).read_text()


@pytest.mark.peers("rsync")
def test_the_results_kept_with_rsync(research, tmp_path):
    """The guide's "keep the results" with rsync, as people copy them: the node's side is the real rsync --server."""
    research.assign()
    assert research.ssh(STARTER).returncode == 0
    research.advance(600)
    log = research.ssh("cat first-job/nanogpt.out").stdout
    rsh = " ".join(["ssh", "-F", research.config, *NO_AGENT])
    r = subprocess.run(["rsync", "-a", "-e", rsh, "research-node:first-job/", str(tmp_path / "kept")],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert LOSS.search(log) and (tmp_path / "kept" / "nanogpt.out").read_text() == log
    assert "checkpoint" in (tmp_path / "kept" / "nanoGPT" / "out-shakespeare-char" / "ckpt.pt").read_text()


def test_docker_missing_the_starter_says_so_and_stops(research):
    assert research.http.post("/_sim/ssh/docker", json={"missing": True}).status_code == 200
    research.assign()  # set before the assignment: the node comes without docker
    r = research.ssh(STARTER)
    assert r.returncode == 1 and "docker is not installed on this node, so nothing was started" in r.stderr
    r = research.ssh("docker ps")
    assert r.returncode == 127 and "docker: not found" in r.stderr
    assert research.ssh("ls first-job").returncode != 0  # nothing was fetched or started
    research.http.post("/_sim/ssh/docker", json={"missing": False, "host": "research-node"})
    assert "started container nanogpt" in research.ssh(STARTER).stdout


def test_other_scenarios_have_no_research_node(sim_factory):
    sim = sim_factory("slurm")
    r = httpx.get(f"{sim.api_url}/_sim/research/status", headers={"Authorization": f"Bearer {sim.token}"})
    assert r.status_code == 404 and r.json()["error"] == "not-found"
