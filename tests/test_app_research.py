"""A public-research organization in the app, against the box (scenario public-research): Account and Lease say
who requests and releases the node (only Marshall) and whether the balance covers one full lease; Workloads shows
the node from the box's stand-in status (queued, then assigned by the sim control), connects with the host key the
box's known_hosts pins (no question), runs the starter, follows its loss lines, stops it, notices a run that ended
and offers the copy-off, copies the checkpoint and the log off with progress, says plainly when docker is missing;
a node typed in as user@ip (port 22, or the box's own) is asked about the first time. ncui never releases the node.

The workspace's key is the box's stand-in (``NC_SSH_CONFIG``'s IdentityFile for research-node, as ``ncui sim``
exports it); the typed-in node is reached with the human's own key, registered before the assignment."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import asyncssh
import httpx
import pytest
from textual.widgets import Button

from ncui.config import known_hosts_path
from ncui.remote.runner import known_hosts_line
from ncui.screens.exitguard import ExitGuardModal
from ncui.screens.modals import ConfirmModal, ResultsModal
from ncui.screens.nodes import CopyOffModal, CopyProgressModal, NodesPane
from ncui.screens.research import AddNodeModal

from .apphelp import app_for, loaded, screen_lines, screen_text, type_text, until

pytestmark = pytest.mark.peers("ssh-keygen")
LOSS = re.compile(r"iter \d+: loss \d+\.\d{4}, time \d+\.\d{2}ms")


class Box:
    """The public-research box and the human's machine: HOME with ~/.ssh/id_ed25519, NC_SSH_CONFIG exported."""

    def __init__(self, sim, home: Path) -> None:
        self.sim, self.home = sim, home
        self.http = httpx.Client(base_url=sim.api_url, headers={"Authorization": f"Bearer {sim.token}"}, timeout=20)
        (home / ".ssh").mkdir(exist_ok=True)
        self.key = home / ".ssh" / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ana@laptop", "-f", str(self.key)])

    def register(self) -> None:
        org = self.http.get("/api/whoami").json()["org_id"]
        body = {"name": "ana@laptop", "public_key": self.key.with_suffix(".pub").read_text()}
        assert self.http.post(f"/api/vm/orgs/{org}/ssh-keys", json=body).status_code == 201

    def status(self) -> dict:
        return self.http.get("/_sim/research/status").json()

    def assign(self) -> dict:
        s = self.http.post("/_sim/research/assign").json()
        self.sim.ssh.settle()
        s = self.status()
        assert s["state"] == "assigned", s
        return s

    def file(self, rel: str) -> Path:
        scratch = self.sim.ssh.scratch(f"research:{self.sim.world.main_org.spec.key}")
        assert scratch is not None
        return scratch / "home" / "ubuntu" / rel


