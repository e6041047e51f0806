"""What bench/pods.py and bench/soak.py share: a box in its own process, signed in as kubectl would be, and ncui
run on a real pty (pty.fork) with a bench hook inside that reports on a pipe and takes commands on another.

The parent measures the child from outside: CPU from /proc/PID/stat, RSS from /proc/PID/status, and the bytes the
app writes to its terminal (the pty's master end, drained by a thread). The hook inside (CHILD) reports what only
the app knows: how long each frame took, when the selection moved, what the log follower delivered, how fresh
each slice is. Monotonic clocks are system-wide on Linux: the child's times compare with the parent's.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import signal
import struct
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KUBECTL = "/usr/bin/kubectl"
CLK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process (its own, not its children's)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def rss_mb(pid: int) -> tuple[float, float]:
    """(RSS now, peak RSS) in MB."""
    now = peak = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                now = int(line.split()[1]) / 1024
            elif line.startswith("VmHWM:"):
                peak = int(line.split()[1]) / 1024
    return now, peak


class Box:
    """``ncui sim`` in its own process (so its CPU is its own and py-spy can look at it), a kubeconfig for its
    cluster and a sign-in cache holding an approved sign-in (a person approved it once)."""

    def __init__(self, tmp: Path, *args: str) -> None:
        import httpx

        from bench.logs import sign_in
        from tests.simproc import SimProcess

        self.tmp = tmp
        self.proc = SimProcess("--scenario", "k8s-market", *args)
        self.api, self.token = self.proc.env["NC_API"], self.proc.env["NC_TOKEN"]
        self.headers = {"Authorization": f"Bearer {self.token}"}
        self.cluster = "halcyon"
        r = httpx.get(f"{self.api}/api/k8s/cluster/kubeconfig", params={"cluster": self.cluster}, headers=self.headers)
        r.raise_for_status()
        self.kubeconfig = tmp / "kubeconfig.yaml"
        self.kubeconfig.write_text(r.text)
        sign_in(self.api, self.cluster, tmp / "auth")
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(tmp / "kcache"),
            "NCUI_KUBE_CACHE": str(tmp / "auth"),
            "XDG_STATE_HOME": str(tmp / "state"),
            "PYTHONPATH": str(ROOT),
            "HOME": str(tmp),
            "NC_TOKEN": self.token,
            "TERM": "xterm-256color",
            "COLORTERM": "",
        }
        self.env.pop("TEXTUAL", None)

    @property
    def pid(self) -> int:
        return self.proc.proc.pid

    def post(self, path: str, body: dict | None = None, method: str = "POST") -> Any:
        import httpx

        r = httpx.request(method, f"{self.api}{path}", json=body, headers=self.headers, timeout=30)
        r.raise_for_status()
        return r.json()

    def put_bid(self, usd: float) -> None:
        self.post("/api/k8s/bid", {"max_price_per_gpu_hour": usd}, method="PUT")

    def stop(self) -> None:
        self.proc.stop()


# The bench hook inside the app: a subclass of NCApp. It reports JSON lines on $NCUI_BENCH_FD and reads commands
# (JSON lines) from $NCUI_BENCH_CMD; a bench's own part (PODS or SOAK below) adds handlers: on_cmd_<name>().
CHILD = r"""
import asyncio, json, os, sys, time
from ncui.app import NCApp
from ncui.backend import Backend
from ncui.config import Endpoints, SecretStr
from textual.screen import Screen

REPORT, CMD = int(os.environ["NCUI_BENCH_FD"]), int(os.environ["NCUI_BENCH_CMD"])
def report(**kw):
    kw.setdefault("t", time.monotonic())
    os.write(REPORT, (json.dumps(kw) + "\n").encode())

import collections
# seconds each frame took: layout, render, and the write to the terminal (the newest: a soak never asks, and the
# hook must not grow the RSS it measures)
frames = collections.deque(maxlen=100_000)
_update = Screen._on_timer_update
def timed_update(self):
    t0 = time.perf_counter()
    _update(self)
    frames.append(time.perf_counter() - t0)
    hook = getattr(self.app, "after_frame", None)
    if hook is not None:
        hook()
Screen._on_timer_update = timed_update

class BenchApp(NCApp):
    def on_mount(self):
        asyncio.get_running_loop().add_reader(CMD, self._read_cmd)
        self._cmd_buf = b""
    def _read_cmd(self):
        data = os.read(CMD, 65536)
        if not data:
            asyncio.get_running_loop().remove_reader(CMD)
            self.exit()
            return
        self._cmd_buf += data
        while b"\n" in self._cmd_buf:
            line, self._cmd_buf = self._cmd_buf.split(b"\n", 1)
            cmd = json.loads(line)
            getattr(self, "on_cmd_" + cmd.pop("cmd"))(**cmd)
    def on_cmd_frames(self):
        report(ev="frames", frames=list(frames))
        frames.clear()
    def on_cmd_quit(self):
        self.exit()
