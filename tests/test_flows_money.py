"""The money flows driven with no terminal (issue 22): ApplyFlow, LeaseFlow and SpendingLimitFlow on a real box
over loopback HTTP, their questions answered by a ScriptedUI. The figures each question judges are read from the
box into the store first (no pollers: ``fresh.read`` takes a slice no poller fetches as it stands)."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import httpx
from pydantic import SecretStr

from ncui import limits as L
from ncui import recipes as R
from ncui.api.models import ClusterRef
from ncui.backend import Backend
from ncui.flows.apply import ApplyFlow
from ncui.flows.base import Context
from ncui.flows.lease import Ceiling, LeaseFlow
from ncui.flows.limit import Countdown, SpendingLimitFlow
from ncui.flows.ui import Confirm, Results
from ncui.store import Store

from .apphelp import put_bid
from .conftest import endpoints_of
from .scripted_ui import ScriptedUI
from .waits import until


async def _connected(sim, cluster: str, ui: ScriptedUI) -> Context:
    """A connected backend and a store holding what the flows judge, as the pollers would have read it."""
    backend = Backend(endpoints_of(sim), SecretStr(sim.token), timeout=5, clock=sim.world.now)
    nc = await backend.connect()
    store = Store()
    store.meta["cluster"] = ClusterRef(name=cluster, kind="kubernetes")
    info = await nc.k8s_cluster(cluster)
    store.set("cluster", info)
    store.set("balance", await nc.balance())
    store.set("summary", await nc.billing_summary())
    store.set("ticks", (await nc.ticks(gpu_model=info.gpu_model)).ticks)
    if info.market:
        store.set("bid", await nc.bid(cluster))
        store.set("ladder", await nc.ladder(cluster))
    return Context(backend, store, ui)


def _bids_sent(ctx: Context) -> list[Decimal]:
    """Every ``max_price_per_gpu_hour`` the flow's client sends, as the exact decimal of the JSON body."""
    sent: list[Decimal] = []

    async def hook(request: httpx.Request) -> None:
        if request.method == "PUT" and request.url.path == "/api/k8s/bid":
            sent.append(json.loads(request.content, parse_float=Decimal, parse_int=Decimal)["max_price_per_gpu_hour"])

    assert ctx.backend is not None and ctx.backend.nc is not None
    http = ctx.backend.nc._http
    http.event_hooks = {**http.event_hooks, "request": [*http.event_hooks["request"], hook]}
    return sent


def _never(what: str) -> Any:
    async def called(*args: Any, **kw: Any) -> Any:
        raise AssertionError(f"{what} was called")

    return called


def _no_recipe(name: str) -> Any:
    raise AssertionError(f"recipe({name!r}) was called")


async def _same(plan: R.Plan) -> R.Plan:
    return plan


def _apply_flow(ctx: Context, kube_client: Any) -> ApplyFlow:
    lease = LeaseFlow(ctx, remember=lambda **kw: None, exit=lambda **kw: None)
    return ApplyFlow(ctx, lease=lease, kube_client=kube_client, before_apply=_same, remember_job=lambda *a, **k: None)


async def test_the_apply_refuses_past_the_balance_and_asks_once_it_is_covered(sim_factory):
    sim = sim_factory("k8s-fixed-amd")
    with sim.world.lock:
        sim.world.main_org.balance = 5_000_000  # $5: not two hours of a node at the market's price
    ui = ScriptedUI(None)  # the refusal, read and closed
    ctx = await _connected(sim, "marlin", ui)
    try:
        info = ctx.store.value("cluster")
        assert not info.market and ctx.store.value("ticks")
        plan = R.custom_plan(R.CustomJob("python:3.12", "true", 1, "cover"), info)
        await _apply_flow(ctx, _never("the cluster's client")).run(plan)
        (refused,) = ui.asked
        assert isinstance(refused, Results) and refused.title == "Not enough balance"
        assert "you have $5.00" in str(refused.body) and "a fixed cluster has no limit price" in str(refused.body)

        with sim.world.lock:
            sim.world.main_org.balance = 100_000_000_000  # covered now: the apply question comes, and a no
        ctx.store.set("balance", await ctx.backend.nc.balance())
        ui.script.append(False)
        await _apply_flow(ctx, _never("the cluster's client")).run(plan)
        question = ui.asked[1]
        assert isinstance(question, Confirm) and question.title == f"Apply {plan.title}?"
        assert "covered" in str(question.body)
        assert ui.told[-1] == ("information", "Nothing was applied.")
    finally:
        await ctx.backend.close()


