"""Issue 21, 1: a money question is built from reads made for it (ncui/flows/fresh.py), through the TUI against
the box over loopback HTTP: a balance that cannot be read is never "covered", what changed while the human was
asked is said before anything is sent, and the ceiling's verdict is in the confirmation for the figure sent."""

from __future__ import annotations

import re
from decimal import Decimal

import httpx

from ncui import recipes as R
from ncui.screens.modals import CeilingModal, ConfirmModal, RetryModal

from .apphelp import app_for, loaded, put_bid, screen_text, type_text, until
from .test_app_money import record_bids


async def _sim(sim, method: str, path: str, body: dict | None = None) -> None:
    async with httpx.AsyncClient() as h:
        r = await h.request(method, sim.api_url + path, json=body, headers={"Authorization": f"Bearer {sim.token}"})
        assert r.status_code == 200, r.text


async def _lease_limit(pilot, app) -> None:
    """Lease → l, once what the question judges is in."""
    await until(pilot, lambda: loaded(app, "whoami", "cluster", "ladder", "bid", "balance", "summary"))
    await pilot.press("5")
    await pilot.press("l")


async def _type_ceiling(pilot, app, text: str) -> None:
    await until(pilot, lambda: isinstance(app.screen, CeilingModal), what="the ceiling question")
    await pilot.press("end", *["backspace"] * 8)
    await type_text(pilot, text)


