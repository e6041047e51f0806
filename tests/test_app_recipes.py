"""The Recipes screen as a person uses it: preview, vendor fallback, and plans that are refused."""

from __future__ import annotations

from ncui.screens.modals import CeilingModal, ConfirmModal

from .apphelp import app_for, open_recipes, open_something_else, screen_text, through_sign_in, type_text, until


async def test_train_is_the_default_and_its_manifest_is_previewed(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        text = screen_text(app)
        assert "Train nanoGPT" in text and "the default" in text
        assert "nanogpt-job-nvidia.yaml" in text and "kind: Job" in text and "nvidia.com/gpu" in text


async def test_vendor_fallback_and_not_offered_on_amd(sim_factory):
    sim = sim_factory("k8s-fixed-amd")
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        assert "nanogpt-job-amd.yaml: 404, using nanogpt-job.yaml" in screen_text(app)
        await pilot.press("down")  # Serve Kimi K3
        await until(pilot, lambda: "not offered on amd" in screen_text(app))
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, (CeilingModal, ConfirmModal))


async def test_a_ceiling_under_the_floor_is_refused_and_nothing_is_bid(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        await pilot.press("1", "enter")  # $1 < the $1.50 floor
        await pilot.pause()
        assert isinstance(app.screen, CeilingModal) and "bid-too-low" in screen_text(app)
        await pilot.press("backspace", "minus", "1")
        await pilot.pause()
        assert "cannot be negative" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert sim.world.main_org.k8s["halcyon"].bid == 0


async def test_a_short_balance_is_refused_with_the_exact_top_up(sim):
    with sim.world.lock:
        sim.world.main_org.balance = 42_100_000
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        await type_text(pilot, "5.00")
        await pilot.press("enter")
        await pilot.pause()
        text = screen_text(app)
        assert "8 GPUs × $5.00 × 2 h = $80.00; you have $42.10; top up $37.90" in text
        assert isinstance(app.screen, CeilingModal)  # refused: it stays open
        assert sim.world.main_org.k8s["halcyon"].bid == 0


async def test_something_else_refuses_bad_input(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_something_else(pilot, app)
        app.screen.query_one("#command").value = "python train.py"
        app.screen.query_one("#nodes").value = "abc"
        await pilot.press("enter")
        await pilot.pause()
        assert "image is empty" in screen_text(app) or "not a whole number" in screen_text(app)
        app.screen.query_one("#image").value = "ghcr.io/me/trainer:1"
        await pilot.press("enter")
        await pilot.pause()
        assert "'abc' is not a whole number" in screen_text(app)
        app.screen.query_one("#nodes").value = "1"
        app.screen.query_one("#gpus").value = "4"
        await pilot.press("enter")
        await pilot.pause()
        assert "4 GPUs is a partial node" in screen_text(app)  # halcyon does not pack reservations
        app.screen.query_one("#gpus").value = ""
        await pilot.press("enter")
        await through_sign_in(pilot, app, sim, CeilingModal)


async def test_an_idle_node_already_held_hosts_the_job_with_no_bid(sim_factory):
    sim = sim_factory("k8s-packing")  # one reserved node, idle
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, ConfirmModal)
        await until(pilot, lambda: "Apply Train nanoGPT?" in screen_text(app), what="the confirmation's text")
        text = screen_text(app)
        assert "1 idle GPU node already held will host this job: no new bid is needed" in text
        assert "Apply Train nanoGPT?" in text
        await pilot.press("n")
        await pilot.pause()
        assert sim.world.main_org.k8s["osprey"].bid == 0
