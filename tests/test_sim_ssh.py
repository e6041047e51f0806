"""The box's VM nodes are real ssh endpoints: OpenSSH's own ssh, scp and sftp reach them as the guide says.

Each test declares VM capacity in the box over loopback HTTP, lets the box's clock bring the node up, and
talks to it with the real OpenSSH client (keys made by ssh-keygen in tmp_path, registered through the API).
"""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from ncui.remote.node import NODE_LOG, ContainerLogFollower, FileFollower, docker_run, start_starter, stop
from ncui.remote.runner import SshRunner
from ncui.sim.server import SimServer
from ncui.sim.ssh.node import STOCK
from ncui.sim.world import JOIN_MAX

from .conftest import make_world, wait_for
from .kc_support import until
from .screentext import joined
from .simproc import SimProcess
from .tmuxterm import env_for

pytestmark = pytest.mark.peers("ssh", "scp", "sftp", "ssh-keygen")
LOSS = re.compile(r"iter \d+: loss \d+\.\d{4}, time \d+\.\d{2}ms")
CAPTURE: dict = {"capture_output": True, "text": True, "timeout": 30, "stdin": subprocess.DEVNULL}
STAMPED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z) (.*)$")


class Box:
    """The box in the vm scenario, driven as a client would: keys, capacity, the clock."""

    def __init__(self, sim, tmp: Path) -> None:
        self.sim, self.tmp = sim, tmp
        self.http = httpx.Client(base_url=sim.api_url, headers={"Authorization": f"Bearer {sim.token}"}, timeout=20)
        self.org = self.http.get("/api/whoami").json()["org_id"]
        self.price = sim.world.markets["H100-SXM-80GB"].ladder(1)[0][1] / 1e6
        self.config = str(sim.ssh.config_path)

    def key(self, name: str) -> Path:
        path = self.tmp / name
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
        return path

    def register(self, key: Path) -> None:
        body = {"name": key.name, "public_key": key.with_suffix(".pub").read_text()}
        assert self.http.post(f"/api/vm/orgs/{self.org}/ssh-keys", json=body).status_code == 201

    def capacity(self) -> dict:
        return self.http.get("/api/vm/capacity").json()

    def declare(self, gpus: int, price: float | None = None) -> dict:
        body = {"max_gpus": gpus, "max_price_per_gpu_hour": price or self.price}
        r = self.http.put("/api/vm/capacity", json={**body, "expected_version": self.capacity()["version"]})
        assert r.status_code == 200, r.text
        return r.json()

    def advance(self, seconds: float) -> None:
        assert self.http.post("/_sim/advance", json={"seconds": seconds}).status_code == 200

    def live(self) -> list[dict]:
        return [a for a in self.capacity()["allocations"] if a["state"] not in ("released", "reclaimed")]

    def ssh(
        self, alias: str, command: str, key: Path, *args: str, stdin: str | None = None
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ssh", "-F", self.config, *_opts(key), *args, alias, command],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=30,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )

    def close(self) -> None:
        self.http.close()


def _opts(key: Path) -> list[str]:
    opts = ("BatchMode=yes", "IdentitiesOnly=yes", "IdentityAgent=none", "ConnectTimeout=10")
    return ["-i", str(key), *(x for o in opts for x in ("-o", o))]


@pytest.fixture
def box(sim_factory, tmp_path):
    b = Box(sim_factory("vm", volatility=0.0), tmp_path)
    yield b
    b.close()


@pytest.fixture
def node(box):
    """A node granted with key ``a`` registered (``late`` registered after the grant): (box, alloc, a, late)."""
    a, late = box.key("a"), box.key("late")
    box.register(a)
    box.declare(8)
    box.advance(120)
    (alloc,) = box.live()
    assert alloc["state"] in ("pending", "provisioning") and alloc["public_ip"] is None
    box.register(late)
    box.advance(JOIN_MAX)
    (alloc,) = box.live()
    assert alloc["state"] == "active" and alloc["public_ip"].startswith("127.10.") and alloc["ssh_port"] != 22
    return box, alloc, a, late


class Follower:
    """A long-running ssh command whose stdout lines are collected by a thread."""

    def __init__(self, argv: list[str]) -> None:
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, text=True, **pipes)
        self.lines: list[str] = []
        self._t = threading.Thread(target=lambda: [self.lines.append(x.rstrip("\n")) for x in self.proc.stdout or []])
        self._t.start()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        self.proc.wait(10)
        self._t.join(10)
        for stream in (self.proc.stdout, self.proc.stderr):  # closed here, not by the garbage collector
            if stream is not None:
                stream.close()


