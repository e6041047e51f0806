"""Workloads on a VM cluster against the box: a granted node's row and login, connect (the host key asked the
first time, then remembered), the starter followed with its loss chart across a dropped session (each line
once), stop with docker rm -f, your own image and command, a changed host key and unregistered keys refused,
and a release that copies files off first with its progress.

Every node is the box's own ssh endpoint (asyncssh, in the box's process) reached over loopback by ncui's
real ssh layer; the human's key is made by ssh-keygen in a temporary HOME and registered through the API
before the capacity is declared, as a person would on Lease."""

from __future__ import annotations

import asyncio
import re
import shlex
import subprocess
from pathlib import Path

import asyncssh
import httpx
import pytest

from ncui.config import known_hosts_path
from ncui.remote.node import NODE_LOG
from ncui.remote.runner import known_hosts_line
from ncui.screens.exitguard import ExitGuardModal
from ncui.screens.modals import ConfirmModal, ResultsModal
from ncui.screens.nodes import CopyOffModal, CopyProgressModal, NodesPane, RunImageModal
from ncui.screens.vmflows import KeyPickModal
from ncui.sim.ssh.node import STOCK
from ncui.sim.world import JOIN_MAX

from .apphelp import app_for, footer_keys, loaded, screen_text, type_text, until
from .conftest import wait_for
from .peers import need_peer

pytestmark = pytest.mark.peers("ssh-keygen")
LOSS = re.compile(r"iter \d+: loss \d+\.\d{4}, time \d+\.\d{2}ms")


class Node:
    """The vm box with one granted node whose authorised key is the human's (``~/.ssh/id_ed25519``)."""

    def __init__(self, sim, home: Path, *, register_first: bool = True) -> None:
        self.sim, self.home = sim, home
        self.http = httpx.Client(base_url=sim.api_url, headers={"Authorization": f"Bearer {sim.token}"}, timeout=20)
        (home / ".ssh").mkdir(exist_ok=True)
        self.key = home / ".ssh" / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ada@laptop", "-f", str(self.key)])
        if register_first:
            self.register()
        price = sim.world.markets["H100-SXM-80GB"].ladder(1)[0][1] / 1e6
        v = self.http.get("/api/vm/capacity").json()["version"]
        body = {"max_gpus": 8, "max_price_per_gpu_hour": price, "expected_version": v}
        assert self.http.put("/api/vm/capacity", json=body).status_code == 200
        sim.world.advance(120)
        if not register_first:
            self.register()  # after the grant: this node never gets it
        sim.world.advance(JOIN_MAX)
        sim.ssh.settle()
        (self.alloc,) = [a for a in self.http.get("/api/vm/capacity").json()["allocations"] if a["state"] == "active"]
        self.id = self.alloc["id"]

    def register(self) -> None:
        org = self.http.get("/api/whoami").json()["org_id"]
        body = {"name": "ada@laptop", "public_key": self.key.with_suffix(".pub").read_text()}
        assert self.http.post(f"/api/vm/orgs/{org}/ssh-keys", json=body).status_code == 201

    def file(self, rel: str) -> Path:
        scratch = self.sim.ssh.scratch(self.id)
        assert scratch is not None
        return scratch / "home" / "ubuntu" / rel

    def close(self) -> None:
        self.http.close()


