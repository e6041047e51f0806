"""The Slurm path in the app (screens/slurm.py) with the box's `slurm` scenario for the API side: the sign-in
checked by itself (missing, expired, then valid), and the first job on a real single-node Slurm
(tests/slurm_support.py) reached two ways, with nothing injected: ncui on the login node itself
(``NCUI_LOGIN_NODE=1``: ``LocalRunner``), and ``ssh plover`` through a real sshd that accepts only the
certificate slurm-login would leave (``remote/login.slurm_runner`` reads the ssh config with ``ssh -G``; the host
key is asked about on first use). Each runs ``n`` (declined once, then accepted: prepare.sh + sbatch), sees the
job in squeue, its loss lines in the log pane and the chart, and cancels it with ``x`` after a yes.
"""

from __future__ import annotations

import os
from pathlib import Path

import asyncssh
import pytest

from ncui.logfollow import parse_loss
from ncui.screens.modals import ConfirmModal
from ncui.screens.slurm import SlurmPanel
from tests.peers import need_peer
from tests.slurm_support import start_slurm
from tests.sshd_support import Sshd, free_port

from .apphelp import app_for, loaded, notes, screen_text, until

# seconds between the stand-in's loss lines (30 lines: about 30 s): the test cancels the job after a few lines and a
# cut connection, so the run must outlast them however loaded the machine is (an 8 s run could end first)
DELAY = "1.0"


@pytest.fixture(scope="module")
def real_slurm(tmp_path_factory):
    s = start_slurm(tmp_path_factory.mktemp("slurm"))
    yield s
    s.stop()


def make_cert(dir_: Path, name: str, after: str, before: str, principal: str = "alice", ca=None) -> Path:
    """A key and its user certificate (``<key>-cert.pub``, as slurm-login leaves it), signed by ``ca``."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    ca = ca or asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(dir_ / name))
    os.chmod(dir_ / name, 0o600)
    ca.generate_user_certificate(
        key, name, principals=[principal], valid_after=after, valid_before=before
    ).write_certificate(str(dir_ / f"{name}-cert.pub"))
    return dir_ / name


def job_env(s, sim, home: Path, delay: str = DELAY) -> dict[str, str]:
    """The login node's environment: Slurm's config, a home of the test's own, the starter aimed at the box."""
    return {
        **s.env,
        "HOME": str(home),
        "NC_FIRST_JOB_URL": sim.access_url + "/first-job",
        "NC_FIRST_JOB_SIMULATE": "1",
        "NC_FIRST_JOB_SIM_DELAY": delay,
    }


def file_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


# ---- the sign-in ---------------------------------------------------------------------------------------


async def test_the_sign_in_is_checked_by_itself_missing_expired_then_valid(sim_factory, tmp_path, monkeypatch):
    need_peer("ssh")
    need_peer("ssh-keygen")
    sim = sim_factory("slurm")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host plover\n  HostName 127.0.0.1\n  Port {free_port()}\n  IdentityFile {tmp_path}/id\n")
    monkeypatch.setenv("NC_SSH_CONFIG", str(cfg))  # what `ncui sim` prints; the human's own config otherwise
    monkeypatch.setenv("NCUI_LOGIN_NODE", "0")
    app = app_for(sim)
    app.flows.slurm.signin_interval = 0.2  # "every minute" in the app
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "slurm_signin"), what="the sign-in checked")
        text = screen_text(app)  # Account: the guide's two steps, where the human is
        assert "There is no ssh certificate for plover here yet" in text
        assert f"curl -fsSL {sim.access_url}/setup.sh | sh -s -- plover" in text and "run slurm-login" in text
        await pilot.press("4", "n")  # the first job waits for the sign-in: said, nothing asked
        await until(pilot, lambda: "2. run slurm-login" in notes(app), what="the steps again on n")
        assert not isinstance(app.screen, ConfirmModal)

        old = make_cert(tmp_path, "old", "-2d", "-1d")
        old.rename(tmp_path / "id")
        (tmp_path / "old-cert.pub").rename(tmp_path / "id-cert.pub")
        await until(pilot, lambda: app.store.value("slurm_signin").state == "expired", what="expired, found by itself")
        assert "Your certificate for plover expired" in screen_text(app)  # Workloads says it too

        new = make_cert(tmp_path, "new", "-1m", "+24h")
        new.rename(tmp_path / "id")
        (tmp_path / "new-cert.pub").rename(tmp_path / "id-cert.pub")
        await until(pilot, lambda: app.store.value("slurm_signin").ok, what="signed in, found by itself")
        signed = [e for e in app.history.session if "slurm-login" in e.command]  # in the history, as the guide's
        assert [e.command for e in signed] == [f"curl -fsSL {sim.access_url}/setup.sh | sh -s -- plover && slurm-login"]
        assert signed[0].what.startswith("sign in to plover: the setup script, then slurm-login (an ssh certificate")
        signin = app.store.value("slurm_signin")  # its end on the box's clock (the screen's), which ticks
        until_at = (signin.ends or signin.valid_before).strftime("%H:%M")
        await pilot.press("1")
        await until(pilot, lambda: f"certificate valid until {until_at} UTC" in screen_text(app))
        assert "setup.sh" not in screen_text(app)
        await until(pilot, lambda: "Signed in to plover" in notes(app), what="the notice")  # posted after the state


# ---- the first job, on the login node itself ----------------------------------------------------------


