"""Slurm below the UI (ncui/remote/slurm.py, ncui/remote/local.py) against a real single-node Slurm
(tests/slurm_support.py), reached two ways: here (``LocalRunner``, ncui on the login node) and through a real
OpenSSH server (``SshRunner``; sshd's ``SetEnv`` gives the session ``SLURM_CONF``).

The flow is the guide's: ``prepare.sh`` served by the box (``NC_FIRST_JOB_URL`` points it at the box and
``NC_FIRST_JOB_SIMULATE=1`` keeps it off the internet), then the box's own ``nanogpt.sbatch`` submitted as
it is (its ``--gpus-per-node=8 --exclusive`` accepted by a node with 8 GPUs by count), which without GPUs
prints its CPU stand-in: the guide's loss lines every ``NC_FIRST_JOB_SIM_DELAY`` seconds into
``nanogpt-<id>.out`` (sbatch passes the submitter's environment to the job).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import asyncssh
import pytest

from ncui.logfollow import parse_loss
from ncui.remote import slurm
from ncui.remote.local import LocalRunner, on_login_node
from ncui.remote.node import BadInput
from ncui.remote.runner import CommandFailed, CopyFailed, RemoteError, SshRunner, known_hosts_line
from ncui.sim.server import SimServer
from tests.conftest import make_world
from tests.peers import need_peer
from tests.slurm_support import Slurm, start_slurm
from tests.sshd_support import SSHD, Sshd, until

DELAY = "0.25"  # seconds between the stand-in's loss lines (30 lines: about 8 s)


@pytest.fixture(scope="module")
def real_slurm(tmp_path_factory):
    s = start_slurm(tmp_path_factory.mktemp("slurm"))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def box():
    server = SimServer(make_world("slurm")).start()
    yield server
    server.stop()


def job_env(s: Slurm, box: SimServer, home: Path) -> dict[str, str]:
    """What the login node's shell has: Slurm's config, a home folder of the test's own, the starter aimed
    at the box and kept off the internet."""
    return {
        **s.env,
        "HOME": str(home),
        "NC_FIRST_JOB_URL": box.access_url + "/first-job",
        "NC_FIRST_JOB_SIMULATE": "1",
        "NC_FIRST_JOB_SIM_DELAY": DELAY,
    }


def file_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def first_job(r, box: SimServer, home: Path) -> None:
    """The guide's four commands through ``r``, then a cancel; ``home`` is the login node's home folder."""
    ran = await slurm.prepare(r, box.access_url)
    assert ran is not None and "prepare: ready" in ran.stdout  # prepare.sh from the box ran
    assert (home / "first-job" / "nanogpt.sbatch").read_bytes().startswith(b"#!/bin/bash\n#SBATCH --job-name=nanogpt")
    assert await slurm.prepare(r, box.access_url) is None  # already there: not run again

    jid = await slurm.submit(r)  # sbatch --nodes=1 ~/first-job/nanogpt.sbatch
    seen: list[slurm.SlurmJob] = []

    async def listed() -> bool:
        seen[:] = [j for j in await slurm.jobs(r) if j.id == jid]
        return bool(seen) and seen[0].state in ("PENDING", "RUNNING")

    await until_async(listed, what=f"job {jid} in squeue --me")
    j = seen[0]
    assert j.name == "nanogpt" and j.user == "root" and j.nodes == 1
    path = slurm.output_path(j)
    assert path == str(home / f"nanogpt-{jid}.out")  # squeue's --output, %j expanded, in the submit folder
    assert await slurm.find_output(r, j) == path
    assert await slurm.find_output(r, slurm.SlurmJob(jid, "nanogpt", "RUNNING")) == path  # scontrol's StdOut

    got: list[str] = []
    f = slurm.output_follower(r, path, poll=0.2, on_lines=got.extend, batch_interval=0.02, backoff=(0.05, 0.5))
    task = asyncio.ensure_future(f.run())
    try:
        await until(lambda: sum(parse_loss(x) is not None for x in got) >= 3, 30, "three loss lines followed")
        running = await slurm.job(r, jid)
        assert running is not None and running.running and running.nodelist == "localhost"
        assert slurm.explain(running).startswith("Running on localhost for ")
        await slurm.cancel(r, jid)  # scancel
        await until_async(lambda: gone(r, jid), what=f"job {jid} gone from squeue")
        out = home / f"nanogpt-{jid}.out"
        await until(lambda: f.total >= len(file_lines(out)), 15, "every line of the log followed")
    finally:
        f.stop()
        await task
    assert got == file_lines(home / f"nanogpt-{jid}.out")  # nothing lost, nothing twice
    assert parse_loss(next(x for x in got if x.startswith("iter "))) == (0, pytest.approx(4.27))
    assert 3 <= sum(parse_loss(x) is not None for x in got) < 30  # cancelled before the run's end


async def gone(r, jid: str) -> bool:
    return all(j.id != jid for j in await slurm.jobs(r))


async def until_async(cond, timeout: float = 30.0, what: str = "") -> None:
    """``until`` for an async condition: each look is a command on the login node (ten a second at most)."""
    await until(cond, timeout, what, 0.1)


# ---- on the login node itself --------------------------------------------------------------------------


async def test_first_job_on_a_real_slurm_from_the_login_node_itself(real_slurm, box, tmp_path):
    env = job_env(real_slurm, box, tmp_path)
    assert on_login_node(env={**os.environ, **env})  # sbatch on PATH and SLURM_CONF: this is a login node
    assert not on_login_node(env={**os.environ, **env, "NCUI_LOGIN_NODE": "0"})  # … unless told otherwise
    async with LocalRunner(env=env) as r:
        await first_job(r, box, tmp_path)


async def test_a_pending_job_says_why_in_plain_words_and_the_o_line_reads_the_same(real_slurm, box, tmp_path):
    async with LocalRunner(env=job_env(real_slurm, box, tmp_path)) as r:
        await slurm.prepare(r, box.access_url)
        first, second = await slurm.submit(r), await slurm.submit(r)  # one node: the second waits for the first

        async def waiting() -> bool:
            j = await slurm.job(r, second)
            return j is not None and j.pending and j.reason in ("Resources", "Priority")

        await until_async(waiting, what="the second job pending for Resources or Priority")
        j = await slurm.job(r, second)
        assert j is not None
        said = slurm.explain(j)
        assert said in (f"Pending: {slurm.REASONS['Resources']}.", f"Pending: {slurm.REASONS['Priority']}.")
        assert "busy with other jobs" in said or "jobs ahead of it" in said
        # The -o line (a Slurm without --json) reads the same jobs as --json does.
        text = (await r.run(slurm.jobs_command(as_json=False), check=True)).stdout
        by_o = {x.id: x for x in slurm.parse_format(text)}
        assert (
            by_o[second].state == "PENDING"
            and by_o[second].reason in ("Resources", "Priority")
            and by_o[second].workdir == str(tmp_path)
        )
        assert by_o[first].name == "nanogpt" and by_o[first].user == "root"
        # A Slurm whose squeue has no --json: jobs() falls back to the -o line by itself, and keeps to it.
        old = tmp_path / "old-slurm"
        old.mkdir()
        (old / "squeue").write_text(
            '#!/bin/sh\ncase "$*" in *--json*) echo "squeue: unrecognized option \'--json\'" >&2; exit 1;; esac\n'
            f'echo "$*" >> {old}/calls\nexec {shutil.which("squeue")} "$@"\n'
        )
        (old / "squeue").chmod(0o755)
        async with LocalRunner(env={**job_env(real_slurm, box, tmp_path), "PATH": f"{old}:{os.environ['PATH']}"}) as o:
            assert [(x.id, x.name) for x in await slurm.jobs(o)] == [(x.id, x.name) for x in await slurm.jobs(r)]
            await slurm.jobs(o)
            assert (old / "calls").read_text().count("-h -o") == 2  # --json was asked about once
        for jid in (first, second):
            await slurm.cancel(r, jid)
        await until_async(lambda: gone(r, first), what="the first job gone")
        await until_async(lambda: gone(r, second), what="the second job gone")
        ended = await slurm.job(r, second)  # an ended job, while Slurm remembers it
        assert ended is not None and ended.state == "CANCELLED" and slurm.explain(ended).startswith("Cancelled")
        assert await slurm.job(r, 99999) is None  # squeue -j of a job Slurm does not know: no job, not an error
        with pytest.raises(CommandFailed, match="sbatch"):
            await slurm.submit(r, "~/first-job/no such.sbatch")  # sbatch's refusal, in a sentence


# ---- over ssh ------------------------------------------------------------------------------------------


@pytest.fixture
def slurm_sshd(real_slurm, box, tmp_path):
    """A real sshd whose sessions see the test Slurm and a home folder of the test's own (``SetEnv``)."""
    need_peer("sshd", SSHD)
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    root = tmp_path / "sshd"
    root.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    server = Sshd(root)
    env = job_env(real_slurm, box, home)
    # The session starts in that home folder, as a login node's does in the user's (sshd would start root's in
    # /root, and sbatch puts the log in the folder it is run from).
    server.extra_config = (
        "SetEnv " + " ".join(f"{k}={v}" for k, v in env.items()) + '\nForceCommand cd && eval "$SSH_ORIGINAL_COMMAND"\n'
    )
    server.start()
    yield server, home
    server.stop()


