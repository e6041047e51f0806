"""Quitting names every meter (issue 21): on a market cluster a serve holding its node and an idle node held after
every job stopped are in the quit question, the header and Lease, each with what it costs per hour and what each
answer does to it; the box's public-research node too (tests/test_app_research.py). ``ncui/meters.py`` is the one
place that says what runs."""

from __future__ import annotations

from ncui.kube.status import job_status
from ncui.meters import running_meters
from ncui.screens.exitguard import ExitGuardModal
from ncui.store import Store

from .apphelp import app_for, screen_lines, screen_text, until
from .test_app_lifecycle import apply_files, bid, deps, jobs, run_until, signed_in


def _held(app, n: int) -> bool:
    app.pollers.refresh("spend", "bid")
    spend = app.store.value("spend")
    return spend is not None and spend.nodes_held == n


async def _quit_question(pilot, app) -> str:
    await pilot.press("q")
    await until(pilot, lambda: isinstance(app.screen, ExitGuardModal), what="the quit question")
    return screen_text(app)


async def test_a_serve_holding_its_node_then_the_idle_node_are_named_on_quit_header_and_lease(sim):
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await signed_in(pilot, app, sim)
        await bid(app, sim)
        await apply_files(app, "finance-analyst-tune-nvidia.yaml", "finance-analyst-serve-nvidia.yaml")
        world = sim.world
        ready = lambda: (deps(app).get("finance-analyst") or {}).get("status", {}).get("readyReplicas")  # noqa: E731
        await run_until(pilot, world, lambda: ready() and _held(app, 1), "the serve at READY 1/1", step=120)
        price = app.store.value("spend").price_per_gpu_hour
        rate = f"${price * 8 / 1e6:,.2f}/h"
        text = await _quit_question(pilot, app)
        assert "A limit price of" in text and "nothing by itself; up to" in text  # the limit, as before
        assert "Serve deploy/finance-analyst (READY 1/1) holds 1 GPU node" in text, text
        assert f"Per hour: {rate} (8 GPUs at" in text
        assert "k: goes on serving and billing: a serve never ends by itself." in text
        assert "w: goes on serving and billing (withdrawing does not stop it). To stop it: Stay, then x on" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ExitGuardModal))
        assert f"meters serve {rate}" in screen_lines(app).splitlines()[0]  # the header
        await pilot.press("5")
        await until(pilot, lambda: "Meters running" in screen_text(app), what="Lease's meters")
        lease = screen_text(app)
        assert f"serve finance-analyst: {rate}" in lease and "a serve never ends by itself" in lease
        assert "Stop it with x on Workloads (4)" in lease and "X on Workloads" not in lease  # the key is x

        # every job stopped: the node stays held, idle, and bills; nothing else on screen would say so
        await app.flows.connect.kube.delete("deployments", "finance-analyst")
        await app.flows.connect.kube.delete("deployments", "finance-analyst-launcher")
        await until(pilot, lambda: "finance-analyst" not in deps(app), what="the serve gone")
        meters = lambda: [x.kind for x in running_meters(app.store)]  # noqa: E731
        await run_until(pilot, world, lambda: "idle" in meters() and _held(app, 1), "the idle node", step=30)
        assert {job_status(j) for j in jobs(app).values()} == {"Complete"}  # the tune's done too
        text = await _quit_question(pilot, app)
        assert "1 idle GPU node (halcyon-" in text and "held on halcyon with nothing running: billed until the" in text
        assert "w: not released sooner by withdrawing: billed until the cluster lets it go." in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ExitGuardModal))
        assert "meters 1 idle $" in screen_lines(app).splitlines()[0]
        assert "1 idle node: $" in screen_text(app)  # Lease


def test_a_figure_that_could_not_be_read_is_unknown_with_its_reason_never_zero():
    from ncui.api.models import ClusterRef, K8sCluster

    st = Store()
    st.meta["cluster"] = ClusterRef(name="halcyon", kind="kubernetes")
    info = {"name": "halcyon", "market": True, "gpus_per_node": 8, "cpu_worker": True, "shared_volume": True}
    st.set("cluster", K8sCluster.model_validate({**info, "gpu_vendor": "nvidia", "gpu_model": "H100-SXM-80GB"}))
    node = {
        "metadata": {"name": "n1"},
        "spec": {},
        "status": {"capacity": {"nvidia.com/gpu": "8"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    st.set("k8s_nodes", {"n1": node})
    st.set("k8s_pods", {})
    st.set("k8s_deployments", {})
    st.fail("spend", "National Compute had an error (503)")
    (x,) = running_meters(st)
    assert x.kind == "idle" and x.per_hour is None
    assert x.cost == "unknown: could not read the market rate (National Compute had an error (503))"
