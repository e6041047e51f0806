"""Money checks on every path, a limit set for an apply that did not happen offered back, the safe default
of every question visible, and the exit guard (issue 10, items 5 and 6)."""

from __future__ import annotations

import httpx
from textual.widgets import Button

from ncui.flows.apply import idle_gpu_nodes
from ncui.screens.exitguard import ExitGuardModal
from ncui.screens.modals import CeilingModal, ConfirmModal, ResultsModal
from ncui.store import Store

from .apphelp import app_for, loaded, notes, open_recipes, put_bid, screen_text, through_sign_in, type_text, until

# ---- the two-hour check runs on every apply that uses GPUs ---------------------------------------------


async def test_an_idle_node_with_no_limit_price_still_needs_two_hours_of_balance(sim_factory):
    sim = sim_factory("k8s-packing")  # one reserved node, idle, no limit price standing
    with sim.world.lock:
        sim.world.main_org.balance = 3_000_000  # $3: not two hours of 8 GPUs at any market price
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await until(pilot, lambda: loaded(app, "ticks"))
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, ResultsModal)
        text = screen_text(app)
        assert "Not enough balance" in text and "the market's current price (no limit price stands)" in text
        assert "you have $3.00" in text
        assert not sim.app.state.kube.clusters["osprey"].store.list("jobs", "default")[0]  # nothing applied


async def test_a_fixed_cluster_checks_two_hours_at_the_market_price(sim_factory):
    sim = sim_factory("k8s-fixed-amd")
    with sim.world.lock:
        sim.world.main_org.balance = 5_000_000
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await until(pilot, lambda: loaded(app, "ticks") and bool(app.store.value("ticks")))
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, ResultsModal)
        text = screen_text(app)
        assert "Not enough balance" in text and "a fixed cluster has no limit price" in text
        assert "× 2 h" in text and "you have $5.00" in text


async def test_the_idle_claim_and_the_check_are_in_the_apply_confirmation(sim_factory):
    sim = sim_factory("k8s-packing")
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await until(pilot, lambda: loaded(app, "ticks"))
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, ConfirmModal)
        await until(pilot, lambda: "Apply Train nanoGPT?" in screen_text(app))
        text = screen_text(app)
        assert "1 idle GPU node already held will host this job: no new bid is needed" in text
        assert "At the market's current price (no limit price stands): 8 GPUs ×" in text and "covered" in text


def _store(nodes, pods, jobs) -> Store:
    st = Store()
    for name, value in (("k8s_nodes", nodes), ("k8s_pods", pods), ("k8s_jobs", jobs)):
        if value is not None:
            st.set(name, {o["metadata"]["name"]: o for o in value})
    return st


def _node(name, ready=True, gpus=8):
    return {
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "capacity": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def _pod(name, node=None, phase="Pending", gpus=8):
    spec = {"containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name}, "spec": spec, "status": {"phase": phase}}


def _waiting_job(name, gpus=8):
    return {
        "metadata": {"name": name},
        "spec": {"suspend": True, "template": {"spec": _pod("x", gpus=gpus)["spec"]}},
        "status": {"conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended"}]},
    }


def test_idle_nodes_are_ready_unused_and_not_already_promised():
    assert idle_gpu_nodes(_store([_node("a")], [], [])) == 1
    assert idle_gpu_nodes(_store([_node("a", ready=False)], [], [])) == 0  # still joining
    assert idle_gpu_nodes(_store([_node("a")], [_pod("p", "a", "Running")], [])) == 0
    assert idle_gpu_nodes(_store([_node("a")], [_pod("p", "a", "Succeeded")], [])) == 1  # done: free again
    assert idle_gpu_nodes(_store([_node("a"), _node("cpu", gpus=0)], [], [])) == 1
    # a job the cluster suspended until a node is granted takes the next node: that node is not idle for us
    assert idle_gpu_nodes(_store([_node("a")], [], [_waiting_job("tune")])) == 0
    # a GPU pod not yet on a node (SchedulingGated) will take it too
    assert idle_gpu_nodes(_store([_node("a"), _node("b")], [_pod("engine")], [])) == 1
    # the cluster's watch has not answered: nothing is assumed idle
    assert idle_gpu_nodes(_store([_node("a")], None, [])) is None
    st = _store([_node("a")], [], [])
    st.fail("k8s_pods", "cannot reach the cluster")
    assert idle_gpu_nodes(st) is None


