"""The first job end to end in the TUI, against the box: ceiling → bid → apply → node granted → pods →
loss lines in the log pane and chart → stop; and a Serve recipe to a completion."""

from __future__ import annotations

from ncui.screens.modals import CeilingModal, ConfirmModal, ResultsModal

from .apphelp import app_for, open_recipes, screen_text, through_sign_in, type_text, until


async def test_train_flow_end_to_end(sim):
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        price = app.store.value("ladder").rungs[0].price_per_gpu_hour
        ceiling = f"{price / 1e6 + 0.5:.2f}"
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        await type_text(pilot, ceiling)
        await until(pilot, lambda: "clears now" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the bid confirmation")
        text = screen_text(app)
        assert f"Set a limit price of ${ceiling}/GPU-h on halcyon?" in text and "keeps pulling nodes" in text
        assert world.main_org.k8s["halcyon"].bid == 0  # nothing bid before the yes
        await pilot.press("y")
        await until(pilot, lambda: world.main_org.k8s["halcyon"].bid == int(round(float(ceiling) * 1e6)))
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal) and "Apply" in screen_text(app),
                    what="the apply confirmation")
        await pilot.press("y")
        await until(pilot, lambda: app.query_one("#views").current == "workloads", timeout=30, what="Workloads")
        await until(pilot, lambda: "nanogpt" in (app.store.value("k8s_jobs") or {}), timeout=30)
        # The market grants the node; it joins; the pod runs and logs loss lines.
        def loss_lines() -> bool:
            return any("iter" in line and "loss" in line for line in app.query_one("#log").log.lines)

        for _ in range(60):
            if loss_lines():
                break
            world.advance(60)
            await pilot.pause(0.2)
        await until(pilot, loss_lines, timeout=10, what="loss lines in the log pane")
        view = app.query_one("#workloads")
        await until(pilot, lambda: len(view._losses.points) >= 2, what="the loss chart")
        assert view._losses.points[0][1] > view._losses.points[-1][1]  # the loss falls
        assert "Running" in screen_text(app) or "Completed" in screen_text(app)
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        assert "Stop job/nanogpt?" in screen_text(app)
        await pilot.press("y")
        await until(pilot, lambda: "nanogpt" not in (app.store.value("k8s_jobs") or {}), timeout=30,
                    what="the job gone")
        assert "limit $" in app.query_one("StatusHeader").render().plain  # the standing limit stays visible


async def test_serve_flow_to_a_completion(sim):
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await pilot.press("down", "down")  # Serve Inkling
        await until(pilot, lambda: "inkling-serve-nvidia.yaml" in screen_text(app))
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        price = app.store.value("ladder").rungs[0].price_per_gpu_hour
        await type_text(pilot, f"{price / 1e6 + 0.5:.2f}")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal) and "Apply" in screen_text(app))
        await pilot.press("y")
        await until(pilot, lambda: app.query_one("#views").current == "workloads", timeout=30)
        view = app.query_one("#workloads")
        for _ in range(120):
            if view._service():
                break
            world.advance(60)
            await pilot.pause(0.1)
        assert view._service() == "inkling"
        await pilot.press("m")
        await pilot.pause()
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ResultsModal), timeout=30, what="the answer")
        text = screen_text(app)
        assert "Answer" in text and "Reasoning" in text
