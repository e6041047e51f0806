"""The TUI driven as a person would (Textual pilot), against a seeded simulator over loopback HTTP."""

from __future__ import annotations

import httpx

from ncui.app import NCApp
from ncui.config import first_run_message
from ncui.screens.modals import ConfirmModal, HelpModal, SignInModal

from .apphelp import app_for, loaded, screen_text, until


async def test_account_screen_shows_who_money_and_plan(sim):
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        # the header shows the limit price once it is read ("…" until then): wait for it too
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions", "ladder", "cluster", "bid"))
        await pilot.pause()
        text = screen_text(app)
        assert "ada@halcyon.example" in text and "Halcyon Lab" in text
        assert "halcyon" in text and "kubernetes" in text
        assert "$250.00" in text and "Credits purchased" in text
        assert "8 GPUs × $" in text and "covered" in text
        header = app.query_one("StatusHeader").render().plain
        assert "halcyon (kubernetes, H100-SXM-80GB, market)" in header and "● live" in header
        assert "limit none" in header


async def test_each_view_subscribes_once_and_the_tab_bar_follows(sim):
    # Textual calls every class's on_mount along the MRO: a view that also called super().on_mount()
    # subscribed twice, redrew twice per change and leaked a subscription when unmounted.
    app = app_for(sim)

    def highlighted() -> str:
        bar = app.query_one("#tabs").content
        return " ".join(bar.plain[s.start : s.end].strip() for s in bar.spans if "reverse" in str(s.style))

    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami"))
        assert highlighted() == "1 Account"
        for key, name in [("3", "recipes"), ("1", "account")]:
            await pilot.press(key)
            assert app.query_one("#views").current == name and highlighted() == f"{key} {name.title()}"
        x = app.query_one("#tabs").content.plain.index("2 Market")
        await pilot.click("#tabs", offset=(x + 1 + 2, 0))  # the mouse works too (1 cell of padding)
        await until(pilot, lambda: app.query_one("#views").current == "market", what="market by click")
        assert highlighted() == "2 Market"
        for name in ("account", "market", "recipes"):
            view = app.query_one(f"#{name}")
            subs = [s for s in app.store._subs if getattr(s.fn, "__self__", None) is view]
            assert len(subs) == 1, (name, len(subs))
        await pilot.press("q")


async def test_keys_switch_screens_and_help(sim):
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami"))
        await pilot.press("2")
        await until(pilot, lambda: loaded(app, "ladder", "ticks", "bid", "spend"))
        await pilot.pause()
        assert app.query_one("#views").current == "market"
        text = screen_text(app)
        assert "Price to win H100-SXM-80GB" in text and "floor $1.50/GPU-h" in text
        ladder = app.store.value("ladder")
        assert f"${ladder.rungs[0].price_per_gpu_hour / 1e6:.2f}" in text
        assert "Your limit none" in text
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpModal) and "Price to win" in app.screen.body
        # a paragraph's source lines are joined (it wraps at the terminal's width): a blank line or a bullet breaks
        from ncui.screens.workloads import WorkloadsView

        # a bullet's source lines are joined (it wraps at the terminal's width), one that ends in bold too
        assert "[b]w[/b] wrap · [b]t[/b] timestamps · [b]G[/b]" in HelpModal(WorkloadsView.HELP).body
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpModal)
        for key, name in [("3", "recipes"), ("4", "workloads"), ("5", "lease"), ("1", "account")]:
            await pilot.press(key)
            assert app.query_one("#views").current == name
            if name == "workloads":  # the cluster asks for a sign-in first: not now
                await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in link")
                await pilot.press("escape")
                await until(pilot, lambda: "press s to sign in" in screen_text(app))
        await pilot.press("q")
    assert app.return_code == 0


async def test_standing_limit_shows_in_header_and_market_and_withdraw_asks_first(sim):
    async with httpx.AsyncClient() as h:
        ladder = (
            await h.get(sim.api_url + "/api/k8s/market/ladder", headers={"Authorization": f"Bearer {sim.token}"})
        ).json()
        price = ladder["rungs"][2]["price_per_gpu_hour"]
        await h.put(
            sim.api_url + "/api/k8s/bid",
            json={"max_price_per_gpu_hour": price},
            headers={"Authorization": f"Bearer {sim.token}"},
        )
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "bid", "ladder"))
        await pilot.pause()
        assert f"limit ${price:.2f}/GPU-h" in app.query_one("StatusHeader").render().plain
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "clears now: wins up to 3 nodes" in text or "clears now: wins up to" in text
        await pilot.press("5")
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("n")  # no: nothing changes
        await pilot.pause()
        assert sim.world.main_org.k8s["halcyon"].bid > 0
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: sim.world.main_org.k8s["halcyon"].bid == 0, what="the withdrawal")
        await until(pilot, lambda: "limit none" in app.query_one("StatusHeader").render().plain)


