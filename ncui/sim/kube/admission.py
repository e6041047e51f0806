"""The cluster's GPU admission webhook (``gpu.nationalcompute.com``): what it refuses before an object is stored.
Pure functions of the cluster's spec, nodes, balance and price."""

from __future__ import annotations

from ..money import usd
from ..world import K8sState, World
from .objects import KubeError, gpu_requests


def price_for_admission(world: World, st: K8sState) -> tuple[int, str]:
    """The price per GPU hour admission judges a job at, and its words: the limit price, else the market's."""
    if st.spec.market:
        if st.bid > 0:
            return st.bid, "your limit price"
        return world.markets[st.spec.gpu_model].last.price, "the market's current price (no limit price is set)"
    typical = next((m.typical for m in world.scenario.markets if m.gpu_model == st.spec.gpu_model), 0)
    return typical, "the market's typical price (a fixed cluster has no limit price)"


def admit(
    kind: str, name: str, pod_spec: dict, copies: int, st: K8sState, balance: int, price: tuple[int, str]
) -> None:
    """The cluster ``st``'s GPU admission webhook on ``copies`` pods of ``pod_spec``: refuse (403) a wrong GPU vendor, a
    partial node, and what ``balance`` cannot cover for two hours at ``price`` (``price_for_admission``)."""
    gpn, vendor = st.spec.gpus_per_node, st.spec.gpu_vendor
    res = f"{vendor}.com/gpu"

    def deny(msg: str) -> KubeError:
        return KubeError(
            403,
            "Forbidden",
            f'admission webhook "gpu.nationalcompute.com" denied the request: {kind} "{name}": {msg}',
        )

    gpus = gpu_requests(pod_spec)
    for k, n in gpus.items():
        if k != res and n > 0:
            raise deny(
                f"{k} is not offered on cluster {st.spec.name}: its GPUs are {vendor} "
                f"({st.spec.gpu_model}); ask for {res}"
            )
    g = gpus.get(res, 0)
    if g <= 0:
        return
    if g > gpn:
        raise deny(
            f"a pod asks for {g} {res} but a node has {gpn}: a pod runs on one node, so ask for {gpn} "
            f"per pod and run more pods"
        )
    if g % gpn:
        if not st.spec.reservation_packing:
            raise deny(
                f"a pod asks for {g} {res}, a partial node: every pod must request a multiple of "
                f"gpus_per_node ({gpn}) on this cluster"
            )
        if not any(n.source == "reserved" for n in st.gpu_nodes()):
            raise deny(
                f"a pod asks for {g} {res}, fewer than a node ({gpn}); that runs only on a "
                f"reservation, and this cluster has none"
            )
    total = g * max(0, copies)
    each, what = price
    need = total * each * 2
    if total and need > balance:
        raise deny(
            f"the balance ({usd(balance)}) does not cover two hours of this job at "
            f"{what}: {total} GPUs x {usd(each)} x 2 h = {usd(need)}. Top up on the "
            f"console's Billing page or lower the limit price"
        )
