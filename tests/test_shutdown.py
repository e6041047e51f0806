"""Clean shutdown (issue 10, items 6 and 9): nothing left unawaited when ncui quits mid sign-in, and a terminal
that goes away (SIGHUP over ssh) changes nothing; the next start points out what still stands."""

from __future__ import annotations

import gc
import os
import re
import signal
import sys

import httpx
import pytest

from .apphelp import app_for, loaded, until
from .kc_support import until as wait_until
from .simproc import SimProcess
from .tmuxterm import env_for


async def test_quitting_while_a_sign_in_starts_leaves_no_coroutine_unawaited(sim):
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "cluster"))
        # The second sign-in replaces the first before it ever ran (one sign-in at a time), then ncui quits:
        # a coroutine made for the first would be collected never awaited (pytest makes that an error here).
        app.action_kube_signin()
        app.action_kube_signin()
        app.exit()
    gc.collect()


def _alive(pid: int) -> bool:
    """The process runs (a zombie is gone for our purpose)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.mark.peers("tmux")
async def test_a_lost_terminal_changes_nothing_and_the_next_start_says_what_stands(tmux_factory, tmp_path):
    with SimProcess("--scenario", "k8s-market") as sim:
        api, token = sim.env["NC_API"], sim.env["NC_TOKEN"]
        auth = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(headers=auth) as h:
            # set before this session: by a session whose terminal went away, by kubectl, by a teammate
            assert (await h.put(api + "/api/k8s/bid", json={"max_price_per_gpu_hour": 4.5})).status_code == 200
            term = tmux_factory(env_for(tmp_path, NC_TOKEN=token, NCUI_KUBE_CACHE=str(tmp_path / "kube")), width=100)
            term.run(sys.executable, "-m", "ncui.cli", "--api", api, "--access", sim.env["NC_ACCESS"])
            await term.until(lambda s: "limit $4.50/GPU-h" in s, 30, what="the header's standing limit")
            await term.until(lambda s: "stands on halcyon" in term.toasts(), 10, what="the notice at start")
            pid = term.pane_pid()
            term.close()  # the terminal goes away: SIGHUP
            await wait_until(lambda: not _alive(pid), 20, what="ncui to end with its terminal")
            bid = (await h.get(api + "/api/k8s/bid")).json()
        assert bid["max_price_per_gpu_hour"] == 4.5  # nothing was changed by the hang-up


async def test_a_worker_that_fails_is_said_not_silently_gone(sim):
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:

        async def broken() -> None:
            raise ValueError("the answer had no cluster field")

        app.run_worker(broken, name="read-cluster", exit_on_error=False)
        await until(
            pilot,
            lambda: any(
                "Something went wrong (read-cluster): ValueError: the answer had no cluster" in n.message
                for n in list(app._notifications)
            ),
            what="the failure said",
        )
        assert app.is_running
        # an exception's text is whatever it carried (a server's words among them): the toast is cleaned
        nasty = "the node said \x1b]0;PWNED\x07\x9b2J\u202eevil\x90q\x9c done"

        async def carries() -> None:
            raise RuntimeError(nasty)

        app.run_worker(carries, name="read-node", exit_on_error=False)
        await until(
            pilot,
            lambda: any("Something went wrong (read-node)" in n.message for n in list(app._notifications)),
            what="the second failure said",
        )
        (said,) = [n.message for n in list(app._notifications) if "(read-node)" in n.message]
        assert "RuntimeError: the node said evil done" in said
        assert not any(ch in said for ch in "\x1b\x07\x9b\u202e\x90\x9c") and "PWNED" not in said


def _child(pid: int) -> int:
    """The one program the pane's shell runs now."""
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        kids = f.read().split()
    assert len(kids) == 1, kids
    return int(kids[0])


@pytest.mark.peers("tmux")
async def test_sigterm_restores_the_terminal_as_q_does_and_changes_nothing(tmux_factory, tmp_path):
    """``kill <ncui>`` with a limit price standing: the terminal is put back as on q (the main screen, no mouse
    reporting, the cursor shown), the shell reads exit status 0, the limit price still stands, and the next start
    says so."""
    import shlex

    with SimProcess("--scenario", "k8s-market") as sim:
        api, token = sim.env["NC_API"], sim.env["NC_TOKEN"]
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as h:
            assert (await h.put(api + "/api/k8s/bid", json={"max_price_per_gpu_hour": 4.5})).status_code == 200
            term = tmux_factory(env_for(tmp_path, NC_TOKEN=token, NCUI_KUBE_CACHE=str(tmp_path / "kube")), width=100)
            ncui = shlex.join([sys.executable, "-m", "ncui.cli", "--api", api, "--access", sim.env["NC_ACCESS"]])
            term.keys(f"env -u COLUMNS -u LINES {ncui}; echo EXIT=$?", "Enter")
            await term.until(lambda s: "limit $4.50/GPU-h" in s, 30, what="the header's standing limit")
            pid = _child(term.pane_pid())
            os.kill(pid, signal.SIGTERM)
            await wait_until(lambda: not _alive(pid), 20, what="ncui to end on SIGTERM")
            screen = await term.until(lambda s: re.search(r"^EXIT=\d+", s, re.M), 10, "the shell again", lines=True)
            assert "EXIT=0" in screen and "Traceback" not in screen, screen
            raw = term.raw.read_bytes()
            after = raw[raw.rindex(b"\x1b[?1049h") :]  # what ncui wrote after it took the screen
            for restore in (b"\x1b[?1049l", b"\x1b[?25h", b"\x1b[?1000l", b"\x1b[?1003l", b"\x1b[?1006l"):
                assert restore in after, f"{restore!r} never sent: the terminal stays as ncui left it"
            assert (await h.get(api + "/api/k8s/bid")).json()["max_price_per_gpu_hour"] == 4.5
            term.keys("clear", "Enter")
            term.keys(f"{ncui}", "Enter")  # the next start points out what still stands
            await term.until(lambda s: "stands on halcyon" in term.toasts(), 30, what="the notice at start")


@pytest.mark.peers("tmux")
async def test_a_demo_ended_by_its_terminal_leaves_no_folder_behind(tmux_factory, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    term = tmux_factory(env_for(tmp_path, TMPDIR=str(temp)), width=100)
    term.run(sys.executable, "-m", "ncui.cli", "--demo", "--scenario", "public-research")
    await term.until(lambda s: "Puffin Public Research" in s and "● live" in s, 60, what="the demo")
    assert [p.name for p in temp.iterdir() if p.name.startswith("ncui-demo-home-")]  # the demo's own folder
    pid = term.pane_pid()
    term.close()  # the terminal goes away: SIGHUP
    await wait_until(lambda: not _alive(pid), 30, what="the demo to end with its terminal")
    assert [p.name for p in temp.iterdir() if p.name.startswith("ncui-demo-home-")] == []
