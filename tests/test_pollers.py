"""Pollers against the simulator: backoff with jitter on errors, recovery, interest-driven intervals."""

from __future__ import annotations

import random

import httpx
from pydantic import SecretStr

from ncui.api.client import NCClient
from ncui.pollers import PollSpec, Pollers
from ncui.store import Store

from .conftest import endpoints_of


from .kc_support import until


async def test_backoff_then_recovery(sim):
    store = Store()
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), retries=0) as nc:
        httpx.post(sim.api_url + "/_sim/faults", json={"path_prefix": "/api/billing/balance", "status": 500,
                                                        "count": 3},
                   headers={"Authorization": f"Bearer {sim.token}"})
        p = Pollers(store, [PollSpec("balance", nc.balance, interval=30, idle_interval=30)],
                    base_backoff=0.02, max_backoff=0.05, rng=random.Random(1))
        errors = []
        store.subscribe("balance", lambda s: errors.append(s.error) if s.error else None)
        p.start()
        try:
            await until(lambda: store.get("balance").loaded, what="recovery")
        finally:
            await p.stop()
    assert len(errors) == 3 and all("(500)" in e for e in errors)
    s = store.get("balance")
    assert s.error is None and s.value.balance_ucredits == 250_000_000 and p.failures["balance"] == 0


def test_next_delay_rules():
    store = Store()
    fast = [False]

    async def fetch():
        return 1

    spec = PollSpec("spend", fetch, interval=10, idle_interval=30, fast_interval=3, fast_when=lambda: fast[0])
    p = Pollers(store, [spec], rng=random.Random(0), base_backoff=1, max_backoff=60)
    assert p.next_delay(spec) == 30  # nobody looks
    store.subscribe("spend", lambda s: None)
    assert p.next_delay(spec) == 10
    fast[0] = True
    assert p.next_delay(spec) == 3  # something is changing
    p.failures["spend"] = 1
    assert 0.5 <= p.next_delay(spec) <= 1
    p.failures["spend"] = 4
    d = [p.next_delay(spec) for _ in range(50)]
    assert all(4 <= x <= 8 for x in d) and len(set(d)) > 1  # exponential, jittered
    p.failures["spend"] = 30
    assert p.next_delay(spec) <= 60  # capped
    paused = PollSpec("catalog", fetch, interval=600, idle_interval=0)
    assert p.next_delay(paused) is None  # waits for a refresh


async def test_refresh_wakes_a_poller_at_once():
    store = Store()
    calls = []

    async def fetch():
        calls.append(1)
        return len(calls)

    p = Pollers(store, [PollSpec("x", fetch, interval=3600, idle_interval=3600)])
    p.start()
    try:
        await until(lambda: store.value("x") == 1)
        p.refresh("x")
        await until(lambda: store.value("x") == 2, timeout=5, what="the refresh")
    finally:
        await p.stop()


async def test_stopping_while_a_refresh_lands_stops_for_good():
    # asyncio.wait_for (3.10/3.11) loses a cancellation that arrives as the awaited event is set: a poller
    # woken by a refresh in the same moment as the app quit kept running, and quitting hung on it.
    import asyncio

    store = Store()

    async def fetch():
        return 1

    p = Pollers(store, [PollSpec("x", fetch, interval=3600, idle_interval=3600)])
    p.start()
    await until(lambda: store.value("x") == 1)  # the poller has fetched and waits for its next turn
    p.refresh("x")  # the wake-up and the stop land in the same loop turn
    await asyncio.wait_for(p.stop(), timeout=10)
    assert not p._tasks
