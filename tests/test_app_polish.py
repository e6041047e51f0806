"""At 80×24: Workloads after an apply (the new workload selected, pod names told apart, the loss chart only
beside loss lines, long memo lines wrapped), the header at 80 columns on every scenario, keys typed as a
question opens reaching it (in a real terminal), a flat chart's axis; and the parsers and fitters behind them."""

from __future__ import annotations

import sys

import pytest
from textual.widgets import DataTable

from ncui.formatting import short_names
from ncui.logfollow import LossCurve, parse_loss
from ncui.screens.modals import ConfirmModal
from ncui.sim.scenarios import SCENARIOS

from .apphelp import app_for, loaded, open_recipes, screen_lines, screen_text, until
from .screentext import joined
from .tmuxterm import env_for


def test_the_tune_loss_lines_are_loss_lines():
    assert parse_loss("iter 100: loss 2.4712, time 380.12ms") == (100, 2.4712)
    assert parse_loss("epoch 2 step 320/620: loss 0.8123, lr 9.03e-05") == (320, 0.8123)
    assert parse_loss("step 2000: train loss 1.0061, val loss 1.1410") is None  # nanoGPT's eval line: not charted
    curve = LossCurve()
    assert curve.add(["staged 1,240 documents", "epoch 1 step 10/620: loss 1.8901, lr 2.00e-04"])
    assert curve.points == [(10, 1.8901)] and curve.unit == "step"


def test_names_sharing_a_prefix_stay_apart():
    names = [
        "finance-analyst-tune-x7k2p",
        "finance-analyst-launcher-5f6d7c9b8-q2w4r",
        "finance-analyst-5f6d7c9b8-z9y8x",
        "nanogpt-abcde",
    ]
    shown = short_names(names, 15)
    assert all(len(s) <= 15 for s in shown.values()) and len(set(shown.values())) == len(names)
    assert shown["nanogpt-abcde"] == "nanogpt-abcde"  # what fits stays whole
    assert shown["finance-analyst-tune-x7k2p"] == "…tune-x7k2p"
    assert shown["finance-analyst-launcher-5f6d7c9b8-q2w4r"] == "…launcher…q2w4r"
    assert shown["finance-analyst-5f6d7c9b8-z9y8x"].startswith("finance-a")


async def test_after_an_apply_workloads_selects_the_new_workload_with_its_names_chart_and_memos(
    kube_factory, monkeypatch
):
    """An old Train pod, completed, is selected; then Post-train is applied in the app: the tune's pod is selected
    (its log, not the old job's), the three recipe pods read apart at 80 columns, the chart stands beside the
    tune's loss lines and the Train log's, not beside the launcher's; the memos wrap at the pane's width."""
    k = kube_factory("k8s-fixed-amd")
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))  # kubectl signed in already
    k.kubectl("apply", "-f", k.file("nanogpt-job.yaml"))
    k.advance_until(
        lambda: any(v.startswith("Completed") for v in k.pod_statuses().values()),
        step=300,
        what="the Train job completed",
    )
    app = app_for(k.sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("4")
        wl = app.query_one("#kube-pane")
        chart = app.query_one("#loss-chart")
        await until(pilot, lambda: (wl.pod or "").startswith("nanogpt"), what="the old pod selected")
        await until(pilot, lambda: chart.display and wl._losses.unit == "iter", what="the Train loss chart")
        await open_recipes(pilot, app)
        await pilot.press("down", "down", "down")  # Post-train
        await until(pilot, lambda: "finance-analyst-tune" in screen_text(app), what="the Post-train preview")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the apply question")
        await pilot.press("y")
        await until(pilot, lambda: app.query_one("#views").current == "workloads", timeout=30)
        # the pods come as the box's clock runs (frozen here: moved by hand)
        for _ in range(40):
            if (wl.pod or "").startswith("finance-analyst-tune") and wl._losses.points:
                break
            k.world.advance(60)
            await pilot.pause(0.1)
        await until(pilot, lambda: (wl.pod or "").startswith("finance-analyst-tune"), what="the tune's pod selected")
        await until(pilot, lambda: chart.display and wl._losses.unit == "step", what="the tune's loss chart")
        table = app.query_one("#pods", DataTable)
        shown = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert len(shown) >= 3 and len(set(shown)) == len(shown), shown  # nanogpt, launcher, tune: told apart
        assert any(s.startswith("…tune") for s in shown) and any("…launche" in s for s in shown), shown
        # the launcher's log has no loss lines: the log takes the width
        table.focus()
        launcher = next(i for i in range(table.row_count) if "launche" in str(table.get_row_at(i)[0]))
        while table.cursor_row != launcher:
            await pilot.press("down" if table.cursor_row < launcher else "up")
        await until(pilot, lambda: "launcher" in (wl.pod or ""), what="the launcher selected")
        await until(pilot, lambda: not chart.display, what="no chart beside the launcher's log")
        assert str(table.get_row_at(launcher)[-1]) == "…cpu-worker-0"  # its node, whole but for the cluster's name
        assert wl._want == []  # the human chose: no apply takes the selection back
        # the tune's memos, long lines, wrap at the pane's width
        tune = next(i for i in range(table.row_count) if "tune" in str(table.get_row_at(i)[0]))
        while table.cursor_row != tune:
            await pilot.press("down" if table.cursor_row < tune else "up")
        for _ in range(60):
            if any("grade:" in x for x in app.query_one("#log").lines_log.lines):
                break
            k.world.advance(60)
            await pilot.pause(0.1)
        log = app.query_one("#log").lines_log
        await until(pilot, lambda: any("grade:" in x for x in log.lines), what="the tune's grade")
        width = log.scrollable_content_region.width
        assert max(len(x) for x in log.lines) <= width
        assert any(x.startswith("Severity:") for x in log.lines)  # a memo, its first row
        assert log.virtual_size.width <= width  # nothing to scroll sideways


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
async def test_the_header_keeps_balance_burn_and_runway_at_80_columns(sim_factory, scenario):
    sim = sim_factory(scenario)
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance"), what="the account")
        header = app.query_one("StatusHeader")
        await until(pilot, lambda: "● live" in screen_text(app), what="the light")
        rows = screen_lines(app).splitlines()[:2]
        assert "● live" in rows[0], rows
        assert "balance $" in rows[1] and "burn" in rows[1] and "runway" in rows[1], rows
        assert header.size.height == 2
        ref = app.store.meta.get("cluster")
        if ref is not None and ref.kind == "kubernetes":  # the cluster's facts whole; the org's name gives way
            await until(pilot, lambda: loaded(app, "cluster"), what="the cluster")
            info = app.store.value("cluster")
            whole = f"({ref.kind}, {info.gpu_model}, {'market' if info.market else 'fixed'})"
            await until(pilot, lambda: whole in screen_lines(app).splitlines()[0], what=whole)


async def test_a_flat_balance_chart_gets_an_axis_around_its_value(sim):
    """The box's account has one top-up: the balance is flat at $250, drawn on 237.50–262.50, not 125–375."""
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "balance", "transactions"))
        chart = app.query_one("#balance-chart")
        await until(pilot, lambda: "┤" in str(chart.render()), what="the balance chart")
        ticks = [float(line.split("┤")[0]) for line in str(chart.render()).splitlines() if "┤" in line]
        assert 237 <= min(ticks) and max(ticks) <= 263, ticks
        assert "Credits purchased" in screen_text(app)  # whole at 80 columns


