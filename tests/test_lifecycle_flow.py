"""The lifecycle flow's money logic driven with no terminal (ncui/flows/lifecycle.py with a scripted UI) against the
real box over loopback HTTP: R restarts Post-train's serve on a GPU node only after its cover is judged at the
standing limit price, and a balance that drops below the cover while the human reads sends nothing."""

from __future__ import annotations

from pydantic import SecretStr

from ncui import recipes as R
from ncui.backend import Backend
from ncui.flows.base import Context
from ncui.flows.lifecycle import LifecycleFlow
from ncui.flows.ui import Confirm, Results
from ncui.lifecycle import TUNE_SERVE
from ncui.store import Store

from .conftest import endpoints_of
from .kc_support import kc_factory  # noqa: F401  (the fixture)
from .scripted_ui import ScriptedUI

RESTARTED = "kubectl.kubernetes.io/restartedAt"


def _restarted(dep: dict | None) -> str | None:
    return (
        ((((dep or {}).get("spec") or {}).get("template") or {}).get("metadata") or {})
        .get("annotations", {})
        .get(RESTARTED)
    )


async def _flow(kc_factory, ui: ScriptedUI):  # noqa: F811
    k, kc = kc_factory("k8s-market")
    k.set_bid(5.0)  # the standing limit price the restart's cover is judged at
    k.kubectl("apply", "-f", k.file("finance-analyst-serve-nvidia.yaml"))
    backend = Backend(endpoints_of(k.sim), SecretStr(k.sim.token), timeout=5, clock=k.sim.world.now)
    nc = await backend.connect()  # (the flow's client is the backend's, as in the App)
    store = Store()
    who = await nc.whoami()
    store.meta["cluster"] = next(c for c in who.clusters if c.name == k.cluster)
    store.set("cluster", await nc.k8s_cluster(k.cluster))
    store.set("bid", await nc.bid(k.cluster))
    store.set("balance", await nc.balance())
    store.set("summary", await nc.billing_summary())
    deps, _ = await kc.list("deployments", "default")
    store.set("k8s_deployments", {d["metadata"]["name"]: d for d in deps})
    store.set("k8s_pods", {})
    store.set("k8s_jobs", {})
    covers: list[tuple[int, int | None, str]] = []

    async def cover(plan: R.Plan, price: int | None, what: str, balance: int, purchases: bool) -> str | None:
        covers.append((plan.gpus, price, what))  # (the apply flow's check, as the App gives it: its rule)
        check = R.money_check(plan.gpus, price, balance, purchases) if price is not None else None
        return f"At {what}: {check.sentence}" if check is not None and check.ok else None

    async def kube_client():
        return kc

    def nothing(*_a) -> None:
        raise AssertionError("a restart applies nothing")

    flow = LifecycleFlow(
        Context(backend, store, ui),
        kube_client=kube_client,
        kube_in_use=lambda: (kc, k.cluster),
        start_apply=nothing,
        applied_select=nothing,
        cover=cover,
        market_price=lambda _store, _gpu: None,
    )
    return flow, nc, kc, store, covers


async def test_restart_on_a_gpu_node_is_judged_at_the_standing_limit_then_sent(kc_factory):  # noqa: F811
    ui = ScriptedUI(True)
    flow, nc, kc, _, covers = await _flow(kc_factory, ui)
    try:
        assert _restarted(await kc.get("deployments", TUNE_SERVE)) is None
        await flow.restart_serve_flow()
        dep = await kc.get("deployments", TUNE_SERVE)
    finally:
        await flow.backend.close()  # type: ignore[union-attr]
    gpus, price, what = covers[0]
    assert gpus == 8 and price == 5_000_000 and what == "your standing limit price"  # a whole GPU node, our limit
    assert [type(q) for q in ui.asked] == [Confirm]
    body = str(ui.asked[0].body)
    assert "At your standing limit price:" in body and f"rollout restart deploy/{TUNE_SERVE}" in body
    assert _restarted(dep)  # the box's Deployment was stamped: its pods are replaced
    assert any("restarted: its new pod loads the new model" in said for _, said in ui.told)


async def test_a_balance_that_drops_below_the_cover_while_asked_restarts_nothing(kc_factory):  # noqa: F811
    store_of: list[Store] = []

    def yes_while_it_drops(q: Confirm) -> bool:
        store = store_of[0]  # the balance the pollers write meanwhile: a cent left
        store.set("balance", store.value("balance").model_copy(update={"balance_ucredits": 10_000}))
        return True

    ui = ScriptedUI(yes_while_it_drops, None)
    flow, nc, kc, store, _ = await _flow(kc_factory, ui)
    store_of.append(store)
    try:
        await flow.restart_serve_flow()
        dep = await kc.get("deployments", TUNE_SERVE)
    finally:
        await flow.backend.close()  # type: ignore[union-attr]
    assert [type(q) for q in ui.asked] == [Confirm, Results]
    said = str(ui.asked[1].body)
    assert "the balance is now $0.01" in said and "8 GPUs × $5.00 × 2 h = $80.00; you have $0.01; top up" in said
    assert _restarted(dep) is None  # nothing was sent