async def test_the_limit_price_sent_is_the_one_asked(sim):
    ui = ScriptedUI()
    ctx = await _connected(sim, "halcyon", ui)
    try:
        sent = _bids_sent(ctx)
        ladder = ctx.store.value("ladder")
        price = -(-ladder.rungs[0].price_per_gpu_hour // 10_000) * 10_000 + 250_000  # wins one node, in cents

        def typed(q: Ceiling) -> int:
            ok, lines = q.judge(price)  # the ceiling question lets it be set, as it is typed
            assert ok, lines
            return price

        ui.script += [typed, True]
        remembered: list[dict[str, Any]] = []
        lease = LeaseFlow(ctx, remember=lambda **kw: remembered.append(kw), exit=lambda **kw: None)
        await lease.change_now()
        ceiling, confirm = ui.asked
        assert isinstance(ceiling, Ceiling) and isinstance(confirm, Confirm)
        dollars = f"${price / 1e6:.2f}/GPU-h"
        assert confirm.title == "Set the limit price?" and dollars in str(confirm.body)
        assert sent == [Decimal(price) / Decimal(1_000_000)]  # exactly the figure asked, once
        assert sim.world.main_org.k8s["halcyon"].bid == price
        assert ctx.store.value("bid").max_price_per_gpu_hour == price
        assert remembered[0]["ceiling"]["price_per_gpu_hour_ucredits"] == price
        assert ui.told[-1] == ("information", f"Limit price {dollars} stands on halcyon.")
    finally:
        await ctx.backend.close()


async def test_the_spending_limit_at_100_percent_withdraws_once(sim, monkeypatch):
    """A $5 limit price holding a node; a spending limit of $0.01 set, then an assessment: one countdown, and 0 is
    sent once, even when more updates land while it is asked and while the withdrawal is under way."""
    monkeypatch.setattr(L, "COUNTDOWN_S", 1.0)
    await put_bid(sim, 5.0)
    sim.world.main_org.k8s["halcyon"].requested_nodes = 1
    sim.world.advance(40 * 60)
    ui = ScriptedUI()
    ctx = await _connected(sim, "halcyon", ui)
    try:
        nc = ctx.backend.nc
        sent = _bids_sent(ctx)
        limit = SpendingLimitFlow(
            ctx,
            kube_signed_in=_never("the cluster's client"),
            stop_plan=_never("stop_plan"),
            stop_objects=_never("stop_objects"),
            recipe=_no_recipe,
            state_notices=lambda: None,
        )
        limit.start()
        ctx.store.set("whoami", await nc.whoami())
        assert limit.key is not None
        assert limit.save(L.Limit(10_000, ctx.backend.now()))  # $0.01, from now
        sim.world.advance(10 * 60)  # one assessment: a charge after the limit was set

        async def another_update(q: Countdown) -> bool:
            sim.world.advance(10 * 60)  # a new charge lands while the countdown is up
            ctx.store.set("transactions", (await nc.transactions()).transactions)
            return True

        def answer(q: Countdown) -> Any:
            assert "withdraw the limit price of $5.00/GPU-h on halcyon" in q.what
            return another_update(q)

        ui.script.append(answer)
        ctx.store.set("transactions", (await nc.transactions()).transactions)
        assert L.limit_state(ctx.store).level == "reached"
        await until(lambda: sent == [Decimal(0)] and not limit.counting, 20, "0 sent, the withdrawal done")
        for _ in range(2):  # more updates after it: nothing stands, nothing more is sent or asked
            sim.world.advance(10 * 60)
            ctx.store.set("transactions", (await nc.transactions()).transactions)
            ctx.store.set("bid", await nc.bid("halcyon"))
        await until(lambda: all(t.done() for t in ui.tasks) and not limit.counting, 10, "the checks done")
        assert [type(q) for q in ui.asked] == [Countdown] and sent == [Decimal(0)]
        assert sim.world.main_org.k8s["halcyon"].bid == 0
        assert ("information", "Spending limit reached: the limit price on halcyon is withdrawn.") in ui.told
    finally:
        await ctx.backend.close()
