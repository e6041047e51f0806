"""Lease, the money control room, and the spending limit (issue 11): against the box over loopback HTTP."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import httpx
import pytest
from pydantic import SecretStr

from ncui import limits as L
from ncui.app import NCApp
from ncui.limits import Limit, charged_since, evaluate, limit_state, parse_until
from ncui.screens.limitguard import CountdownModal, SpendingLimitModal
from ncui.screens.modals import CeilingModal
from ncui.store import Store

from .apphelp import app_for, footer_keys, loaded, notes, put_bid, screen_text, type_text, until
from .conftest import START
from .screentext import joined
from .test_app_money import confirm_and_check_sent, record_bids

# ---- the rules, without a terminal ---------------------------------------------------------------------


class _Tx:
    def __init__(self, minutes: int, amount: int, kind: str = "charge") -> None:
        self.at, self.amount_ucredits, self.kind = START + timedelta(minutes=minutes), amount, kind


def test_what_counts_and_the_levels():
    st = Store(clock=lambda: 100.0)
    limit = Limit(10_000_000, START)
    # charges after the limit was set count; earlier ones, top-ups and refunds do not
    txs = (_Tx(-10, -9_000_000), _Tx(10, -3_000_000), _Tx(20, 50_000_000, "topup"), _Tx(20, -5_000_000))
    assert charged_since(txs, START) == (8_000_000, False)
    st.set("transactions", txs)
    s = evaluate(limit, st.get("transactions"), START + timedelta(minutes=30), 100.0)
    assert (s.level, s.spent, s.percent) == ("warn", 8_000_000, 80)
    st.set("transactions", txs + (_Tx(30, -2_000_000),))
    assert evaluate(limit, st.get("transactions"), START, 100.0).level == "reached"
    assert evaluate(L.kept(limit), st.get("transactions"), START, 100.0).level == "kept"
    # a count that could not be read is unknown, never $0.00
    st.clear("transactions")
    st.fail("transactions", "HTTP 500")
    s = evaluate(limit, st.get("transactions"), START, 100.0)
    assert s.level == "unknown" and s.spent is None and "could not read: HTTP 500" in s.sentence()
    # a dated limit ends
    dated = Limit(10_000_000, START, START + timedelta(days=1))
    assert evaluate(dated, st.get("transactions"), START + timedelta(days=2), 100.0).level == "expired"


def test_until_is_a_date_or_blank():
    now = datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc)
    assert parse_until("", now) is None
    assert parse_until("2026-11-05", now) == datetime(2026, 11, 6, tzinfo=timezone.utc)
    assert parse_until("2026-11-05 18:30", now) == datetime(2026, 11, 5, 18, 30, tzinfo=timezone.utc)
    for bad, why in [
        ("tomorrow", "is not a date"),
        ("2026-02-30", "is not a real date"),
        ("2026-11-01", "has already passed"),
    ]:
        with pytest.raises(ValueError, match=why):
            parse_until(bad, now)


def test_the_file_keeps_each_key_and_survives_a_broken_file(tmp_path):
    path = tmp_path / "ncui" / "limits.json"
    a, b = Limit(5_000_000, START), Limit(7_000_000, START, START + timedelta(days=1), kept=True)
    L.save("api|org-a", a, path)
    L.save("api|org-b", b, path)
    assert (L.load("api|org-a", path), L.load("api|org-b", path)) == (a, b)
    assert path.stat().st_mode & 0o077 == 0
    L.save("api|org-a", None, path)
    assert L.load("api|org-a", path) is None and L.load("api|org-b", path) == b
    path.write_text("{not json")
    assert L.load("api|org-b", path) is None  # said in the log, never a crash


# ---- the Lease screen --------------------------------------------------------------------------------

SENTENCES = {
    "k8s-market": "Limit price none: nothing is bid",
    "k8s-fixed-amd": "marlin is a fixed cluster: there is no limit price to set or withdraw",
    "k8s-packing": "Limit price none: nothing is bid",
    "vm": "Nothing declared: no node is granted or billed. d declares capacity.",
    "slurm": "plover is a Slurm cluster: no limit price and no capacity stand here",
    "public-research": "Only Marshall's workspace requests and releases a public-research node",
}


@pytest.mark.parametrize("scenario", list(SENTENCES))
async def test_lease_says_what_stands_on_every_scenario(sim_factory, scenario):
    sim = sim_factory(scenario)
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance"))
        await pilot.press("5")
        await until(pilot, lambda: SENTENCES[scenario] in screen_text(app), what=SENTENCES[scenario])
        keys = {"k8s-market": ["l Limit price", "w Withdraw"], "k8s-packing": ["l Limit price", "w Withdraw"]}
        keys["vm"] = ["k Key", "d Declare", "R Release"]  # every key a VM cluster offers, k too
        # every key of the footer read whole at 80 columns, this cluster's first, q Quit last
        await until(pilot, lambda: footer_keys(app)[-1:] == ["q Quit"], what=f"q Quit in {footer_keys(app)}")
        refresh = [] if scenario == "vm" else ["r Refresh"]  # (a VM cluster's r: in the help, for k, d and R)
        assert sorted(footer_keys(app)) == sorted(
            [*keys.get(scenario, []), "b Spend cap", "? Help", *refresh, "q Quit"]
        )
        await until(pilot, lambda: "Since start $0.00 charged since 09:00" in screen_text(app))
        text = screen_text(app)
        assert "Loading" not in text
        assert "Metered rate $0.00/h org-wide, assessed 09:00 (about 10 min behind)" in text
        at100 = {
            "k8s-market": "withdraws your limit price, and stops your runs if you choose",
            "vm": "releases your VM",
        }
        at100["k8s-packing"] = at100["k8s-market"]
        said = at100.get(scenario, "warns again: nothing here is withdrawn")
        assert f"Spending limit none. b sets one (it warns at 80%; at 100% {said}" in text


async def test_a_count_that_cannot_be_read_is_unknown_not_zero(sim):
    async with httpx.AsyncClient() as h:
        await h.post(
            sim.api_url + "/_sim/faults",
            json={"path_prefix": "/api/billing/transactions", "status": 500, "count": 10_000},
            headers={"Authorization": f"Bearer {sim.token}"},
        )
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance") and app.store.get("transactions").failing)
        await pilot.press("5")
        await until(pilot, lambda: "Since start ⚠ Unknown (could not read:" in screen_text(app))
        assert "$0.00 charged" not in screen_text(app)


async def test_lease_sets_and_changes_the_limit_price_the_figure_confirmed_is_the_figure_sent(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster", "ladder", "bid", "balance", "summary"))
        sent = record_bids(app)
        await pilot.press("5")
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, CeilingModal))
        assert "A limit price on halcyon pulls nodes for any GPU job applied there; one node is 8 GPUs" in (
            screen_text(app)
        )
        await type_text(pilot, "5.25")
        await pilot.press("enter")
        assert await confirm_and_check_sent(pilot, app, sent, "limit price of") == Decimal("5.25")
        await until(pilot, lambda: sim.world.main_org.k8s["halcyon"].bid == 5_250_000, what="the bid")
        await until(pilot, lambda: "$5.25/GPU-h wins" in screen_text(app), what="Lease showing the limit")
        # change it: the same question, prefilled with what stands
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, CeilingModal))
        assert app.screen.query_one("#ceiling").value == "5.25"
        await pilot.press("end", *["backspace"] * 4)
        await type_text(pilot, "6.5")
        await pilot.press("enter")
        assert await confirm_and_check_sent(pilot, app, sent, "limit price of") == Decimal("6.50")
        await until(pilot, lambda: sim.world.main_org.k8s["halcyon"].bid == 6_500_000)
        assert sent == [Decimal("5.25"), Decimal("6.50")]


# ---- the spending limit at the box's speed -------------------------------------------------------------


def _running_job(kube_factory):
    k = kube_factory("k8s-market")
    k.set_bid(5.0)
    k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    k.advance_until(lambda: any(s.startswith("Running") for s in k.pod_statuses().values()), what="running")
    k.world.advance(20 * 60)  # two assessments with the node held: one whole interval's charge sizes the limit
    charges = [t for t in k.world.main_org.transactions if t.kind == "charge"]
    return k, -charges[-1].amount


async def _set_spending_limit(pilot, app, dollars: str, until_text: str = "", *, stop_runs: bool = False) -> None:
    await pilot.press("5", "b")
    await until(pilot, lambda: isinstance(app.screen, SpendingLimitModal))
    await type_text(pilot, dollars)
    if until_text or stop_runs:
        await pilot.press("tab")
        await type_text(pilot, until_text)
    if stop_runs:  # the box under the date, ticked as a person does
        await pilot.press("tab", "space")
        await until(pilot, lambda: "your runs on GPU nodes are stopped too" in screen_text(app), what="ticked")
    await until(pilot, lambda: app.screen.value is not None, what="a valid limit")
    await pilot.press("enter")
    await until(pilot, lambda: app.store.value("spend_limit") is not None, what="the limit set")


def _assess(app, world) -> None:
    """Ten minutes on the box's clock (one assessment); the balance poller notices it."""
    world.advance(10 * 60)
    app.pollers.refresh("balance")


