"""Trust in figures: the price confirmed is the price sent, and input that means something else is refused.

Every confirmation that leads to ``PUT /api/k8s/bid`` is checked against the body the client really sent
(an httpx hook on the app's own client, over real loopback HTTP to the box).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal

import httpx
from textual import events

from ncui.screens.modals import CeilingModal, ConfirmModal

from .apphelp import (
    app_for,
    open_recipes,
    open_something_else,
    put_bid,
    screen_lines,
    screen_text,
    through_sign_in,
    type_text,
    until,
)


def record_bids(app) -> list[Decimal]:
    """Every ``max_price_per_gpu_hour`` the app's client sends, as the exact decimal of the JSON body."""
    sent: list[Decimal] = []

    async def hook(request: httpx.Request) -> None:
        if request.method == "PUT" and request.url.path == "/api/k8s/bid":
            sent.append(json.loads(request.content, parse_float=Decimal, parse_int=Decimal)["max_price_per_gpu_hour"])

    http = app.backend.nc._http
    http.event_hooks = {**http.event_hooks, "request": [*http.event_hooks["request"], hook]}
    return sent


def figure(pattern: str, text: str) -> Decimal:
    """The dollar figure a person reads after ``pattern`` (e.g. ``limit price of``)."""
    m = re.search(pattern + r" \$([0-9,]+(?:\.[0-9]+)?)/GPU-h", text)
    assert m, f"no {pattern!r} figure in {text!r}"
    return Decimal(m.group(1).replace(",", ""))


async def confirm_and_check_sent(pilot, app, sent: list[Decimal], pattern: str, expect_sent=None) -> Decimal:
    """Say yes to the confirmation on screen; the body sent must be the figure it showed (or ``expect_sent``)."""
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the confirmation")
    shown = figure(pattern, screen_text(app))
    before = len(sent)
    await pilot.press("y")
    await until(pilot, lambda: len(sent) > before, what="the PUT")
    assert sent[before:] == [shown if expect_sent is None else expect_sent]
    return shown


async def test_the_price_confirmed_is_the_price_sent(sim):
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        sent = record_bids(app)
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        # 4.105 is refused before the question, never rounded into $4.10 on screen and sent as 4.105
        await type_text(pilot, "4.105")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, CeilingModal) and app.screen.value is None
        assert "'4.105' has more than two decimals: type dollars and cents, like 4.10" in screen_text(app)
        for _ in range(5):
            await pilot.press("backspace")
        await type_text(pilot, "4.17")
        await pilot.press("enter")
        assert await confirm_and_check_sent(pilot, app, sent, "limit price of") == Decimal("4.17")
        await until(pilot, lambda: "Apply Train nanoGPT?" in screen_text(app), 40, what="the apply question")
        assert world.main_org.k8s["halcyon"].bid == 4_170_000
        await pilot.press("n")
        # nothing applied: the limit just set is offered back; withdrawing it sends 0
        await until(pilot, lambda: "Keep the limit price you just set?" in screen_text(app))
        assert await confirm_and_check_sent(pilot, app, sent, "You set", expect_sent=Decimal(0)) == Decimal("4.17")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        assert world.main_org.k8s["halcyon"].bid == 0


async def test_a_standing_limit_finer_than_cents_is_shown_and_prefilled_exactly(sim):
    await put_bid(sim, 4.105)
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        sent = record_bids(app)
        assert " limit $4.105/GPU-h " in app.query_one("StatusHeader").render().plain  # never $4.10
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        assert app.screen.query_one("#ceiling").value == "4.105"  # exactly as it stands, not 4.11
        text = screen_text(app)
        assert "Your standing limit, $4.105/GPU-h, is finer than cents: keep it exactly as it stands" in text
        assert "$4.105/GPU-h clears now" in text and app.screen.value == 4_105_000
        await pilot.press("end", "backspace")  # (focus selects the prefill: end keeps it)
        await type_text(pilot, "6")  # 4.106: another sub-cent figure is refused
        await pilot.pause()
        assert app.screen.value is None and "'4.106' has more than two decimals" in screen_text(app)
        for _ in range(5):
            await pilot.press("backspace")
        await type_text(pilot, "4.2")
        await pilot.press("enter")
        assert await confirm_and_check_sent(pilot, app, sent, "limit price of") == Decimal("4.20")
        await until(pilot, lambda: "Apply Train nanoGPT?" in screen_text(app), 40, what="the apply question")
        assert "Limit price $4.20/GPU-h stands on halcyon." in screen_text(app)
        await pilot.press("n")
        # nothing applied: putting back the earlier limit sends it exactly as it stood
        await until(pilot, lambda: "Keep the limit price you just set?" in screen_text(app))
        assert await confirm_and_check_sent(pilot, app, sent, "earlier limit of") == Decimal("4.105")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        assert sim.world.main_org.k8s["halcyon"].bid == 4_105_000
        # The withdrawal states the limit it withdraws (exactly what the box holds) and sends 0.
        await put_bid(sim, 4.105)
        app.pollers.refresh("bid")
        await until(pilot, lambda: app.store.value("bid").max_price_per_gpu_hour == 4_105_000, what="the new bid")
        await pilot.press("5")
        await until(pilot, lambda: "$4.105/GPU-h" in screen_text(app), what="the Lease screen")
        await pilot.press("w")
        shown = await confirm_and_check_sent(
            pilot, app, sent, "Withdraw the standing limit price of", expect_sent=Decimal(0)
        )
        assert shown == Decimal("4.105")
        await until(pilot, lambda: sim.world.main_org.k8s["halcyon"].bid == 0, what="the withdrawal")