async def test_header_goes_stale_on_errors_and_live_again(sim):
    app = app_for(sim, frozen=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "balance"))
        async with httpx.AsyncClient() as h:
            await h.post(
                sim.api_url + "/_sim/faults",
                json={"path_prefix": "/api/billing/balance", "status": 500, "count": 1000},
                headers={"Authorization": f"Bearer {sim.token}"},
            )
        app.pollers.refresh("balance")
        header = lambda: app.query_one("StatusHeader").render().plain  # noqa: E731
        await until(pilot, lambda: "stale" in header(), what="stale")
        assert "$250.00" in header()  # the last good value stays on screen
        # Account's first-job cover is judged on that last value: said so, not a plain "covered"
        await pilot.press("1")
        stale_cover = "⚠ judged on the balance as last read, which could not be read since"
        await until(pilot, lambda: stale_cover in screen_text(app), what="the cover said stale")
        async with httpx.AsyncClient() as h:
            await h.delete(sim.api_url + "/_sim/faults", headers={"Authorization": f"Bearer {sim.token}"})
        app.pollers.failures["balance"] = 0
        app.pollers.refresh("balance")
        await until(pilot, lambda: "● live" in header(), what="live again")
        await until(pilot, lambda: stale_cover not in screen_text(app), what="the cover fresh again")


async def test_fixed_cluster_says_no_limit_price(sim_factory):
    sim = sim_factory("k8s-fixed-amd")
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "cluster", "spend"))
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "fixed cluster: there is no market and no limit price" in text
        assert "MI300X" in text and "Held 2 nodes (16 GPUs) (reserved: no market rate)" in text


async def test_public_research_explains_its_path(sim_factory):
    sim = sim_factory("public-research")
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance"))
        await pilot.pause()
        text = screen_text(app)
        assert "public research organization has no clusters" in text and "Marshall" in text


async def test_first_run_without_token():
    app = NCApp(None, first_run=first_run_message("/home/x/.config/nationalcompute/token"))
    async with app.run_test(size=(80, 24)) as pilot:
        text = screen_text(app)
        assert "/home/x/.config/nationalcompute/token" in text and "ncui --demo" in text
        await pilot.press("q")


async def test_vm_cluster_shows_its_market_and_capacity(sim_factory):
    sim = sim_factory("vm")
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "ticks", "vm_capacity"))
        await pilot.pause()
        h100 = [t for t in app.store.value("ticks") if t.gpu_model == "H100-SXM-80GB"]
        assert len(h100) > 300  # hours of history, not a few minutes
        text = screen_text(app)
        assert f"H100-SXM-80GB winners were last assessed ${h100[-1].price_per_gpu_hour / 1e6:.2f}" in text
        await pilot.press("2")
        await pilot.pause()
        text = screen_text(app)
        assert "VM market" in text and "Declared nothing" in text and "Allocations none" in text


async def test_kubectl_sign_in_shows_the_link_then_goes_on_by_itself(sim):
    from ncui.screens.modals import SignInModal

    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        assert "press s to sign in" in screen_text(app)
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in modal")
        link = app.screen.link
        assert link.startswith(sim.api_url) and "/device?code=" in link
        assert "Sign in to halcyon" in screen_text(app)
        # The human approves in a browser.
        code = link.split("code=", 1)[1]
        async with httpx.AsyncClient() as h:
            r = await h.post(sim.api_url + "/device", data={"code": code})
        assert r.status_code == 200
        await until(pilot, lambda: not isinstance(app.screen, SignInModal), timeout=30, what="auto close")
        await until(pilot, lambda: app.store.value("kube_signin") == "signed in")
        assert "signed in ✓" in screen_text(app)
        before = app.store.get("kube_signin").version
        await pilot.press("s")  # once signed in: checked again silently, no link
        await until(pilot, lambda: app.store.get("kube_signin").version >= before + 2)
        assert app.store.value("kube_signin") == "signed in" and not isinstance(app.screen, SignInModal)


