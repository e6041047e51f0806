"""The simulated market, over HTTP where a researcher would look: grants, floor, reclaims, billing."""

from __future__ import annotations

from datetime import timedelta
from fractions import Fraction

import httpx
import pytest
from pydantic import SecretStr

from ncui.api import errors as E
from ncui.api.client import NCClient
from ncui.sim.market import Bidder
from ncui.sim.world import JOIN_MAX, JOIN_MIN

from .conftest import endpoints_of, make_world

MODEL = "H100-SXM-80GB"


def demand(sim, nodes: int) -> None:
    r = httpx.post(
        sim.api_url + "/_sim/k8s/demand", json={"nodes": nodes}, headers={"Authorization": f"Bearer {sim.token}"}
    )
    assert r.status_code == 200


def ready_nodes(world) -> list:
    st = world.main_org.k8s["halcyon"]
    now = world.now()
    return [n for n in st.market_nodes() if n.ready(now)]


async def test_bid_at_ladder_price_wins_a_node_after_the_join_delay(sim_factory):
    sim = sim_factory(volatility=0.0)  # a calm market: the ladder holds still while we wait
    world = sim.world
    async with NCClient(endpoints_of(sim), SecretStr(sim.token)) as nc:
        price = (await nc.ladder()).rungs[0].price_per_gpu_hour
        demand(sim, 1)
        await nc.set_bid(price)
        world.advance(60)
        st = world.main_org.k8s["halcyon"]
        assert len(st.market_nodes()) == 1, "the bid should be granted a node at the next clearing"
        node = st.market_nodes()[0]
        assert JOIN_MIN <= (node.ready_at - node.granted_at).total_seconds() <= JOIN_MAX
        world.advance(JOIN_MIN - 60)
        assert ready_nodes(world) == [] and (await nc.spend()).nodes_held == 0
        world.advance(JOIN_MAX - JOIN_MIN + 60)
        assert len(ready_nodes(world)) == 1
        spend = await nc.spend()
        assert spend.nodes_held == 1 and spend.gpus_held == 8
        assert spend.price_per_gpu_hour <= price
        assert spend.spend_ucredits_hr == spend.price_per_gpu_hour * 8


async def test_bid_under_the_floor_is_refused(nc):
    floor = (await nc.ladder()).floor_price_per_gpu_hour
    with pytest.raises(E.BidTooLow):
        await nc.set_bid(floor - 1)
    assert (await nc.set_bid(floor)).max_price_per_gpu_hour == floor


async def test_no_bid_no_node(sim):
    demand(sim, 1)
    sim.world.advance(20 * 60)
    assert sim.world.main_org.k8s["halcyon"].market_nodes() == []


async def test_a_higher_competing_demand_reclaims(sim_factory):
    sim = sim_factory(volatility=0.0)
    world = sim.world
    events = []
    world.listeners.append(lambda ev, payload: events.append(ev))
    async with NCClient(endpoints_of(sim), SecretStr(sim.token)) as nc:
        price = (await nc.ladder()).rungs[0].price_per_gpu_hour
        demand(sim, 1)
        await nc.set_bid(price)
        world.advance(JOIN_MAX + 120)
        assert len(ready_nodes(world)) == 1
        market = world.markets[MODEL]
        with world.lock:  # someone wants the whole market at twice our ceiling
            market.bidders.append(Bidder("surge", market.capacity, price * 2, market.capacity, price * 2, pinned=True))
        world.advance(60)
        assert ready_nodes(world) == [] and "node-reclaimed" in events
        assert (await nc.spend()).nodes_held == 0
        ladder = await nc.ladder()
        assert ladder.rungs[0].price_per_gpu_hour > price * 2


async def test_balance_falls_by_price_times_gpus_times_hours(sim_factory):
    sim = sim_factory()
    world = sim.world
    async with NCClient(endpoints_of(sim), SecretStr(sim.token)) as nc:
        start_balance = (await nc.balance()).balance_ucredits
        ceiling = (await nc.ladder()).rungs[-1].price_per_gpu_hour + 1_000_000  # comfortably above
        demand(sim, 1)
        await nc.set_bid(ceiling)
        world.advance(JOIN_MAX + 60)
        node = ready_nodes(world)[0]
        world.advance(3 * 3600)
        # Align to a billing assessment, then compare with the public ticks: what winners are assessed.
        world.advance((10 - world.step_index % 10) % 10 * 60)
        bal = await nc.balance()
        ticks = (await nc.ticks(gpu_model=MODEL, since=node.ready_at - timedelta(minutes=1))).ticks
        held = [t for t in ticks if t.at >= node.ready_at and t.at <= bal.assessed_at]
        expected = sum(Fraction(t.price_per_gpu_hour * 8, 60) for t in held)
        assert start_balance - bal.balance_ucredits == int(expected)  # to the micro-credit
        assert len(held) >= 180
        charges = [t for t in (await nc.transactions()).transactions if t.kind == "charge"]
        assert sum(-t.amount_ucredits for t in charges) == start_balance - bal.balance_ucredits
        last_interval = [t for t in held if (bal.assessed_at - t.at).total_seconds() < 600]
        assert bal.burn_ucredits_hr == round(sum(Fraction(t.price_per_gpu_hour * 8, 60) for t in last_interval) * 6)


def test_same_seed_same_ticks_other_seed_other_ticks():
    def run(seed):
        w = make_world(seed=seed)
        w.advance(2 * 3600)
        return [(t, p, g) for (t, p, g) in w.ticks[MODEL]]

    a, b, c = run(11), run(11), run(12)
    assert a == b
    assert [p for _, p, _ in a] != [p for _, p, _ in c]


def test_ladder_prices_rise_with_nodes_and_win_what_they_say():
    w = make_world(volatility=0.0)
    m = w.markets[MODEL]
    for n, price in m.ladder(8):
        from ncui.sim.market import Demand

        won = m.clear([Demand("us", price, n, 0)]).winners.get("us", 0)
        assert won == n, f"the rung for {n} nodes at {price} won {won}"
        if price > m.floor:
            won_less = m.clear([Demand("us", price - 10_000, n, 0)]).winners.get("us", 0)
            assert won_less < n


def test_withdrawn_bid_keeps_busy_nodes_but_pulls_no_new_ones():
    w = make_world(volatility=0.0)
    st = w.main_org.k8s["halcyon"]
    price = w.markets[MODEL].ladder(2)[1][1]
    st.requested_nodes = 1
    w.set_bid(st, price)
    w.advance(JOIN_MAX + 60)
    assert len(st.market_nodes()) == 1
    w.set_bid(st, 0)
    st.requested_nodes = 2
    w.advance(JOIN_MAX + 60)
    assert len(st.market_nodes()) == 1  # still held for the running job, no second pull
    st.requested_nodes = 0
    w.advance(30 * 60)
    assert st.market_nodes() == []  # released once idle past the grace