def test_a_key_registered_before_the_grant_gets_in_one_registered_after_is_refused(node):
    box, alloc, a, late = node
    r = box.ssh(alloc["id"], "nvidia-smi -L", a)  # the Host block of NC_SSH_CONFIG, host key pinned
    assert r.returncode == 0, r.stderr
    gpus = r.stdout.splitlines()
    assert len(gpus) == 8 and all(
        re.fullmatch(r"GPU \d: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f-]+\)", g) for g in gpus
    )
    table = [x for x in box.ssh(alloc["id"], "nvidia-smi", a).stdout.splitlines() if x[:1] in "|+"]
    bars = {tuple(i for i, c in enumerate(x) if c in "|+") for x in table if "NVIDIA-SMI" not in x and "---" not in x}
    assert len(table) == 6 + 8 * 3 and bars == {(0, 42, 67, 90)}, table  # every row's columns line up

    # As the guide says it, plus -p: ssh <ssh_user>@<public_ip>, the host key checked against the box's file.
    known = str(box.sim.ssh.known_hosts_path)
    pinned = ["-o", f"UserKnownHostsFile={known}", "-o", "StrictHostKeyChecking=yes"]
    login = ["-p", str(alloc["ssh_port"]), f"ubuntu@{alloc['public_ip']}", "echo $HOME"]
    by_hand = ["ssh", "-F", "/dev/null", *_opts(a), *pinned, *login]
    r = subprocess.run(by_hand, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and r.stdout == "/home/ubuntu\n", r.stderr

    r = box.ssh(alloc["id"], "true", late)
    assert r.returncode == 255 and "Permission denied (publickey)" in r.stderr
    r = box.ssh(alloc["id"], "true", a, "-l", "root")  # only the cluster's ssh_user
    assert r.returncode == 255 and "Permission denied" in r.stderr

    # The next grant installs the late key too, and the new node has a host key of its own.
    old_line = Path(known).read_text()
    box.declare(0)
    box.declare(8)
    box.advance(120 + JOIN_MAX)
    (second,) = box.live()
    assert second["id"] != alloc["id"] and second["state"] == "active"
    assert box.ssh(second["id"], "whoami", late).stdout == "ubuntu\n"
    new_line = Path(known).read_text()
    assert old_line.split()[2] != new_line.split()[2] and alloc["id"] not in new_line


def test_docker_logs_follows_the_stock_image_run_at_the_box_clock(node):
    box, alloc, a, _ = node
    image = STOCK["nvidia"]
    assert image.startswith("pytorch/pytorch:")  # the Train recipe's image is the stock one
    r = box.ssh(
        alloc["id"], f"docker run -d --gpus all --name nanogpt -v /data:/data -e X=1 {image} python train.py", a
    )
    assert r.returncode == 0 and re.fullmatch(r"[0-9a-f]{64}\n", r.stdout), r.stderr
    assert "nanogpt" in box.ssh(alloc["id"], "docker ps", a).stdout

    f = Follower(["ssh", "-F", box.config, *_opts(a), alloc["id"], "docker logs -f -t nanogpt"])
    try:
        assert not any(LOSS.search(x) for x in f.lines)
        box.advance(300)  # the clock moves: the run prints its loss lines, the follower sees them arrive
        wait_for(lambda: sum(bool(LOSS.search(x)) for x in f.lines) >= 3, 20, what="loss lines while following")
        stamped = [STAMPED.match(x) for x in f.lines]
        assert all(stamped), f.lines[:3]
        losses = [m for m in stamped if m and LOSS.fullmatch(m.group(2))]
        # Resume as ncui/kube/logs.py does: --since the last timestamp seen keeps the lines at or after it.
        since = losses[1].group(1)
        r = box.ssh(alloc["id"], f"docker logs -t --since {since} nanogpt", a)
        resumed = r.stdout.splitlines()
        assert (
            resumed[0] == f"{since} {losses[1].group(2)}" and resumed[1] == f"{losses[2].group(1)} {losses[2].group(2)}"
        )
        tail = box.ssh(alloc["id"], "docker logs --tail 2 nanogpt", a).stdout.splitlines()
        assert len(tail) == 2 and not STAMPED.match(tail[0])

        assert box.ssh(alloc["id"], "docker rm -f nanogpt", a).stdout == "nanogpt\n"
        assert f.proc.wait(20) == 0  # docker logs -f ends with its container
        assert "nanogpt" not in box.ssh(alloc["id"], "docker ps -a", a).stdout
    finally:
        f.stop()

    # Any other image: the box says it does not run images and echoes the command, as its pods do.
    r = box.ssh(alloc["id"], "docker run -d --name mine alpine:3 sh -c 'echo hi'", a)
    assert r.returncode == 0
    box.advance(120)
    out = box.ssh(alloc["id"], "docker logs mine", a).stdout
    assert "alpine:3: the simulator does not run images" in out and "command: sh -c echo hi" in out
    r = box.ssh(alloc["id"], "docker run -d --name mine alpine:3 true", a)
    assert r.returncode == 125 and 'The container name "/mine" is already in use' in r.stderr


def test_the_starter_runs_and_its_log_tails(node):
    box, alloc, a, _ = node
    starter = f"{box.sim.access_url}/first-job/nanogpt-node.sh"
    r = box.ssh(alloc["id"], f"curl -fsSL {starter} | sh", a)
    assert r.returncode == 0 and "started container nanogpt" in r.stdout, r.stderr
    box.advance(400)
    r = box.ssh(alloc["id"], "tail -n 5 ~/first-job/nanogpt.out", a)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 5 and LOSS.fullmatch(lines[-1]), r.stdout
    # The guide's own command line (the real catalog's address) works the same; a second start says it runs.
    r = box.ssh(alloc["id"], "curl -fsSL https://access.nationalcompute.com/first-job/nanogpt-node.sh | sh", a)
    assert "already running" in r.stdout
    r = box.ssh(alloc["id"], "curl -fsSL https://example.com/x.sh | sh", a)
    assert r.returncode != 0 and "reaches only the box's recipe catalog" in r.stderr


def test_an_unknown_command_exits_127_and_nothing_runs_on_the_host(node, tmp_path):
    box, alloc, a, _ = node
    victim = tmp_path / "pwned"
    r = box.ssh(alloc["id"], f"touch {victim}", a)
    assert r.returncode == 127 and r.stderr == "touch: not available on this simulated node\n"
    r = box.ssh(alloc["id"], f'echo first && python3 -c \'open("{victim}", "w")\'', a)
    assert r.returncode == 127 and r.stdout == "first\n" and "python3: not available" in r.stderr
    assert not victim.exists()
    r = box.ssh(alloc["id"], "cat ../../../../etc/hostname", a)  # the node's / is its scratch folder
    assert r.returncode == 1 and "No such file" in r.stderr


def test_an_interactive_shell_with_a_pty(node):
    box, alloc, a, _ = node
    r = subprocess.run(
        ["ssh", "-F", box.config, *_opts(a), "-tt", alloc["id"]],
        input="echo hello > greeting\ncat greeting\ndf -h\nexit 3\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 3, r.stderr
    # The pty echoes what was typed (here all typed ahead), then each command's output follows a prompt.
    assert "echo hello > greeting\n" in r.stdout and f"ubuntu@{alloc['id']}:~$ hello\n" in r.stdout
    assert "/dev/shm" in r.stdout


def test_scp_and_sftp_copy_files_off_the_node(node, tmp_path):
    box, alloc, a, _ = node
    box.ssh(alloc["id"], f"curl -fsSL {box.sim.access_url}/first-job/nanogpt-node.sh | sh", a)
    box.advance(600)
    on_node = box.ssh(alloc["id"], "cat first-job/nanogpt.out", a).stdout
    assert LOSS.search(on_node)
    scp = ["scp", "-F", box.config, *_opts(a)]
    r = subprocess.run([*scp, f"{alloc['id']}:~/first-job/nanogpt.out", str(tmp_path / "a.out")], **CAPTURE)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "a.out").read_text() == on_node
    r = subprocess.run(
        [*scp, "-O", f"{alloc['id']}:first-job/nanogpt.out", str(tmp_path / "b.out")],
        capture_output=True,
        text=True,
        timeout=30,
    )  # fmt: skip  (the legacy scp protocol)
    assert r.returncode == 0 and (tmp_path / "b.out").read_text() == on_node, r.stderr
    ckpt = "first-job/nanoGPT/out-shakespeare-char/ckpt.pt"
    batch = f"pwd\nls first-job\nls -l first-job\nls -ln first-job\nget {ckpt} {tmp_path}/ckpt.pt\n"
    sftp = ["sftp", "-F", box.config, *_opts(a), "-b", "-", alloc["id"]]
    r = subprocess.run(sftp, capture_output=True, text=True, input=batch, timeout=30)
    assert r.returncode == 0 and "/home/ubuntu" in r.stdout, r.stderr
    assert "checkpoint" in (tmp_path / "ckpt.pt").read_text()
    long = [x.split() for x in r.stdout.splitlines() if x.startswith(("-", "d")) and x.endswith("nanogpt.out")]
    assert [x[2:4] for x in long] == [["ubuntu", "ubuntu"], ["1000", "1000"]], r.stdout  # the node's user's files


@pytest.mark.peers("rsync")
def test_rsync_copies_to_and_from_the_node_within_its_disk(node, tmp_path):
    """The real rsync over the real ssh: its server side is the real ``rsync --server``, confined to the node's
    disk as SFTP is (its ``/`` is the node's own; relative paths from the home folder; links munged)."""
    box, alloc, a, _ = node
    node_id, scratch = alloc["id"], box.sim.ssh.scratch(alloc["id"])
    assert scratch is not None

    def rsync(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["rsync", "-e", " ".join(["ssh", "-F", box.config, *_opts(a)]), *args], **CAPTURE)

    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "notes.txt").write_text("hello from the workspace\n")
    (src / "sub" / "weights bin").write_bytes(bytes(range(256)) * 400)  # binary, a space in its name
    (src / "etc").symlink_to("/etc")
    r = rsync("-av", f"{src}/", f"{node_id}:results/")
    assert r.returncode == 0 and "sub/weights bin" in r.stdout, r.stderr
    assert box.ssh(node_id, "cat results/notes.txt", a).stdout == "hello from the workspace\n"
    assert box.ssh(node_id, "ls results/sub", a).stdout == "weights bin\n"
    assert (scratch / "home/ubuntu/results/sub/weights bin").read_bytes() == (src / "sub" / "weights bin").read_bytes()
    assert not (scratch / "home/ubuntu/results/etc").resolve().is_relative_to("/etc")  # the link can lead nowhere

    box.ssh(node_id, f"curl -fsSL {box.sim.access_url}/first-job/nanogpt-node.sh | sh", a)
    box.advance(600)
    log = box.ssh(node_id, "cat first-job/nanogpt.out", a).stdout
    assert LOSS.search(log)
    back = tmp_path / "back"
    r = rsync("-a", f"{node_id}:first-job/nanogpt.out", f"{node_id}:/home/ubuntu/results", f"{back}/")
    assert r.returncode == 0, r.stderr
    assert (back / "nanogpt.out").read_text() == log and (back / "results" / "notes.txt").is_file()
    assert (back / "results" / "etc").readlink() == Path("/etc")  # given back as it was sent
    r = rsync("-a", f"{node_id}:~/results/sub/weights bin", str(tmp_path / "one"))
    assert r.returncode == 0 and (tmp_path / "one").read_bytes() == (src / "sub" / "weights bin").read_bytes()

    # nothing outside the node's disk, read or written: ../ is refused, / is the node's, a link leads nowhere
    victim = tmp_path / "pwned"
    for args, said in (
        ((f"{node_id}:../../../etc/hostname", str(tmp_path / "x")), "outside this node's disk"),
        ((str(src / "notes.txt"), f"{node_id}:../../..{victim}"), "outside this node's disk"),
        ((f"{node_id}:/etc/hostname", str(tmp_path / "x")), 'link_stat "/etc/hostname" failed'),
        ((f"{node_id}:results/etc/hostname", str(tmp_path / "x")), 'link_stat "/home/ubuntu/results/etc/hostname"'),
        ((str(src / "notes.txt"), f"{node_id}:results/etc/pwned"), "unsafe arg"),
    ):
        r = rsync("-a", *args)
        assert r.returncode != 0 and said in r.stderr, (args, r.stderr)
    assert not (tmp_path / "x").exists() and not victim.exists() and not Path("/etc/pwned").exists()