def ssh_runner(server: Sshd, tmp_path: Path) -> SshRunner:
    known = tmp_path / "known_hosts"
    known.write_text(known_hosts_line(server.host, server.port, server.host_key))
    return SshRunner(
        server.host, server.port, server.user, known_hosts=known, client_keys=[server.client_key],
        agent_path=None, config=[], keepalive_interval=1,
    )  # fmt: skip


async def test_first_job_on_a_real_slurm_over_a_real_sshd(slurm_sshd, box, tmp_path):
    server, home = slurm_sshd
    async with ssh_runner(server, tmp_path) as r:
        assert (await r.run("pwd")).stdout.strip() == str(home)  # sshd's SetEnv reached the session
        await first_job(r, box, home)


async def test_a_connection_killed_mid_follow_resumes_with_nothing_lost_or_repeated(slurm_sshd, box, tmp_path):
    server, home = slurm_sshd
    async with ssh_runner(server, tmp_path) as r:
        await slurm.prepare(r, box.access_url)
        jid = await slurm.submit(r)
        out = home / f"nanogpt-{jid}.out"
        j = await slurm.job(r, jid)
        assert j is not None
        got: list[str] = []
        f = slurm.output_follower(
            r, await slurm.find_output(r, j), poll=0.2, on_lines=got.extend, batch_interval=0.02, backoff=(0.05, 0.5)
        )
        task = asyncio.ensure_future(f.run())
        try:
            await until(lambda: sum(parse_loss(x) is not None for x in got) >= 3, 30, "three loss lines")
            assert server.drop_sessions() >= 1  # the network cut: every session's sshd killed
            at_drop = len(file_lines(out))
            await until(lambda: len(file_lines(out)) >= at_drop + 3, 30, "lines written while the link is down")
            await until(lambda: f.streams >= 2 and len(got) >= at_drop + 3, 30, "the follow resumed")
            await slurm.cancel(r, jid)
            await until_async(lambda: gone(r, jid), what="the job gone")
            await until(lambda: f.total >= len(file_lines(out)), 15, "every line followed")
        finally:
            f.stop()
            await task
        assert got == file_lines(out) and r.connects >= 2 and not f.failed
        iters = [p[0] for p in map(parse_loss, got) if p is not None]
        assert iters == list(range(0, 10 * len(iters), 10))  # every loss line once, in order