@pytest.fixture
def box(sim_factory, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    sim = sim_factory("public-research")
    monkeypatch.setenv("NC_SSH_CONFIG", str(sim.ssh.config_path))  # the four lines `ncui sim` prints, exported
    b = Box(sim, home)
    yield b
    b.http.close()


def nodes_of(app) -> NodesPane:
    return app.query_one(NodesPane)


async def assigned_row(pilot, app, box: Box) -> tuple[NodesPane, dict]:
    """Workloads with the node queued, then assigned by the sim control: its row and login."""
    await until(pilot, lambda: loaded(app, "whoami", "research"), what="the node's status")
    await pilot.press("4")
    await until(pilot, lambda: "queued for Marshall's pool: position" in screen_text(app), what="the queued row")
    s = box.assign()
    app.pollers.refresh("research")
    login = f"ssh -p {s['ssh_port']} ubuntu@127.12.0.1"
    await until(pilot, lambda: login in screen_text(app), what="the assigned node's login")
    assert f"{s['hostname']} active 8" in screen_text(app)
    return nodes_of(app), s


async def connect_and_start(pilot, app, box: Box, nodes: NodesPane, s: dict) -> None:
    await pilot.press("enter")  # the box's known_hosts pins its key: connected with no question
    await until(
        pilot, lambda: app.flows.nodes.sessions.connected(s["hostname"]) or isinstance(app.screen, ConfirmModal)
    )
    assert not isinstance(app.screen, ConfirmModal) and app.flows.nodes.sessions.connected(s["hostname"])
    assert f"[127.12.0.1]:{s['ssh_port']} ssh-ed25519" in known_hosts_path().read_text()  # remembered as pinned
    await pilot.press("n")
    await until(pilot, lambda: "nanogpt-node.sh" in screen_text(app), what="the starter's question")
    assert isinstance(
        app.screen, ConfirmModal
    ) and f"curl -fsSL {box.sim.access_url}/first-job/nanogpt-node.sh | sh" in screen_text(app)
    assert "until it is released through Marshall" in screen_text(app)
    await pilot.press("y")
    await until(pilot, lambda: nodes.follower is not None and nodes.follower.state == "following", what="following")


def no_status(app) -> None:
    """As on the real service: no status to read (the client reads a 404 of the route as "unavailable", and then
    stops asking). The box's route cannot be faulted (its /_sim controls never are), so the slice is set so."""
    from ncui.api.models import ResearchStatus

    app.store.set("research", ResearchStatus(state="unavailable"))


def statuses(pane) -> list[str]:
    seen: list[str] = []
    real = pane.set_status

    def spy(text: str) -> None:
        seen.append(text)
        real(text)

    pane.set_status = spy
    return seen


async def test_account_and_lease_say_who_releases_and_whether_the_balance_covers_a_lease(box):
    app = app_for(box.sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "research", "balance", "summary"), what="the status")
        await until(pilot, lambda: "covers it" in screen_text(app), what="Account's lease line")
        text = screen_text(app)
        assert "Only Marshall's workspace requests and releases a public-research node" in text
        assert "ncui never requests or releases one" in text
        assert "One full lease (what a node request needs): 8 × H100-SXM-80GB at $2.50/GPU-h for 2 h = $40.00" in text
        assert "The balance $60.00 covers it." in text and "Loading" not in text
        await pilot.press("5")
        await until(pilot, lambda: "The node:" in screen_text(app), what="Lease")
        text = screen_text(app)
        s = box.status()
        assert f"queued for Marshall's pool: position {s['queue_position']}" in text
        assert "an estimate that assumes every lease ahead runs its full length" in text
        assert "The meter runs until the node is released through Marshall" in text and "Loading" not in text


async def test_where_the_status_cannot_be_read_ncui_says_what_it_does_not_know(box):
    """As on the real service: no status route (a 404), so the lease's price is unknown and the node is typed in."""
    app = app_for(box.sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "research", "balance"), what="the status")
        no_status(app)
        await pilot.press("5")
        await until(pilot, lambda: "The node:" in screen_text(app), what="Lease")
        text = screen_text(app)
        assert "ncui cannot tell whether the balance ($60.00) covers it" in text
        assert "Nothing defines a place where the workspace leaves the node's status" in text
        assert "type the node in with a on Workloads" in text