async def _reach(pilot, app, world) -> None:
    """Assessments until the spending limit's last warning is up."""
    for _ in range(4):
        spent = limit_state(app.store).spent or 0
        _assess(app, world)
        await until(pilot, lambda s=spent: (limit_state(app.store).spent or 0) > s, what="the next charge counted")
        if limit_state(app.store).level == "reached":
            break
    await until(pilot, lambda: isinstance(app.screen, CountdownModal), what="the last warning")


def _header(app) -> str:
    return app.query_one("StatusHeader").render().plain


async def test_the_spending_limit_warns_at_80_and_withdraws_the_limit_price_at_100(kube_factory, monkeypatch):
    monkeypatch.setattr(L, "COUNTDOWN_S", 2.0)
    k, charge = _running_job(kube_factory)
    limit = -(-charge * 115 // 100 // 10_000) * 10_000  # one interval's charge is ~87% of it; two are over
    dollars = f"{limit // 1_000_000}.{limit % 1_000_000 // 10_000:02d}"
    app = app_for(k.sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions", "bid", "cluster"))
        await _set_spending_limit(pilot, app, dollars)
        assert f"cap ${dollars} 0%" in _header(app)
        _assess(app, k.world)
        await until(
            pilot,
            lambda: any("of your spending limit" in n.message for n in list(app._notifications)),
            what="the 80% warning",
        )
        assert f" cap ${dollars} 8" in _header(app)  # highlighted, with its share
        header = app.query_one("StatusHeader")  # read whole at 80 columns, beside the standing limit price
        await until(pilot, lambda: len(_header(app).splitlines()[1]) <= header.content_size.width, what="it fits")
        assert "limit $5.00/GPU-h" in _header(app) and _header(app).rstrip().endswith("%")
        assert "— over 80%" in screen_text(app)  # (wrapped under its value at 80 columns)
        assert k.world.main_org.k8s["halcyon"].bid == 5_000_000
        _assess(app, k.world)
        await until(pilot, lambda: isinstance(app.screen, CountdownModal), what="the last warning")
        text = screen_text(app)
        assert "withdraw the limit price of $5.00/GPU-h on halcyon in " in text and "Esc keeps it" in text
        await until(pilot, lambda: k.world.main_org.k8s["halcyon"].bid == 0, timeout=20, what="the withdrawal")
        await until(pilot, lambda: app.store.value("bid").max_price_per_gpu_hour == 0)
        assert f" cap ${dollars} reached " in _header(app)


async def test_the_countdown_can_be_cancelled_and_the_limit_is_kept_by_you(kube_factory):
    k, charge = _running_job(kube_factory)
    app = app_for(k.sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions", "bid", "cluster"))
        await _set_spending_limit(pilot, app, "1.00")
        _assess(app, k.world)
        await until(pilot, lambda: isinstance(app.screen, CountdownModal), what="the last warning")
        # the countdown a person gets: 15 s, read as it ticks (a loaded machine reads it a second in)
        assert re.search(r"in 1[45] s\. Esc keeps it", screen_text(app)), screen_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, CountdownModal))
        await until(pilot, lambda: "reached, kept by you" in screen_text(app), what="Lease saying so")
        assert " cap $1 kept " in _header(app)
        assert k.world.main_org.k8s["halcyon"].bid == 5_000_000
        await pilot.resize_terminal(80, 24)  # at 80 columns the long sentence wraps under its value, not its label
        lease = app.query_one("LeaseView Static#lease")

        def drawn() -> list[str]:
            return [line.text.rstrip() for line in lease.render_lines(lease.region.reset_offset)]

        await until(pilot, lambda: lease.region.width <= 80 and any(r.startswith("Spending limit") for r in drawn()))
        rows = drawn()
        at = next(i for i, r in enumerate(rows) if r.startswith("Spending limit"))
        below = [r for r in rows[at + 1 :] if r.strip()]
        assert "kept by you" in joined("\n".join(rows[at:])) and len(below) >= 2, rows[at:]
        assert all(r.startswith(" " * 16) for r in below), rows[at:]
        spent = limit_state(app.store).spent
        _assess(app, k.world)  # more charges: it stays kept, no second countdown
        await until(pilot, lambda: limit_state(app.store).spent > spent, what="the next charge counted")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, CountdownModal)
        saved = json.loads(L.limits_path().read_text())
        assert [v["kept"] for v in saved["limits"].values()] == [True]


