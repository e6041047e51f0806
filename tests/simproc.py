"""Run ``ncui sim`` as a separate process, as a user would, and read what it prints."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time


class SimProcess:
    def __init__(self, *args: str, timeout: float = 20.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ncui.cli", "sim", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.env: dict[str, str] = {}
        self.lines: list[str] = []
        lines: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout], daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while "NC_SSH_CONFIG" not in self.env:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic())).rstrip("\n")
            except queue.Empty:
                self.stop()
                raise AssertionError(
                    f"ncui sim did not print its address in {timeout}s: {self.lines} "
                    f"{self.proc.stderr.read() if self.proc.stderr else ''}"
                ) from None
            self.lines.append(line)
            if "=" in line and not line.startswith("#"):
                k, v = line.split("=", 1)
                self.env[k] = v

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)  # it ends at EOF; the pipes are then closed here, not by the garbage collector
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()

    def __enter__(self) -> SimProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