# ---- LocalRunner without Slurm --------------------------------------------------------------------------


async def test_local_runner_keeps_the_runner_contract(tmp_path):
    async with LocalRunner(env={"HOME": str(tmp_path)}) as r:
        res = await r.run("printf 'a\\nb'; echo oops >&2; pwd >&2; exit 3")
        assert (res.exit_status, res.stdout, res.stderr) == (3, "a\nb", f"oops\n{tmp_path}\n")  # starts at home
        with pytest.raises(CommandFailed, match="exit status 7.*no such thing") as e:
            await r.run("echo no such thing >&2; exit 7", check=True)
        assert e.value.exit_status == 7 and "this machine" in str(e.value)
        with pytest.raises(RemoteError, match="did not finish .* within 0.3 s"):
            await r.run(f"echo $$ > {tmp_path}/pid; sleep 30 & wait", timeout=0.3)
        pid = int((tmp_path / "pid").read_text())
        await until(lambda: not alive(pid), 10, "the timed-out command ended")

    assert not r._procs


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


async def test_local_follow_streams_in_batches_and_leaving_it_ends_the_command(tmp_path):
    log = tmp_path / "grow ing.log"
    got: list[str] = []
    batches = 0
    async with LocalRunner(env={"HOME": str(tmp_path)}) as r:

        async def consume() -> None:
            nonlocal batches
            async for batch in r.follow("echo $$ > pid; exec tail -n +1 -F -s 0.1 'grow ing.log'"):
                batches += 1
                got.extend(batch)
                if len(got) >= 300:
                    break

        task = asyncio.ensure_future(consume())
        for i in range(3):
            with open(log, "a") as f:
                f.write("".join(f"line {n}\n" for n in range(100 * i, 100 * i + 100)))
            await until(lambda i=i: len(got) >= 100 * (i + 1), 15, f"{100 * (i + 1)} lines")
        await task
        assert got == [f"line {n}" for n in range(300)] and batches < 300
        pid = int((tmp_path / "pid").read_text())
        await until(lambda: not alive(pid), 10, "tail ended when the loop was left")
        with pytest.raises(CommandFailed, match="exit status 2"):
            async for _ in r.follow("echo partial; exit 2"):
                pass

        (tmp_path / "run" / "ckpt").mkdir(parents=True)
        (tmp_path / "run" / "ckpt" / "model.pt").write_bytes(b"x" * 5000)
        (tmp_path / "run" / "log.txt").write_text("iter 0: loss 4.2, time 1.00ms\n")
        seen: list[tuple[int, int]] = []
        dest = tmp_path / "copy"
        dest.mkdir()
        await r.copy_from("~/run", dest, progress=lambda d, t: seen.append((d, t)), recurse=True)
        assert (dest / "run" / "ckpt" / "model.pt").read_bytes() == b"x" * 5000 and seen[-1] == (5030, 5030)
        with pytest.raises(CopyFailed, match="is a folder"):
            await r.copy_from("run", dest)
        with pytest.raises(CopyFailed, match="There is no nothing-here"):
            await r.copy_from("nothing-here", dest)


