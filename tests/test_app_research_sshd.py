"""The research flow against a real OpenSSH server on loopback (tests/sshd_support.py), the box's
``public-research`` scenario for the API side: the node typed in as ``root@127.0.0.1:PORT`` (the port allowed as
the box's own: ``NC_SSH_CONFIG`` names it), the first-use host-key question with the sshd's fingerprint, ``n``
running the REAL starter (``curl -fsSL <access>/first-job/nanogpt-node.sh | sh``, fetched from the box), its
loss lines in the pane and the chart, a killed session resumed with nothing lost or repeated, ``x`` stopping
it (``docker rm -f nanogpt``), ``c`` copying the checkpoint folder and the log back over SFTP.

The ssh host is a plain machine: ``docker`` and ``nvidia-smi`` are stand-ins on its PATH (sshd's ``SetEnv``), and
nanoGPT's sources are already in its ``~/first-job`` (as after an earlier start), so the starter fetches nothing
from the internet. The starter itself runs unchanged: its GPU check, its docker checks, its ``docker run -d``;
the stand-in's "container" is a background loop that writes the guide's loss lines into the ``-v`` folder's
``nanogpt.out`` (one every 0.5 s, for about a minute) and a small ``ckpt.pt`` into ``out-shakespeare-char``.
"""

from __future__ import annotations

import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest

from ncui.logfollow import parse_loss
from ncui.screens.modals import ConfirmModal
from ncui.screens.nodes import CopyOffModal, CopyProgressModal, NodesPane
from ncui.screens.research import AddNodeModal
from tests.peers import PATHS
from tests.sshd_support import Sshd

from .apphelp import app_for, loaded, screen_text, type_text, until

SFTP_SERVER = Path(PATHS["sftp-server"])  # (openssh-server brings it)
pytestmark = pytest.mark.peers("sshd", "sftp-server", "ssh", "setsid", "curl")  # (ssh -G reads the config)

# docker as the node's would answer the starter (info, ps -q --filter, rm -f, image inspect, run -d) and ncui
# (docker ps's table, docker rm -f): every call is logged in STATE/calls; the run's loop is its own process group,
# its pid in STATE/pid
DOCKER = r"""#!/bin/sh
S=@STATE@
echo "$*" >> "$S/calls"
running() { [ -f "$S/pid" ] && kill -0 "$(cat "$S/pid")" 2>/dev/null; }
case "$1" in
info | image) exit 0 ;;
ps)
    if [ "${2:-}" = -q ]; then running && echo 0a1b2c3d4e5f; exit 0; fi
    echo "CONTAINER ID   IMAGE                   COMMAND     CREATED   STATUS         PORTS   NAMES"
    running && echo "0a1b2c3d4e5f   pytorch/pytorch:2.5.1   \"bash -c\"   now       Up 2 seconds           nanogpt"
    exit 0 ;;
rm)
    running && kill -TERM "-$(cat "$S/pid")"  # (dash's kill takes no --)
    exit 0 ;;
run)
    dir=
    while [ $# -gt 0 ]; do
        case "$1" in -v) dir=${2%%:*}; shift ;; esac
        shift
    done
    [ -n "$dir" ] || { echo "docker stand-in: no -v HOST:CONTAINER" >&2; exit 125; }
    mkdir -p "$dir/nanoGPT/out-shakespeare-char"
    head -c 3000 /dev/urandom > "$dir/nanoGPT/out-shakespeare-char/ckpt.pt"
    : > "$dir/nanogpt.out"
    setsid sh -c 'i=0; while [ $i -lt 120 ]; do v=$((42700 - i * 90));
        printf "iter %d: loss %d.%04d, time 51.20ms\n" $i $((v / 10000)) $((v % 10000)) >> "$1";
        i=$((i + 1)); sleep 0.5; done' loop "$dir/nanogpt.out" < /dev/null > /dev/null 2>&1 &
    echo $! > "$S/pid"
    echo 0a1b2c3d4e5f
    exit 0 ;;
esac
echo "docker stand-in: $1 is not known here" >&2
exit 1
"""
NVIDIA_SMI = '#!/bin/sh\n[ "${1:-}" = -L ] && echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0000)"\n'


