"""Issue 24 item 3: every field the service could drop degrades on its own (api/models.py: ``Feeds(degrades=True)``).

The models, on the box's own answers with one field taken out (each field of each model, found off the models, not
a hand-kept list) or retyped; the box's ``field-dropped:PATH:FIELD`` drift, in its documents and its answers; and
the app against it (Pilot, over loopback HTTP): the figure the field fed reads unknown with the reason on screen,
and the money question it would judge says which figure is unknown and why, and sends nothing.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from ncui.api import models as m
from ncui.screens.modals import ResultsModal, RetryModal
from ncui.sim.app import SimConfig
from ncui.sim.server import SimServer

from .apphelp import app_for, loaded, screen_text, until
from .conftest import make_world

GONE = "National Compute's answer has no {} (its contract changed: ncui doctor)"

# Where each model is in the box's answers: (scenario, path, the instances in its JSON).
WHERE: dict[type[m.Model], tuple[str, str, Callable[[Any], list[dict]]]] = {
    m.Whoami: ("k8s-market", "/api/whoami", lambda j: [j]),
    m.ClusterRef: ("k8s-market", "/api/whoami", lambda j: j["clusters"]),
    m.BillingSummary: ("k8s-market", "/api/billing/summary", lambda j: [j]),
    m.Balance: ("k8s-market", "/api/billing/balance", lambda j: [j]),
    m.Transaction: ("vm", "/api/billing/transactions", lambda j: j["transactions"]),
    m.K8sCluster: ("k8s-market", "/api/k8s/cluster", lambda j: [j]),
    m.LadderRung: ("k8s-market", "/api/k8s/market/ladder", lambda j: j["rungs"]),
    m.Spend: ("k8s-market", "/api/k8s/market/spend", lambda j: [j]),
    m.Tick: ("k8s-market", "/api/market/ticks?limit=5", lambda j: j["ticks"]),
    m.Allocation: ("vm", "/api/vm/capacity", lambda j: j["allocations"]),
    m.VmEnvironment: ("vm", "/api/vm/capacity", lambda j: [j["environment"]]),
    m.VmCapacity: ("vm", "/api/vm/capacity", lambda j: [j]),
    m.SshKey: ("vm", "/api/vm/orgs/{org}/ssh-keys", lambda j: j["keys"]),
}


def degrading() -> list[tuple[type[m.Model], str]]:
    """Every (model, field) that degrades, read off the models."""
    out = []
    for _, cls in inspect.getmembers(m, inspect.isclass):
        if issubclass(cls, m.Model) and cls is not m.Model:
            out += [(cls, name) for name in m._degrading(cls)]
    return out


@pytest.fixture(scope="module")
def answers() -> Iterator[dict[tuple[str, str], Any]]:
    """The box's own answers (raw JSON), with a VM node granted and a key registered so none is empty."""
    got: dict[tuple[str, str], Any] = {}
    servers = {s: SimServer(make_world(s)).start() for s in ("k8s-market", "vm")}
    try:
        vm = servers["vm"].world
        with vm.lock:
            org = vm.main_org
            vm.add_ssh_key(org, "laptop", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK7u2FrT8mQqz0pY7h6b9pXbJx2S4Kc8 test")
            vm.set_vm_capacity(org, 8, 9_000_000, vm.vm_cluster(org).version)
        vm.advance(1800)
        for scenario, path, _ in WHERE.values():
            sim = servers[scenario]
            auth = {"Authorization": f"Bearer {sim.token}"}
            url = path.format(org=httpx.get(sim.api_url + "/api/whoami", headers=auth).json()["org_id"])
            r = httpx.get(sim.api_url + url, headers=auth)
            assert r.status_code == 200, (url, r.text)
            got[(scenario, path)] = r.json()
        yield got
    finally:
        for s in servers.values():
            s.stop()


def test_every_degrading_model_is_found_in_the_box_s_answers():
    """A model that gains a degrading field must be given an answer here (else the test below skips nothing)."""
    assert {cls for cls, _ in degrading()} <= set(WHERE), {cls for cls, _ in degrading()} - set(WHERE)
    assert (m.Balance, "balance_ucredits") in degrading() and (m.VmCapacity, "version") in degrading()


@pytest.mark.parametrize(("cls", "name"), degrading(), ids=lambda x: x if isinstance(x, str) else x.__name__)
def test_an_answer_without_the_field_still_parses_and_names_it(answers, cls, name):
    scenario, path, find = WHERE[cls]
    rows = find(answers[(scenario, path)])
    assert rows, f"the box answered {path} with no {cls.__name__}"
    for row in rows:
        whole = cls.model_validate(row)
        assert whole.unknown(name) == "" and getattr(whole, name) is not None  # read as sent
        cut = copy.deepcopy(row)
        del cut[name]
        obj = cls.model_validate(cut)
        assert getattr(obj, name) is None and obj.unknown(name) == GONE.format(name)
        others = [f for f in cls.model_fields if f != name]
        assert all(getattr(obj, f) == getattr(whole, f) for f in others)  # the rest of the answer is read


@pytest.mark.parametrize(("cls", "name"), degrading(), ids=lambda x: x if isinstance(x, str) else x.__name__)
def test_a_retyped_or_null_field_is_dropped_with_the_reason(answers, cls, name):
    scenario, path, find = WHERE[cls]
    row = find(answers[(scenario, path)])[0]
    expected = m._expected_type(cls, name)
    assert expected != "object"  # (no degrading field is one: an object is always a retyped value)
    for value, said in (({"a": 1}, "object"), (None, "null")):
        obj = cls.model_validate({**row, name: value})
        assert getattr(obj, name) is None
        assert obj.unknown(name) == (
            f"National Compute's answer has {name} as {said}, not {expected} (its contract changed: ncui doctor)"
        )


def test_a_field_that_does_not_degrade_still_fails_the_answer():
    """Identity fields stay required: a cluster without its name (ncui selects and signs in by it) is refused."""
    with pytest.raises(Exception, match="name"):
        m.ClusterRef.model_validate({"kind": "vm"})


# ---- the box drops a field on demand ---------------------------------------------------------------------------


def test_the_box_drops_a_field_in_its_document_and_its_answers():
    drift = "field-dropped:/api/k8s/market/ladder:price_per_gpu_hour"
    sim = SimServer(make_world("k8s-market"), config=SimConfig(drift=drift)).start()
    try:
        h = {"Authorization": f"Bearer {sim.token}"}
        ladder = httpx.get(sim.api_url + "/api/k8s/market/ladder", headers=h).json()
        assert ladder["rungs"] and all("price_per_gpu_hour" not in r for r in ladder["rungs"])
        assert "floor_price_per_gpu_hour" in ladder  # (only that field, wherever it is)
        assert "price_per_gpu_hour" in httpx.get(sim.api_url + "/api/market/ticks", headers=h).json()["ticks"][0]
        doc = httpx.get(sim.api_url + "/api/k8s/openapi.json").json()
        rung = doc["components"]["schemas"]["LadderRung"]
        assert "price_per_gpu_hour" not in rung["properties"] and "price_per_gpu_hour" not in rung["required"]
    finally:
        sim.stop()


def test_ncui_sim_refuses_a_drift_it_does_not_know():
    from ncui.sim.drift import named

    with pytest.raises(ValueError, match="field-dropped:PATH:FIELD"):
        named("field-dropped:nopath")


# ---- the app against a field dropped --------------------------------------------------------------------------


@pytest.fixture
def drifted() -> Iterator[Callable[..., SimServer]]:
    servers: list[SimServer] = []

    def start(path: str, field: str, scenario: str = "k8s-market") -> SimServer:
        s = SimServer(make_world(scenario), config=SimConfig(drift=f"field-dropped:{path}:{field}")).start()
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def record_puts(app) -> list[str]:
    """Every PUT the app's client sends (its path): a question that refuses sends none."""
    sent: list[str] = []

    async def hook(request: httpx.Request) -> None:
        if request.method in ("PUT", "POST", "DELETE"):
            sent.append(request.url.path)

    http = app.backend.nc._http
    http.event_hooks = {**http.event_hooks, "request": [*http.event_hooks["request"], hook]}
    return sent


def header(app) -> str:
    return app.query_one("StatusHeader").render().plain


def joined(text: str) -> str:
    return " ".join(text.split())


async def test_the_balance_not_sent_reads_unknown_and_no_limit_price_is_asked_on_it(drifted):
    sim = drifted("/api/billing/balance", "balance_ucredits")
    app = app_for(sim)
    why = GONE.format("balance_ucredits")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster", "ladder", "bid", "balance", "summary"))
        sent = record_puts(app)
        await until(pilot, lambda: "balance unknown" in header(app), what="the header's balance unknown")
        assert "runway unknown" in header(app)
        await pilot.press("1")
        await until(pilot, lambda: f"Balance unknown: {why}" in joined(screen_text(app)), what="Account says why")
        await pilot.press("5")
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, RetryModal), 30, what="the figures refused")
        text = joined(screen_text(app))
        assert f"The balance could not be read ({why}): the cover cannot be confirmed" in text, text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, RetryModal))
        assert sent == []