@pytest.mark.peers("tmux")
async def test_keys_typed_as_the_ceiling_box_opens_reach_it(kube_factory, tmux_factory, tmp_path):
    """In a real terminal, ``a`` then ``4.10⏎yy`` sent at once (tmux send-keys, as a fast typist): the ceiling
    gets 4.10, the limit price is set with the first y and the job applied with the second; nothing typed goes
    to the screen below (4 would show Workloads, 1 Account) while the questions open."""
    k = kube_factory("k8s-market")
    env = env_for(tmp_path, NC_TOKEN=k.sim.token, NCUI_KUBE_CACHE=str(k.auth_cache))
    term = tmux_factory(env, width=80)
    term.run(sys.executable, "-m", "ncui.cli", "--api", k.sim.api_url, "--access", k.sim.access_url)
    await term.until(lambda s: "Halcyon" in s and "limit none" in s, what="the app with its limit read")
    term.keys("3")
    await term.until(lambda s: "What will be applied" in s, what="the Train preview")
    term.keys("a", "4", ".", "1", "0", "Enter", "y", "y")
    await term.until(lambda s: "· GPU nodes" in s and "job/nanogpt" in s, timeout=60, what="the job, on Workloads")
    assert k.world.main_org.k8s["halcyon"].bid == 4_100_000, term.screen()


@pytest.mark.peers("tmux")
async def test_keys_typed_ahead_reach_every_form_in_order(sim, tmux_factory, tmp_path):
    """In a real terminal at 80×24, keys sent at once as a form opens: Enter on Something else, then the image,
    Tab, the command, Tab, a node count; Lease's b, then an amount, Tab, a date. Each lands in its field in
    order (the Tab was lost, the command went into Image; before the form was up, h opened History and the
    amount was lost), and the form shows whole: its title, each label, the reclaim box's words."""
    env = env_for(tmp_path, NC_TOKEN=sim.token)
    term = tmux_factory(env, width=80, height=24)
    assert term.tmux("display", "-p", "-t", "t", "#{window_width}x#{window_height}").strip() == "80x24"
    term.run(sys.executable, "-m", "ncui.cli", "--api", sim.api_url, "--access", sim.access_url)
    await term.until(lambda s: "Halcyon" in s and "limit none" in s, what="the app with its limit read")
    term.keys("3")
    await term.until(lambda s: "What will be applied" in s, what="the Train preview")
    term.keys("Down", "Down", "Down", "Down")
    await term.until(lambda s: "Press Enter for the form" in s, what="Something else")
    term.keys("Enter", "ghcr.io/you/trainer:1.2", "Tab", "echo hi", "Tab", "BSpace", "2")

    def row(screen: str, label: str) -> str:  # the line of a field, its label beside it
        return next((line for line in screen.splitlines() if f"  {label}  " in line), "")

    shown = await term.until(lambda s: "▊  2 " in row(s, "Nodes"), what="the node count typed", lines=True)
    assert "▊  ghcr.io/you/trainer:1.2 " in row(shown, "Image") and "▊  echo hi " in row(shown, "Command"), shown
    text = joined(shown)
    assert "Something else: your container as one Job on whole nodes" in text
    assert "Survive reclaims (ignore DisruptionTarget and exit 143)" in text and "History" not in text
    term.keys("Escape")
    await term.until(lambda s: "Press Enter for the form" in s, what="the form closed")
    term.keys("5")
    await term.until(lambda s: "Lease · everything that costs money" in s, what="Lease")
    term.keys("b", "50", "Tab", "2027-01-01")
    await term.until(lambda s: "✓ $50.00 through 2027-01-01 (UTC)" in s, what="the amount and the date")