async def test_the_node_connect_the_starter_its_loss_lines_stop_and_copy_off_never_released(box):
    sim = box.sim
    app = app_for(sim)
    async with app.run_test(size=(100, 32)) as pilot:
        nodes, s = await assigned_row(pilot, app, box)
        await connect_and_start(pilot, app, box, nodes, s)
        assert "Runs nanogpt: the starter" in screen_text(app) and "ncui never releases it" in screen_text(app)
        sim.world.advance(300)
        await until(pilot, lambda: len(nodes.losses.points) >= 3, what="loss points in the chart")
        assert any(LOSS.search(x) for x in nodes.pane.lines_log.lines)

        seen = statuses(nodes.pane)
        await pilot.press("x")
        await until(pilot, lambda: "Sent: docker rm -f" in screen_text(app), what="the stop question")
        await until(pilot, lambda: app.screen.focused is not None, what="focus")
        text = screen_text(app)
        assert "Sent: docker rm -f nanogpt" in text and app.screen.focused.id == "no"
        assert "through Marshall's workspace (public_research_release); ncui never releases it" in text
        await pilot.press("y")
        await until(pilot, lambda: any("nanogpt was stopped" in x for x in seen), what="stopped")
        runner = app.flows.nodes.sessions.runners[s["hostname"]][1]
        assert "nanogpt" not in (await runner.run("docker ps -a")).stdout

        await pilot.press("c")
        await until(pilot, lambda: isinstance(app.screen, CopyOffModal), what="the copy-off form")
        assert (
            app.screen.query_one("#remote").value == "~/first-job/nanoGPT/out-shakespeare-char ~/first-job/nanogpt.out"
        )
        assert "dies with the lease" in screen_text(app)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CopyProgressModal) and app.screen.done, what="copied")
        progress = app.screen
        ckpt = box.file("first-job/nanoGPT/out-shakespeare-char")
        total = (
            sum(p.stat().st_size for p in ckpt.rglob("*") if p.is_file())
            + box.file("first-job/nanogpt.out").stat().st_size
        )
        assert progress.seen[-1] == (total, total) and len(progress.seen) >= 2 and total > 0
        assert f"Copied {total:,} bytes into" in screen_text(app)
        dest = box.home / "ncui-results" / s["hostname"]
        assert (dest / "nanogpt.out").read_text() == box.file("first-job/nanogpt.out").read_text()
        for p in ckpt.rglob("*"):
            if p.is_file():
                assert (dest / "out-shakespeare-char" / p.relative_to(ckpt)).read_bytes() == p.read_bytes()
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, CopyProgressModal))
        # the node's meter runs: quitting names it, its cost and who releases it (nothing ncui can), and asks
        assert "meters node $20.00/h" in screen_lines(app).splitlines()[0]  # the header, beside the light
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, ExitGuardModal), what="the quit question")
        text = screen_text(app)
        assert f"The public-research node {s['hostname']} is leased: its meter runs until it is released" in text
        assert "Per hour: $20.00/h (8 GPUs at $2.50/GPU-h)" in text
        assert "ncui cannot release it: only Marshall's workspace can (public_research_release" in text
        assert "k: goes on billing until Marshall releases it." in text
        assert not app.screen.query("#withdraw")  # no answer of ncui's releases it
        assert str(app.screen.query_one("#keep", Button).label) == "Leave it running, quit (k)"
        await pilot.press("w")  # (not an answer here)
        assert isinstance(app.screen, ExitGuardModal)
        await pilot.press("k")
        await until(pilot, lambda: app._exit, what="the app to exit")
    assert box.status()["state"] == "assigned"  # the node stays assigned
    source = "".join(p.read_text() for p in Path("ncui").rglob("*.py") if "sim" not in p.parts)
    assert "research/release" not in source  # no code path of ncui could release it


async def test_a_run_that_ends_by_itself_is_noticed_and_the_copy_off_offered(box, monkeypatch):
    monkeypatch.setattr(NodesPane, "RUN_CHECK", 0.2)
    sim = box.sim
    app = app_for(sim)
    async with app.run_test(size=(100, 32)) as pilot:
        nodes, s = await assigned_row(pilot, app, box)
        await connect_and_start(pilot, app, box, nodes, s)
        seen = statuses(nodes.pane)
        sim.world.advance(3700)  # past the run's end (it is time-boxed to about an hour)
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), 30, what="the run's end")
        await until(pilot, lambda: "dies with the lease" in screen_text(app), what="the question's body")
        text = screen_text(app)
        assert f"The run on {s['hostname']} ended" in text and "dies with the lease" in text
        await until(pilot, lambda: app.screen.focused is not None, what="focus")
        assert app.screen.focused.id == "yes"  # copying is the safe answer here
        assert any("the run ended (nanogpt exited)" in x for x in seen)
        want = box.file("first-job/nanogpt.out").read_text().splitlines()
        assert list(nodes.pane.lines_log.lines)[-len(want) :] == want and nodes.follower is None
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, CopyOffModal), what="the copy-off form")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CopyOffModal))
        assert s["hostname"] not in app.flows.nodes.sessions.runs and "Runs nanogpt" not in screen_text(app)


async def test_docker_missing_is_said_plainly(box):
    assert box.http.post("/_sim/ssh/docker", json={"missing": True}).status_code == 200
    app = app_for(box.sim)
    async with app.run_test(size=(100, 32)) as pilot:
        nodes, s = await assigned_row(pilot, app, box)
        await pilot.press("enter")
        await until(pilot, lambda: app.flows.nodes.sessions.connected(s["hostname"]), what="connected")
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the starter's question")
        await pilot.press("y")
        await until(pilot, lambda: "did not start" in screen_text(app), what="the starter's answer")
        assert isinstance(app.screen, ResultsModal)
        text = screen_text(app)
        assert f"The starter did not start on {s['hostname']}" in text
        assert "docker is not installed on this node, so nothing was started." in text
        assert "Nothing was started and nothing is running there." in text
        assert "Traceback" not in text and "exit status" not in text and nodes.follower is None
        assert s["hostname"] not in app.flows.nodes.sessions.runs


