"""ncui's ssh layer (ncui/remote) against a real OpenSSH server on loopback (tests/sshd_support.py)."""

from __future__ import annotations

import asyncio
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import asyncssh
import pytest

from ncui.config import known_hosts_path
from ncui.remote.node import ContainerLogFollower, FileFollower, docker_run_command
from ncui.remote.runner import (
    AuthFailed,
    CommandFailed,
    CopyFailed,
    Disconnected,
    HostKeyChanged,
    HostKeyUnknown,
    Refused,
    Result,
    SshRunner,
    Unreachable,
    known_hosts_line,
)
from tests.peers import need_peer
from tests.sshd_support import Sshd, free_port, until, write_key

NASTY = 'it\'s "quoted" $HOME `id` $(id); echo done; \\ back\nsecond line\ttab & | > < * ? ~ ünïcödé'


def runner_for(sshd: Sshd, known: Path, *, confirm=None, key: Path | None = None, **kw) -> SshRunner:
    """A runner that uses only the test's key and config (never the human's ~/.ssh, agent or config)."""
    return SshRunner(
        sshd.host,
        sshd.port,
        sshd.user,
        known_hosts=known,
        client_keys=[key or sshd.client_key],
        confirm_host_key=confirm,
        agent_path=None,
        config=[],
        **kw,
    )


def trusted(sshd: Sshd, tmp_path: Path) -> Path:
    """A known_hosts that already holds the server's key (tests about something else than the first contact)."""
    known = tmp_path / "known_hosts"
    known.write_text(known_hosts_line(sshd.host, sshd.port, sshd.host_key))
    return known


async def yes(host: str, port: int, fingerprint: str) -> bool:
    return True


def accepted(sshd: Sshd) -> int:
    """How many logins the server accepted (its own log says)."""
    return sshd.log.read_text(errors="replace").count("Accepted publickey")


def running(*words: str) -> bool:
    """A process on this machine whose command line holds every one of ``words``."""
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if all(w in cmd for w in words):
                return True
    return False


