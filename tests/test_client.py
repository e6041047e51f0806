"""The typed client against a running simulator over real loopback HTTP: every endpoint, every error."""

from __future__ import annotations

import os
import socket
import stat
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import httpx
import pytest
from pydantic import SecretStr

from ncui.api import errors as E
from ncui.api.client import NCClient, ServiceClock
from ncui.config import load_token
from ncui.money import dollars_to_ucredits

from .conftest import endpoints_of

USD = 1_000_000
ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ada@laptop"


def fault(sim, **rule) -> None:
    r = httpx.post(sim.api_url + "/_sim/faults", json=rule, headers={"Authorization": f"Bearer {sim.token}"})
    assert r.status_code == 200, r.text


async def test_account_and_billing(nc, sim):
    me = await nc.whoami()
    assert me.org_name == "Halcyon Lab" and me.org_kind == "research"
    assert [(c.name, c.kind) for c in me.clusters] == [("halcyon", "kubernetes")]
    summary = await nc.billing_summary()
    assert summary.balance_ucredits == 250 * USD and summary.purchases is True
    bal = await nc.balance()
    assert bal.balance_ucredits == 250 * USD and bal.burn_ucredits_hr == 0
    txs = (await nc.transactions()).transactions
    assert txs[0].kind == "topup" and txs[0].amount_ucredits == 250 * USD
    assert (await nc.transactions(since=txs[0].at)).transactions == []


async def test_the_service_clock_is_read_off_the_boxs_answers(sim):
    # The box dates its answers by its own clock (here a day ahead of any wall clock it was started near, and
    # frozen): the client's service clock reads that, never this machine's.
    sim.world.advance(24 * 3600)
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), timeout=5) as nc:
        assert nc.clock.now() is None  # nothing answered yet
        await nc.whoami()
        seen = nc.clock.now()
        assert seen is not None and abs((seen - sim.world.now()).total_seconds()) <= 1.5
        r = httpx.get(sim.api_url + "/api/k8s/openapi.json")  # one Date, the box's (uvicorn's own is off)
        assert r.headers.get_list("date") == [format_datetime(sim.world.now().replace(microsecond=0), usegmt=True)]


def test_service_clock_follows_rate_jumps_and_small_corrections():
    wall = [100.0]
    clock = ServiceClock(wall=lambda: wall[0])
    t0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)

    def answer(service_seconds: float, after: float) -> None:  # the service answers `after` wall seconds later
        wall[0] += after
        clock.observe(format_datetime(t0 + timedelta(seconds=service_seconds), usegmt=True))

    def at(after: float) -> float:
        wall[0] += after
        now = clock.now()
        assert now is not None
        return (now - t0).total_seconds()

    clock.observe("not a date")
    clock.observe(None)
    assert clock.now() is None
    for i in range(12):  # a box at 60x, answering every 2 s
        answer(120 * i, 2)
    assert abs(at(2.0) - (11 * 120 + 2 * 60)) <= 5  # 2 s after its last answer (11 x 120 s): 2 s x 60 more
    answer(90_000 + 12 * 120, 0)  # advanced a day: the time jumps, the rate stays 60x
    assert abs(at(1.0) - (90_000 + 12 * 120 + 60)) <= 5
    real = ServiceClock(wall=lambda: wall[0])  # the real service: its Date's whole seconds, a rate of 1
    clock = real
    for i in range(20):
        answer(i * 3.3, 3.3)
    last = at(0.0)
    assert abs(at(10.0) - (last + 10)) < 1e-6  # 1 exactly, not 0.97 or 1.03
    answer(19 * 3.3 + 10 - 1, 0)  # an answer that puts it a second back: held, then on again
    assert at(0.0) == last + 10 and at(2.0) >= last + 11


async def test_cluster_bid_ladder_spend_ticks(nc):
    c = await nc.k8s_cluster()
    assert (c.name, c.market, c.gpus_per_node, c.gpu_vendor) == ("halcyon", True, 8, "nvidia")
    assert c.cpu_worker and c.shared_volume and c.gpu_model == "H100-SXM-80GB"
    assert (await nc.k8s_cluster("halcyon")).name == "halcyon"

    ladder = await nc.ladder()
    assert [r.nodes for r in ladder.rungs] == list(range(1, 9))
    prices = [r.price_per_gpu_hour for r in ladder.rungs]
    assert prices == sorted(prices) and prices[0] >= ladder.floor_price_per_gpu_hour

    assert (await nc.bid()).max_price_per_gpu_hour == 0
    bid = await nc.set_bid(4_100_000)
    assert bid.max_price_per_gpu_hour == 4_100_000 and bid.cluster == "halcyon"
    assert (await nc.bid()).max_price_per_gpu_hour == 4_100_000
    assert (await nc.set_bid(0)).max_price_per_gpu_hour == 0

    spend = await nc.spend()
    assert spend.nodes_held == 0 and spend.spend_ucredits_hr == 0 and spend.price_per_gpu_hour is None

    ticks = (await nc.ticks(gpu_model=c.gpu_model)).ticks
    assert len(ticks) > 100 and all(t.gpu_model == c.gpu_model for t in ticks)
    assert [t.at for t in ticks] == sorted(t.at for t in ticks)
    assert (await nc.ticks(since=ticks[-1].at)).ticks == []

    kc = await nc.kubeconfig("halcyon")
    assert "current-context: halcyon" in kc and "/k8s/halcyon" in kc


