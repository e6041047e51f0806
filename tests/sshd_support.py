"""A real OpenSSH server on loopback for ncui's ssh layer (../shared/TESTBED.md): ``sshd`` fixture.

``/usr/sbin/sshd -D -e -f CONFIG`` as a child of the test, on a port of its own, with its own host key,
one authorised client key, no password and no PAM. Skips when sshd is not installed (CI installs
openssh-server). ``drop_sessions()`` kills the per-connection sshd processes (the listener stays: a client
reconnects at once); ``restart(new_host_key=True)`` is a rebuilt node on the same address.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import asyncssh
import pytest

from tests.peers import lacks_peer, need_peer
from tests.waits import until, wait_until  # noqa: F401  (until: the one async wait with a deadline; the ssh tests import it here)

SSHD = Path("/usr/sbin/sshd")

# sshd runs under this small reaper: a dropped session leaves orphans (the session's own sshd and its shell),
# which would stay zombies under this machine's pid 1. As a child subreaper it adopts and reaps them, and on
# SIGTERM stops sshd and whatever is left of its sessions.
REAPER = """
import ctypes, os, signal, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
sshd = subprocess.Popen(sys.argv[1:])
def stop(*_):
    sshd.terminate()
signal.signal(signal.SIGTERM, stop)
status = 0
while True:
    try:
        pid, st = os.wait()
    except ChildProcessError:
        break
    if pid == sshd.pid:
        status = os.waitstatus_to_exitcode(st)
        for kid in open(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read().split():
            try:
                os.kill(int(kid), signal.SIGKILL)
            except ProcessLookupError:
                pass
sys.exit(status)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_key(path: Path, key: asyncssh.SSHKey) -> Path:
    key.write_private_key(str(path))
    os.chmod(path, 0o600)
    key.write_public_key(str(path) + ".pub")
    return path


def children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


class Sshd:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.host, self.port, self.user = "127.0.0.1", free_port(), "root"
        self.client_key = write_key(root / "id_ed25519", asyncssh.generate_private_key("ssh-ed25519"))
        (root / "authorized_keys").write_bytes(Path(str(self.client_key) + ".pub").read_bytes())
        self.host_key_path = root / "host_ed25519"
        self.host_key = asyncssh.generate_private_key("ssh-ed25519")
        write_key(self.host_key_path, self.host_key)
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = root / "sshd.log"
        self.extra_config = ""  # more sshd_config lines (``SetEnv SLURM_CONF=…`` for tests/slurm_support.py)

    @property
    def fingerprint(self) -> str:
        return self.host_key.get_fingerprint("sha256")

    def start(self) -> None:
        conf = self.root / "sshd_config"
        conf.write_text(
            f"Port {self.port}\nListenAddress 127.0.0.1\nHostKey {self.host_key_path}\n"
            f"AuthorizedKeysFile {self.root / 'authorized_keys'}\nPidFile {self.root / 'sshd.pid'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            "PermitRootLogin prohibit-password\nSubsystem sftp internal-sftp\nLogLevel VERBOSE\n" + self.extra_config
        )
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", REAPER, str(SSHD), "-D", "-e", "-f", str(conf)], stdout=log, stderr=log
            )
        proc = self.proc

        def listening() -> bool:
            try:
                socket.create_connection((self.host, self.port), timeout=1).close()
                return True
            except OSError:
                return False

        wait_until(
            listening,
            15,
            "sshd to listen",
            0.02,
            give_up=lambda: "sshd exited" if proc.poll() is not None else "",
            say=lambda: f"its log: {self.log.read_text()[-2000:]}",
        )

    def sessions(self) -> list[int]:
        """The pids of this server's per-connection sshd processes."""
        return [] if self.proc is None else [k for listener in children(self.proc.pid) for k in children(listener)]

    def drop_sessions(self) -> int:
        """Kill every connection's sshd (as a crash or a network cut would); the listener stays."""
        kids = self.sessions()
        for pid in kids:
            os.kill(pid, signal.SIGKILL)
        return len(kids)

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()  # the reaper stops sshd, then what is left of its sessions
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def restart(self, *, new_host_key: bool = False) -> None:
        self.stop()
        if new_host_key:
            self.host_key = asyncssh.generate_private_key("ssh-ed25519")
            write_key(self.host_key_path, self.host_key)
        self.start()


@pytest.fixture
def sshd(tmp_path) -> Iterator[Sshd]:
    need_peer("sshd", SSHD)
    try:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation folder
    except OSError as e:
        lacks_peer("sshd", f"cannot make /run/sshd for it: {e}")
    root = tmp_path / "sshd"
    root.mkdir()
    server = Sshd(root)
    server.start()
    yield server
    server.stop()
