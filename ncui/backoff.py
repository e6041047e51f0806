"""One backoff rule for everything that retries on its own (pollers, watches, log streams)."""

from __future__ import annotations

import random


def backoff_delay(failures: int, base: float, cap: float, rng: random.Random) -> float:
    """Exponential backoff with "equal jitter": between half and all of min(cap, base × 2^(failures-1))."""
    d = min(cap, base * (2 ** min(max(failures, 1) - 1, 30)))
    return rng.uniform(d / 2, d)
