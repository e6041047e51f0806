"""The app in a real terminal (tmux), as a person runs it (``ncui --api … --access …``) against the box: the
raw bytes it writes to the terminal (``tmux pipe-pane``) never carry a pod log's C1 controls or bidi
overrides; and a token file readable by others is shown on screen with its fix."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from .kc_support import busybox_job
from .tmuxterm import env_for as _env

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.peers("tmux")

C1 = [chr(c) for c in range(0x80, 0xA0)]
BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)]


def _token_file(home: Path, token: str, mode: int) -> Path:
    path = home / ".config" / "nationalcompute" / "token"
    path.parent.mkdir(parents=True)
    path.write_text(token + "\n")
    os.chmod(path, mode)
    return path


def _ncui(sim) -> list[str]:
    """``ncui --api … --access …`` against the box, as a person runs it."""
    return [sys.executable, "-m", "ncui.cli", "--api", sim.api_url, "--access", sim.access_url]


async def test_a_pod_log_with_c1_and_bidi_controls_never_reaches_the_terminal(kc_factory, tmux_factory, tmp_path):
    k, kc = kc_factory()
    # Every C1 control and bidi control, each closed by an ST (so that no string control eats the rest of
    # the line) and followed by a dot that must survive; then a title and a clear screen in the 7-bit form.
    body = "".join(f"{c}\x9c." for c in C1 + BIDI)
    res = await kc.apply([busybox_job("nasty", f"MARK{body}END \x1b]0;PWNED\x07\x1b[2Jdone")])
    assert [r.error for r in res] == [None]
    # the box's pod runs on the CPU worker and logs its command ("[ncui sim] command: sh -c …"): let it run
    await asyncio.to_thread(k.world.advance, 200)
    await asyncio.to_thread(k.sim.app.state.kube.tick)
    _token_file(tmp_path, k.sim.token, 0o600)
    term = tmux_factory(_env(tmp_path, NCUI_KUBE_CACHE=str(k.auth_cache)), width=240)  # the whole line in the pane
    term.run(*_ncui(k.sim))
    await term.until(lambda s: "Account" in s and "Halcyon" in s, what="the app with its account")
    term.keys("4")
    clean = "MARK" + "." * len(C1 + BIDI) + "END done"
    # the whole log is on the pane: its line, and the lines after it
    screen = await term.until(lambda s: "MARK" in s and "[ncui sim] done" in s, what="the pod's log in the pane")
    raw = term.raw.read_bytes()
    for ch in C1 + BIDI:
        assert ch.encode() not in raw, f"U+{ord(ch):04X} reached the terminal"
    assert clean in screen, screen
    assert clean.encode() in raw  # the line was written whole, in one run of bytes
    assert b"PWNED" not in raw


async def test_a_token_file_readable_by_others_is_shown_with_its_fix(sim, tmux_factory, tmp_path):
    """The warning wraps where the path's length puts the wrap (in CI a longer tmp path put it inside "readable
    by others"): here the path is made 102 characters long, which puts it there in the notification at start
    (115 columns of text at 120), and the warning is read as text all the same."""
    tail = "/.config/nationalcompute/token"
    home = tmp_path / ("h" * max(1, 102 - len(f"{tmp_path}/{tail}")))
    home.mkdir()
    path = _token_file(home, sim.token, 0o644)
    term = tmux_factory(_env(home))
    term.run(*_ncui(sim))
    screen = await term.until(lambda s: "Halcyon" in s and "readable by others" in s, what="the app and the warning")
    assert "(mode 0644); run: chmod 600" in screen, screen
    if len(str(path)) == 102:  # (a tmp path too long to pad moves the wrap elsewhere)
        toast = [line for line in term.screen().splitlines() if "▌" in line]
        assert toast[0].endswith(" is readable") and toast[1].startswith("▌ by others (mode 0644)"), toast
    assert path.stat().st_mode & 0o777 == 0o644  # shown, not changed behind the person's back


@pytest.mark.parametrize("extra", [("TERM=screen",), ("TERM=screen", "NO_COLOR=1")], ids=["screen", "no-color"])
async def test_on_a_login_node_terminal_it_reads_with_16_colours(sim, tmux_factory, tmp_path, extra):
    """ssh into a login node, in screen or tmux with TERM=screen (16 colours) or NO_COLOR: ncui draws with what
    the terminal has (no 256-colour or truecolour sequence reaches it; with TERM=xterm-256color they do) and
    reads the same."""
    _token_file(tmp_path, sim.token, 0o600)
    term = tmux_factory(_env(tmp_path), width=80)
    term.run(*extra, *_ncui(sim))
    screen = await term.until(lambda s: "Halcyon Lab" in s and "balance $250.00" in s, what="the app's first screen")
    assert "1 Account" in screen and "5 Lease" in screen
    raw = term.raw.read_bytes()
    for deep in (b"[38;5;", b"[48;5;", b"[38;2;", b"[48;2;", b";38;5;", b";48;5;", b";38;2;", b";48;2;"):
        assert deep not in raw, f"{deep!r} sent to a 16-colour terminal"
    term.keys("q")


@pytest.mark.parametrize("where", ["file", "NC_TOKEN"])
async def test_a_token_that_is_not_a_token_is_said_so_not_offline(sim, tmux_factory, tmp_path, where):
    """A binary token file (or an NC_TOKEN with a space inside) is no token: ncui says which source holds what
    (never the value), not "offline … Cannot reach National Compute"."""
    if where == "file":
        path = tmp_path / ".config" / "nationalcompute" / "token"
        path.parent.mkdir(parents=True)
        path.write_bytes(b"\xff\xfe\x00bin")
        os.chmod(path, 0o600)
        env = _env(tmp_path)
        said = f"{path} is not a token"
    else:
        env = _env(tmp_path, NC_TOKEN="secret half")
        said = "NC_TOKEN is not a token"
    term = tmux_factory(env, width=200)
    term.run(*_ncui(sim))
    screen = await term.until(lambda s: "Press q to quit" in s or "● offline" in s, what="the app's first screen")
    assert said in screen and "Cannot reach" not in screen and "● offline" not in screen, screen
    assert "connecting" not in screen and "● not connected: no token" in screen, screen  # nothing connects
    assert "secret" not in screen and "bin" not in screen.replace("binary", ""), screen