async def test_an_expired_sign_in_link_is_replaced_by_a_fresh_one(sim):
    from ncui.screens.modals import SignInModal

    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in modal")
        first = app.screen.link
        sim.world.advance(16 * 60)  # the code's 15 minutes pass unapproved
        await until(
            pilot,
            lambda: isinstance(app.screen, SignInModal) and app.screen.link != first,
            timeout=30,
            what="a fresh link",
        )
        assert "expired; here is a fresh one" in screen_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: app.store.value("kube_signin") == "not signed in")


async def _fault(sim, **rule) -> None:
    async with httpx.AsyncClient() as h:
        r = await h.post(sim.api_url + "/_sim/faults", json=rule, headers={"Authorization": f"Bearer {sim.token}"})
        assert r.status_code < 300


async def test_a_limit_that_cannot_be_read_is_shown_stale_not_none(sim):
    # The limit was read ($3.00), then its reads fail: the header and Lease keep $3.00 marked stale with the
    # reason; the light is not "● live" (it followed the balance only, and the limit looked current).
    with sim.world.lock:
        sim.world.set_bid(sim.world.main_org.k8s["halcyon"], 3_000_000)
    app = app_for(sim)
    header = lambda: app.query_one("StatusHeader").render().plain  # noqa: E731
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster", "bid", "balance", "spend", "summary"))
        assert "● live" in header() and "limit $3.00/GPU-h" in header()
        await _fault(sim, path_prefix="/api/k8s/bid", status=503, count=1_000_000)
        app.pollers.refresh("bid")
        await until(pilot, lambda: app.store.get("bid").error, what="the failed read")
        await pilot.press("5")
        await until(pilot, lambda: "Stale" in screen_text(app), what="Lease marks the limit stale")
        assert "● live" not in header() and "stale" in header() and ": limit" in header()
        assert "limit $3.00/GPU-h  stale" in header() and "limit none" not in header()
        text = screen_text(app)
        assert "Limit price $3.00/GPU-h" in text and "nothing is bid" not in text
        assert "⚠ Stale 0s: National Compute had an error (503) while reading the limit price" in text


async def test_a_limit_never_read_is_unknown_not_none(sim):
    # The limit price's reads fail from the start: "limit unknown", and Lease says why; never "limit none".
    with sim.world.lock:
        sim.world.set_bid(sim.world.main_org.k8s["halcyon"], 3_000_000)
    await _fault(sim, path_prefix="/api/k8s/bid", status=503, count=1_000_000)
    app = app_for(sim)
    header = lambda: app.query_one("StatusHeader").render().plain  # noqa: E731
    async with app.run_test(size=(80, 24)) as pilot:
        await until(
            pilot,
            lambda: loaded(app, "whoami", "cluster", "balance") and app.store.get("bid").error,
            what="the failed read",
        )
        await pilot.press("5")
        await until(pilot, lambda: "could not read" in screen_text(app), what="Lease says why")
        assert "limit unknown" in header() and "limit none" not in header()
        assert "● live" not in header() and "● stale: limit" in header()  # at 80 columns the light is whole
        text = screen_text(app)
        assert "⚠ Unknown (could not read: National Compute had an error (503) while reading the limit" in text
        assert "nothing is bid" not in text
        await pilot.press("2")  # Market: the same rule
        await until(pilot, lambda: "Your limit unknown" in screen_text(app), what="Market's limit unknown")
        assert "Your limit none" not in screen_text(app) and "⚠ Unknown (could not read" in screen_text(app)
        await pilot.press("1")  # Account's first-job plan is at the price to win, and says the limit is unknown
        await until(pilot, lambda: "at today's price to win" in screen_text(app), what="the plan")
        assert "⚠ Unknown (could not read" in screen_text(app)


async def test_a_screen_mounted_as_the_app_quits_ends_quietly(sim):
    """q pressed while a screen is still being mounted (Account just after the first frame, or any screen's key
    a moment before): Textual mounts nothing a closing widget composed, and the view says nothing of it — no
    NoMatches from its set-up in the human's face (it was one for Account, found under load in the suite)."""
    from textual.widgets import ContentSwitcher

    from ncui.screens.base import VIEWS, view_class

    for name, *_ in VIEWS:
        app = app_for(sim)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            switcher = app.query_one("#views", ContentSwitcher)
            switcher.mount(view_class(name)(app.store, id=f"{name}-late"))
            app.exit()  # in the same turn: the view's compose runs as the app closes
        assert app.return_code == 0, name  # (an exception in a handler ends the app with 1 and raises above)