async def first_job(pilot, app, home: Path, server: Sshd | None = None) -> None:
    """n (declined, then accepted), the job seen, its loss lines in the pane and chart (across a cut connection
    when ``server`` is the sshd), x after a yes."""
    await pilot.press("4")
    await until(pilot, lambda: "No job of yours in the queue" in screen_text(app), 30, "the empty queue")
    assert not (home / "first-job").exists()

    await pilot.press("n")
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal), 30, what="the first job's question")
    body = app.screen.body
    assert f"curl -fsSL {app.backend.endpoints.access}/first-job/prepare.sh | sh" in body  # ~/first-job missing
    assert "sbatch --nodes=1 ~/first-job/nanogpt.sbatch" in body
    assert "ncui does not price Slurm jobs" in body and "the cluster's own accounting" in body
    assert "The organization's balance is $" in body and "Nothing is bid" in body
    await pilot.press("n")  # no: nothing runs
    await until(pilot, lambda: "Nothing was submitted." in notes(app))
    assert not (home / "first-job").exists() and not app.store.value("slurm_jobs")

    await pilot.press("n")
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="asked again")
    await pilot.press("y")
    await until(pilot, lambda: "Submitted batch job" in notes(app), 60, "sbatch's job id")
    assert (home / "first-job" / "nanogpt.sbatch").exists()  # prepare.sh ran first
    await until(pilot, lambda: (jobs := app.store.value("slurm_jobs")) and jobs[0].running, 30, "RUNNING in squeue")
    jobs = app.store.value("slurm_jobs")
    jid = jobs[0].id
    assert jobs[0].name == "nanogpt" and jobs[0].nodelist == "localhost"
    panel = app.screen.query_one(SlurmPanel)
    await until(pilot, lambda: len(panel.losses.points) >= 3, 30, "three loss points charted")
    assert panel.losses.points[0] == (0, pytest.approx(4.27))
    text = screen_text(app)
    assert f"{jid} nanogpt RUNNING" in text and f"job {jid}: Running on localhost for " in text
    assert any(parse_loss(x) for x in panel._pane().lines_log.lines)  # the loss lines in the log pane
    if server is not None:  # the network cut mid-run: the log resumes where it stopped
        assert server.drop_sessions() >= 1
        await until(pilot, lambda: panel.follower.streams >= 2, 30, "the log's stream opened again")
        seen = len(panel.losses.points)
        await until(pilot, lambda: len(panel.losses.points) >= seen + 2, 30, "loss lines after the cut")

    await pilot.press("x")
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the cancel question")
    assert f"Cancel job {jid} (nanogpt, running)?" == app.screen.title_text and f"scancel {jid}" in app.screen.body
    await pilot.press("y")
    await until(pilot, lambda: f"Cancelled job {jid}" in notes(app))
    await until(pilot, lambda: app.store.value("slurm_jobs") == (), 30, "the job gone from squeue --me")
    out = home / f"nanogpt-{jid}.out"
    await until(pilot, lambda: panel.follower.total >= len(file_lines(out)), 15, "every line followed")
    assert panel.follower.texts() == file_lines(out)  # nothing lost, nothing twice
    assert 3 <= len(panel.losses.points) < 30  # cancelled before the run's end
    assert f"job {jid} has left the queue" in screen_text(app)


async def test_the_first_job_on_the_login_node_itself(real_slurm, sim_factory, tmp_path, monkeypatch):
    sim = sim_factory("slurm")
    home = tmp_path / "home"
    home.mkdir()
    for k, v in job_env(real_slurm, sim, home).items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("NCUI_LOGIN_NODE", "1")
    app = app_for(sim, frozen=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "summary", "slurm_signin", "slurm_jobs"), 30)
        assert "ncui runs on the login node itself" in screen_text(app)
        await first_job(pilot, app, home)


# ---- the first job through a real sshd, signed in with a certificate ------------------------------------


@pytest.mark.peers("sshd", "ssh")
async def test_the_first_job_over_ssh_with_the_slurm_login_certificate(real_slurm, sim_factory, tmp_path, monkeypatch):
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    sim = sim_factory("slurm")
    root, home, me = tmp_path / "sshd", tmp_path / "home", tmp_path / "me"
    for d in (root, home, me):
        d.mkdir()
    ca = asyncssh.generate_private_key("ssh-ed25519")  # the cluster's user CA
    ca.write_public_key(str(root / "ca.pub"))
    server = Sshd(root)  # its own client key is not used: only the certificate gets in
    env = job_env(real_slurm, sim, home, delay="0.6")  # (a longer run: it outlasts the cut and the cancel)
    server.extra_config = (
        f"TrustedUserCAKeys {root / 'ca.pub'}\n"
        + "SetEnv "
        + " ".join(f"{k}={v}" for k, v in env.items())
        + '\nForceCommand cd && eval "$SSH_ORIGINAL_COMMAND"\n'
    )
    server.start()
    try:
        key = make_cert(me, "id_plover", "-1m", "+24h", principal="root", ca=ca)  # what slurm-login leaves
        cfg = me / "ssh_config"
        cfg.write_text(f"Host plover\n  HostName 127.0.0.1\n  Port {server.port}\n  User root\n  IdentityFile {key}\n")
        monkeypatch.setenv("NC_SSH_CONFIG", str(cfg))
        monkeypatch.setenv("NCUI_LOGIN_NODE", "0")
        monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
        app = app_for(sim, frozen=False)
        async with app.run_test(size=(100, 30)) as pilot:
            await until(pilot, lambda: isinstance(app.screen, ConfirmModal), 30, "the host key question")
            assert server.fingerprint in app.screen.body and "First connection to plover" in app.screen.title_text
            await pilot.press("y")
            await until(pilot, lambda: loaded(app, "balance", "summary", "slurm_jobs"), 30, what="the queue read")
            assert app.store.value("slurm_signin").ok
            assert app.flows.slurm.state.runner.where == f"root@127.0.0.1:{server.port}"
            await first_job(pilot, app, home, server)
    finally:
        server.stop()
