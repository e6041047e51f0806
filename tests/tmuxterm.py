"""A real terminal for tests: our own tmux server with one pane, the raw bytes its program writes, the screen
as a person reads it. Used where the terminal itself is what is tested (escape codes, a hang-up)."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from .peers import need_peer
from .screentext import joined
from .waits import until, wait_until

ROOT = Path(__file__).resolve().parents[1]


class Tmux:
    """Our own tmux server (its own socket) with one pane running ``sh``; every byte the pane's program
    writes is appended to ``raw`` (pipe-pane, set before the program starts)."""

    def __init__(self, tmp: Path, env: dict[str, str], width: int = 120, height: int = 40) -> None:
        self.sock, self.raw = str(tmp / "tmux.sock"), tmp / "raw.bin"
        self.raw.touch()
        flags = [x for k, v in env.items() for x in ("-e", f"{k}={v}")]
        self.tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), *flags, "sh")
        self.tmux("pipe-pane", "-o", "-t", "t", f"cat >> {shlex.quote(str(self.raw))}")
        # The shell's prompt first: keys typed before it are echoed above it, and what the program then prints
        # lands after the prompt, on its line (a loaded machine's test read "# EXIT=0", not "EXIT=0").
        wait_until(lambda: self.screen().strip(), 30, "the shell's prompt", 0.02)

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-S", self.sock, *args], check=True, capture_output=True, text=True, timeout=30
        ).stdout

    def run(self, *argv: str) -> None:
        # (without the COLUMNS and LINES a test runner may export: the program reads the pane's own size)
        self.tmux("send-keys", "-t", "t", "exec env -u COLUMNS -u LINES " + shlex.join(argv), "Enter")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def screen(self) -> str:
        """The pane's lines as tmux captures them (where a test looks at the layout: a row, the last line)."""
        return self.tmux("capture-pane", "-p", "-t", "t")

    def text(self) -> str:
        """The pane as text, wherever the terminal or a card wraps it (tests/screentext.py): what phrases match."""
        return joined(self.screen())

    async def until(self, cond, timeout: float = 60.0, what: str = "", *, lines: bool = False) -> str:
        """The screen's text (``text()``; its lines, ``screen()``, with ``lines=True``) once ``cond(it)`` holds,
        polled with a deadline."""
        text = ""

        def shows() -> bool:
            nonlocal text
            text = self.screen() if lines else self.text()
            return bool(cond(text))

        # a tmux capture a look: ten a second
        await until(shows, timeout, what or repr(cond), 0.1, say=lambda: f"the screen:\n{text}")
        return text

    def pane_pid(self) -> int:
        """The pane's program (``run`` execs it in place of the shell)."""
        return int(self.tmux("list-panes", "-t", "t", "-F", "#{pane_pid}").split()[0])

    def toasts(self) -> str:
        """The words of the notifications on screen (each line of a toast starts with ▌; what is drawn beside
        it, such as a chart's frame, is a card of its own, read after it)."""
        return joined("\n".join(line.split("▌", 1)[1] for line in self.screen().splitlines() if "▌" in line))

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.sock, "kill-server"], capture_output=True, timeout=30)


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    """A person's environment in ``tmp`` (no token unless given), running this checkout's ncui."""
    old = os.environ.get("PYTHONPATH")
    return {
        "HOME": str(tmp),
        "XDG_STATE_HOME": str(tmp / "state"),
        "NC_TOKEN": "",
        "PYTHONPATH": str(ROOT) + (os.pathsep + old if old else ""),
        **extra,
    }


@pytest.fixture
def tmux_factory(tmp_path):
    made: list[Tmux] = []

    def make(env: dict[str, str], width: int = 120, height: int = 40) -> Tmux:
        need_peer("tmux")  # (a test asks first, with @pytest.mark.peers("tmux"), before its box starts)
        t = Tmux(tmp_path, env, width, height)
        made.append(t)
        return t

    yield make
    for t in made:
        t.close()
