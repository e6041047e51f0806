"""A program on a real pty (``os.openpty``): every raw byte it writes, kept (every OSC in them: tmux's capture-pane
would drop them), bytes typed to it as a terminal does, and the terminal's focus reports (mode 1004's ``ESC [ O`` /
``ESC [ I``). Used by the notification tests (tests/test_notify_pty.py, tests/test_notify_scenarios.py): ncui run as
a person runs it, against the box, with a terminal that shows desktop notifications (TERM_PROGRAM=WezTerm: OSC 9)."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path

import pytest

from .waits import until

ROOT = Path(__file__).resolve().parents[1]

FOCUS_OUT, FOCUS_IN = b"\x1b[O", b"\x1b[I"
OSC9 = re.compile(rb"\x1b\]9;([^\x07\x1b]*)\x07")
# what a screen reader drops to read the text a frame draws: CSI and OSC sequences, other escapes, controls
_ESCAPES = re.compile(
    rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[P^_][^\x1b]*\x1b\\|\x1b.|[\x00-\x1f]"
)


def drawn(raw: bytes) -> str:
    """The text in ``raw`` as drawn, escapes and controls dropped (one span of text stays whole: a phrase a
    widget draws in one style can be looked for; where on the screen it landed is not kept)."""
    return _ESCAPES.sub(b"", raw).decode("utf-8", "replace")


class Pty:
    """A program on a pty of its own (120×40 unless told): every byte it writes, kept; bytes typed to it."""

    def __init__(self, argv: list[str], env: dict[str, str], rows: int = 40, cols: int = 120) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.master = master
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.raw = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self.raw += data

    def bytes(self, since: int = 0) -> bytes:
        with self._lock:
            return bytes(self.raw[since:])

    def mark(self) -> int:
        """Where the bytes are now: ``drawn_since(mark)`` reads only what came after."""
        with self._lock:
            return len(self.raw)

    def drawn(self, since: int = 0) -> str:
        return drawn(self.bytes(since))

    def send(self, data: bytes) -> None:
        os.write(self.master, data)

    def notifications(self) -> list[str]:
        return [m.decode("utf-8", "replace") for m in OSC9.findall(self.bytes())]

    def titles(self) -> list[str]:
        return [s.split(":", 1)[0] for s in self.notifications()]

    async def until(self, cond, what: str, timeout: float = 60.0):
        def say() -> str:
            raw = self.bytes()
            if os.environ.get("NCUI_PTY_DUMP"):
                Path(os.environ["NCUI_PTY_DUMP"]).write_bytes(raw)
            return f"notifications so far: {self.notifications()}; the last drawn: {drawn(raw)[-1500:]!r}"

        return await until(lambda: cond(self.bytes()), timeout, what, 0.05, say=say)

    async def drawing(self, text: str, since: int = 0, timeout: float = 60.0) -> None:
        """Until ``text`` is drawn (after ``since``, a ``mark()``)."""
        await self.until(lambda raw: text in drawn(raw[since:]), f"{text!r} drawn", timeout)

    async def press(self, keys: bytes, shows: str, timeout: float = 60.0) -> None:
        """Type ``keys``, then until ``shows`` is drawn after them (a key answered by what it brings up)."""
        since = self.mark()
        self.send(keys)
        await self.drawing(shows, since, timeout)

    async def notified(self, n: int, what: str, timeout: float = 60.0) -> None:
        """Until ``n`` desktop notifications (OSC 9) have come."""
        await self.until(lambda raw: len(OSC9.findall(raw)) >= n, what, timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        os.close(self.master)
        self._reader.join(5)


def person(tmp: Path, sim, *extra_env: tuple[str, str], cache: Path | None = None) -> dict[str, str]:
    """The environment of a person on a WezTerm (OSC 9) with the box's token in the guide's file."""
    token = tmp / ".config" / "nationalcompute" / "token"
    token.parent.mkdir(parents=True, exist_ok=True)
    token.write_text(sim.token + "\n")
    os.chmod(token, 0o600)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp),
        "XDG_STATE_HOME": str(tmp / "state"),
        "XDG_CONFIG_HOME": str(tmp / "config"),
        "PYTHONPATH": str(ROOT),
        "TERM": "xterm-256color",
        "TERM_PROGRAM": "WezTerm",
        "COLORTERM": "truecolor",
        "LANG": "C.UTF-8",
        **dict(extra_env),
    }
    if cache is not None:
        env["NCUI_KUBE_CACHE"] = str(cache)
    return env


def ncui_argv(sim, *flags: str) -> list[str]:
    return [sys.executable, "-m", "ncui.cli", "--api", sim.api_url, "--access", sim.access_url, *flags]


def no_raw_controls(raw: bytes) -> None:
    """No control character in a notification's text, and none of a hostile name's escapes on the terminal."""
    assert b"PWNED" not in raw
    assert "\u202e".encode() not in raw and "\x9b".encode() not in raw
    for text in OSC9.findall(raw):
        assert not re.search(rb"[\x00-\x1f\x7f]", text), text


@pytest.fixture
def pty_factory():
    made: list[Pty] = []

    def make(argv: list[str], env: dict[str, str]) -> Pty:
        made.append(Pty(argv, env))
        return made[-1]

    yield make
    for p in made:
        p.close()