async def test_vm_capacity_and_keys(sim_factory):
    sim = sim_factory("vm")
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), backoff=0.01) as nc:
        me = await nc.whoami()
        cap = await nc.vm_capacity()
        assert cap.max_gpus == 0 and cap.allocations == [] and cap.environment.ssh_user
        cap2 = await nc.set_vm_capacity(8, 4_000_000, cap.version)
        assert cap2.version == cap.version + 1 and cap2.max_gpus == 8
        assert (await nc.ssh_keys(me.org_id)).keys == []
        key = await nc.add_ssh_key(me.org_id, "laptop", ED25519)
        assert key.fingerprint.startswith("SHA256:") and key.name == "laptop"
        assert [k.fingerprint for k in (await nc.ssh_keys(me.org_id)).keys] == [key.fingerprint]
        with pytest.raises(E.Invalid) as ei:
            await nc.add_ssh_key(me.org_id, "bad", "ssh-ed25519 not-base64!")
        assert "public_key" in str(ei.value)


async def test_catalog_and_vendor_rule(nc):
    recipes = await nc.catalog()
    names = {r.name for r in recipes}
    assert {"nanogpt", "kimi-k3", "inkling", "finance-analyst", "something-else"} <= names
    nvidia = await nc.recipe_file("nanogpt-job", "nvidia")
    assert nvidia.used == "nanogpt-job-nvidia.yaml" and nvidia.note == "" and "nvidia.com/gpu" in nvidia.text
    amd = await nc.recipe_file("nanogpt-job", "amd")
    assert amd.used == "nanogpt-job.yaml"
    assert amd.note == "nanogpt-job-amd.yaml: 404, using nanogpt-job.yaml"
    with pytest.raises(E.NotFound) as ei:
        await nc.recipe_file("kimi-k3-serve", "amd")
    assert "not offered" in str(ei.value)


# ---- typed errors --------------------------------------------------------------------------------


async def test_wrong_token_is_unauthorized_and_never_shown(sim):
    secret = "ncsim_wrong_token_0123456789abcdef"
    async with NCClient(endpoints_of(sim), SecretStr(secret)) as nc:
        with pytest.raises(E.Unauthorized) as ei:
            await nc.whoami()
    err = ei.value
    assert err.status == 401 and "401" in str(err) and "NC_TOKEN" in str(err)
    assert secret not in str(err) and secret not in repr(err) and secret not in repr(nc)
    assert secret not in repr(nc._http.auth)


async def test_no_token_is_unauthorized(sim):
    async with NCClient(endpoints_of(sim), None) as nc:
        with pytest.raises(E.Unauthorized):
            await nc.billing_summary()


async def test_unknown_and_foreign_cluster_not_found(nc):
    with pytest.raises(E.NotFound) as ei:
        await nc.k8s_cluster("nope")
    assert "nope" in str(ei.value)
    with pytest.raises(E.NotFound):  # another organization's cluster never resolves
        await nc.kubeconfig("kestrel")


async def test_bid_too_low_carries_the_floor(nc):
    ladder = await nc.ladder()
    floor = ladder.floor_price_per_gpu_hour
    with pytest.raises(E.BidTooLow) as ei:
        await nc.set_bid(floor - 10_000)
    assert ei.value.min_price_per_gpu_hour == floor and ei.value.status == 422
    assert "$1.50/GPU-h" in str(ei.value)
    assert (await nc.bid()).max_price_per_gpu_hour == 0  # nothing was set


async def test_version_conflict_carries_current_version(sim_factory):
    sim = sim_factory("vm")
    async with NCClient(endpoints_of(sim), SecretStr(sim.token)) as nc:
        cap = await nc.vm_capacity()
        await nc.set_vm_capacity(8, 4_000_000, cap.version)
        with pytest.raises(E.VersionConflict) as ei:
            await nc.set_vm_capacity(16, 4_000_000, cap.version)
        assert ei.value.current_version == cap.version + 1 and ei.value.status == 409
        assert (await nc.vm_capacity()).max_gpus == 8  # the stale write changed nothing


