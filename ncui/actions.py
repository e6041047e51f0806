"""What the user can do that changes the world. Each action is one place, called after the human's yes."""

from __future__ import annotations

from .api import models as m
from .api.client import NCClient
from .api.errors import NCError
from .store import Store


async def withdraw_bid(nc: NCClient, store: Store, cluster: str) -> m.Bid:
    """Withdraw the standing limit price (``PUT /api/k8s/bid`` with 0) and record the new bid."""
    bid = await nc.set_bid(0, cluster)
    store.set("bid", bid)
    return bid


async def release_vm(nc: NCClient, store: Store) -> m.VmCapacity:
    """Release VM capacity: ``max_gpus: 0`` with the same price, echoing the version read (the PUT needs
    both fields). A version conflict (409) is raised, never retried: the caller re-reads and asks again."""
    cap = await nc.vm_capacity()
    if cap.max_price_per_gpu_hour is None or cap.version is None:  # (not sent: never a PUT on a guess)
        why = cap.unknown("version") or cap.unknown("max_price_per_gpu_hour")
        raise NCError(f"{why}; nothing was sent")
    new = await nc.set_vm_capacity(0, cap.max_price_per_gpu_hour, cap.version)
    store.set("vm_capacity", new)
    return new