async def test_the_spending_limit_survives_a_restart_and_a_session_one_ends_with_q(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions", "bid", "cluster"))
        await _set_spending_limit(pilot, app, "40", "2026-11-09")
    saved = L.limits_path().read_text()
    assert sim.token not in saved and "40000000" in saved
    app = app_for(sim)  # ncui started again
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: "cap $40 0%" in _header(app), what="the limit in the header")
        await pilot.press("5")
        await until(
            pilot,
            lambda: "$40.00 through 2026-11-09 (UTC): $0.00 charged since 09:00 (0%)." in screen_text(app),
            what="the limit on Lease",
        )
        # replaced by a session limit; quitting with nothing standing ends it
        await pilot.press("b")
        await until(pilot, lambda: isinstance(app.screen, SpendingLimitModal))
        app.screen.query_one("#until").value = ""
        await until(pilot, lambda: app.screen.value == (40_000_000, None, False))
        await pilot.press("enter")
        await until(pilot, lambda: app.store.value("spend_limit").until is None)
        await pilot.press("q")
        await until(pilot, lambda: app._exit)
    assert json.loads(L.limits_path().read_text())["limits"] == {}


async def test_the_spending_limit_releases_vm_capacity_at_100_and_says_so_first(sim_factory, monkeypatch):
    """On a VM cluster what stands is the declared capacity: the limit's question, the 80% warning and the last
    warning say it is released (its nodes and their disks with it), and at 100% it is, with the same price."""
    from ncui.sim.world import JOIN_MAX

    monkeypatch.setattr(L, "COUNTDOWN_S", 2.0)
    sim = sim_factory("vm", volatility=0.0)
    vm = sim.world.main_org.vm["tern-vm"]
    price = sim.world.markets["H100-SXM-80GB"].ladder(1)[0][1] / 1e6
    with httpx.Client(base_url=sim.api_url, headers={"Authorization": f"Bearer {sim.token}"}) as h:
        body = {"max_gpus": 8, "max_price_per_gpu_hour": price, "expected_version": vm.version}
        assert h.put("/api/vm/capacity", json=body).status_code == 200
    sim.world.advance(120 + JOIN_MAX + 20 * 60)  # the node up, then two assessments: one interval's charge
    charge = -[t for t in sim.world.main_org.transactions if t.kind == "charge"][-1].amount
    limit = -(-charge * 115 // 100 // 10_000) * 10_000
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions", "vm_capacity"))
        await pilot.press("5", "b")
        await until(pilot, lambda: isinstance(app.screen, SpendingLimitModal))
        assert "countdown you can cancel, it releases your VM capacity: billing stops" in screen_text(app)
        assert not app.screen.query("#stop_runs")  # (no runs to choose to stop: the capacity goes)
        await pilot.press("escape")
        await _set_spending_limit(pilot, app, f"{limit // 1_000_000}.{limit % 1_000_000 // 10_000:02d}")
        _assess(app, sim.world)
        await until(
            pilot,
            lambda: any(
                "At 100% ncui will release the VM capacity on tern-vm" in n.message for n in app._notifications
            ),
            what="the 80% warning, naming what goes",
        )
        _assess(app, sim.world)
        await until(pilot, lambda: isinstance(app.screen, CountdownModal), what="the last warning")
        text = screen_text(app)
        assert "release the VM capacity on tern-vm in " in text and "destroyed with its disk" in text
        assert str(app.screen.query_one("#yes").label) == "Release now (y, Enter)" and "no new nodes" not in text
        await until(pilot, lambda: vm.max_gpus == 0, timeout=20, what="the release")
        assert vm.price == int(round(price * 1e6))  # the same price, as the PUT needs both fields
        await until(
            pilot,
            lambda: any("the VM capacity on tern-vm is released" in n.message for n in app._notifications),
            what="said",
        )


# ---- what the spending limit stops (issue 21) ------------------------------------------------------------


def _dollars(uc: int) -> str:
    return f"{uc // 1_000_000}.{uc % 1_000_000 // 10_000:02d}"


async def test_the_limit_says_what_it_stops_and_when_chosen_stops_the_runs_on_gpu_nodes(kube_factory, monkeypatch):
    """Inkling's engine holds a node: the limit, set with "also stop my runs", lists the run and what stays in
    the countdown, then withdraws the limit price and stops the recipe as x does (its node then goes back)."""
    monkeypatch.setattr(L, "COUNTDOWN_S", 3.0)
    k = kube_factory("k8s-market")
    k.set_bid(5.0)
    k.kubectl("apply", "-f", k.file("inkling-serve-nvidia.yaml"))  # a Deployment: it holds its node until stopped
    k.advance_until(lambda: any(s.startswith("Init") for s in k.pod_statuses().values()), what="on its node")
    k.world.advance(20 * 60)
    charge = -[t for t in k.world.main_org.transactions if t.kind == "charge"][-1].amount
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))  # ncui signed in to halcyon before (kubectl's sign-in)
    app = app_for(k.sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions", "bid", "cluster", "catalog"))
        await _set_spending_limit(pilot, app, _dollars(charge // 2), stop_runs=True)
        lease = screen_text(app)
        assert (
            "At 100% ncui withdraws your limit price (no new nodes) and stops your runs on GPU nodes (their Jobs "
            "and Deployments; the shared volume keeps what they wrote)" in lease
        )
        saved = json.loads(L.limits_path().read_text())
        assert saved["version"] == 2 and [v["stop_runs"] for v in saved["limits"].values()] == [True]
        _assess(app, k.world)
        await until(pilot, lambda: isinstance(app.screen, CountdownModal), what="the last warning")
        text = screen_text(app)
        assert "ncui will withdraw the limit price of $5.00/GPU-h on halcyon and stop Serve Inkling in " in text
        assert (
            "These runs are stopped (deleted) then, each with what stays: • Serve Inkling: deployment/inkling "
            "(READY 1/1), service/inkling. The staged checkpoint and the engine's compile caches stay on the shared "
            "volume (/mnt/shared/inkling)"
        ) in text
        assert "Their nodes go back to the market after a few idle minutes; billing ends then." in text
        gone = lambda: "inkling" not in k.kubectl("get", "deployments", "-o", "name").stdout  # noqa: E731
        await until(pilot, gone, timeout=30, what="deleted")
        assert k.world.main_org.k8s["halcyon"].bid == 0
        await until(pilot, lambda: "Stopped Serve Inkling: deleted deployment/inkling" in notes(app), what="said")


async def _node_held_at_5(sim) -> None:
    """A $5 limit price and a job's demand for one node, granted and billing for 40 virtual minutes."""
    await put_bid(sim, 5.0)
    sim.world.main_org.k8s["halcyon"].requested_nodes = 1
    sim.world.advance(40 * 60)


async def test_without_the_choice_the_limit_says_the_held_node_goes_on_billing(sim, monkeypatch):
    """A node held for a job (demand 1) and no choice to stop runs: the countdown withdraws the limit price and
    says the held node stays, billed — not that spending stops."""
    monkeypatch.setattr(L, "COUNTDOWN_S", 3.0)
    await _node_held_at_5(sim)
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions", "bid", "cluster", "spend"))
        await _set_spending_limit(pilot, app, "5")
        lease = screen_text(app)
        assert (
            "At 100% ncui withdraws your limit price: no new nodes. A run on a node you hold goes on, billed" in lease
        )
        assert "stops spending" not in lease
        await _reach(pilot, app, sim.world)
        text = screen_text(app)
        assert (
            "Once it is withdrawn, no new nodes are pulled. 1 node (8 GPUs) still held stays, billed, until its job "
            "ends: " in text
        )
        assert "you did not choose to stop runs" in text


async def test_one_countdown_and_one_withdrawal_even_when_an_update_lands_during_it(sim, monkeypatch):
    """The withdrawal's PUT is slow (a 3 s delay on /api/k8s/bid) and a charge lands meanwhile: no second
    countdown comes for the same limit, and 0 is sent once."""
    monkeypatch.setattr(L, "COUNTDOWN_S", 2.0)
    await _node_held_at_5(sim)
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions", "bid", "cluster", "spend"))
        sent = record_bids(app)
        await _set_spending_limit(pilot, app, "5")
        await _reach(pilot, app, sim.world)
        async with httpx.AsyncClient() as h:
            await h.post(
                sim.api_url + "/_sim/faults",
                json={"path_prefix": "/api/k8s/bid", "delay": 3.0, "count": 2},
                headers={"Authorization": f"Bearer {sim.token}"},
            )
        await until(pilot, lambda: not isinstance(app.screen, CountdownModal), what="the countdown's end")
        for _ in range(3):  # charges land while the PUT is slow, and after it
            spent = limit_state(app.store).spent
            _assess(app, sim.world)
            await until(pilot, lambda s=spent: limit_state(app.store).spent > s, what="the next charge counted")
            assert not isinstance(app.screen, CountdownModal)
        await until(pilot, lambda: sim.world.main_org.k8s["halcyon"].bid == 0, timeout=20, what="the withdrawal")
        await until(pilot, lambda: not app.flows.limit.counting, what="the withdrawal done")
        assert not isinstance(app.screen, CountdownModal) and sent == [Decimal(0)]


async def test_a_date_past_9999_is_refused_on_the_keystroke_not_a_crash(sim):
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions", "bid", "cluster"))
        await pilot.press("5", "b")
        await until(pilot, lambda: isinstance(app.screen, SpendingLimitModal))
        await type_text(pilot, "5")
        await pilot.press("tab")
        await type_text(pilot, "9999-12-31")
        await until(pilot, lambda: "past the last day ncui can count to" in screen_text(app), what="the refusal")
        assert app.screen.value is None and app.is_running
        await pilot.press("space", "2", "3", ":", "5", "9")  # that day's last minute is a date ncui can count to
        await until(pilot, lambda: app.screen.value is not None, what="a valid limit")
        await pilot.press("escape")
        await pilot.press("q")
        await until(pilot, lambda: app._exit)
    assert json.loads(L.limits_path().read_text())["limits"] == {} if L.limits_path().exists() else True


def test_a_version_1_limits_file_is_still_read(tmp_path):
    path = tmp_path / "limits.json"
    body = {"amount_ucredits": 5_000_000, "set_at": START.isoformat(), "until": None, "kept": False}
    path.write_text(json.dumps({"version": 1, "limits": {"api|org-a": body}}))
    assert L.load("api|org-a", path) == Limit(5_000_000, START)  # stop_runs: off, as before
    L.save("api|org-b", Limit(7_000_000, START, stop_runs=True), path)
    saved = json.loads(path.read_text())
    assert saved["version"] == 2 and saved["limits"]["api|org-a"] == body  # (the old entry kept as it was)
    assert L.load("api|org-b", path).stop_runs and not L.load("api|org-a", path).stop_runs


async def test_a_corrupt_limits_file_is_said_at_once(sim):
    L.limits_path().parent.mkdir(parents=True, exist_ok=True)
    L.limits_path().write_text("{not json")
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami") and app.flows.limit.key is not None)
        await until(pilot, lambda: "limits.json is not valid JSON" in notes(app), timeout=5, what="the notice")
        assert "no spending limit it held counts now (b on Lease sets one again)" in notes(app)  # what it means
        assert not any(v == "report" for v in [app.query_one("#views").current])


async def test_since_start_counts_from_the_services_clock_when_the_first_answer_is_dated(sim):
    """No clock handed in (as against the real service): "since start" is the box's time when its first dated
    answer came, never the wall clock (here weeks after the box's 09:00), and the charges before do not count."""
    from ncui.backend import Backend

    from .conftest import endpoints_of

    sim.world.main_org.k8s["halcyon"].bid = 5_000_000
    sim.world.main_org.k8s["halcyon"].requested_nodes = 1
    sim.world.advance(40 * 60)  # charges before ncui started
    backend = Backend(endpoints_of(sim), SecretStr(sim.token), timeout=5)
    app = NCApp(backend, store=Store(clock=lambda: 1000.0), mode="test")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions"))
        await pilot.press("5")
        await until(pilot, lambda: "Since start $0.00 charged since 09:40" in screen_text(app), what="Lease")
        start = app.store.meta["session_start"]
        assert abs((start - sim.world.now()).total_seconds()) < 120
