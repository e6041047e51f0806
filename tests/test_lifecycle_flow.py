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


async def test_train_applied_over_a_finished_job_of_another_template_says_what_the_cluster_does(
    kc_factory,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    """Issue 23: the box now refuses a Job whose pod template changed (422 field is immutable), as a real API
    server does. Train applied over a finished nanogpt Job made from another template (here: another image)
    would be refused: not connected yet, the refusal says so in a line, with the delete to make first (not the
    template in Go syntax); connected, the question before any money question says the cluster would refuse it
    (not 'unchanged'), and its yes deletes the old Job (its log kept) and creates the recipe's."""
    import yaml

    from ncui.flows.apply import ApplyFlow
    from ncui.flows.lease import LeaseFlow

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    k, kc = kc_factory("k8s-fixed-amd")
    backend = Backend(endpoints_of(k.sim), SecretStr(k.sim.token), timeout=5, clock=k.sim.world.now)
    nc = await backend.connect()
    try:
        info = await nc.k8s_cluster(k.cluster)
        recipe = next(r for r in await nc.catalog() if r.name == "nanogpt")
        plan = await R.resolve(nc, recipe, info)
        [doc] = plan.all_docs()
        other = yaml.safe_load(yaml.safe_dump(doc))  # what ran before: the Job with another image
        other["spec"]["template"]["spec"]["containers"][0]["image"] = "pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime"
        (tmp_path / "old.yaml").write_text(yaml.safe_dump(other))
        k.kubectl("apply", "-f", str(tmp_path / "old.yaml"))
        k.advance_until(
            lambda: any(c["type"] == "Complete" for c in (k.api(JOB)["status"].get("conditions") or [])),
            step=120,
            what="the old run completes",
        )
        old_uid = k.api(JOB)["metadata"]["uid"]

        async def flow(ui: ScriptedUI, connected: bool) -> ApplyFlow:
            store = Store()
            who = await nc.whoami()
            store.meta["cluster"] = next(c for c in who.clusters if c.name == k.cluster)
            store.set("cluster", info)
            store.set("balance", await nc.balance())
            store.set("summary", await nc.billing_summary())
            store.set("ticks", (await nc.ticks(gpu_model=info.gpu_model)).ticks)
            for kind in ("jobs", "pods", "deployments"):
                items, _ = await kc.list(kind, "default")
                store.set(f"k8s_{kind}", {o["metadata"]["name"]: o for o in items})
            ctx = Context(backend, store, ui)

            async def kube_client():
                return kc

            life = LifecycleFlow(
                ctx,
                kube_client=kube_client,
                kube_in_use=lambda: (kc, k.cluster) if connected else (None, None),
                start_apply=lambda plan: None,
                applied_select=lambda docs: None,
                cover=lambda *a: None,
                market_price=lambda _store, _gpu: None,
            )
            lease = LeaseFlow(ctx, remember=lambda **kw: None, exit=lambda **kw: None)
            return ApplyFlow(
                ctx,
                lease=lease,
                kube_client=kube_client,
                before_apply=life.before_apply,
                remember_job=lambda *a, **kw: None,
            )

        # not signed in during this session: the apply is sent, refused, and said in a line
        ui = ScriptedUI(True, None)  # yes to the apply question; the refusal read
        await (await flow(ui, connected=False)).run(plan)
        assert [type(q) for q in ui.asked] == [Confirm, Results]
        said = str(ui.asked[1].body)
        assert 'Job.batch "nanogpt" is invalid: spec.template: field is immutable' in said, said
        assert "core.PodTemplateSpec" not in said  # (not the template in Go syntax)
        assert "A Job's template cannot change once it is created: delete job/nanogpt first" in said
        assert f"kubectl --context {k.cluster} delete job nanogpt" in said
        assert k.api(JOB)["metadata"]["uid"] == old_uid

        # connected: asked first, with what the cluster would answer; yes, then yes to the apply
        ui = ScriptedUI(True, True)
        await (await flow(ui, connected=True)).run(plan)
        first = ui.asked[0]
        assert isinstance(first, Confirm) and first.title == f"job/nanogpt already ran on {k.cluster}"
        body = str(first.body)
        assert "The cluster would refuse it: Train nanoGPT's Job differs from the one that ran" in body, body
        assert "a Job's template cannot change once it is created" in body
        assert "spec.template: field is immutable" in body and "'unchanged'" not in body
        assert first.yes == "Delete it and run again" and first.no == "Cancel"
        assert "First delete job/nanogpt (Completed at" in str(ui.asked[1].body)
        job = k.api(JOB)
        assert job["metadata"]["uid"] != old_uid
        assert (
            job["spec"]["template"]["spec"]["containers"][0]["image"]
            == doc["spec"]["template"]["spec"]["containers"][0]["image"]
        )
        assert list((tmp_path / "state" / "ncui" / "logs").glob(f"{k.cluster}-nanogpt-*.log"))  # the old run's log
    finally:
        await backend.close()


JOB = "/apis/batch/v1/namespaces/default/jobs/nanogpt"