async def test_the_ceiling_refuses_input_that_means_something_else(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        field = app.screen.query_one("#ceiling")
        for bad, why in [
            ("4,10", "no thousands separators"),
            ("3_5", "no thousands separators"),
            ("٤", "only the digits 0-9"),
            ("1e3", "is not an amount of dollars"),
            ("inf", "is not an amount of dollars"),
            ("nan", "is not an amount of dollars"),
            ("-1", "cannot be negative"),
            ("abc", "is not an amount of dollars"),
            ("9" * 30, "implausibly large"),
        ]:
            field.value = bad
            await until(pilot, lambda why=why: why in screen_text(app), what=f"the reason for {bad!r}")
            assert "type dollars and cents, like 4.10" in screen_text(app) or "large" in why
            await pilot.press("enter")
            await pilot.pause()
            assert isinstance(app.screen, CeilingModal) and app.screen.value is None
        await pilot.press("escape")
        await pilot.pause()
        assert sim.world.main_org.k8s["halcyon"].bid == 0


async def test_something_else_confirmation_shows_the_image_and_the_whole_command(sim_factory):
    sim = sim_factory("k8s-packing")  # an idle reserved node: no bid, straight to the apply question
    command = "python train.py " + " ".join(f"--flag{i}=value{i}" for i in range(60))  # ~1.3 kB, one line
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_something_else(pilot, app)
        form = app.screen
        form.query_one("#image").value = "ghcr.io/me/trainer:1.2"
        cmd = form.query_one("#command")
        cmd.value, cmd.cursor_position = command, len(command)
        cmd.focus()
        # a multi-line paste into Command is refused with a reason, never cut to its first line
        cmd.post_message(events.Paste("echo start\n" + "x" * 10_000 + "\nrm -rf /tmp/scratch\n"))
        await until(
            pilot,
            lambda: any("Paste refused: it has 3 lines" in n.message for n in app._notifications),
            what="the paste's refusal",
        )
        assert cmd.value == command
        for field, bad, why in [
            ("nodes", "8e22", "nodes: '8e22' is not a whole number; type digits 0-9"),
            ("nodes", "٣", "nodes: '٣' is not a whole number"),
            ("nodes", "1_0", "'1_0' is not a whole number"),
            ("nodes", "8" * 23, "nodes must be a whole number from 1 to 64"),
            ("gpus", "16", "16 GPUs per pod is more than a node holds"),
        ]:
            form.query_one("#" + field).value = bad
            form._submit()
            await until(pilot, lambda why=why: why in screen_text(app), what=why)
            form.query_one("#" + field).value = "1" if field == "nodes" else ""
        form._submit()
        await through_sign_in(pilot, app, sim, ConfirmModal)
        await until(pilot, lambda: "Apply Something else?" in screen_text(app))
        text = screen_text(app)
        assert "Image: ghcr.io/me/trainer:1.2" in text
        assert f"Command (sh -c, exactly): {command}\n" in screen_lines(app)  # whole, on its own line
        yes = app.screen.query_one("#yes")
        assert yes.region.bottom <= 24  # the question stays on screen under a long command
        # at 80x24 the command does not fit: said, and the keys scroll it whatever has focus (never looks whole)
        enter, body = app.screen.query_one("#enter"), app.screen.query_one("VerticalScroll")
        await until(pilot, lambda: "↓ more below (↑/↓ scroll) · Enter: Cancel" in str(enter.render()), what="more")
        assert body.max_scroll_y > 0 and body.scroll_y == 0
        for _ in range(body.max_scroll_y):
            await pilot.press("down")
        await until(pilot, lambda: "↑ more above (↑/↓ scroll) · Enter: Cancel" in str(enter.render()), what="end")
        assert body.scroll_y == body.max_scroll_y and isinstance(app.screen, ConfirmModal)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