async def test_a_node_typed_in_is_checked_then_asked_about_and_a_wrong_pin_is_refused(box):
    """Where the status cannot be read (the real service), the node is typed in as user@ip: port 22, or the box's
    own; the host key is asked about the first time. Then a key in ~/.ssh/known_hosts that is not the node's:
    refused, nothing sent."""
    box.register()  # the human's key, registered before the assignment, is on the node
    s = box.assign()
    app = app_for(box.sim)
    async with app.run_test(size=(100, 32)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "research"), what="the status")
        no_status(app)
        await pilot.press("4")
        await until(pilot, lambda: "Nothing defines a place" in screen_text(app), what="no node")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, AddNodeModal), what="the form")
        for bad, why in (
            ("203.0.113.7", "Type the node's login as user@ip"),
            ("-oProxyCommand=x@203.0.113.7", "is not a login name"),
            (f"ubuntu@203.0.113.7:{s['ssh_port'] + 1}", "Port 22 is the only way in to a research node"),
        ):
            app.screen.query_one("#login").value = ""
            await type_text(pilot, bad)
            await pilot.press("enter")
            await until(pilot, lambda why=why: why in screen_text(app), what=why)
        app.screen.query_one("#login").value = f"ubuntu@127.12.0.1:{s['ssh_port']}"  # the box's own port (its config)
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, AddNodeModal), what="added")
        typed = "ubuntu@127.12.0.1"
        await until(pilot, lambda: typed in screen_text(app), what="the typed row")

        pins = box.home / ".ssh" / "known_hosts"  # where OpenSSH (and a Marshall workspace) pins host keys
        other = asyncssh.generate_private_key("ssh-ed25519")
        pins.write_text(known_hosts_line("127.12.0.1", s["ssh_port"], other))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, (ResultsModal, ConfirmModal)), what="the refusal")
        assert isinstance(app.screen, ResultsModal)  # never asked: refused
        await until(pilot, lambda: "Refused" in screen_text(app), what="the refusal's body")
        text = screen_text(app)
        assert f"Refused: the host key of {typed} changed" in text and other.get_fingerprint("sha256") in text
        assert str(pins) in text and "Nothing was sent to the node." in text
        assert not app.flows.nodes.sessions.connected(typed) and not known_hosts_path().exists()
        await pilot.press("enter")

        pins.write_text("")  # no pin: the first-use question
        await pilot.press("enter")
        await until(pilot, lambda: "SHA256:" in screen_text(app), what="the host key question")
        line = next(x for x in box.sim.ssh.known_hosts_path.read_text().splitlines() if x.endswith(" research-node"))
        fp = asyncssh.import_public_key(" ".join(line.split()[1:3])).get_fingerprint("sha256")
        await until(pilot, lambda: app.screen.focused is not None, what="focus")
        assert fp in screen_text(app) and app.screen.focused.id == "no"  # the node's own key, the safe answer first
        await pilot.press("y")
        await until(pilot, lambda: app.flows.nodes.sessions.connected(typed), what="connected with the human's own key")
        assert f"[127.12.0.1]:{s['ssh_port']} ssh-ed25519" in known_hosts_path().read_text()


def test_snapshot_workloads_on_the_research_node(snap_compare, box):
    """Workloads on the research node at 80×24: its row and login, the starter's log ten minutes in, the loss
    chart, the meter's sentence. Frozen clocks; the node's port (the OS picks it) is reported as 2222."""
    sim = box.sim
    app = app_for(sim)

    async def ready(pilot):
        nodes, s = await assigned_row(pilot, app, box)
        await connect_and_start(pilot, app, box, nodes, s)
        sim.world.advance(600)
        want = box.file("first-job/nanogpt.out").read_text().splitlines()
        await until(pilot, lambda: list(nodes.pane.lines_log.lines) == want, what="the log on screen")
        with sim.world.lock:
            sim.world.main_org.research.ssh_port = 2222
        app.pollers.refresh("research")
        await until(pilot, lambda: "ssh -p 2222 ubuntu@" in screen_text(app), what="the fixed port")
        chart = app.query_one("#node-loss-chart")
        await until(pilot, lambda: not chart.pending, what="the loss chart drawn with the last points")
        # the first loss line is a moment (ncui/notify): said once, maybe after the chart; no part of this screen
        await until(
            pilot,
            lambda: any(n.title == "First loss line" for n in list(app._notifications)),
            what="the first loss line's notification",
        )
        app.clear_notifications()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)