@pytest.fixture
def human(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


@pytest.fixture
def node(sim_factory, human):
    n = Node(sim_factory("vm", volatility=0.0), human)
    yield n
    n.close()


def nodes_of(app) -> NodesPane:
    return app.query_one(NodesPane)


async def open_nodes(pilot, app, node: Node) -> NodesPane:
    await until(pilot, lambda: loaded(app, "whoami", "vm_capacity"), what="the VM capacity")
    await pilot.press("4")
    login = f"ssh -p {node.alloc['ssh_port']} ubuntu@{node.alloc['public_ip']}"
    await until(pilot, lambda: login in screen_text(app))
    await pilot.press("l")  # the login, copied (where the terminal allows)
    await until(pilot, lambda: app.clipboard == login, what="the ssh command copied")
    return nodes_of(app)


async def answer_host_key(pilot, app, node: Node) -> str:
    """The first-use question: the node's SHA256 fingerprint, No highlighted; answered yes."""
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the host key question")
    text = screen_text(app)
    fp = asyncssh.import_public_key(
        (node.sim.ssh.known_hosts_path.read_text().split("\n")[0]).split(None, 1)[1]
    ).get_fingerprint("sha256")
    assert fp in text and node.id in text and str(known_hosts_path()) in text
    assert app.screen.focused is not None and app.screen.focused.id == "no"  # the safe answer first
    await pilot.press("y")
    return fp


async def connect(pilot, app, node: Node, *, starter: bool = False) -> None:
    """Enter on the node's row: its host key accepted on first use, connected; ``starter``: then n, yes."""
    await pilot.press("enter")
    await answer_host_key(pilot, app, node)
    await until(pilot, lambda: app.flows.nodes.sessions.connected(node.id), what="connected")
    if starter:
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the starter's question")
        await pilot.press("y")


def statuses(pane) -> list[str]:
    """Every line the pane showed under the log (a spy on set_status)."""
    seen: list[str] = []
    real = pane.set_status

    def spy(text: str) -> None:
        seen.append(text)
        real(text)

    pane.set_status = spy
    return seen


async def test_connect_run_the_starter_follow_across_a_drop_stop_copy_off_and_release(node):
    sim = node.sim
    app = app_for(sim)
    async with app.run_test(size=(100, 32)) as pilot:
        nodes = await open_nodes(pilot, app, node)
        row = screen_text(app)
        assert f"{node.id} active 8" in row  # NODE STATE GPUS LOGIN RUNS
        await pilot.press("enter")
        await answer_host_key(pilot, app, node)
        await until(pilot, lambda: app.flows.nodes.sessions.connected(node.id), what="connected")
        assert f"[{node.alloc['public_ip']}]:{node.alloc['ssh_port']} ssh-" in known_hosts_path().read_text()

        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the starter's question")
        assert f"curl -fsSL {sim.access_url}/first-job/nanogpt-node.sh | sh" in screen_text(app)
        seen = statuses(nodes.pane)
        await pilot.press("y")
        await until(pilot, lambda: nodes.follower is not None and nodes.follower.state == "following")
        assert "Runs nanogpt: the starter" in screen_text(app)
        sim.world.advance(300)
        await until(pilot, lambda: any(LOSS.search(x) for x in nodes.pane.lines_log.lines), what="loss lines")
        await until(pilot, lambda: len(nodes.losses.points) >= 3, what="points in the chart")

        assert sim.ssh.drop_sessions() >= 1  # the box cuts every session; the node stays up
        sim.world.advance(300)  # written while the session is down
        await until(pilot, lambda: nodes.follower.streams >= 2, what="the follower to reconnect")
        assert any("connection dropped" in s and "no line lost or repeated" in s for s in seen)
        sim.world.advance(60)
        runner = app.flows.nodes.sessions.runners[node.id][1]
        want = (await runner.run(f"cat {NODE_LOG}", check=True)).stdout.splitlines()  # what the node holds now
        await until(pilot, lambda: nodes.follower.texts() == want, what="every line of the log, once")
        assert sum(bool(LOSS.search(x)) for x in want) > 20
        await until(pilot, lambda: list(nodes.pane.lines_log.lines)[-len(want) :] == want, what="the pane")

        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the stop question")
        assert "Sent: docker rm -f nanogpt" in screen_text(app) and app.screen.focused.id == "no"
        await pilot.press("y")
        await until(pilot, lambda: "log ended: nanogpt was stopped" in "".join(seen[-1:]), what="stopped")
        assert "nanogpt" not in (await runner.run("docker ps -a")).stdout

        await pilot.press("5", "R")  # release: copy off first
        await until(pilot, lambda: isinstance(app.screen, CopyOffModal), what="the copy-off offer")
        modal = app.screen
        assert modal.query_one("#remote").value == "~/first-job"
        assert modal.query_one("#local").value == f"~/ncui-results/{node.id}"
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CopyProgressModal) and app.screen.done, what="copied")
        progress = app.screen
        total = sum(p.stat().st_size for p in node.file("first-job").rglob("*") if p.is_file())
        assert progress.seen[-1] == (total, total) and total > 0
        assert f"Copied {total:,} bytes into" in screen_text(app) and f"{total:,} of {total:,} bytes" in screen_text(
            app
        )
        copied = node.home / "ncui-results" / node.id / "first-job" / "nanogpt.out"
        assert copied.read_text() == node.file("first-job/nanogpt.out").read_text()
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the release question")
        assert "destroyed with its local disk" in screen_text(app)
        await pilot.press("y")
        await until(pilot, lambda: sim.world.main_org.vm["tern-vm"].max_gpus == 0, what="released")
        await until(pilot, lambda: node.id not in app.flows.nodes.sessions.runners, what="the connection closed")


