"""The simulator's virtual clock: real time × speed, plus explicit advances (tests, demos)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone


class VirtualClock:
    """``now()`` = ``origin`` + virtual seconds elapsed.

    Virtual seconds = (monotonic real seconds since the last rebase) × ``speed`` + explicit advances.
    ``speed=0`` freezes the clock: only ``advance()`` moves it (tests and snapshots).
    """

    def __init__(self, origin: datetime, speed: float = 1.0, *, elapsed: float = 0.0) -> None:
        if origin.tzinfo is None:
            origin = origin.replace(tzinfo=timezone.utc)
        self.origin = origin
        self._speed = max(0.0, float(speed))
        self._base = float(elapsed)
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._real0 = self._t0
        self._advanced = 0.0

    def human_elapsed(self) -> float:
        """Seconds as a person lives them: real time since the start plus explicit advances, never × speed.
        What a person is given time to do (approve a sign-in link) runs on this, so a demo at 60× still
        leaves them minutes, and a test still expires it by advancing the clock."""
        with self._lock:
            return (time.monotonic() - self._real0) + self._advanced

    @property
    def speed(self) -> float:
        return self._speed

    def elapsed(self) -> float:
        with self._lock:
            return self._base + (time.monotonic() - self._t0) * self._speed

    def now(self) -> datetime:
        return self.origin + timedelta(seconds=self.elapsed())

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("the clock does not go back")
        with self._lock:
            self._base += seconds
            self._advanced += seconds

    def set_speed(self, speed: float) -> None:
        with self._lock:
            now = time.monotonic()
            self._base += (now - self._t0) * self._speed
            self._t0 = now
            self._speed = max(0.0, float(speed))

    def real_seconds_until(self, virtual_seconds: float) -> float:
        """How long in real seconds until ``virtual_seconds`` of virtual time pass (inf when frozen)."""
        if self._speed <= 0:
            return float("inf")
        return max(0.0, virtual_seconds) / self._speed
