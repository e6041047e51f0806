"""The box's Slurm login node, reached as the guide says: ``ssh <cluster>`` with a slurm-login certificate, then
prepare.sh, sbatch, squeue --me and tail -F, all typed through OpenSSH's own ``ssh -F "$NC_SSH_CONFIG"``.

The certificate comes from the box's stand-in for slurm-login (``POST /_sim/slurm/login``); jobs move on the
box's clock, which each test moves with ``/_sim/advance``.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from ncui.remote.runner import AuthFailed, SshRunner
from ncui.sim.catalog import file_bytes
from ncui.sim.ssh.slurm import COMPLETING_SECONDS, MIN_JOB_AGE

from .conftest import wait_for
from .simproc import SimProcess
from .test_sim_ssh import LOSS, Follower

pytestmark = pytest.mark.peers("ssh", "ssh-keygen")
NO_AGENT = ["-o", "BatchMode=yes", "-o", "IdentityAgent=none", "-o", "ConnectTimeout=10"]


class Login:
    """The slurm scenario's box and its login node ``plover``, driven by hand."""

    def __init__(self, sim) -> None:
        self.sim = sim
        self.http = httpx.Client(base_url=sim.api_url, headers={"Authorization": f"Bearer {sim.token}"}, timeout=20)
        self.config = str(sim.ssh.config_path)
        wait_for(lambda: sim.ssh.host("plover"), 10, what="the login node to listen")  # from the box's start

    def slurm_login(self, **body: str) -> dict:
        r = self.http.post("/_sim/slurm/login", json=body or None)
        assert r.status_code == 200, r.text
        return r.json()

    def advance(self, seconds: float) -> None:
        assert self.http.post("/_sim/advance", json={"seconds": seconds}).status_code == 200

    def ssh(self, command: str, *opts: str) -> subprocess.CompletedProcess:
        argv = ["ssh", "-F", self.config, *NO_AGENT, *opts, "plover", command]
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)

    def ok(self, command: str) -> str:
        r = self.ssh(command)
        assert r.returncode == 0, (command, r.stdout, r.stderr)
        return r.stdout

    def submit(self) -> int:
        self.ok("curl -fsSL https://access.nationalcompute.com/first-job/prepare.sh | sh")
        m = re.fullmatch(r"Submitted batch job (\d+)\n", self.ok("sbatch --nodes=1 ~/first-job/nanogpt.sbatch"))
        assert m
        return int(m.group(1))

    def job(self, job_id: int) -> dict:
        (job,) = [j for j in json.loads(self.ok("squeue --json"))["jobs"] if j["job_id"] == job_id]
        return job


@pytest.fixture
def login(sim_factory):
    box = Login(sim_factory("slurm"))
    yield box
    box.http.close()