async def test_a_remembered_host_key_is_not_asked_again(node):
    app = app_for(node.sim)
    async with app.run_test(size=(100, 32)) as pilot:
        await open_nodes(pilot, app, node)
        await pilot.press("o")
        await answer_host_key(pilot, app, node)
        await until(pilot, lambda: app.flows.nodes.sessions.connected(node.id))
    app2 = app_for(node.sim)  # ncui again: its known_hosts holds the node
    async with app2.run_test(size=(100, 32)) as pilot:
        await open_nodes(pilot, app2, node)
        await pilot.press("enter")
        await until(
            pilot, lambda: app2.flows.nodes.sessions.connected(node.id) or isinstance(app2.screen, ConfirmModal)
        )
        assert not isinstance(app2.screen, ConfirmModal) and app2.flows.nodes.sessions.connected(node.id)


async def test_your_own_image_and_command_run_quoted_followed_and_stopped(node):
    sim = node.sim
    app = app_for(sim)
    async with app.run_test(size=(100, 32)) as pilot:
        nodes = await open_nodes(pilot, app, node)
        await pilot.press("u")
        await answer_host_key(pilot, app, node)
        await until(pilot, lambda: isinstance(app.screen, RunImageModal), what="the form")
        assert app.screen.query_one("#image").value == STOCK["nvidia"]  # the catalog's stock image, prefilled
        await type_text(pilot, "python train.py --note 'it works'")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the question")
        text = screen_text(app)
        assert f"Image: {STOCK['nvidia']}" in text and "Command: python train.py --note 'it works'" in text
        quoted = "'python train.py --note '\"'\"'it works'\"'\"''"  # sh's quoting of the quotes typed
        line = f"docker run -d --name my-job --gpus all {STOCK['nvidia']} sh -c {quoted}"
        assert line in text  # the whole command as sent, one sh -c word
        await pilot.press("y")
        await until(pilot, lambda: nodes.follower is not None and nodes.follower.state == "following")
        sim.world.advance(300)
        await until(pilot, lambda: len(nodes.losses.points) >= 3, what="loss points from docker logs")
        seen = statuses(nodes.pane)
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "docker rm -f my-job" in screen_text(app)
        await pilot.press("y")
        await until(pilot, lambda: nodes.follower is None and any("my-job was stopped" in s for s in seen))
        runner = app.flows.nodes.sessions.runners[node.id][1]
        assert "my-job" not in (await runner.run("docker ps -a")).stdout


async def test_a_changed_host_key_is_refused_with_its_explanation(node):
    known = known_hosts_path()
    known.parent.mkdir(parents=True, exist_ok=True)
    other = asyncssh.generate_private_key("ssh-ed25519")  # what ncui remembers: not the node's key
    known.write_text(known_hosts_line(node.alloc["public_ip"], node.alloc["ssh_port"], other))
    before = known.read_text()
    app = app_for(node.sim)
    async with app.run_test(size=(100, 32)) as pilot:
        await open_nodes(pilot, app, node)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, (ResultsModal, ConfirmModal)), what="the refusal")
        assert isinstance(app.screen, ResultsModal)  # never asked: refused
        text = screen_text(app)
        assert f"Refused: the host key of {node.id} changed" in text and other.get_fingerprint("sha256") in text
        assert "ssh-keygen -R" in text and "Nothing was sent to the node." in text
        assert not app.flows.nodes.sessions.connected(node.id) and known.read_text() == before