def test_login_node_detection_and_its_override(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text("#!/bin/sh\n")
    (bin_dir / "sbatch").chmod(0o755)
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\n")
    env = {"PATH": str(bin_dir), "SLURM_CONF": str(conf)}
    assert on_login_node(env=env)
    assert not on_login_node(env={"PATH": str(tmp_path / "nothing"), "SLURM_CONF": str(conf)})  # no sbatch
    if not any(Path(p).exists() for p in ("/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf")):
        assert not on_login_node(env={"PATH": str(bin_dir)})  # no configuration
    assert on_login_node(env={"PATH": "", "NCUI_LOGIN_NODE": "1"})  # told so
    assert not on_login_node(env={**env, "NCUI_LOGIN_NODE": "no"})
    assert on_login_node(True, env={}) and not on_login_node(False, env=env)  # the command-line flag wins


# ---- what ncui sends and reads (no Slurm needed) --------------------------------------------------------


def test_commands_are_the_seed_lines_and_quote_what_they_are_given():
    assert slurm.prepare_command("https://access.nationalcompute.com") == (
        "curl -fsSL https://access.nationalcompute.com/first-job/prepare.sh | sh"
    )
    assert slurm.submit_command() == "sbatch --nodes=1 ~/first-job/nanogpt.sbatch"
    assert slurm.submit_command("~/my dir/x;reboot.sbatch", 2) == "sbatch --nodes=2 ~/'my dir/x;reboot.sbatch'"
    assert slurm.jobs_command() == "squeue --me --json"
    assert slurm.jobs_command(me=False, ids=["12", "13_4"], as_json=False) == (
        "squeue -j 12,13_4 -h -o '%i|%T|%r|%M|%D|%N|%u|%Z|%j'"
    )
    assert slurm.cancel_command(42) == "scancel 42"
    for bad in ("42; reboot", "-1", "", "all"):
        with pytest.raises(BadInput, match="not a Slurm job id"):
            slurm.cancel_command(bad)
    with pytest.raises(BadInput):
        slurm.submit_command("--wrap=reboot")
    with pytest.raises(BadInput):
        slurm.submit_command(nodes=0)
    assert slurm.parse_submitted("Submitted batch job 1234 on cluster plover\n") == "1234"
    with pytest.raises(slurm.SlurmError, match=r"it said: sbatch: error: no\)"):
        slurm.parse_submitted("sbatch: error: \x1b[31mno\n")  # Slurm's words in the sentence, cleaned


def test_squeue_json_of_newer_slurm_and_the_job_s_log_path():
    doc = {
        "jobs": [
            {
                "job_id": 7, "name": "nanogpt", "job_state": ["RUNNING"], "state_reason": "None",
                "start_time": {"set": True, "infinite": False, "number": 1000},
                "node_count": {"set": True, "number": 1},
                "nodes": "gpu-a01", "user_name": "alice", "current_working_directory": "/home/alice",
                "standard_output": "nanogpt-%j.out",
            },
            {"job_id": 8, "name": "x", "job_state": ["PENDING"], "state_reason": "QOSMaxGRESPerUser",
             "start_time": {"set": True, "number": 0}, "standard_output": "/scratch/%u/%x-%j.log"},
        ]
    }  # fmt: skip
    import json

    a, b = slurm.parse_json(json.dumps(doc), now=1000 + 3723)
    assert (a.state, a.elapsed, a.nodelist, a.start) == ("RUNNING", "1:02:03", "gpu-a01", 1000.0)
    assert slurm.output_path(a) == "/home/alice/nanogpt-7.out"
    assert slurm.output_path(b) == "/scratch//x-8.log" and b.elapsed == "0:00" and b.start is None
    assert slurm.explain(b).startswith("Pending: held by a limit of your account")
    assert slurm.output_path(slurm.SlurmJob("9", "nanogpt", "PENDING")) == "nanogpt-9.out"  # home, relative
    with pytest.raises(slurm.SlurmError):
        slurm.parse_json("squeue: unrecognized option '--json'")
    shown = slurm.parse_show_job("JobId=5 JobName=a b\n   StdOut=/home/a/my out-5.out\n   StdIn=/dev/null\n")
    assert shown["JobName"] == "a b" and shown["StdOut"] == "/home/a/my out-5.out"


@pytest.mark.parametrize(
    ("reason", "says"),
    [
        ("Resources", "waiting for nodes"),
        ("Priority", "waiting its turn"),
        ("ReqNodeNotAvail", "not available (down, drained or reserved)"),
        ("None", "not looked at it yet"),
        ("Strange\x1b[2J", "Slurm says Strange."),
    ],
)
def test_pending_reasons_in_plain_words(reason, says):
    assert says in slurm.explain(slurm.SlurmJob("1", "nanogpt", "PENDING", reason))


# ---- the sign in ---------------------------------------------------------------------------------------


def make_cert(dir_: Path, name: str, after: str, before: str) -> Path:
    key = asyncssh.generate_private_key("ssh-ed25519")
    ca = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(dir_ / name))
    ca.generate_user_certificate(
        key, name, principals=["alice"], valid_after=after, valid_before=before
    ).write_certificate(str(dir_ / f"{name}-cert.pub"))
    return dir_ / name


