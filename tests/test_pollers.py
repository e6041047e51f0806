"""Pollers against the simulator: backoff with jitter on errors, recovery, interest-driven intervals."""

from __future__ import annotations

import random

import httpx
from pydantic import SecretStr

from ncui.api.client import NCClient
from ncui.pollers import Pollers, PollSpec
from ncui.store import Store

from .conftest import endpoints_of
from .kc_support import until


async def test_backoff_then_recovery(sim):
    store = Store()
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), retries=0) as nc:
        httpx.post(
            sim.api_url + "/_sim/faults",
            json={"path_prefix": "/api/billing/balance", "status": 500, "count": 3},
            headers={"Authorization": f"Bearer {sim.token}"},
        )
        p = Pollers(
            store,
            [PollSpec("balance", nc.balance, interval=30, idle_interval=30)],
            base_backoff=0.02,
            max_backoff=0.05,
            rng=random.Random(1),
        )
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
    probe = PollSpec("balance", fetch, interval=1, idle_interval=1)
    p = Pollers(store, [spec, probe], rng=random.Random(0), base_backoff=1, max_backoff=60)
    assert p.next_delay(spec) == 30  # nobody looks
    store.subscribe("spend", lambda s: None)
    assert p.next_delay(spec) == 10
    fast[0] = True
    assert p.next_delay(spec) == 3  # something is changing
    p.failures["spend"] = 30
    assert p.next_delay(spec) == 3  # failing alone, it is the probe: it keeps polling at its interval
    p.failures["balance"] = 1  # now balance probes (its interval is shorter): spend backs off
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


async def test_every_slice_is_fresh_soon_after_a_long_outage(sim):
    # A long outage: every read fails and the backoff is long (15–30 s, as after minutes of failures). When
    # the faults stop, the probe (the poller with the shortest interval, still polling at it) succeeds and
    # wakes the others: every slice is fresh again well before any backoff would end.
    H = {"Authorization": f"Bearer {sim.token}"}
    store = Store()
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), retries=0) as nc:
        specs = [
            PollSpec("balance", nc.balance, interval=0.2, idle_interval=0.2),
            PollSpec("summary", nc.billing_summary, interval=0.5, idle_interval=0.5),
            PollSpec("whoami", nc.whoami, interval=1.0, idle_interval=1.0),
        ]
        p = Pollers(store, specs, base_backoff=30, max_backoff=30, rng=random.Random(1))
        p.start()
        try:
            await until(lambda: all(store.get(s.name).loaded for s in specs), what="the first reads")
            httpx.post(
                sim.api_url + "/_sim/faults",
                json={"path_prefix": "/api/", "status": 503, "count": 1_000_000},
                headers=H,
            )
            await until(lambda: all(store.get(s.name).error for s in specs), what="every slice failing")
            assert all(p.next_delay(s) >= 15 for s in specs if s.name != "balance")  # backing off
            assert p.next_delay(specs[0]) <= 0.2  # the probe keeps its interval
            probes = p.polls["balance"]
            await until(lambda: p.polls["balance"] >= probes + 2, what="the probe polling during the outage")
            httpx.delete(sim.api_url + "/_sim/faults", headers=H)
            await until(
                lambda: all(store.get(s.name).error is None for s in specs), timeout=10, what="every slice fresh again"
            )
            assert all(p.failures[s.name] == 0 for s in specs)
        finally:
            await p.stop()