async def test_the_market_spend_per_hour_not_sent_reads_unknown_with_the_reason(drifted):
    sim = drifted("/api/k8s/market/spend", "spend_ucredits_hr")
    app = app_for(sim)
    why = GONE.format("spend_ucredits_hr")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster", "spend"))
        await pilot.press("5")
        await until(pilot, lambda: f"Market rate unknown: {why}" in joined(screen_text(app)), what="Lease says why")
        await pilot.press("2")
        await until(pilot, lambda: f"Spend per hour unknown: {why}" in joined(screen_text(app)), what="Market says why")


async def test_the_ladder_s_price_not_sent_reads_unknown_and_no_limit_price_is_set_on_it(drifted):
    sim = drifted("/api/k8s/market/ladder", "price_per_gpu_hour")
    app = app_for(sim)
    why = GONE.format("price_per_gpu_hour")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster", "ladder", "bid", "balance", "summary"))
        sent = record_puts(app)
        await pilot.press("2")
        await until(pilot, lambda: f"Price unknown: {why}" in joined(screen_text(app)), what="Market says why")
        assert "$3.36" not in screen_text(app)  # (the box's first rung: never shown from a guess)
        await pilot.press("1")
        await until(
            pilot,
            lambda: f"today's price to win one node is unknown ({why})" in joined(screen_text(app)),
            what="Account's first-job check says why",
        )
        await pilot.press("5")
        await pilot.press("l")
        await until(pilot, lambda: isinstance(app.screen, RetryModal), 30, what="the figures refused")
        text = joined(screen_text(app))
        assert f"The price-to-win ladder could not be read ({why}): whether a price wins cannot be judged" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, RetryModal))
        assert sent == []


