"""A real single-node Slurm on loopback (../shared/TESTBED.md "Real Slurm on loopback"): ``Slurm``.

``munged``, ``slurmctld -D`` and ``slurmd -D`` run as children of the test (each under the subreaper of
tests/sshd_support.py, which reaps what a daemon leaves behind: slurmstepd and the job's processes), with a
``slurm.conf`` in a temporary folder, ports of their own, state, spool, logs and pid files beside it. The
node says it has 8 GPUs (``gres.conf`` names 8 links to ``/dev/null``), so the starter's ``--gpus-per-node=8`` is
accepted as the cluster would accept it. ``env`` is what a client needs (``SLURM_CONF``); ``stop()`` cancels
every job, then stops the daemons by pid. Skips when the packages are missing (``need_peer``; in CI, which
installs ``slurm-wlm slurm-client munge``, fails).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.peers import lacks_peer, need_peer
from tests.sshd_support import REAPER, free_port
from tests.waits import wait_until

MUNGED, SLURMCTLD, SLURMD = Path("/usr/sbin/munged"), Path("/usr/sbin/slurmctld"), Path("/usr/sbin/slurmd")
MUNGEKEY = Path("/usr/sbin/mungekey")


def need_slurm() -> None:
    """The programs of a real Slurm are here and it can run (root), or the test skips (fails in CI), naming the
    missing peer (tests/peers.py)."""
    for p in (MUNGED, MUNGEKEY, SLURMCTLD, SLURMD):
        need_peer(p.name, p)
    for prog in ("sbatch", "squeue", "scancel", "scontrol", "sinfo"):
        need_peer(prog)
    if os.geteuid() != 0:
        lacks_peer("slurm", "the test Slurm runs its daemons as root (SlurmUser=root)")


class Slurm:
    """One node (``localhost``, every CPU, 8 GPUs by count) in one partition ``debug``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for d in ("munge", "state", "spool", "log"):
            (root / d).mkdir(mode=0o755, exist_ok=True)
        os.chmod(root, 0o755)  # munged checks the folders above its socket and key
        os.chmod(root / "munge", 0o755)
        self.socket = root / "munge" / "munge.socket"
        self.key = root / "munge" / "munge.key"
        self.conf = root / "slurm.conf"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.env = {"SLURM_CONF": str(self.conf)}

    def _write(self) -> None:
        r = self.root
        cpus = os.cpu_count() or 1
        self.conf.write_text(
            f"ClusterName=ncuitest\nSlurmctldHost=localhost\nSlurmUser=root\nSlurmdUser=root\n"
            f"AuthType=auth/munge\nAuthInfo=socket={self.socket}\nCryptoType=crypto/munge\n"
            f"SlurmctldPort={free_port()}\nSlurmdPort={free_port()}\n"
            f"StateSaveLocation={r / 'state'}\nSlurmdSpoolDir={r / 'spool'}\n"
            f"SlurmctldPidFile={r / 'slurmctld.pid'}\nSlurmdPidFile={r / 'slurmd.pid'}\n"
            f"SlurmctldLogFile={r / 'log' / 'slurmctld.log'}\nSlurmdLogFile={r / 'log' / 'slurmd.log'}\n"
            "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n"
            "AccountingStorageType=accounting_storage/none\nSelectType=select/cons_tres\n"
            "SelectTypeParameters=CR_Core\nMpiDefault=none\nMailProg=/bin/true\nReturnToService=2\n"
            "SchedulerParameters=sched_interval=1\nMinJobAge=300\nKillWait=2\nGresTypes=gpu\n"
            f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} Gres=gpu:8 State=UNKNOWN\n"
            "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n"
        )
        for i in range(8):  # a GPU is a device file to slurmd: /dev/null stands in for each
            (r / f"gpu{i}").unlink(missing_ok=True)
            (r / f"gpu{i}").symlink_to("/dev/null")
        (r / "gres.conf").write_text(f"NodeName=localhost Name=gpu File={r}/gpu[0-7]\n")

    def _spawn(self, name: str, argv: list[str]) -> None:
        with open(self.root / "log" / f"{name}.out", "ab") as log:
            self.procs[name] = subprocess.Popen(
                [sys.executable, "-c", REAPER, *argv], stdout=log, stderr=log, env={**os.environ, **self.env}
            )  # SLURM_CONF: slurmd finds gres.conf beside it

    def _wait(self, what: str, ok, timeout: float = 20.0) -> None:
        """Until ``ok()`` (each look runs a Slurm command: twenty a second at most); a daemon that exits ends it."""

        def dead() -> str:
            gone = [n for n, p in self.procs.items() if p.poll() is not None]
            return f"{', '.join(gone)} exited" if gone else ""

        wait_until(ok, timeout, what, 0.05, give_up=dead, say=lambda: f"the logs:\n{self.logs()}")

    def logs(self) -> str:
        out = []
        for f in sorted((self.root / "log").iterdir()):
            out.append(f"--- {f.name}\n{f.read_text(errors='replace')[-1500:]}")
        return "\n".join(out)

    def client(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=20)

    def start(self) -> None:
        self._write()
        subprocess.run([str(MUNGEKEY), "--create", f"--keyfile={self.key}", "--force"], check=True, timeout=20)
        os.chmod(self.key, 0o400)
        r = self.root / "munge"
        self._spawn(
            "munged",
            [str(MUNGED), "--foreground", "--force", f"--key-file={self.key}", f"--socket={self.socket}"]
            + [f"--pid-file={r / 'munged.pid'}", f"--log-file={r / 'munged.log'}", f"--seed-file={r / 'seed'}"],
        )
        self._wait("munged listening", self.socket.exists)
        self._spawn("slurmctld", [str(SLURMCTLD), "-D", "-i", "-f", str(self.conf)])
        self._wait("slurmctld answering", lambda: self.client("scontrol", "ping").stdout.count("UP") > 0)
        self._spawn("slurmd", [str(SLURMD), "-D", "-N", "localhost", "-f", str(self.conf)])
        self._wait("the node idle", lambda: "idle" in self.client("sinfo", "-h", "-o", "%T").stdout)

    def stop(self) -> None:
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.client("scancel", "--full", "--user=root")
            try:  # the jobs end (their processes go) before slurmd does; stopping goes on either way
                wait_until(lambda: not self.client("squeue", "-h", "-o", "%i").stdout.strip(), 10, "no job left", 0.1)
            except AssertionError:
                pass
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None:
                continue
            proc.terminate()  # the reaper stops the daemon, then whatever it left behind
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)


def start_slurm(root: Path) -> Slurm:
    """A running Slurm in ``root`` (skips the test, or fails it in CI, when this machine cannot run one)."""
    need_slurm()
    root.mkdir(parents=True, exist_ok=True)
    s = Slurm(root)
    try:
        s.start()
    except BaseException:
        s.stop()
        raise
    return s