def _refused(ip: str, port: int) -> bool:
    try:
        socket.create_connection((ip, port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_release_ends_sessions_closes_the_port_and_deletes_the_disk(node):
    box, alloc, a, _ = node
    scratch = box.sim.ssh.scratch(alloc["id"])
    assert scratch is not None and (scratch / "home" / "ubuntu").is_dir()
    assert f"Host {alloc['id']}" in Path(box.config).read_text()
    f = Follower(["ssh", "-F", box.config, *_opts(a), alloc["id"], "echo following; tail -F nothing-yet"])
    try:
        wait_for(lambda: f.lines == ["following"], 20, what="the session to start")
        assert [x["state"] for x in box.declare(0)["allocations"]] == ["released"]
        assert f.proc.wait(20) != 0  # the session ended with the node
    finally:
        f.stop()
    assert _refused(alloc["public_ip"], alloc["ssh_port"])
    assert not scratch.exists()
    assert alloc["id"] not in Path(box.config).read_text()
    assert alloc["id"] not in box.sim.ssh.known_hosts_path.read_text()


def test_a_reclaim_ends_the_node_too(node):
    box, alloc, a, _ = node
    scratch = box.sim.ssh.scratch(alloc["id"])
    floor = box.sim.world.markets["H100-SXM-80GB"].floor / 1e6
    box.declare(8, floor)  # outbid at the floor: the market takes the node back at its next step
    box.advance(120)
    assert [x["state"] for x in box.capacity()["allocations"]] == ["reclaimed"]
    wait_for(lambda: _refused(alloc["public_ip"], alloc["ssh_port"]), 10, what="the listener to close")
    wait_for(lambda: scratch is not None and not scratch.exists(), 10, what="the scratch folder to go")


def test_the_box_stops_its_ssh_nodes_with_it(tmp_path):
    sim = SimServer(make_world("vm", volatility=0.0)).start()
    try:
        box = Box(sim, tmp_path)
        box.register(box.key("a"))
        box.declare(8)
        box.advance(120 + JOIN_MAX)
        (alloc,) = box.live()
        box.close()
        assert alloc["state"] == "active" and not _refused(alloc["public_ip"], alloc["ssh_port"])
        folder = sim.ssh.folder
    finally:
        sim.stop()
    assert _refused(alloc["public_ip"], alloc["ssh_port"]) and not folder.exists()
    assert not [t for t in threading.enumerate() if t.name == "ncui-sim-ssh"]


def test_ncui_sim_prints_its_ssh_config():
    with SimProcess("--scenario", "vm") as sim:
        path = Path(sim.env["NC_SSH_CONFIG"])
        assert path.is_file() and "\nHost " not in path.read_text()  # no node granted yet


@pytest.mark.peers("tmux")
async def test_ctrl_c_in_a_terminal_stops_following_and_the_shell_goes_on(node, tmux_factory, tmp_path):
    box, alloc, a, _ = node
    box.ssh(alloc["id"], f"docker run -d --gpus all --name nanogpt {STOCK['nvidia']} python train.py", a)
    term = tmux_factory(env_for(tmp_path), width=100)
    term.run("ssh", "-F", box.config, *_opts(a), alloc["id"])
    await term.until(lambda s: f"ubuntu@{alloc['id']}:~$" in s, 30, "the prompt")
    term.keys("docker logs -f nanogpt", "Enter")
    box.advance(300)
    await term.until(lambda s: LOSS.search(s), 30, "loss lines on the terminal")
    term.keys("C-c")
    # the prompt again, last on the screen, before typing (a terminal drops what is typed ahead of ^C)
    prompt = f"ubuntu@{alloc['id']}:~$"
    await term.until(lambda s: s.rstrip().endswith(prompt), 30, "the prompt after Ctrl-C", lines=True)
    term.keys("echo back; frobnicate", "Enter")  # the session goes on; stderr shows in the terminal
    screen = await term.until(
        lambda s: "frobnicate: not available on this simulated node" in joined(s), 30, "the shell", lines=True
    )
    assert "\nback\n" in screen


async def test_ncui_remote_runs_the_starter_and_follows_across_a_dropped_session(node):
    """ncui's own ssh layer against the box's node: the starter, then both followers; the box cuts every
    session mid-run and each follower reconnects and resumes with nothing lost or repeated."""
    box, alloc, a, _ = node
    known = box.sim.ssh.known_hosts_path
    opts = {"known_hosts": known, "client_keys": [a], "agent_path": None, "config": [], "keepalive_interval": 1}
    async with SshRunner(alloc["public_ip"], alloc["ssh_port"], "ubuntu", **opts) as r:
        assert (await start_starter(r, box.sim.access_url)).ok
        await docker_run(r, STOCK["nvidia"], "python train.py", "mine")
        from_file: list[str] = []
        from_docker: list[str] = []
        ff = FileFollower(r, NODE_LOG, poll=0.2, on_lines=from_file.extend, batch_interval=0.02, backoff=(0.05, 0.5))
        cf = ContainerLogFollower(r, "mine", on_lines=from_docker.extend, batch_interval=0.02, backoff=(0.05, 0.5))
        tasks = [asyncio.ensure_future(ff.run()), asyncio.ensure_future(cf.run())]
        try:
            box.advance(300)
            await until(
                lambda: any(LOSS.search(x) for x in from_file + from_docker[-1:]), 20, what="the first loss lines"
            )
            assert box.http.post("/_sim/ssh/drop").json()["dropped"] >= 1
            box.advance(300)  # written while the sessions are down
            await until(lambda: ff.streams >= 2 and cf.streams >= 2, 20, what="both followers to reconnect")
            box.advance(100)
            want_file = (await r.run(f"cat {NODE_LOG}", check=True)).stdout.splitlines()
            await until(lambda: from_file == want_file, 20, what="every line of the file, once")
            want_docker = (await r.run("docker logs mine", check=True)).stdout.splitlines()
            await until(lambda: from_docker == want_docker, 20, what="every line of the container's log, once")
            assert sum(bool(LOSS.search(x)) for x in want_file) > 20 and LOSS.search(want_docker[-1])
            await stop(r, "mine")
            await asyncio.wait_for(tasks[1], 20)  # docker logs -f ends with its container
            assert cf.ended and from_docker == want_docker
        finally:
            ff.stop()
            cf.stop()
            await asyncio.gather(*tasks, return_exceptions=True)