def test_only_a_certificate_the_box_clock_finds_valid_gets_in(login, tmp_path):
    config = Path(login.config).read_text()
    assert "Host plover 127.11.0.1\n" in config and f"CertificateFile {login.sim.ssh.cert_path}" in config
    r = login.ssh("whoami")  # the setup script's key alone, no slurm-login yet
    assert r.returncode == 255 and "Permission denied (publickey)" in r.stderr

    got = login.slurm_login()
    assert got["user"] == "kim" and got["certificate_file"] == str(login.sim.ssh.cert_path)
    shown = subprocess.run(["ssh-keygen", "-L", "-f", got["certificate_file"]], capture_output=True, text=True).stdout
    assert "user certificate" in shown and re.search(r"Principals: \n\s+kim\n", shown)
    assert login.ok("whoami; hostname") == "kim\nplover-login1\n"

    login.advance(23 * 3600)
    assert login.ok("true") == ""
    login.advance(3600 + 1)  # 24 h of the box's clock: the certificate is refused, the next slurm-login lets in again
    r = login.ssh("true")
    assert r.returncode == 255 and "Permission denied (publickey)" in r.stderr
    login.slurm_login()
    assert login.ok("whoami") == "kim\n"

    # The human's own key works the same: the certificate comes back and goes beside the key, where ssh looks.
    key = tmp_path / "mine"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    ip, port = login.sim.ssh.host("plover")
    pinned = ["-o", f"UserKnownHostsFile={login.sim.ssh.known_hosts_path}", "-o", "IdentitiesOnly=yes"]
    by_hand = ["ssh", "-F", "/dev/null", *NO_AGENT, *pinned, "-i", str(key), "-p", str(port), f"kim@{ip}", "whoami"]
    r = subprocess.run(by_hand, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 255 and "Permission denied (publickey)" in r.stderr
    cert = login.slurm_login(public_key=key.with_suffix(".pub").read_text())["certificate"]
    (tmp_path / "mine-cert.pub").write_text(cert)
    r = subprocess.run(by_hand, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout == "kim\n", r.stderr
    assert login.http.post("/_sim/slurm/login", json={"public_key": "not a key"}).status_code == 422


def test_the_seeds_four_commands_by_hand(login):
    login.slurm_login()
    out = login.ok("curl -fsSL https://access.nationalcompute.com/first-job/prepare.sh | sh")
    assert "prepare: ready" in out and "sbatch --nodes=1 /home/kim/first-job/nanogpt.sbatch" in out
    assert login.ok("cat ~/first-job/nanogpt.sbatch") == file_bytes("nanogpt.sbatch").decode()
    out = login.ok("sbatch --nodes=1 ~/first-job/nanogpt.sbatch")
    job = int(re.fullmatch(r"Submitted batch job (\d+)\n", out).group(1))

    every = login.ok("squeue").splitlines()
    mine = login.ok("squeue --me").splitlines()
    assert mine[0].split() == ["JOBID", "PARTITION", "NAME", "USER", "ST", "TIME", "NODES", "NODELIST(REASON)"]
    assert len(mine) == 2 and mine[1].split() == [str(job), "gpu", "nanogpt", "kim", "PD", "0:00", "1", "(Priority)"]
    assert len(every) > len(mine) and all(" kim " not in x for x in every[1:-1])  # others' jobs, not under --me

    out_file = f"nanogpt-{job}.out"
    f = Follower(["ssh", "-F", login.config, *NO_AGENT, "plover", f"tail -F {out_file}"])
    try:
        seen = set()
        for _ in range(12):  # PENDING (Priority, then Resources) → RUNNING, a minute of the box's clock at a time
            login.advance(60)
            row = login.ok(f"squeue --me -h -o '%i %j %T %M %D %R %N' -j {job}").split()
            seen.add(row[2] if row[2] != "PENDING" else row[5])
        assert {"(Priority)", "(Resources)", "RUNNING"} <= seen
        assert row[:3] == [str(job), "nanogpt", "RUNNING"] and row[4] == "1" and row[5] == row[6].strip()
        assert re.fullmatch(r"plover-gpu-\d{3}", row[6])
        login.advance(300)
        wait_for(lambda: sum(bool(LOSS.fullmatch(x)) for x in f.lines) >= 5, 20, what="loss lines in tail -F")
        assert f.lines[0] == f"nanogpt: 8 GPUs on {row[6]}, job {job}"
    finally:
        f.stop()
    written = login.ok(f"cat {out_file}").splitlines()
    assert f.lines == written[: len(f.lines)]  # every line once, in order

    for _ in range(20):  # the run ends (COMPLETED: squeue shows it only with -t all), then slurmctld forgets it
        login.advance(120)
        if login.ok("squeue --me -h") == "":
            break
    assert login.ok("squeue --me -h -t all -o '%i %T'").split() == [str(job), "COMPLETED"]
    assert LOSS.fullmatch(login.ok(f"tail -n 1 {out_file}").strip())
    assert login.ok("ls first-job/nanoGPT/out-shakespeare-char") == "ckpt.pt\n"
    login.advance(MIN_JOB_AGE + 60)
    r = login.ssh(f"squeue -j {job}")
    assert r.returncode == 1 and "Invalid job id specified" in r.stderr


def test_squeue_json_scontrol_and_scancel(login):
    login.slurm_login()
    job = login.submit()
    j = login.job(job)
    assert j["job_state"] == "PENDING" and j["state_reason"] in ("Priority", "Resources")
    assert j["nodes"] == "" and j["start_time"] == 0 and j["name"] == "nanogpt" and j["user_name"] == "kim"
    assert j["standard_output"] == "/home/kim/nanogpt-%j.out" and j["current_working_directory"] == "/home/kim"
    assert j["time_limit"] == 60  # minutes, from the script's #SBATCH --time=01:00:00
    login.advance(600)
    j = login.job(job)
    assert j["job_state"] == "RUNNING" and j["state_reason"] == "None" and j["start_time"] > j["submit_time"]
    show = login.ok(f"scontrol show job {job}")
    assert f"JobId={job} JobName=nanogpt" in show and "JobState=RUNNING" in show
    assert re.search(r"\bRunTime=\d\d:\d\d:\d\d TimeLimit=01:00:00\n", show)  # as scontrol writes them
    assert f"StdOut=/home/kim/nanogpt-{job}.out" in show and f"NodeList={j['nodes']}" in show
    assert re.search(rf"alloc {'plover-gpu-'}", login.ok("sinfo"))

    assert login.ssh(f"scancel {job}").returncode == 0
    size = len(login.ok(f"cat nanogpt-{job}.out"))
    assert login.job(job)["job_state"] == "COMPLETING"  # (its processes stop: CG, then CANCELLED)
    login.advance(COMPLETING_SECONDS)
    assert login.job(job)["job_state"] == "CANCELLED" and login.job(job)["exit_code"] == 15  # SIGTERM
    assert login.ok(f"squeue -h -t all -j {job} -o %T") == "CANCELLED\n" and login.ok("squeue --me -h") == ""
    login.advance(200)  # a cancelled job writes nothing more (and stays in view for MinJobAge)
    assert len(login.ok(f"cat nanogpt-{job}.out")) == size > 0
    r = login.ssh(f"scancel {job}")  # already completed: silent, as Slurm 22.05's scancel is
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    other = next(x for x in json.loads(login.ok("squeue --json"))["jobs"] if x["user_name"] != "kim")
    r = login.ssh(f"scancel {other['job_id']}")
    assert r.returncode == 1 and "Access/permission denied" in r.stderr
    r = login.ssh("sbatch nope.sbatch")
    assert r.returncode == 1 and r.stderr == "sbatch: error: Unable to open file nope.sbatch\n"
    r = login.ssh("docker ps")  # a login node runs no containers and no GPU commands
    assert r.returncode == 127


def test_ncui_sim_prints_the_login_nodes_ssh_config():
    with SimProcess("--scenario", "slurm") as sim:
        path = Path(sim.env["NC_SSH_CONFIG"])
        text = wait_for(lambda: "Host plover" in path.read_text() and path.read_text(), 10, what="the login node")
        assert re.search(r"^Host plover 127\.11\.0\.\d+$", text, re.M) and "User kim\n" in text  # (its address too)
        assert "CertificateFile " in text
        assert "UserKnownHostsFile " in text and "StrictHostKeyChecking yes" in text


async def test_ncuis_runner_signs_in_with_the_certificate_beside_the_key(login):
    """ncui's own ssh layer (asyncssh) loads ``<key>-cert.pub`` beside the key, as OpenSSH does: refused without
    it, in with it, and a redirect to /dev/null keeps the starter's chatter off the output."""
    ip, port = login.sim.ssh.host("plover")
    opts = {"known_hosts": login.sim.ssh.known_hosts_path, "client_keys": [login.sim.ssh.key_path], "agent_path": None}
    with pytest.raises(AuthFailed):
        async with SshRunner(ip, port, "kim", **opts) as r:
            await r.run("true")
    login.slurm_login()
    async with SshRunner(ip, port, "kim", **opts) as r:
        prepared = await r.run("curl -fsSL https://access.nationalcompute.com/first-job/prepare.sh | sh > /dev/null")
        assert prepared.ok and prepared.stdout == ""
        job = (await r.run("sbatch --parsable --nodes=1 ~/first-job/nanogpt.sbatch", check=True)).stdout.strip()
        assert (await r.run(f"squeue -h -j {job} -o %T", check=True)).stdout == "PENDING\n"
        assert (await r.run("scancel --me --name=nanogpt")).ok  # the way nanogpt.sbatch's own comment says
        assert (await r.run(f"squeue -h -t all -j {job} -o %T", check=True)).stdout == "CANCELLED\n"


# ---- the same session against the box's login node and against the real Slurm -------------------------------


class BoxSide:
    """The box's login node: each line through ``ssh plover``, the box's clock moved to wait."""

    def __init__(self, login: Login) -> None:
        self.login = login
        login.slurm_login()
        login.ok("curl -fsSL https://access.nationalcompute.com/first-job/prepare.sh | sh > /dev/null")

    def sh(self, line: str) -> subprocess.CompletedProcess:
        return self.login.ssh(line)

    def until(self, cond, what: str):
        for _ in range(30):
            if got := cond():
                return got
            self.login.advance(30)
        raise AssertionError(f"the box's clock passed 15 minutes without {what}")


class SlurmSide:
    """The real Slurm 22.05 (tests/slurm_support.py): each line through bash on this machine, in a home of the
    test's own, with nanogpt.sbatch where prepare.sh puts it (its simulated run: no GPU here)."""

    def __init__(self, slurm, home: Path) -> None:
        self.env = {**slurm.env, "HOME": str(home), "NC_FIRST_JOB_SIMULATE": "1", "NC_FIRST_JOB_SIM_DELAY": "1"}
        self.home = home
        (home / "first-job").mkdir(parents=True)
        (home / "first-job" / "nanogpt.sbatch").write_bytes(file_bytes("nanogpt.sbatch"))

    def sh(self, line: str) -> subprocess.CompletedProcess:
        env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", **self.env}
        return subprocess.run(["bash", "-c", line], cwd=self.home, env=env, capture_output=True, text=True, timeout=30)

    def until(self, cond, what: str):
        return wait_for(cond, 60, what=what, interval=0.2)


@pytest.fixture(scope="module")
def real_slurm(tmp_path_factory):
    from .slurm_support import start_slurm

    s = start_slurm(tmp_path_factory.mktemp("slurm"))
    yield s
    s.stop()


@pytest.fixture(params=["box", "slurm"])
def side(request, tmp_path):
    if request.param == "box":
        login = Login(request.getfixturevalue("sim_factory")("slurm"))
        yield BoxSide(login)
        login.http.close()
    else:
        yield SlurmSide(request.getfixturevalue("real_slurm"), tmp_path / "home")


def test_scancel_completing_wrap_json_and_the_last_status_as_slurm_does(side):
    """One session typed at the box's login node and at a real Slurm 22.05: each answers it the same way."""

    def ok(line: str) -> str:
        r = side.sh(line)
        assert r.returncode == 0 and r.stderr == "", (line, r.returncode, r.stdout, r.stderr)
        return r.stdout

    def job(jid: str) -> dict:
        return next(j for j in json.loads(ok("squeue --json"))["jobs"] if str(j["job_id"]) == jid)

    assert ok("false; echo rc=$?; true; echo rc=$?") == "rc=1\nrc=0\n"  # the shell's last status
    jid = re.fullmatch(r"Submitted batch job (\d+)\n", ok("sbatch --nodes=1 ~/first-job/nanogpt.sbatch")).group(1)
    side.until(lambda: job(jid)["job_state"] == "RUNNING", "the job RUNNING")
    j = job(jid)
    assert j["time_limit"] == 60 and j["start_time"] > 0
    assert j["end_time"] == j["start_time"] + 60 * 60  # a running job ends at start + time limit (22.05)

    # the way nanogpt.sbatch's own comment says to stop it: silent; CG while it stops, then out of squeue's view
    out = ok(f"scancel --me --name=nanogpt; echo rc=$?; squeue --me -h -j {jid} -o '%i %t'")
    assert out == f"rc=0\n{jid} CG\n", out
    side.until(lambda: ok("squeue --me -h -o %i") == "", "the cancelled job to leave squeue --me")
    assert ok(f"squeue --me -h -t all -j {jid} -o '%i %t %T'") == f"{jid} CA CANCELLED\n"
    j = job(jid)
    assert j["job_state"] == "CANCELLED" and j["start_time"] <= j["end_time"]
    assert j["exit_code"] in (15, 143 << 8)  # a wait status: killed by SIGTERM (or its shell exited 128 + 15)
    assert ok("scancel --me --name=nanogpt; echo rc=$?") == "rc=0\n"  # nothing left to cancel: still silent
    assert ok(f"scancel {jid}; echo rc=$?") == "rc=0\n"  # already completed: silent too

    # sbatch --wrap: the command becomes the script; the job is named wrap and has no script file
    wid = re.fullmatch(r"Submitted batch job (\d+)\n", ok('sbatch --wrap "sleep 300"')).group(1)
    w = job(wid)
    assert (w["name"], w["command"], w["standard_output"]) == ("wrap", "", "")
    show = ok(f"scontrol show job {wid}")
    assert f"JobId={wid} JobName=wrap\n" in show and "   Command=(null)\n" in show
    assert re.search(rf"^   StdOut=/\S+/slurm-{wid}\.out$", show, re.M), show
    r = side.sh('sbatch --wrap "echo hi" ~/first-job/nanogpt.sbatch')
    assert (r.returncode, r.stderr) == (1, "sbatch: error: Script arguments not permitted with --wrap option\n")
    ok(f"scancel {wid}")
