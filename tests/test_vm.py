"""VM capacity in the box: declare, watch allocations come up, release; ssh keys for later grants only."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from ncui.api import errors as E
from ncui.api.client import NCClient
from ncui.sim.world import JOIN_MAX

from .conftest import endpoints_of

KEY_A = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a@laptop"
KEY_B = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBm7h0Xkz6bFqgYyT8mZ0uKp3c0q4wz7rS5nG2vJ1LxA b@desk"


async def test_declare_provision_activate_release(sim_factory):
    sim = sim_factory("vm", volatility=0.0)
    world = sim.world
    async with NCClient(endpoints_of(sim), SecretStr(sim.token)) as nc:
        me = await nc.whoami()
        await nc.add_ssh_key(me.org_id, "a", KEY_A)
        cap = await nc.vm_capacity()
        price = world.markets["H100-SXM-80GB"].ladder(1)[0][1]
        cap = await nc.set_vm_capacity(8, price, cap.version)
        world.advance(60)
        cap = await nc.vm_capacity()
        assert [a.state for a in cap.allocations] == ["pending"] and cap.allocations[0].public_ip is None
        world.advance(60)
        assert [a.state for a in (await nc.vm_capacity()).allocations] == ["provisioning"]
        await nc.add_ssh_key(me.org_id, "b", KEY_B)  # too late for this grant
        world.advance(JOIN_MAX)
        cap = await nc.vm_capacity()
        a = cap.allocations[0]
        assert a.state == "active" and a.public_ip and a.gpus == 8 and cap.environment.ssh_user == "ubuntu"
        with world.lock:
            installed = world.main_org.vm["tern-vm"].allocations[0].keys
        assert len(installed) == 1  # only the key registered before the grant

        balance_before = (await nc.balance()).balance_ucredits
        world.advance(3600)
        assert (await nc.balance()).balance_ucredits < balance_before

        with pytest.raises(E.Invalid):
            await nc.set_vm_capacity(12, price, cap.version)  # not whole nodes
        cap = await nc.set_vm_capacity(0, price, cap.version)
        assert [a.state for a in cap.allocations] == ["released"]
        world.advance(600)
        after_release = (await nc.balance()).balance_ucredits
        world.advance(3600)
        assert (await nc.balance()).balance_ucredits == after_release  # billing stopped


async def test_vm_endpoints_on_a_kubernetes_org_are_not_found(nc):
    with pytest.raises(E.NotFound) as ei:
        await nc.vm_capacity()
    assert "no VM cluster" in str(ei.value)


async def test_public_research_has_no_clusters(sim_factory):
    sim = sim_factory("public-research")
    async with NCClient(endpoints_of(sim), SecretStr(sim.token)) as nc:
        me = await nc.whoami()
        assert me.org_kind == "public_research" and me.clusters == []
        with pytest.raises(E.NotFound):
            await nc.k8s_cluster()


async def test_fixed_cluster_has_no_limit_price(sim_factory):
    sim = sim_factory("k8s-fixed-amd")
    async with NCClient(endpoints_of(sim), SecretStr(sim.token)) as nc:
        c = await nc.k8s_cluster()
        assert c.market is False and c.gpu_vendor == "amd" and c.reserved_nodes == 2
        with pytest.raises(E.Invalid) as ei:
            await nc.set_bid(5_000_000)
        assert "fixed cluster" in str(ei.value)
        spend = await nc.spend()
        assert spend.nodes_held == 2 and spend.spend_ucredits_hr == 0
