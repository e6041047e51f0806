"""The VM flow's money logic driven with no terminal (ncui/flows/vm.py with a scripted UI) against the real box over
loopback HTTP: the ceiling declared is the one asked, a ceiling the balance does not cover is refused as typed, a
version race with a second writer is said and asked again (never overwritten), and a release keeps the price."""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from ncui.api.client import NCClient
from ncui.backend import Backend
from ncui.flows.base import Context
from ncui.flows.ui import Confirm, Results
from ncui.flows.vm import AskCeiling, AskGpus, VmFlow
from ncui.store import Store

from .conftest import endpoints_of
from .scripted_ui import ScriptedUI


def _vm(sim):
    return sim.world.main_org.vm["tern-vm"]


class _NoNodes:
    """The nodes' ssh pool when no node is connected: a released node has nothing to forget."""

    forgotten: list[str]

    def __init__(self) -> None:
        self.forgotten = []

    async def forget(self, node_id: str) -> None:
        self.forgotten.append(node_id)


async def _flow(sim, ui: ScriptedUI) -> tuple[VmFlow, NCClient, Store, _NoNodes]:
    backend = Backend(endpoints_of(sim), SecretStr(sim.token), timeout=5, clock=sim.world.now)
    nc = await backend.connect()  # (the flow's client is the backend's, as in the App)
    store = Store()
    who = await nc.whoami()
    store.meta["cluster"] = next(c for c in who.clusters if c.kind == "vm")
    store.set("whoami", who)
    store.set("balance", await nc.balance())
    store.set("summary", await nc.billing_summary())
    store.set("ssh_keys", ())
    nodes = _NoNodes()

    async def no_copy_off(_cap) -> None:
        return None

    flow = VmFlow(Context(backend, store, ui), copy_off=no_copy_off, node_sessions=lambda: nodes)
    return flow, nc, store, nodes


async def test_the_ceiling_declared_is_the_one_asked_and_one_past_the_balance_is_refused(sim_factory):
    sim = sim_factory("vm")
    judged: list[tuple[bool, bool]] = []

    def ceiling(q: AskCeiling) -> int:
        ok_low, _ = q.judge(4_200_000)
        ok_high, lines = q.judge(10_000_000_000)  # $10,000 a GPU hour: two hours of 8 GPUs are not covered
        judged.append((ok_low, ok_high))
        assert any("✗" in text for _, text in lines)
        return 4_200_000

    ui = ScriptedUI(8, ceiling, True)
    flow, nc, store, _ = await _flow(sim, ui)
    version = _vm(sim).version
    try:
        await flow.declare()
    finally:
        await flow.backend.close()  # type: ignore[union-attr]
    assert [type(q) for q in ui.asked] == [AskGpus, AskCeiling, Confirm]
    assert judged == [(True, False)]
    body = str(ui.asked[2].body)
    assert f"Sent: max_gpus 8, max_price_per_gpu_hour $4.20/GPU-h, expected_version {version}." in body
    assert "No ssh key is registered" in body
    assert _vm(sim).max_gpus == 8 and _vm(sim).price == 4_200_000  # what was asked, nothing else
    assert store.value("vm_capacity").max_gpus == 8
    assert any("Declared 8 GPUs at up to $4.20/GPU-h" in said for _, said in ui.told)


async def test_a_version_race_is_said_and_asked_again_never_overwritten(sim_factory):
    sim = sim_factory("vm")
    v = _vm(sim).version

    def yes_while_another_writes(q: Confirm) -> bool:
        r = httpx.put(  # a second writer, between the question and its yes
            sim.api_url + "/api/vm/capacity",
            headers={"Authorization": f"Bearer {sim.token}"},
            json={"max_gpus": 16, "max_price_per_gpu_hour": 5.0, "expected_version": v},
        )
        assert r.status_code == 200
        return True

    def theirs_stands(q: Results) -> None:
        assert _vm(sim).max_gpus == 16 and _vm(sim).price == 5_000_000  # nothing of ours was sent over it

    ui = ScriptedUI(8, 4_200_000, yes_while_another_writes, theirs_stands, True)
    flow, nc, _, _ = await _flow(sim, ui)
    try:
        await flow.declare()
    finally:
        await flow.backend.close()  # type: ignore[union-attr]
    assert [type(q) for q in ui.asked] == [AskGpus, AskCeiling, Confirm, Results, Confirm]
    race = str(ui.asked[3].body)
    assert f"version {v} → {v + 1}" in race and "GPUs 0 → 16" in race and "price $0.00/GPU-h → $5.00/GPU-h" in race
    assert f"expected_version {v + 1}." in str(ui.asked[4].body)  # asked again, against what stands now
    assert _vm(sim).max_gpus == 8 and _vm(sim).price == 4_200_000  # ours, after the second yes


async def test_a_no_declares_nothing_and_a_release_keeps_the_price(sim_factory):
    sim = sim_factory("vm")
    ui = ScriptedUI(8, 4_200_000, False)
    flow, nc, _, nodes = await _flow(sim, ui)
    try:
        await flow.declare()
        assert _vm(sim).max_gpus == 0 and ("information", "Nothing was declared.") in ui.told
        ui.script = [8, 4_200_000, True, True]
        await flow.declare()
        assert _vm(sim).max_gpus == 8
        await flow.release()
    finally:
        await flow.backend.close()  # type: ignore[union-attr]
    release = ui.asked[-1]
    assert isinstance(release, Confirm) and "max_gpus 0 with the same price, $4.20/GPU-h" in str(release.body)
    assert _vm(sim).max_gpus == 0 and _vm(sim).price == 4_200_000  # the PUT needs both fields: the same price
    assert nodes.forgotten == []  # no node was granted yet