async def test_a_balance_that_cannot_be_read_is_never_covered_and_a_change_is_said_before_the_put(sim):
    app = app_for(sim, frozen=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster", "ladder", "bid", "balance", "summary"))
        sent = record_bids(app)
        had = app.store.value("balance").balance_ucredits
        await _sim(sim, "POST", "/_sim/faults", {"path_prefix": "/api/billing", "status": 503, "count": 100_000})
        await _lease_limit(pilot, app)
        # the question is not built on the balance read before: it says so, with its age and why, and r retries
        await until(pilot, lambda: isinstance(app.screen, RetryModal), 30, what="the figures could not be read")
        text = screen_text(app)
        assert re.search(rf"You have \${had / 1e6:,.2f} as read \d+s ago — could not read it since \(", text), text
        assert "the cover cannot be confirmed; r to retry." in text and "covered" not in text.replace("cover can", "")
        # the service answers again: r reads again, and the question opens on what was read for it
        await _sim(sim, "DELETE", "/_sim/faults")
        await pilot.press("r")
        await _type_ceiling(pilot, app, "6.00")
        await until(pilot, lambda: "covered" in screen_text(app), what="the cover")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the confirmation")
        # the balance moves while the human reads the question: said in a new question before anything is sent
        await _sim(sim, "POST", "/_sim/billing/topup", {"usd": 10})
        await pilot.press("y")
        now = f"the balance is now ${(had + 10_000_000) / 1e6:,.2f} (was ${had / 1e6:,.2f})"
        await until(pilot, lambda: now in screen_text(app), 30, what=now)
        assert "Something changed while you were asked" in screen_text(app) and sent == []
        await pilot.press("y")
        await until(pilot, lambda: sent == [Decimal("6.00")], what="the PUT")


async def test_a_limit_changed_meanwhile_is_said_and_nothing_is_sent_over_it_unasked(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await put_bid(sim, 4.10)
        await until(pilot, lambda: loaded(app, "bid") and app.store.value("bid").max_price_per_gpu_hour == 4_100_000)
        sent = record_bids(app)
        await _lease_limit(pilot, app)
        await _type_ceiling(pilot, app, "4.20")
        await pilot.press("enter")
        await until(pilot, lambda: "Set a limit price of $4.20/GPU-h on halcyon?" in screen_text(app))
        await put_bid(sim, 9.99)  # the console, kubectl or curl, while the human reads the question
        await pilot.press("y")
        said = "the standing limit on halcyon is now $9.99/GPU-h (it was $4.10/GPU-h when you were asked)"
        await until(pilot, lambda: said in screen_text(app), 30, what=said)
        assert sent == []
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        assert sent == [] and sim.world.main_org.k8s["halcyon"].bid == 9_990_000


async def test_the_verdict_of_the_figure_sent_is_in_the_confirmation_even_after_a_fast_enter(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await _lease_limit(pilot, app)
        await until(pilot, lambda: isinstance(app.screen, CeilingModal), what="the ceiling question")
        ladder = app.store.value("ladder")
        # $0 is refused alone: no "$0.00 … covered" beside it
        await pilot.press("0")
        await until(pilot, lambda: "must be more than $0" in screen_text(app))
        assert "covered" not in screen_text(app)
        await pilot.press("backspace")
        low = ladder.rungs[0].price_per_gpu_hour - 500_000
        typed = f"{low / 1e6:.2f}"
        await pilot.press(*[{".": "full_stop"}.get(c, c) for c in typed], "enter")  # Enter at once
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the confirmation")
        verdict = R.judge_ceiling(low, ladder, 1)
        assert verdict.level == "warn"
        text = screen_text(app)
        assert f"Set a limit price of ${typed}/GPU-h on halcyon?" in text
        assert f"! {verdict.message}" in text, text


def test_a_refusal_for_the_balance_gives_the_exact_top_up(kube_factory):
    k = kube_factory("k8s-market")
    k.set_bid(5.0)
    k.world.main_org.balance = 60_740_000  # $60.74 against 8 GPUs × $5.00 × 2 h = $80.00
    out = k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"), check=False)
    refusal = out.stderr + out.stdout
    assert "does not cover two hours" in refusal, refusal
    assert R.admission_topup(refusal, True) == (
        "You have $60.74; two hours need $80.00: top up $19.26 on the console's Billing page."
    )
    assert "ask your organization's admin to add $19.26" in (R.admission_topup(refusal, False) or "")
    assert R.admission_topup("a pod asks for 4 nvidia.com/gpu, a partial node", True) is None


async def test_a_refusal_for_the_balance_from_the_cluster_shows_the_exact_top_up(sim, monkeypatch):
    """The balance drops after the yes's own read and before the apply reaches the cluster (a serve elsewhere
    bills): the cluster's admission refuses Train for two hours of cover, and the results say the exact top-up,
    in the words ncui's own check uses."""
    from ncui.kube.client import KubeClient
    from ncui.screens.modals import ResultsModal

    from .apphelp import to_apply_question

    app = app_for(sim)
    org = sim.world.main_org
    real_apply = KubeClient.apply
    limit = {}

    async def apply_after_a_drop(self, docs, *args, **kwargs):
        org.balance = 8 * limit["price"] * 2 - 3_260_000  # $3.26 short of two hours at the limit price
        return await real_apply(self, docs, *args, **kwargs)

    monkeypatch.setattr(KubeClient, "apply", apply_after_a_drop)
    async with app.run_test(size=(120, 40)) as pilot:
        ceiling = await to_apply_question(pilot, app, sim)
        limit["price"] = int(Decimal(ceiling) * 1_000_000)  # (read by the apply, after the yes below)
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ResultsModal), timeout=30, what="the apply's results")
        text = screen_text(app)
        need = 8 * limit["price"] * 2
        assert "does not cover two hours" in text, text
        assert (
            f"You have ${(need - 3_260_000) / 1e6:,.2f}; two hours need ${need / 1e6:,.2f}: top up $3.26 on the "
            "console's Billing page." in text
        ), text


def test_the_ladder_is_said_changed_only_when_its_verdict_for_the_price_changed():
    """The same price winning 8 nodes where it won 6 changes no answer: not a "something changed" question. A
    price that cleared and would not win now is said."""
    from ncui.flows.fresh import FRESH, Figure, Snapshot, changes

    def snap(ladder: str) -> Snapshot:
        return Snapshot((Figure("ladder", ladder, FRESH, 0.0),))

    words = {
        "6": ("ok", "$3.90/GPU-h clears now: it wins up to 6 nodes."),
        "8": ("ok", "$3.90/GPU-h clears now: it wins up to 8 nodes."),
        "0": ("warn", "$3.90/GPU-h would not win a node right now."),
    }
    assert changes(snap("6"), snap("8"), "halcyon", verdict=words.__getitem__) == []
    assert changes(snap("6"), snap("0"), "halcyon", verdict=words.__getitem__) == [
        "the market moved: $3.90/GPU-h would not win a node right now "
        "(when you were asked: $3.90/GPU-h clears now: it wins up to 6 nodes)"
    ]