@dataclass
class Node:
    sshd: Sshd
    home: Path  # the node's home (sshd's SetEnv HOME)
    state: Path  # the docker stand-in's calls and its run's pid

    def __getattr__(self, name: str) -> object:  # port, fingerprint, client_key, drop_sessions: the sshd's
        return getattr(self.sshd, name)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def prefix_of(seen: list[str], whole: list[str]) -> bool:
    """Nothing lost, nothing twice: what the pane holds is the file's first lines, in order."""
    return seen == whole[: len(seen)]


@pytest.fixture
def node(sshd, tmp_path):
    """The ssh host: the sshd fixture again with the stand-ins on PATH, a home of its own (nanoGPT's sources already
    there), commands run from that home (``ForceCommand``; SFTP through sftp-server, so a relative path is in that
    home too). Afterwards the run's loop is gone, whatever happened."""
    home, bin_, state = (tmp_path / d for d in ("node-home", "node-bin", "node-state"))
    for d in (home, bin_, state):
        d.mkdir()
    (bin_ / "docker").write_text(DOCKER.replace("@STATE@", str(state)))
    (bin_ / "nvidia-smi").write_text(NVIDIA_SMI)
    for f in bin_.iterdir():
        f.chmod(0o755)
    src = home / "first-job" / "nanoGPT"
    (src / "data" / "shakespeare_char").mkdir(parents=True)
    (src / "train.py").write_text("# nanoGPT (fetched by an earlier start)\n")
    (src / "data" / "shakespeare_char" / "input.txt").write_text("First Citizen:\nBefore we proceed any further\n")
    sshd.extra_config = (
        f"SetEnv HOME={home} PATH={bin_}:/usr/local/bin:/usr/bin:/bin\n"
        f'ForceCommand cd && case "$SSH_ORIGINAL_COMMAND" in internal-sftp) exec {SFTP_SERVER} ;; '
        '*) eval "$SSH_ORIGINAL_COMMAND" ;; esac\n'
    )
    sshd.restart()
    yield Node(sshd, home, state)
    sshd.stop()
    pid = (state / "pid").read_text().strip() if (state / "pid").exists() else ""
    try:  # a loop the test did not stop (it failed first): its whole group, if that pid is still the loop
        if pid and str(home) in Path(f"/proc/{pid}/cmdline").read_text():
            os.killpg(int(pid), signal.SIGKILL)
    except (OSError, ValueError):
        pass