def test_the_exit_guard_never_takes_an_unread_limit_for_none():
    from ncui.api.models import Bid, ClusterRef, K8sCluster
    from ncui.meters import standing

    st = Store()
    st.meta["cluster"] = ClusterRef(name="halcyon", kind="kubernetes")
    info = {"name": "halcyon", "market": True, "gpus_per_node": 8, "cpu_worker": True, "shared_volume": True}
    st.set("cluster", K8sCluster.model_validate({**info, "gpu_vendor": "nvidia", "gpu_model": "H100-SXM-80GB"}))
    why = "National Compute had an error (503) while reading the limit price; try again shortly: HTTP 503."
    st.fail("bid", why)  # never read: unknown, asked about (never "nothing stands")
    (s,) = standing(st)
    assert s.unknown and s.sentence == (
        "Whether a limit price stands on halcyon is unknown (could not read it: National Compute had an error "
        "(503) while reading the limit price; try again shortly: HTTP 503)."
    )
    st.set("bid", Bid.model_validate({"cluster": "halcyon", "max_price_per_gpu_hour": 4.5}))
    st.fail("bid", why)  # read once, then failing: the last value, said to be the last read
    (s,) = standing(st)
    assert not s.unknown and s.price == 4_500_000
    assert s.sentence.startswith("A limit price of $4.50/GPU-h stands on halcyon (last read; the latest read failed).")


# ---- a limit set for an apply that did not happen is offered back ---------------------------------------


async def _set_limit_then_cancel_apply(pilot, app, sim) -> None:
    await open_recipes(pilot, app)
    await pilot.press("a")
    await through_sign_in(pilot, app, sim, CeilingModal)
    await type_text(pilot, "5.00")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal) and "Set the limit price?" in screen_text(app))
    await pilot.press("y")
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal) and "Apply Train" in screen_text(app))
    assert sim.world.main_org.k8s["halcyon"].bid == 5_000_000
    await pilot.press("n")
    # (its "Enter: …" line is written once the modal is laid out: waited for too)
    await until(
        pilot,
        lambda: (
            isinstance(app.screen, ConfirmModal)
            and "Keep the limit price" in (text := screen_text(app))
            and "Enter: " in text
        ),
    )


async def test_set_then_cancel_offers_the_limit_back_and_enter_withdraws_it(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await _set_limit_then_cancel_apply(pilot, app, sim)
        text = screen_text(app)
        assert "You set $5.00/GPU-h on halcyon for this apply, and nothing was applied" in text
        assert "Enter: Withdraw it" in text  # the safe answer is the highlighted one, and says so
        await pilot.press("enter")
        await until(pilot, lambda: sim.world.main_org.k8s["halcyon"].bid == 0, what="the limit withdrawn")
        await until(pilot, lambda: app.store.value("bid").max_price_per_gpu_hour == 0)


async def test_set_then_cancel_can_keep_the_limit(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await _set_limit_then_cancel_apply(pilot, app, sim)
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        assert sim.world.main_org.k8s["halcyon"].bid == 5_000_000


async def test_every_question_says_what_enter_does(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        assert "Continue (Enter)" in str(app.screen.query_one("#ok", Button).label)
        await type_text(pilot, "5.00")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await until(pilot, lambda: "Enter: Cancel" in screen_text(app))
        await pilot.press("tab")
        await until(pilot, lambda: "Enter: Set it" in screen_text(app))
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ConfirmModal))
        assert sim.world.main_org.k8s["halcyon"].bid == 0


# ---- the exit guard ---------------------------------------------------------------------------------


async def test_quit_with_nothing_standing_is_instant(sim):
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "cluster", "bid"))
        await pilot.press("q")
        await until(pilot, lambda: app._exit, what="the app to exit")  # noqa: SLF001
        assert not isinstance(app.screen, ExitGuardModal)


