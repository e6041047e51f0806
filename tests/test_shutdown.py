"""Clean shutdown (issue 10, items 6 and 9): nothing left unawaited when ncui quits mid sign-in, and a terminal
that goes away (SIGHUP over ssh) changes nothing; the next start points out what still stands."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import time

import httpx
import pytest

from .apphelp import app_for, loaded, until
from .simproc import SimProcess


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


def _tmux(*args: str, check: bool = True) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=check).stdout


def _pane(session: str) -> str:
    return _tmux("capture-pane", "-p", "-t", session, check=False)


def _wait(cond, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}: {cond.__doc__ or ''}")
        time.sleep(0.05)


def _toasts(screen: str) -> str:
    """The words of the notifications on a captured screen (each line of a toast starts with ▌; what is drawn
    beside it, such as a chart's frame, is cut off)."""
    parts = [line.split("▌", 1)[1].rstrip(" │┘┐┤") for line in screen.splitlines() if "▌" in line]
    return " ".join(" ".join(parts).split())


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purpose
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_lost_terminal_changes_nothing_and_the_next_start_says_what_stands(tmp_path):
    with SimProcess("--scenario", "k8s-market") as sim:
        api, token = sim.env["NC_API"], sim.env["NC_TOKEN"]
        auth = {"Authorization": f"Bearer {token}"}
        assert httpx.put(api + "/api/k8s/bid", json={"max_price_per_gpu_hour": 4.5}, headers=auth).status_code == 200
        env = {
            "NC_TOKEN": token,
            "HOME": str(tmp_path),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_STATE_HOME": str(tmp_path / "state"),
            "NCUI_KUBE_CACHE": str(tmp_path / "kube"),
            "TERM": "xterm-256color",
            "PATH": os.environ.get("PATH", ""),
        }
        cmd = " ".join([sys.executable, "-m", "ncui.cli", "--api", api, "--access", sim.env["NC_ACCESS"]])
        envs = [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
        session = f"ncui-hup-{os.getpid()}"
        try:
            _tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", *envs, cmd)
            pid = int(_tmux("list-panes", "-t", session, "-F", "#{pane_pid}").split()[0])
            _wait(lambda: "limit $4.50/GPU-h" in _pane(session), 30, "the header's standing limit")
            # pointed out at start (a toast: its words wrap)
            _wait(lambda: "stands on halcyon" in _toasts(_pane(session)), 10, "the notice: " + _pane(session))
            _tmux("kill-session", "-t", session)  # the terminal goes away: SIGHUP
            _wait(lambda: not _alive(pid), 20, "ncui to end with its terminal")
        finally:
            _tmux("kill-session", "-t", session, check=False)
        bid = httpx.get(api + "/api/k8s/bid", headers=auth).json()
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