async def test_first_use_host_key_is_asked_once_and_remembered_in_openssh_format(sshd, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    known = known_hosts_path()
    assert known == tmp_path / "state" / "ncui" / "known_hosts"
    asked = []

    async def ask(host, port, fingerprint):
        asked.append((host, port, fingerprint))
        return True

    async with runner_for(sshd, known, confirm=ask) as r:
        assert await r.run("echo hello") == Result(0, "hello\n", "")
    assert sshd.fingerprint.startswith("SHA256:") and asked == [(sshd.host, sshd.port, sshd.fingerprint)]
    kind, data = sshd.host_key.export_public_key().decode().split()[:2]
    assert known.read_text() == f"[127.0.0.1]:{sshd.port} {kind} {data}\n"  # a non-22 port: [host]:port
    assert stat.S_IMODE(known.stat().st_mode) == 0o600

    async def never(host, port, fingerprint):
        raise AssertionError("asked again about a remembered host key")

    async with runner_for(sshd, known, confirm=never) as r2:
        assert (await r2.run("true")).ok
    # OpenSSH's own client, with ncui's file as its only known_hosts and strict checking, gets in
    out = subprocess.run(
        [need_peer("ssh"), "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
        + ["-o", f"UserKnownHostsFile={known}", "-o", "GlobalKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes"]
        + ["-i", str(sshd.client_key), "-p", str(sshd.port), "root@127.0.0.1", "echo via-openssh"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.stdout == "via-openssh\n", out.stderr


async def test_host_key_refused_by_the_human_connects_nothing_and_remembers_nothing(sshd, tmp_path):
    known = tmp_path / "state" / "known_hosts"

    async def no(host, port, fingerprint):
        return False

    r = runner_for(sshd, known, confirm=no)
    with pytest.raises(HostKeyUnknown) as e:
        await r.run("touch should-not-exist")
    assert sshd.fingerprint in str(e.value) and e.value.fingerprint == sshd.fingerprint
    with pytest.raises(HostKeyUnknown):  # nobody to ask: refused the same way
        await runner_for(sshd, known).run("true")
    assert not known.exists() and not r.connected and r.connects == 0
    assert accepted(sshd) == 0  # no login happened
    await r.close()


async def test_a_changed_host_key_is_refused_loudly_and_never_connected(sshd, tmp_path):
    known = tmp_path / "state" / "known_hosts"
    async with runner_for(sshd, known, confirm=yes) as r:
        await r.run("true")
    before, old = known.read_text(), sshd.fingerprint
    sshd.restart(new_host_key=True)  # the node rebuilt on the same address (or someone else answering there)
    asked = []

    async def ask(host, port, fingerprint):
        asked.append(fingerprint)
        return True

    r2 = runner_for(sshd, known, confirm=ask)
    with pytest.raises(HostKeyChanged) as e:
        await r2.run("echo should-not-run")
    msg = str(e.value)
    assert old in msg and sshd.fingerprint in msg and old != sshd.fingerprint
    assert "rebuilt" in msg and str(known) in msg and f"[127.0.0.1]:{sshd.port}" in msg  # how to fix it
    assert e.value.remembered == [old] and e.value.presented == sshd.fingerprint
    assert asked == [] and known.read_text() == before and not r2.connected
    assert accepted(sshd) == 1  # only the first runner's login
    await r2.close()
    # the fix the message gives, as it gives it, works: asked about the new key, then connected
    fix = msg[msg.index("(ssh-keygen -R") + 1 : msg.index(") and connect again")]
    subprocess.run(fix, shell=True, check=True, capture_output=True, timeout=30)
    async with runner_for(sshd, known, confirm=ask) as r3:
        assert (await r3.run("echo rebuilt")).stdout == "rebuilt\n"
    assert asked == [sshd.fingerprint]


async def test_auth_failure_names_the_keys_tried_by_fingerprint_never_their_material(sshd, tmp_path):
    other = write_key(tmp_path / "not_authorised", asyncssh.generate_private_key("ssh-ed25519"))
    r = runner_for(sshd, trusted(sshd, tmp_path), key=other)
    with pytest.raises(AuthFailed) as e:
        await r.run("true")
    fp = asyncssh.read_private_key(str(other)).get_fingerprint("sha256")
    assert e.value.tried == [f"{fp} ({other})"]
    msg = str(e.value)
    assert fp in msg and "refused every key" in msg
    public_b64 = Path(f"{other}.pub").read_text().split()[1]
    assert public_b64 not in msg and "PRIVATE" not in msg and other.read_text().splitlines()[1] not in msg
    await r.close()


async def test_nothing_listening_is_refused_and_a_bad_name_unreachable(tmp_path):
    r = SshRunner("127.0.0.1", free_port(), "ubuntu", known_hosts=tmp_path / "kh", confirm_host_key=yes, config=[])
    with pytest.raises(Refused, match="refused the connection"):
        await r.run("true")
    r2 = SshRunner("no-such-node.invalid", 22, "ubuntu", known_hosts=tmp_path / "kh", connect_timeout=5, config=[])
    with pytest.raises(Unreachable, match="no-such-node.invalid"):
        await r2.run("true")
    assert not (tmp_path / "kh").exists()


async def test_run_gives_status_and_output_on_one_reused_connection(sshd, tmp_path):
    async with runner_for(sshd, trusted(sshd, tmp_path)) as r:
        res = await r.run("printf 'a\\nb'; echo oops >&2; exit 3")
        assert res == Result(3, "a\nb", "oops\n") and not res.ok
        with pytest.raises(CommandFailed) as e:
            await r.run("echo no such thing >&2; exit 7", check=True)
        assert e.value.exit_status == 7 and "exit status 7" in str(e.value) and "no such thing" in str(e.value)
        big = await r.run("head -c 3000000 /dev/zero | tr '\\0' x", max_output=1000)
        assert big.ok and big.truncated and big.stdout == "x" * 1000  # bounded, and the command still ran to its end
        assert r.connects == 1  # one connection for every command


async def test_a_command_cut_by_a_drop_raises_disconnected_and_the_next_one_reconnects(sshd, tmp_path):
    async with runner_for(sshd, trusted(sshd, tmp_path), keepalive_interval=1) as r:
        task = asyncio.ensure_future(r.run("echo started; cat"))  # cat waits on its input: a command still running
        await until(lambda: sshd.sessions() and accepted(sshd), what="the session on the server")
        assert sshd.drop_sessions() >= 1
        with pytest.raises(Disconnected, match="dropped"):
            await asyncio.wait_for(task, 30)
        assert (await r.run("echo again")).stdout == "again\n"  # never the cut command again: a new connection
        assert r.connects == 2


async def test_quoting_round_trip_through_the_remote_shell(sshd, tmp_path):
    async with runner_for(sshd, trusted(sshd, tmp_path)) as r:
        assert (await r.run(f"printf %s {shlex.quote(NASTY)}")).stdout == NASTY
        # docker run's line as the node's real shell splits it (docker is a shell function that prints its words)
        cmd = docker_run_command("pytorch/pytorch:2.5.1", NASTY, "my-run", env={"A": "x y $Z"})
        res = await r.run("docker() { printf '%s\\0' \"$@\"; }; " + cmd)
        assert res.stdout.split("\0")[:-1] == (
            ["run", "-d", "--name", "my-run", "--gpus", "all", "-e", "A=x y $Z", "pytorch/pytorch:2.5.1"]
            + ["sh", "-c", NASTY]
        )


async def test_follow_a_growing_file_in_batches_and_stop_the_remote_tail(sshd, tmp_path):
    path = tmp_path / "grow ing.log"  # does not exist yet; a space in its name
    got: list[str] = []
    batches = []
    async with runner_for(sshd, trusted(sshd, tmp_path)) as r:

        async def consume():
            async for batch in r.follow(f"tail -n +1 -F -s 0.2 {shlex.quote(str(path))}"):
                batches.append(batch)
                got.extend(batch)
                if len(got) >= 300:
                    break

        task = asyncio.ensure_future(consume())
        for i in range(3):
            with open(path, "a") as f:
                f.write("".join(f"line {n}\n" for n in range(100 * i, 100 * i + 100)))
            await until(lambda i=i: len(got) >= 100 * (i + 1), what=f"{100 * (i + 1)} lines")
        await task
        assert got == [f"line {n}" for n in range(300)]
        assert len(batches) < 300  # lines come in batches, not one call per line
        await until(lambda: not running("tail", str(path)), what="the remote tail to end")


async def test_file_follower_resumes_after_a_dropped_connection_with_nothing_lost_or_repeated(sshd, tmp_path):
    path = tmp_path / "run.out"
    path.write_text("")
    got: list[str] = []
    async with runner_for(sshd, trusted(sshd, tmp_path), keepalive_interval=1) as r:
        f = FileFollower(r, str(path), poll=0.2, on_lines=got.extend, batch_interval=0.02, backoff=(0.05, 0.5))
        task = asyncio.ensure_future(f.run())
        with open(path, "a") as out:
            out.write("".join(f"iter {n}: loss 2.{n:04d}, time 1.00ms\n" for n in range(50)))
        await until(lambda: len(got) >= 50, what="the first 50 lines")
        assert sshd.drop_sessions() >= 1
        with open(path, "a") as out:  # written while the connection is down
            out.write("".join(f"iter {n}: loss 2.{n:04d}, time 1.00ms\n" for n in range(50, 80)))
        await until(lambda: f.streams >= 2 and len(got) >= 80, what="resumed lines")
        with open(path, "a") as out:
            out.write("".join(f"iter {n}: loss 2.{n:04d}, time 1.00ms\n" for n in range(80, 100)))
        await until(lambda: len(got) >= 100, what="all 100 lines")
        f.stop()
        await task
        assert got == [f"iter {n}: loss 2.{n:04d}, time 1.00ms" for n in range(100)]
        assert r.connects >= 2 and f.texts() == got and not f.failed


DOCKER_STANDIN = """#!{python}
# A stand-in for `docker logs -f -t [--since TS] NAME` (the box's simulated node arrives later): the lines of
# container.log beside this script at or after TS, then what is appended; a line STOP is the container stopping.
import os, select, sys
args = sys.argv[1:]
assert args[:3] == ["logs", "-f", "-t"], args
since = args[args.index("--since") + 1] if "--since" in args else ""
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls"), "a") as calls:
    calls.write(" ".join(args) + "\\n")
log = os.path.join(os.path.dirname(os.path.abspath(__file__)), "container.log")
watch = select.poll()
watch.register(1, 0)  # only POLLERR/POLLHUP: the reader (the ssh channel) went away
pos, part = 0, ""
while True:
    with open(log) as f:
        f.seek(pos)
        data = f.read()
        pos = f.tell()
    part += data
    *lines, part = part.split("\\n")
    for line in lines:
        if line == "STOP":
            sys.exit(0)
        if line[:30] >= since:
            sys.stdout.write(line + "\\n")
    sys.stdout.flush()
    if watch.poll(50):
        sys.exit(1)
"""


async def test_container_log_follower_resumes_from_the_last_timestamp_and_ends_with_the_container(sshd, tmp_path):
    bin_dir = tmp_path / "standin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(DOCKER_STANDIN.format(python=sys.executable))
    docker.chmod(0o755)
    log = bin_dir / "container.log"
    ts = [f"2026-11-02T09:00:0{n}.000000000Z" for n in range(10)]
    # three lines share one timestamp across the drop: the resumed stream repeats them, the core skips two
    log.write_text(f"{ts[0]} a\n{ts[1]} b\n{ts[2]} same\n{ts[2]} same\n")
    got: list[str] = []
    async with runner_for(sshd, trusted(sshd, tmp_path), keepalive_interval=1) as r:
        f = ContainerLogFollower(
            r, "nanogpt", docker=str(docker), on_lines=got.extend, batch_interval=0.02, backoff=(0.05, 0.5)
        )
        task = asyncio.ensure_future(f.run())
        await until(lambda: len(got) >= 4, what="the first lines")
        assert sshd.drop_sessions() >= 1
        with open(log, "a") as out:
            out.write(f"{ts[2]} same\n{ts[3]} c\n")
        await until(lambda: len(got) >= 6, what="resumed lines")
        with open(log, "a") as out:
            out.write(f"{ts[4]} d\nSTOP\n")
        await asyncio.wait_for(task, 30)
    assert got == ["a", "b", "same", "same", "same", "c", "d"]
    assert f.ended and f.end_reason == "the container stopped" and f.streams >= 2
    calls = (bin_dir / "calls").read_text().splitlines()
    assert calls[0] == "logs -f -t nanogpt" and f"logs -f -t --since {ts[2]} nanogpt" in calls[1:]


async def test_copy_from_with_progress_a_file_and_a_folder(sshd, tmp_path):
    remote = tmp_path / "node"
    (remote / "out" / "sub").mkdir(parents=True)
    blob = os.urandom(300_000)
    (remote / "ckpt.pt").write_bytes(blob)
    (remote / "out" / "a.bin").write_bytes(os.urandom(70_000))
    (remote / "out" / "sub" / "b.txt").write_text("hello\n")
    here = tmp_path / "here"
    here.mkdir()
    calls: list[tuple[int, int]] = []
    async with runner_for(sshd, trusted(sshd, tmp_path)) as r:
        await r.copy_from(str(remote / "ckpt.pt"), here / "ckpt.pt", progress=lambda d, t: calls.append((d, t)))
        assert (here / "ckpt.pt").read_bytes() == blob
        assert len(calls) >= 2 and calls[-1] == (300_000, 300_000)
        assert all(t == 300_000 for _, t in calls) and [d for d, _ in calls] == sorted(d for d, _ in calls)
        calls.clear()
        await r.copy_from(str(remote / "out"), here / "out", recurse=True, progress=lambda d, t: calls.append((d, t)))
        assert (here / "out" / "sub" / "b.txt").read_text() == "hello\n"
        assert (here / "out" / "a.bin").read_bytes() == (remote / "out" / "a.bin").read_bytes()
        assert calls[-1] == (70_006, 70_006)
        with pytest.raises(CopyFailed, match="There is no"):
            await r.copy_from(str(remote / "missing.pt"), here / "missing.pt")
        assert r.connects == 1


async def test_a_copy_off_is_in_the_history_as_its_scp_line(sshd, tmp_path):
    """Each SFTP copy-off, copied or not, as the guide's scp line (ssh's -p as scp's -P)."""
    from ncui import history

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.txt").write_text("a\n")
    h = history.History("http://box", path=tmp_path / "history.jsonl")
    async with runner_for(sshd, trusted(sshd, tmp_path), history=h) as r:
        await r.copy_from(str(tmp_path / "out"), tmp_path / "here", recurse=True)
        with pytest.raises(CopyFailed):
            await r.copy_from(str(tmp_path / "missing.pt"), tmp_path / "here")
    copies = [e for e in h.session if e.kind == "scp"]
    port = f"-P {r.port} " if r.port != 22 else ""
    host = r.shown[-1]
    assert [e.command for e in copies] == [
        f"scp {port}-r {host}:{tmp_path / 'out'} {tmp_path / 'here'}",
        f"scp {port}{host}:{tmp_path / 'missing.pt'} {tmp_path / 'here'}",
    ]
    assert [e.ok for e in copies] == [True, False] and copies[0].what.startswith(f"copy {tmp_path / 'out'} off ")