async def test_after_a_host_key_refusal_runs_no_longer_says_connected(node):
    """Connected once; then the node answers with another host key (here: ncui remembers another one) after
    the connection dropped: the reconnection is refused, and the row's RUNS column says so at once, not
    "connected"."""
    app = app_for(node.sim)
    async with app.run_test(size=(100, 32)) as pilot:
        nodes = await open_nodes(pilot, app, node)
        await connect(pilot, app, node)
        runs = lambda: str(nodes.table().get_row(node.id)[4])  # noqa: E731
        await until(pilot, lambda: runs() == "connected", what="RUNS: connected")
        other = asyncssh.generate_private_key("ssh-ed25519")
        known_hosts_path().write_text(known_hosts_line(node.alloc["public_ip"], node.alloc["ssh_port"], other))
        assert await asyncio.to_thread(node.sim.ssh.drop_sessions) >= 1
        await until(pilot, lambda: not app.flows.nodes.sessions.connected(node.id), what="the connection dropped")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ResultsModal), what="the refusal")
        assert f"Refused: the host key of {node.id} changed" in screen_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ResultsModal), what="the refusal dismissed")
        assert runs() == "—" and "connected" not in screen_text(app).replace("Not connected", ""), screen_text(app)


async def test_keys_registered_after_the_grant_are_refused_with_what_to_do(sim_factory, human):
    n = Node(sim_factory("vm", volatility=0.0), human, register_first=False)
    try:
        app = app_for(n.sim)
        async with app.run_test(size=(100, 32)) as pilot:
            await open_nodes(pilot, app, n)
            await pilot.press("enter")
            await answer_host_key(pilot, app, n)
            await until(pilot, lambda: isinstance(app.screen, ResultsModal), what="the refusal")
            text = screen_text(app)
            fp = asyncssh.read_private_key(str(n.key)).get_fingerprint("sha256")
            assert f"{n.id} refused your keys" in text and fp in text
            assert "k on Lease (5)" in text and "never on a running node" in text
            assert "PRIVATE" not in text and n.key.with_suffix(".pub").read_text().split()[1] not in text
    finally:
        n.close()


async def test_at_80_columns_a_new_user_reads_recipes_the_footer_and_a_run_that_ends_by_itself(node, monkeypatch):
    """A VM cluster at 80×24: Recipes says no catalog recipe applies and where runs start (never "Loading…" for
    ever); the node view's footer is read whole with q Quit and offers no chat; the starter run to its end by
    the box's clock is noticed: every line in, the log ended, "Runs nanogpt" gone, the node still billed."""
    monkeypatch.setattr(NodesPane, "RUN_CHECK", 0.2)
    sim = node.sim
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "vm_capacity", "catalog"), what="the catalog read")
        await pilot.press("3")
        await until(pilot, lambda: "tern-vm is a VM cluster: the catalog's recipes are Kubernetes" in screen_text(app))
        assert "Workloads (4) runs the starter (n:" in screen_text(app) and "Loading" not in screen_text(app)
        assert footer_keys(app)[0] == "? Help"  # no recipe, so no a Apply (it would do nothing)
        nodes = await open_nodes(pilot, app, node)
        assert footer_keys(app) == ["o Connect", "n Starter", "u Image", "x Stop", "? Help", "r Refresh", "q Quit"]
        await pilot.press("m")  # the chat is a served model's, on Kubernetes: nothing here
        await pilot.pause()
        assert not any("serve endpoint" in n.message for n in app._notifications)
        await connect(pilot, app, node, starter=True)
        await until(pilot, lambda: nodes.follower is not None and nodes.follower.state == "following")
        seen = statuses(nodes.pane)
        sim.world.advance(3700)  # past the end of the box's nanoGPT run
        await until(pilot, lambda: node.id not in app.flows.nodes.sessions.runs, 30, what="the run's end noticed")
        want = node.file("first-job/nanogpt.out").read_text().splitlines()
        assert list(nodes.pane.lines_log.lines)[-len(want) :] == want and nodes.follower is None
        assert any("log ended: the run ended (nanogpt exited)" in x for x in seen)
        text = screen_text(app)
        assert "Runs nanogpt" not in text and f"{node.id} active 8" in text and "connected" in text
        await until(
            pilot,
            lambda: any("ran to its end" in n.message and "Lease (5, then R)" in n.message for n in app._notifications),
            what="the node still billed, said",
        )
        assert not isinstance(app.screen, ConfirmModal)  # a VM node's release offers the copy-off, not this

        await pilot.press("u")  # your own image: its docker logs -f ends with it, and the end is noticed too
        await until(pilot, lambda: isinstance(app.screen, RunImageModal), what="the form")
        await type_text(pilot, "python train.py")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the question")
        await pilot.press("y")
        await until(pilot, lambda: nodes.follower is not None and nodes.follower.state == "following")
        sim.world.advance(3700)
        await until(pilot, lambda: node.id not in app.flows.nodes.sessions.runs, 30, what="my-job's end noticed")
        runner = app.flows.nodes.sessions.runners[node.id][1]
        want = (await runner.run("docker logs my-job", check=True)).stdout.splitlines()
        assert list(nodes.pane.lines_log.lines)[-len(want) :] == want and "Runs my-job" not in screen_text(app)


