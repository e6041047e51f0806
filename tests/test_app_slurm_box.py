"""The Slurm path in the app against the box's own simulated login node (scenario `slurm`), with nothing
injected: `ssh plover` through the box's NC_SSH_CONFIG, the certificate the box's slurm-login signs, the
first job's PENDING reason in plain words, then RUNNING on the box's clock, its loss lines followed and
charted, and `scancel` after a yes."""

from __future__ import annotations

import pytest

from ncui.screens.modals import ConfirmModal
from ncui.screens.slurm import SlurmPanel
from ncui.sim.ssh.slurm import COMPLETING_SECONDS

from .apphelp import app_for, footer_keys, loaded, notes, screen_text, until

pytestmark = pytest.mark.peers("ssh")  # (ssh -G reads the config)


def seconds(elapsed: str) -> int:
    """squeue's ``M:SS`` / ``H:MM:SS`` in seconds."""
    return sum(int(x) * 60**i for i, x in enumerate(reversed(elapsed.split(":"))))


async def test_the_first_job_on_the_boxs_login_node(sim_factory, tmp_path, monkeypatch):
    sim = sim_factory("slurm")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NC_SSH_CONFIG", str(sim.ssh.config_path))
    sim.ssh.sign("plover")  # the human's slurm-login, played by the box
    app = app_for(sim, frozen=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "summary", "slurm_signin"), 30)
        await until(pilot, lambda: app.store.value("slurm_signin").ok, 30, "signed in with the box's certificate")
        # the queue is read from the start: the login node's host key is asked first, wherever the human is
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), 30, "the login node's host key, first use")
        assert "host key" in app.screen.body
        await pilot.press("y")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        await pilot.press("4")
        await until(pilot, lambda: "No job of yours in the queue" in screen_text(app), 30, "the empty queue")
        await pilot.press("3")  # the recipe's Apply is the first job too (n on Workloads is the same question)
        await until(pilot, lambda: "Train nanoGPT with Slurm" in screen_text(app), 30, "the Slurm recipe")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), 30, "the first job's question")
        assert "sbatch --nodes=1 ~/first-job/nanogpt.sbatch" in app.screen.body
        assert app.current_view().id == "workloads"  # where the job will be followed
        await pilot.press("y")
        await until(pilot, lambda: "Submitted batch job" in notes(app), 30, "sbatch's job id")
        await until(pilot, lambda: bool(app.store.value("slurm_jobs")), 30, "the job in squeue --me")
        job = app.store.value("slurm_jobs")[0]
        assert job.state == "PENDING" and job.name == "nanogpt"
        await until(pilot, lambda: "waits" in screen_text(app) or "waiting" in screen_text(app), 15, "the reason")
        for _ in range(60):  # the box's clock: PENDING for a few minutes, then RUNNING and writing its log
            if (jobs := app.store.value("slurm_jobs")) and jobs[0].running:
                break
            sim.world.advance(30)
            app.flows.slurm.wake()
            await pilot.pause(0.05)
        await until(pilot, lambda: (jobs := app.store.value("slurm_jobs")) and jobs[0].running, 30, "RUNNING")
        panel = app.screen.query_one(SlurmPanel)
        for _ in range(60):
            if len(panel.losses.points) >= 3:
                break
            sim.world.advance(30)
            await pilot.pause(0.05)
        await until(pilot, lambda: len(panel.losses.points) >= 3, 30, "loss points charted from the node's file")
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the cancel question")
        assert f"scancel {job.id}" in app.screen.body
        await pilot.press("y")
        await until(pilot, lambda: f"Cancelled job {job.id}" in notes(app), 30)
        sim.world.advance(COMPLETING_SECONDS)  # (CG while its processes stop, as Slurm's, then CANCELLED)
        app.flows.slurm.wake()
        await until(
            pilot,
            lambda: (
                app.store.value("slurm_jobs") in ((), None) or app.store.value("slurm_jobs")[0].state == "CANCELLED"
            ),
            30,
            "cancelled in squeue",
        )


