"""What the user can do that changes the world. Each action is one place, called after the human's yes."""

from __future__ import annotations

from .api import models as m
from .api.client import NCClient
from .store import Store


async def withdraw_bid(nc: NCClient, store: Store, cluster: str) -> m.Bid:
    """Withdraw the standing limit price (``PUT /api/k8s/bid`` with 0) and record the new bid."""
    bid = await nc.set_bid(0, cluster)
    store.set("bid", bid)
    return bid