async def test_the_research_flow_on_a_real_sshd(node, sim_factory, tmp_path, monkeypatch):
    me = tmp_path / "me"  # the human's machine: the key the node accepts is its default identity
    (me / ".ssh").mkdir(parents=True)
    shutil.copy(node.client_key, me / ".ssh" / "id_ed25519")
    (me / ".ssh" / "id_ed25519").chmod(0o600)
    monkeypatch.setenv("HOME", str(me))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    cfg = tmp_path / "ssh_config"  # the box's config names the node's port: the only port besides 22 typed in
    cfg.write_text(f"Host research-node\n  HostName 127.0.0.1\n  Port {node.port}\n  User root\n")
    monkeypatch.setenv("NC_SSH_CONFIG", str(cfg))
    # the run check (docker ps, every 5 s in the app) often: a stop (x) must never be taken for the run ending by itself
    monkeypatch.setattr(NodesPane, "RUN_CHECK", 0.05)
    sim = sim_factory("public-research")
    out = node.home / "first-job" / "nanogpt.out"
    results = node.home / "first-job" / "nanoGPT" / "out-shakespeare-char"
    calls = node.state / "calls"
    app = app_for(sim, frozen=False)
    async with app.run_test(size=(100, 32)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "research"), 30, "the node's status")
        from ncui.api.models import ResearchStatus

        app.store.set("research", ResearchStatus(state="unavailable"))  # as on the real service: typed in
        await pilot.press("4")
        await until(pilot, lambda: "Nothing defines a place" in screen_text(app), what="no node yet")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, AddNodeModal), what="the form")
        await type_text(pilot, f"root@127.0.0.1:{node.port + 1}")  # a port the box does not name: refused
        await pilot.press("enter")
        await until(pilot, lambda: "Port 22 is the only way in" in screen_text(app), what="the refusal")
        app.screen.query_one("#login").value = ""
        await type_text(pilot, f"root@127.0.0.1:{node.port}")
        await pilot.press("enter")
        await until(pilot, lambda: "root@127.0.0.1" in screen_text(app), what="the typed row")
        assert not isinstance(app.screen, AddNodeModal)

        await pilot.press("enter")  # connect: nothing pins this sshd's key, so the first-use question
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), 30, "the host key question")
        await until(pilot, lambda: app.screen.focused is not None, what="focus")
        assert node.fingerprint in screen_text(app) and app.screen.focused.id == "no"
        await pilot.press("y")
        nodes = app.query_one(NodesPane)
        await until(pilot, lambda: app.flows.nodes.sessions.connected("root@127.0.0.1"), 30, "connected")
        assert "nanogpt" not in (calls.read_text() if calls.exists() else "")  # only looked (docker ps)

        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the starter's question")
        await until(pilot, lambda: "nanogpt-node.sh" in screen_text(app), what="the question's body")
        assert f"curl -fsSL {sim.access_url}/first-job/nanogpt-node.sh | sh" in screen_text(app)
        assert not out.exists()  # nothing runs before the yes
        await pilot.press("y")
        await until(pilot, lambda: nodes.follower is not None and nodes.follower.state == "following", 30, "following")
        said = calls.read_text()  # the real starter ran: its checks, then docker run with the node's ~/first-job
        assert "info" in said and "ps -q --filter name=^nanogpt$" in said and "image inspect" in said
        assert f"-v {node.home}/first-job:/workspace" in said and "--gpus all" in said
        await until(pilot, lambda: len(nodes.losses.points) >= 3, 30, "three loss points charted")
        assert nodes.losses.points[0] == (0, pytest.approx(4.27))
        assert any(parse_loss(x) for x in nodes.pane.lines_log.lines)  # the loss lines in the pane
        assert "Runs nanogpt" in screen_text(app)

        follower = nodes.follower
        assert node.drop_sessions() >= 1  # the connection cut mid-run: the tail resumes where it stopped
        await until(pilot, lambda: follower.streams >= 2, 30, "the log's stream opened again")
        seen = follower.total
        await until(pilot, lambda: follower.total >= seen + 3, 30, "lines after the cut")
        assert prefix_of(follower.texts(), lines(out)) and prefix_of(list(nodes.pane.lines_log.lines), lines(out))

        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the stop question")
        await until(pilot, lambda: "Sent: docker rm -f nanogpt" in screen_text(app), what="its body")
        before = calls.read_text().count("rm -f nanogpt")  # the starter's own clean-up counts one
        await pilot.press("y")
        await until(pilot, lambda: "nanogpt was stopped" in screen_text(app), 30, "stopped")
        assert calls.read_text().count("rm -f nanogpt") == before + 1
        loop = Path(f"/proc/{(node.state / 'pid').read_text().strip()}")
        await until(pilot, lambda: not loop.exists(), what="the run's loop gone")  # killed (and reaped)
        assert 3 <= len(lines(out)) < 120  # stopped before the run's end
        assert prefix_of(follower.texts(), lines(out))

        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, CopyOffModal), what="the copy-off form")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CopyProgressModal) and app.screen.done, 30, "copied")
        dest = me / "ncui-results" / "root@127.0.0.1"
        total = (results / "ckpt.pt").stat().st_size + out.stat().st_size
        assert app.screen.seen[-1] == (total, total) and f"Copied {total:,} bytes into" in screen_text(app)
        assert (dest / "nanogpt.out").read_bytes() == out.read_bytes()
        assert (dest / "out-shakespeare-char" / "ckpt.pt").read_bytes() == (results / "ckpt.pt").read_bytes()
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, CopyProgressModal))