async def test_signin_certificate_found_as_openssh_finds_it_and_the_seed_steps_when_not(tmp_path):
    need_peer("ssh")
    need_peer("ssh-keygen")
    good = make_cert(tmp_path, "good", "-1h", "+24h")
    old = make_cert(tmp_path, "old", "-2d", "-1d")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(
        f"Host plover\n  HostName 127.0.0.1\n  IdentityFile {old}\n  IdentityFile {good}\n"
        f"Host expired\n  IdentityFile {old}\nHost other\n  CertificateFile {tmp_path}/nothing-cert.pub\n"
        f"  IdentityFile {tmp_path}/nothing\n"
    )
    ok = await slurm.check_certificate("plover", ssh_config=cfg)
    assert ok.ok and ok.state == "valid" and ok.path == Path(f"{good}-cert.pub")  # the valid one wins
    assert ok.valid_before is not None and timedelta(hours=23) < ok.valid_before - datetime.now(timezone.utc)
    assert ok.message.startswith("Signed in to plover: certificate valid until ") and "23 h " in ok.message

    gone_ = await slurm.check_certificate("plover", host="expired", ssh_config=cfg, access_url="http://127.0.0.1:9/a")
    assert not gone_.ok and gone_.state == "expired" and "plover expired " in gone_.message
    steps = "curl -fsSL http://127.0.0.1:9/a/setup.sh | sh -s -- plover"
    assert steps in gone_.message and "2. run slurm-login" in gone_.message
    assert f"\n    {steps}\n" in gone_.message  # one step a line, the command whole on its own

    none = await slurm.check_certificate("plover", host="other", ssh_config=cfg)
    assert (none.ok, none.state, none.path) == (False, "missing", None) and "setup.sh | sh -s -- plover" in none.message
    later = await slurm.check_certificate("plover", ssh_config=cfg, now=datetime.now(timezone.utc) + timedelta(days=2))
    assert later.state == "expired"  # 24 hours on, slurm-login is due again


def test_keygen_listing_forms():
    head = "c:\n        Type: ssh-ed25519-cert-v01@openssh.com user certificate\n"
    assert slurm.parse_keygen(head + "        Valid: forever\n") == (True, None, None)
    t = datetime(2026, 12, 2, 13, 49, 22, tzinfo=timezone.utc)
    assert slurm.parse_keygen(head + "        Valid: before 2026-12-02T13:49:22\n") == (True, None, t)
    assert slurm.parse_keygen(head + "        Valid: from 2026-12-02T13:49:22 to forever\n") == (True, t, None)
    assert slurm.parse_keygen(head.replace("user", "host") + "        Valid: forever\n") == (False, None, None)
    assert slurm.parse_keygen("not a certificate") is None