async def test_the_demo_at_80x24_the_steps_the_time_the_node_and_how_the_job_ended(tmp_path, monkeypatch):
    """``ncui --demo --scenario slurm`` as a person walks it at 80×24 (the box is the login node, its clock stopped
    and moved by the test): the guide's two sign-in steps one a line with the setup command whole on its own; the
    job's elapsed time counted on the box's clock (not this machine's, which the box's runs ahead of); its node's
    whole name in the table; once it left the queue, how it ended; and the login node's host key, trusted, kept in
    the box's own known_hosts (gone with it), never in ncui's."""
    from ncui.app import NCApp
    from ncui.backend import Backend, DemoOptions

    monkeypatch.setenv("HOME", str(tmp_path))  # ncui's known_hosts (the login node's key, trusted on first use)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    app = NCApp(Backend(demo=DemoOptions("slurm", 0.0, 7)), mode="demo")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "slurm_signin"), 30, "the sign-in checked")
        sim, access = app.backend.sim, app.backend.endpoints.access
        await pilot.press("4")
        state = app.screen.query_one("#slurm-state")
        await until(pilot, lambda: "no ssh certificate" in screen_text(app), what="the steps on Workloads")
        assert footer_keys(app)[-1] == "q Quit", footer_keys(app)  # read whole at 80 columns
        drawn = [line.text.rstrip() for line in state.render_lines(state.region.reset_offset)]
        assert f"    curl -fsSL {access}/setup.sh | sh -s -- plover" in drawn, drawn  # whole, on its own line
        assert any(x.startswith(" 2. run slurm-login") for x in drawn), drawn

        await pilot.press("1")  # Account's steps say L plays slurm-login in the demo: its footer offers it, whole
        await until(pilot, lambda: "L slurm-login (demo)" in footer_keys(app), what=f"L in {footer_keys(app)}")
        assert footer_keys(app)[-1] == "q Quit", footer_keys(app)
        await pilot.press("L")  # the demo plays slurm-login; then the login node's host key, first use
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), 30, "the login node's host key")
        await pilot.press("y")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        demo_known = app.backend.known_hosts  # the box's host key goes with the box, never into ncui's known_hosts
        await until(pilot, lambda: demo_known.is_file() and "[127.11.0." in demo_known.read_text(), what="trusted")
        assert not (tmp_path / "state" / "ncui" / "known_hosts").exists()
        await pilot.press("1")  # signed in: L is no longer the next step
        await until(pilot, lambda: "L slurm-login (demo)" not in footer_keys(app), what="L gone from the footer")
        await pilot.press("4")
        await until(pilot, lambda: "No job of yours in the queue" in screen_text(app), 30, "the empty queue")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), 30, "the first job's question")
        await pilot.press("y")
        await until(pilot, lambda: bool(app.store.value("slurm_jobs")), 30, "the job in squeue --me")
        jid = app.store.value("slurm_jobs")[0].id

        def running() -> bool:
            return bool((jobs := app.store.value("slurm_jobs")) and jobs[0].running)

        for _ in range(60):  # the box's clock: PENDING for a few minutes, then RUNNING
            if running():
                break
            sim.world.advance(30)
            app.flows.slurm.wake()
            await pilot.pause(0.05)
        await until(pilot, running, 30, "RUNNING")
        sim.world.advance(150)  # 2.5 minutes of the box's clock on the node (this machine's: a moment)
        app.flows.slurm.wake()
        table = app.screen.query_one(SlurmPanel).table
        await until(pilot, lambda: f" {jid} " in table.render_line(1).text and ":" in table.render_line(1).text)
        await until(pilot, lambda: seconds(app.store.value("slurm_jobs")[0].elapsed) >= 150, 30, "the box's clock")
        row = table.render_line(1).text
        node = app.store.value("slurm_jobs")[0].nodelist
        assert node.startswith("plover-gpu-") and f" {node} " in row, row  # the node's whole name at 80 columns
        assert " 0:00 " not in row

        for _ in range(40):  # the run ends on the box's clock: the job leaves squeue --me
            if app.store.value("slurm_jobs") == ():
                break
            sim.world.advance(120)
            app.flows.slurm.wake()
            await pilot.pause(0.05)
        await until(pilot, lambda: app.store.value("slurm_jobs") == (), 30, "the job gone from squeue --me")
        await until(pilot, lambda: f"job {jid} has left the queue: finished." in screen_text(app), 30, "how it ended")
    assert not demo_known.exists()


def _left(text: str) -> int:
    """The minutes of the sign-in's "(H h MM min left)" on screen."""
    import re

    found = re.search(r"\((?:(\d+) h )?(\d+) min left\)", text)
    assert found, text
    return int(found.group(1) or 0) * 60 + int(found.group(2))


async def test_the_certificates_time_left_counts_down_by_the_boxs_clock(sim_factory, tmp_path, monkeypatch):
    """The box's certificate (24 h of its clock): the "… left" on Account and on Workloads ticks down as the
    box's clock runs, with no new check, not the figure of the last check for ever."""
    sim = sim_factory("slurm")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NC_SSH_CONFIG", str(sim.ssh.config_path))
    sim.ssh.sign("plover")
    app = app_for(sim)  # the box's clock moves only when advanced
    app.flows.slurm.signin_interval = 3600.0  # (no new check while the test looks: the screen counts by itself)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), 30, "the login node's host key, first use")
        await pilot.press("y")
        await until(pilot, lambda: "min left)" in screen_text(app), 30, "signed in, on Account")
        checked = app.store.get("slurm_signin").version
        first = _left(screen_text(app))
        sim.world.advance(40 * 60)
        await until(pilot, lambda: _left(screen_text(app)) <= first - 40, 10, "Account's time left, 40 min less")
        await pilot.press("4")
        await until(pilot, lambda: "min left)" in screen_text(app), 30, "the sign-in line on Workloads")
        now = _left(screen_text(app))
        sim.world.advance(2 * 3600)
        await until(pilot, lambda: _left(screen_text(app)) <= now - 120, 10, "Workloads' time left, 2 h less")
        assert app.store.get("slurm_signin").version == checked  # counted on screen, not read again