"""


class PtyApp:
    """The app (``code``: CHILD plus a bench's part, ending in a run) in a child on a pty of ``size``."""

    def __init__(self, code: str, env: dict, size: tuple[int, int] = (80, 24), argv: tuple[str, ...] = ()) -> None:
        rep_r, rep_w = os.pipe()
        cmd_r, cmd_w = os.pipe()
        os.set_inheritable(rep_w, True)  # (pipes are not inherited across exec unless asked)
        os.set_inheritable(cmd_r, True)
        env = {**env, "NCUI_BENCH_FD": str(rep_w), "NCUI_BENCH_CMD": str(cmd_r)}
        pid, master = pty.fork()
        if pid == 0:  # the child: the pty is its terminal
            try:
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
                os.close(rep_r)
                os.close(cmd_w)
                os.execve(sys.executable, [sys.executable, "-c", code, *argv], env)
            finally:
                os._exit(127)
        os.close(rep_w)
        os.close(cmd_r)
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        self.pid, self.master, self.cmd_w = pid, master, cmd_w
        self.written = 0  # bytes the app wrote to its terminal
        self.tail = b""  # the last of it (a crash's traceback lands here)
        self.events: list[dict] = []
        self._cond = threading.Condition()
        self._rep = os.fdopen(rep_r, "rb")
        self._threads = [
            threading.Thread(target=self._drain, daemon=True),
            threading.Thread(target=self._reports, daemon=True),
        ]
        for t in self._threads:
            t.start()
        self.status: int | None = None

    def _drain(self) -> None:
        while True:
            try:
                r, _, _ = select.select([self.master], [], [], 0.5)
                if not r:
                    if self.status is not None:
                        return
                    continue
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.written += len(data)
            self.tail = (self.tail + data)[-20000:]
            if b"\x1b[6n" in data:  # a cursor position query: answer as a terminal would
                os.write(self.master, b"\x1b[1;1R")

    def _reports(self) -> None:
        for line in self._rep:
            ev = json.loads(line)
            with self._cond:
                self.events.append(ev)
                self._cond.notify_all()

    def send(self, cmd: str, **kw: Any) -> None:
        os.write(self.cmd_w, (json.dumps({"cmd": cmd, **kw}) + "\n").encode())

    def keys(self, data: bytes) -> float:
        t = time.monotonic()
        os.write(self.master, data)
        return t

    def wait_event(self, pred, timeout: float, start: int = 0) -> dict | None:
        """The first report from index ``start`` on for which ``pred(ev)`` holds, waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        i = start
        with self._cond:
            while True:
                while i < len(self.events):
                    if pred(self.events[i]):
                        return self.events[i]
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or not self.alive():
                    return None
                self._cond.wait(min(left, 0.5))

    def ask(self, cmd: str, ev: str, timeout: float = 30, **kw: Any) -> dict | None:
        n = len(self.events)
        self.send(cmd, **kw)
        return self.wait_event(lambda e: e.get("ev") == ev, timeout, start=n)

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def rss(self) -> tuple[float, float]:
        return rss_mb(self.pid)

    def alive(self) -> bool:
        if self.status is None:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = st
        return self.status is None

    def stop(self, timeout: float = 15) -> int:
        """Ask the app to quit (the bench hook exits it); then SIGTERM, then SIGKILL. Returns its exit status."""
        if self.alive():
            try:
                self.send("quit")
            except OSError:
                pass
            deadline = time.monotonic() + timeout
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if not self.alive():
                break
            os.kill(self.pid, sig)
            deadline = time.monotonic() + 5
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
        for fd in (self.cmd_w, self.master):
            try:
                os.close(fd)
            except OSError:
                pass
        for t in self._threads:
            t.join(5)
        self._rep.close()
        return self.status or 0

    def traceback(self) -> bool:
        return b"Traceback" in self.tail

    def tail_text(self, n: int = 1500) -> str:
        """The end of what the app wrote, without escape sequences (a crash's last lines)."""
        import re

        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.tail.decode(errors="replace"))[-n:]


def pctl(xs: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of xs; 0 when empty."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


def pyspy(pid: int, seconds: float, out: Path) -> Any:
    """py-spy record of a process for ``seconds`` (raw collapsed stacks into ``out``), when $PY_SPY names the
    binary; returns the Popen or None."""
    import subprocess

    exe = os.environ.get("PY_SPY")
    if not exe:
        return None
    return subprocess.Popen(
        [
            exe,
            "record",
            "-p",
            str(pid),
            "-d",
            str(int(seconds)),
            "-r",
            os.environ.get("PY_SPY_RATE", "50"),
            "-f",
            "raw",
            "-o",
            str(out),
            "--nonblocking",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