async def test_invalid_body(sim):
    r = httpx.put(
        sim.api_url + "/api/k8s/bid",
        json={"max_price_per_gpu_hour": "abc"},
        headers={"Authorization": f"Bearer {sim.token}"},
    )
    assert r.status_code == 422 and r.json()["error"] == "invalid"
    r = httpx.put(
        sim.api_url + "/api/k8s/bid",
        json={"max_price_per_gpu_hour": -1},
        headers={"Authorization": f"Bearer {sim.token}"},
    )
    assert r.status_code == 422 and "negative" in r.json()["detail"]
    with pytest.raises(ValueError):
        dollars_to_ucredits("abc")
    with pytest.raises(ValueError):
        dollars_to_ucredits(-1)


def recorder(calls: list, what: str):
    async def hook(request: httpx.Request) -> None:
        calls.append(request.method if what == "method" else request.url.path)

    return hook


async def test_server_error_is_retried_for_gets(sim):
    calls = []
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), backoff=0.001, retries=3) as nc:
        nc._http.event_hooks["request"].append(recorder(calls, "path"))
        fault(sim, path_prefix="/api/billing/summary", status=500, count=2)
        summary = await nc.billing_summary()
        assert summary.balance_ucredits == 250 * USD and len(calls) == 3
        calls.clear()
        fault(sim, path_prefix="/api/billing/summary", status=503, count=10)
        with pytest.raises(E.ServerError) as ei:
            await nc.billing_summary()
        assert ei.value.status == 503 and len(calls) == 4 and "try again" in str(ei.value)


async def test_put_is_never_retried(sim):
    calls = []
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), backoff=0.001, retries=3) as nc:
        nc._http.event_hooks["request"].append(recorder(calls, "method"))
        fault(sim, path_prefix="/api/k8s/bid", status=500, count=1)
        with pytest.raises(E.ServerError):
            await nc.set_bid(4_000_000)
        assert calls == ["PUT"]
        assert (await nc.bid()).max_price_per_gpu_hour == 0


async def test_timeout_is_a_network_error(sim):
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), timeout=0.2, retries=0) as nc:
        fault(sim, path_prefix="/api/whoami", delay=1.0)
        with pytest.raises(E.NetworkError) as ei:
            await nc.whoami()
    assert "did not answer in time" in str(ei.value)


async def test_truncated_json_is_malformed(sim):
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), retries=0) as nc:
        fault(sim, path_prefix="/api/billing/balance", truncate=True)
        with pytest.raises(E.MalformedResponse) as ei:
            await nc.balance()
    assert "not valid JSON" in str(ei.value)


async def test_wrong_shape_is_malformed():
    """A field ncui cannot do without (whoami's user: not one that degrades) of the wrong shape fails the answer."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"user": "lots", "org_id": "o", "org_name": "Org", "org_kind": "research"})

    from ncui.config import Endpoints

    async with NCClient(
        Endpoints("http://nc.test", "http://nc.test"), SecretStr("t"), transport=httpx.MockTransport(handler)
    ) as nc:
        with pytest.raises(E.MalformedResponse) as ei:
            await nc.whoami()
    assert "user" in str(ei.value)


async def test_a_retyped_field_that_degrades_reads_unknown_with_the_reason():
    """A degrading field of the wrong type (the balance as a string) is dropped, said why; the rest is read."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"balance_ucredits": "lots", "purchases": True})

    from ncui.config import Endpoints

    async with NCClient(
        Endpoints("http://nc.test", "http://nc.test"), SecretStr("t"), transport=httpx.MockTransport(handler)
    ) as nc:
        summary = await nc.billing_summary()
    assert summary.balance_ucredits is None and summary.purchases is True
    assert summary.unknown("balance_ucredits") == (
        "National Compute's answer has balance_ucredits as string, not integer (its contract changed: ncui doctor)"
    )


async def test_dropped_connection_is_retried(sim):
    async with NCClient(endpoints_of(sim), SecretStr(sim.token), backoff=0.001) as nc:
        fault(sim, path_prefix="/api/market/ticks", drop=True)
        ticks = await nc.ticks()
        assert ticks.ticks


async def test_unreachable_is_a_network_error():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    from ncui.config import Endpoints

    async with NCClient(
        Endpoints(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{port}"), SecretStr("t"), retries=1, backoff=0.001
    ) as nc:
        with pytest.raises(E.NetworkError) as ei:
            await nc.whoami()
    assert f"127.0.0.1:{port}" in str(ei.value)


# ---- the token ----------------------------------------------------------------------------------


def test_token_from_env_then_file(tmp_path):
    f = tmp_path / "token"
    f.write_text("file-token\n")
    os.chmod(f, 0o600)
    assert load_token({"NC_TOKEN": "env-token"}, f).token.get_secret_value() == "env-token"
    src = load_token({}, f)
    assert src.token.get_secret_value() == "file-token" and src.warning == ""
    assert "file-token" not in repr(src)
    os.chmod(f, 0o644)
    src = load_token({}, f)
    assert src.token.get_secret_value() == "file-token"
    assert "readable by others" in src.warning and "chmod 600" in src.warning
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o644  # warned, not changed behind their back
    assert load_token({}, tmp_path / "missing").token is None