async def test_the_vm_capacity_s_version_not_sent_reads_unknown_and_nothing_is_declared(drifted):
    sim = drifted("/api/vm/capacity", "version", scenario="vm")
    app = app_for(sim)
    why = GONE.format("version")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "vm_capacity", "balance", "summary"))
        sent = record_puts(app)
        await pilot.press("5")
        await until(
            pilot, lambda: f"Declared capacity unknown: {why}" in joined(screen_text(app)), what="Lease says why"
        )
        version = sim.world.vm_cluster(sim.world.main_org).version
        await pilot.press("d")
        await until(pilot, lambda: isinstance(app.screen, ResultsModal), 30, what="the declaration refused")
        text = joined(screen_text(app))
        assert "The VM capacity is unknown" in text and why in text and "nothing was declared" in text, text
        await pilot.press("escape")
        assert sent == [] and sim.world.vm_cluster(sim.world.main_org).version == version


async def test_whoami_s_org_name_not_sent_reads_unknown_and_the_rest_of_whoami_is_read(drifted):
    sim = drifted("/api/whoami", "org_name")
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await until(pilot, lambda: "organization unknown" in header(app), what="the header's organization unknown")
        assert "halcyon (kubernetes" in header(app)  # the clusters, from the same answer, are read
        await pilot.press("1")
        await until(
            pilot,
            lambda: f"Organization unknown: {GONE.format('org_name')}" in joined(screen_text(app)),
            what="Account says why",
        )
        assert "ada@halcyon.example" in screen_text(app)


def test_the_box_s_documents_are_the_models_as_published():
    """The models' published schemas are unchanged by degrading (required, not null: what the box serves)."""
    balance = m.Balance.model_json_schema()
    assert balance["required"] == ["balance_ucredits", "burn_ucredits_hr"]
    assert balance["properties"]["balance_ucredits"] == {"title": "Balance Ucredits", "type": "integer"}
    kind = m.ClusterRef.model_json_schema()["properties"]["kind"]
    assert kind["anyOf"] == [{"enum": ["kubernetes", "vm", "slurm"], "type": "string"}, {"type": "string"}]
    assert json.dumps(m.LadderRung.model_json_schema()["properties"]["price_per_gpu_hour"]).count("null") == 0