async def test_a_standing_limit_is_pointed_out_at_start_and_quitting_asks(sim):
    await put_bid(sim, 4.5)  # set before this session (a session that lost its terminal, kubectl, a teammate)
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: "stands on halcyon" in notes(app), what="the start-up notice")
        for key in ("q", "ctrl+c"):
            await pilot.press(key)
            await until(pilot, lambda: isinstance(app.screen, ExitGuardModal), what=f"the guard on {key}")
            text = screen_text(app)
            assert "A limit price of $4.50/GPU-h stands on halcyon" in text and "pulling nodes" in text
            await pilot.press("enter")  # Stay is the default
            await until(pilot, lambda: not isinstance(app.screen, ExitGuardModal))
            assert not app._exit
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, ExitGuardModal))
        await pilot.press("w")
        await until(pilot, lambda: app._exit, what="the app to exit after withdrawing")
    assert sim.world.main_org.k8s["halcyon"].bid == 0


async def test_keep_and_quit_leaves_the_limit_standing(sim):
    await put_bid(sim, 4.5)
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "cluster", "bid"))
        app.action_command_palette()
        await until(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette")
        await type_text(pilot, "quit")

        def quit_highlighted() -> bool:  # the palette's search has answered: Quit is the highlighted command
            from textual.command import CommandList

            cl = app.screen.query_one(CommandList)
            return cl.highlighted is not None and "quit" in str(cl.get_option_at_index(cl.highlighted).prompt).lower()

        await until(pilot, quit_highlighted, what="Quit highlighted in the palette")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ExitGuardModal), what="the guard from the palette")
        await pilot.press("k")
        await until(pilot, lambda: app._exit)
    assert sim.world.main_org.k8s["halcyon"].bid == 4_500_000


async def test_a_limit_that_cannot_be_withdrawn_keeps_ncui_open(sim):
    await put_bid(sim, 4.5)
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "cluster", "bid"))
        async with httpx.AsyncClient() as h:
            await h.post(
                sim.api_url + "/_sim/faults",
                json={"path_prefix": "/api/k8s/bid", "status": 503, "count": 1000},
                headers={"Authorization": f"Bearer {sim.token}"},
            )
        await pilot.press("q")
        await until(pilot, lambda: isinstance(app.screen, ExitGuardModal))
        await pilot.press("w")
        await until(pilot, lambda: any("ncui stays open" in n.message for n in list(app._notifications)))
        assert not app._exit
    assert sim.world.main_org.k8s["halcyon"].bid == 4_500_000


async def test_declared_vm_capacity_is_asked_about_on_ctrl_q_and_released_with_the_same_price(sim_factory):
    sim = sim_factory("vm")
    vm = sim.world.main_org.vm["tern-vm"]
    async with httpx.AsyncClient(base_url=sim.api_url, headers={"Authorization": f"Bearer {sim.token}"}) as h:
        body = {"max_gpus": 8, "max_price_per_gpu_hour": 4.2, "expected_version": vm.version}
        assert (await h.put("/api/vm/capacity", json=body)).status_code == 200  # declared before this session
    sim.world.advance(120)  # the market clears: one node granted
    assert [a.state for a in vm.allocations if a.state not in ("released", "reclaimed")]
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: "is declared on tern-vm" in notes(app), what="the start-up notice")
        await pilot.press("ctrl+q")
        await until(pilot, lambda: isinstance(app.screen, ExitGuardModal), what="the guard on Ctrl-Q")
        text = screen_text(app)
        assert "VM capacity of 8 GPUs at up to $4.20/GPU-h is declared on tern-vm (1 allocation)" in text
        assert "billed until it is released" in text
        # the release destroys the node and its disk: said, with the way to copy a folder off first
        assert "its node is destroyed with its local disk: to copy a folder off first, Stay, then R on Lease" in text
        assert str(app.screen.query_one("#withdraw", Button).label) == "Release, quit (w)"
        assert app.screen.query_one("#stay", Button).has_focus  # Enter stays
        assert app.screen.query_one("#withdraw").region.bottom <= 24  # the answers fit at 80x24
        await pilot.press("w")
        await until(pilot, lambda: app._exit, what="the app to exit after releasing")
    assert vm.max_gpus == 0 and vm.price == 4_200_000  # released with the same price, as the PUT needs both