async def test_release_and_quit_while_connected_closes_the_node_session_cleanly(node):
    """Quitting with the capacity standing and a node connected, "Release, quit" (w): released with the same
    price, and nothing left behind (pytest fails a test that leaves a coroutine never awaited)."""
    app = app_for(node.sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_nodes(pilot, app, node)
        await connect(pilot, app, node)
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, ExitGuardModal), what="the quit question")
        await pilot.press("w")
        await until(pilot, lambda: app._exit, what="quit")
    vm = node.sim.world.main_org.vm["tern-vm"]
    assert vm.max_gpus == 0 and vm.price > 0


def test_the_node_log_line_says_what_the_follower_does():
    from ncui.remote.node import FileFollower
    from ncui.screens.nodes import node_log_state

    f = FileFollower(None, NODE_LOG)  # type: ignore[arg-type]
    f.error = "The connection to ubuntu@127.10.0.3:2222 dropped."
    assert "reconnecting, resuming where it stopped" in node_log_state("resuming", f)
    f.end_reason = "the container stopped"
    assert node_log_state("ended", f) == "log ended: the container stopped"
    assert node_log_state("following", f) == ""


def test_snapshot_workloads_on_a_vm_node(snap_compare, node):
    """Workloads on a VM node at 80×24: the node's row and login, the starter's log ten minutes in, the loss
    chart. Frozen clocks; the node's port (the OS picks it) is reported as 2222 once connected."""
    sim = node.sim
    app = app_for(sim)

    async def ready(pilot):
        nodes = await open_nodes(pilot, app, node)
        await connect(pilot, app, node, starter=True)
        await until(pilot, lambda: nodes.follower is not None and nodes.follower.state == "following")
        sim.world.advance(600)
        runner = app.flows.nodes.sessions.runners[node.id][1]
        want = (await runner.run(f"cat {NODE_LOG}", check=True)).stdout.splitlines()
        await until(pilot, lambda: list(nodes.pane.lines_log.lines) == want, what="the log on screen")
        with sim.world.lock:
            for a in sim.world.main_org.vm["tern-vm"].allocations:
                a.ssh_port = 2222
        app.pollers.refresh("vm_capacity")
        await until(pilot, lambda: "ssh -p 2222 ubuntu@" in screen_text(app), what="the fixed port")
        chart = app.query_one("#node-loss-chart")
        await until(pilot, lambda: not chart.pending, what="the loss chart drawn with the last points")
        app.clear_notifications()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)


