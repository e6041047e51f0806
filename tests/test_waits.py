"""The tests' one wait with a deadline (``tests/waits.py``): it returns what held, and fails saying why."""

from __future__ import annotations

import asyncio

import pytest

from .waits import until, wait_until


def test_wait_until_returns_the_first_true_value_and_fails_at_the_deadline_saying_what():
    seen = iter([0, "", "ready"])
    assert wait_until(lambda: next(seen), 5, "the third look", 0) == "ready"
    with pytest.raises(AssertionError, match=r"timed out after 0\.05s waiting for the socket; it said no"):
        wait_until(lambda: False, 0.05, "the socket", 0.01, say=lambda: "it said no")


def test_give_up_ends_the_wait_at_once_with_its_reason():
    looks = []
    with pytest.raises(AssertionError, match="gave up waiting for the daemon: slurmd exited"):
        wait_until(lambda: looks.append(1), 60, "the daemon", 0.01, give_up=lambda: "slurmd exited" if looks else "")
    assert len(looks) == 1  # not sixty seconds of looks


async def test_until_lets_the_loop_run_and_awaits_an_async_condition():
    n = 0

    async def third() -> int:
        nonlocal n
        n += 1
        return n if n >= 3 else 0

    assert await until(third, 5, "the third check") == 3
    slept: list[float] = []

    async def sleep(s: float) -> None:
        slept.append(s)
        await asyncio.sleep(s)

    with pytest.raises(AssertionError, match=r"timed out after 0\.05s waiting for nothing"):
        await until(lambda: None, 0.05, "nothing", 0.02, sleep=sleep)
    assert slept and set(slept) == {0.02}  # the interval given, through the sleep given