async def test_a_container_started_by_hand_is_found_on_connect_and_its_log_made_safe(node):
    """From another shell, by hand (OpenSSH and the box's NC_SSH_CONFIG), a container whose command carries
    terminal escapes; ncui connecting finds it running, follows it, and shows its text without the escapes."""
    evil = "printf '\x1b[2J\x1b]0;pwned\x07red\x1b[31m alert\n'"
    r = subprocess.run(
        [need_peer("ssh"), "-F", str(node.sim.ssh.config_path), "-i", str(node.key), "-o", "BatchMode=yes", node.id]
        + [f"docker run -d --name mine alpine:3 sh -c {shlex.quote(evil)}"],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr
    node.sim.world.advance(60)
    app = app_for(node.sim)
    async with app.run_test(size=(100, 32)) as pilot:
        nodes = await open_nodes(pilot, app, node)
        await pilot.press("enter")
        await answer_host_key(pilot, app, node)
        await until(pilot, lambda: nodes.follower is not None and nodes.follower.total > 0, what="its log")
        assert (
            "Runs mine (alpine:3). x stops it (docker rm -f mine)." in screen_text(app)
            and app.flows.nodes.sessions.runs[node.id].name == "mine"
        )
        lines = list(nodes.pane.lines_log.lines)
        assert any("printf 'red alert" in x for x in lines) and not any("pwned" in x for x in lines)  # OSC gone whole
        assert any("alpine:3: the simulator does not run images" in x for x in lines)
        assert not any(c in x for x in lines for c in "\x1b\x07")


@pytest.mark.peers("ssh-agent")
async def test_a_key_held_only_by_the_ssh_agent_is_listed_registered_and_logs_in(
    sim_factory, human, tmp_path, monkeypatch
):
    """The human's key is in a real ssh-agent and nowhere in ~/.ssh: Lease's k lists it (from the agent, with
    its fingerprint), registers it, and the node granted after lets ncui in with the agent alone."""
    sock, key = tmp_path / "agent.sock", tmp_path / "agent-only"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ada@agent", "-f", str(key)], check=True)
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
    try:
        wait_for(lambda: sock.exists(), 10, what="the agent's socket")
        subprocess.run(["ssh-add", "-q", str(key)], check=True, capture_output=True, timeout=10)
        key.unlink()  # only the agent holds it now
        fp = asyncssh.import_public_key(key.with_suffix(".pub").read_text()).get_fingerprint("sha256")
        sim = sim_factory("vm", volatility=0.0)
        app = app_for(sim)
        async with app.run_test(size=(100, 32)) as pilot:
            await until(pilot, lambda: loaded(app, "whoami", "vm_capacity", "ssh_keys"), what="the VM cluster read")
            await pilot.press("5", "k")
            await until(pilot, lambda: isinstance(app.screen, KeyPickModal), what="the keys")
            assert [(k.source, k.fingerprint) for k in app.screen.keys] == [("agent", fp)]
            assert "ada@agent" in app.screen.keys[0].label()
            await pilot.press("enter")
            await until(pilot, lambda: [k.fingerprint for k in sim.world.main_org.ssh_keys] == [fp], what="registered")
            with httpx.Client(base_url=sim.api_url, headers={"Authorization": f"Bearer {sim.token}"}) as h:
                price = sim.world.markets["H100-SXM-80GB"].ladder(1)[0][1] / 1e6
                v = h.get("/api/vm/capacity").json()["version"]
                body = {"max_gpus": 8, "max_price_per_gpu_hour": price, "expected_version": v}
                assert h.put("/api/vm/capacity", json=body).status_code == 200
            sim.world.advance(120 + JOIN_MAX)
            sim.ssh.settle()
            app.pollers.refresh("vm_capacity")
            await pilot.press("4")
            await until(pilot, lambda: "ssh -p " in screen_text(app), what="the node up")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the host key question")
            await pilot.press("y")
            await until(
                pilot, lambda: app.flows.nodes.sessions.connected(nodes_of(app).node or ""), what="in, by the agent"
            )
    finally:
        agent.terminate()
        agent.wait(10)
