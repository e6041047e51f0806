"""What meters run now: every thing that bills (or can bill) the organization while ncui is closed, each with its
name, what it costs per hour (or "unknown: <reason>", never $0 for a figure that could not be read), and what
each answer of the quit question does to it. UI-free: the quit question, the header and Lease all read it.

Read from the store only (no network: quitting stays instant). The meters:

- ``bid``       a standing limit price on a market cluster (it costs nothing by itself; it pulls nodes).
- ``serve``     a Deployment holding a GPU node (a serve never ends by itself).
- ``busy``      GPU nodes held that run a Job or a pod (they stay until it ends).
- ``idle``      GPU nodes held with nothing on them (billed until the cluster lets them go).
- ``nodes``     GPU nodes held when the cluster's watch could not say which are busy.
- ``vm``        declared VM capacity.
- ``research``  a public-research node (only Marshall's workspace releases it).

Only ``bid`` and ``vm`` are something ncui can withdraw or release; the others are said with how to stop them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .kube.status import deployment_ready
from .money import fmt_price, fmt_usd
from .store import Slice, Store

WHO_RELEASES_RESEARCH = (
    "ncui cannot release it: only Marshall's workspace can (public_research_release, a confirmation card your "
    "human approves)."
)


@dataclass(frozen=True)
class Meter:
    """One meter that runs after ncui quits."""

    kind: str  # bid | serve | busy | idle | nodes | vm | research
    cluster: str  # "" for a public-research node
    name: str  # short, for Lease: "limit $4.50/GPU-h", "serve finance-analyst", "1 idle node"
    sentence: str  # what it is and what it keeps doing
    per_hour: int | None  # µ$ an hour now; None: unknown (``cost`` says why) or nothing by itself (a limit price)
    cost: str  # what it costs per hour, in words: "$20.00/h", "unknown: <reason>"
    keep: str  # what "keep it, quit" does to it
    withdraw: str  # what "withdraw / release, quit" does to it
    price: int = 0  # the limit price (µ$/GPU-h): a VM release repeats it, as the PUT needs both fields
    unknown: bool = False  # could not be read: we cannot say it is gone
    stop: str = ""  # how it stops, when not by w

    @property
    def tag(self) -> str:
        """Shorter still, for the header at 80 columns: "serve", "1 idle", "VM", "node"."""
        if self.kind in ("busy", "idle"):
            return self.name.split(" node")[0]  # "1 idle"
        return {"bid": "limit", "serve": "serve", "nodes": self.name.removesuffix(" held"), "vm": "VM"}.get(
            self.kind, "node"
        )

    @property
    def acts(self) -> bool:
        """The quit question's w withdraws or releases this one (the others ncui cannot stop on the way out)."""
        return self.kind in ("bid", "vm")


def _fresh(s: Slice) -> bool:
    return s.loaded and not (s.error and (s.error_at or 0) >= (s.fetched_at or 0))


def _why(s: Slice, what: str) -> str:
    if s.error:
        return f"unknown: could not read {what} ({s.error.rstrip('. ')})"
    return f"unknown: {what} not read yet"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _rate(v: int) -> str:
    return f"{fmt_usd(v)}/h"


def node_gpus(node: Mapping[str, Any]) -> int:
    """GPUs a node offers (its ``<vendor>.com/gpu`` capacity)."""
    cap = (node.get("status") or {}).get("capacity") or {}
    return max((int(str(v)) for k, v in cap.items() if k.endswith(".com/gpu") and str(v).isdigit()), default=0)


def node_ready(node: Mapping[str, Any]) -> bool:
    conds = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def _owner(pod: Mapping[str, Any], deployments: Mapping[str, Any]) -> tuple[str, str]:
    """("deployment" | "job" | "pod", name) of what a pod runs for."""
    meta = pod.get("metadata") or {}
    for ref in meta.get("ownerReferences") or []:
        if ref.get("kind") == "Job":
            return "job", str(ref.get("name"))
        if ref.get("kind") == "ReplicaSet":
            rs = str(ref.get("name", ""))
            dep = next((n for n in deployments if rs.startswith(n + "-")), None)
            return ("deployment", dep) if dep is not None else ("pod", str(meta.get("name")))
    return "pod", str(meta.get("name"))


def running_meters(store: Store) -> list[Meter]:
    """Every meter that runs now on the active cluster (or the public-research node), in the order the quit
    question lists them: what ncui can withdraw or release first."""
    ref, info, who = store.meta.get("cluster"), store.value("cluster"), store.value("whoami")
    out: list[Meter] = []
    if ref is None:
        if who is not None and who.org_kind == "public_research":
            out += _research(store)
        return out
    if ref.kind == "kubernetes" and info is not None and info.name == ref.name:
        if info.market:
            out += _bid(store, ref.name, info.gpus_per_node)
        out += _k8s_nodes(store, ref.name, info.market, info.reserved_nodes)
    if ref.kind == "vm":
        out += _vm(store, ref.name)
    return out


def standing(store: Store) -> list[Meter]:
    """The meters ncui can withdraw or release (the quit question's w acts on these)."""
    return [x for x in running_meters(store) if x.acts]


def total_per_hour(meters: list[Meter]) -> tuple[int, bool]:
    """What the meters cost an hour together, and whether some figure is unknown (then the sum is a floor)."""
    known = [x.per_hour for x in meters if x.per_hour is not None]
    unknown = any(x.cost.startswith("unknown") for x in meters)
    return sum(known), unknown


# ---- each meter ---------------------------------------------------------------------------------


def _bid(store: Store, cluster: str, gpn: int) -> list[Meter]:
    s = store.get("bid")
    bid = s.value
    if bid is not None and bid.max_price_per_gpu_hour:
        price = bid.max_price_per_gpu_hour
        stale = " (last read; the latest read failed)" if not _fresh(s) else ""
        return [
            Meter(
                "bid",
                cluster,
                f"limit {fmt_price(price)}",
                f"A limit price of {fmt_price(price)} stands on {cluster}{stale}. Kept, it goes on pulling nodes for "
                "any GPU job applied to this cluster later (by you, kubectl or a teammate), billed while they run.",
                None,
                f"nothing by itself; up to {_rate(price * gpn)} for each {gpn}-GPU node it pulls",
                "keeps pulling nodes for GPU jobs applied later",
                "withdrawn (PUT /api/k8s/bid 0): no new node is pulled",
                price,
            )
        ]
    if bid is None and s.error:
        return [
            Meter(
                "bid",
                cluster,
                "limit unknown",
                f"Whether a limit price stands on {cluster} is unknown (could not read it: {s.error.rstrip('. ')}).",
                None,
                _why(s, "the limit price"),
                "left as it is, whatever it is",
                "withdrawn (PUT /api/k8s/bid 0), in case one stands",
                unknown=True,
            )
        ]
    return []


DONE = ("Succeeded", "Failed")  # a pod in these phases holds its node no longer


def _k8s_nodes(store: Store, cluster: str, market: bool, reserved: int) -> list[Meter]:
    """The GPU nodes held: a serve's, a job's, and the idle ones, each with its cost at the live market rate."""
    spend_s = store.get("spend")
    spend = spend_s.value
    watch = [store.get(n) for n in ("k8s_nodes", "k8s_pods", "k8s_deployments")]
    if market and spend is not None and not spend.nodes_held and _fresh(spend_s):
        held = 0  # nothing billed by the market now
    elif market and spend is not None:
        held = spend.nodes_held
    else:
        held = -1  # not known from the market (a fixed cluster, or the spend not read)
    price = spend.price_per_gpu_hour if market and spend is not None and _fresh(spend_s) else None

    def cost(gpus: int) -> tuple[int | None, str]:
        if not market:
            return None, "unknown: a fixed cluster's nodes are its reservation; it publishes no hourly rate"
        if price is None:
            if spend is not None and _fresh(spend_s):
                return None, "unknown: the market rate reads no price now"
            return None, _why(spend_s, "the market rate")
        return price * gpus, f"{_rate(price * gpus)} ({gpus} GPUs at {fmt_price(price)}, live)"

    if not all(_fresh(s) for s in watch):
        if held <= 0:
            return []
        per, said = cost(spend.gpus_held if spend is not None else 0)
        bad = next(s for s in watch if not _fresh(s))
        which = _why(bad, "the cluster's nodes and pods").removeprefix("unknown: ")
        return [
            Meter(
                "nodes",
                cluster,
                _plural(held, "node") + " held",
                f"{_plural(held, 'GPU node')} held on {cluster}, billed while held; which of them run work is "
                f"unknown ({which}).",
                per,
                said,
                "stay held while they run work",
                "not released by withdrawing the limit price: a node running a job stays until it ends",
                stop="a node goes when the work on it ends and the cluster lets it go",
            )
        ]
    nodes, pods, deps = (s.value for s in watch)
    gpu_nodes = [(n, node_gpus(o)) for n, o in sorted(nodes.items()) if node_gpus(o) and node_ready(o)]
    gpu_names = {n for n, _ in gpu_nodes}
    on: dict[str, list[tuple[str, str]]] = {}  # (only the GPU nodes' pods are owned here: the others hold no meter)
    for p in pods.values():
        node = (p.get("spec") or {}).get("nodeName")
        if isinstance(node, str) and node in gpu_names and (p.get("status") or {}).get("phase") not in DONE:
            on.setdefault(node, []).append(_owner(p, deps))
    serve: dict[str, list[str]] = {}
    busy: dict[str, list[str]] = {}
    idle: list[tuple[str, int]] = []
    for name, _gpus in gpu_nodes:
        owners = on.get(name) or []
        deps_here = [n for k, n in owners if k == "deployment"]
        if deps_here:
            for d in dict.fromkeys(deps_here):
                serve.setdefault(d, []).append(name)
        elif owners:
            busy[name] = list(dict.fromkeys(f"{k} {n}" for k, n in owners))
        else:
            idle.append((name, _gpus))
    gpus_of = dict(gpu_nodes)
    out: list[Meter] = []
    for d, where in serve.items():
        per, said = cost(sum(gpus_of[n] for n in where))
        ready = deployment_ready(deps.get(d) or {})
        out.append(
            Meter(
                "serve",
                cluster,
                f"serve {d}",
                f"Serve deploy/{d} (READY {ready}) holds {_plural(len(where), 'GPU node')} ({', '.join(where)}).",
                per,
                said,
                "goes on serving and billing: a serve never ends by itself",
                "goes on serving and billing (withdrawing does not stop it). To stop it: Stay, then x on "
                f"Workloads (4), or kubectl --context {cluster} delete deploy/{d}",
                stop=f"stop it with x on Workloads (4), or kubectl --context {cluster} delete deploy/{d}; a serve "
                "never ends by itself",
            )
        )
    if busy:
        per, said = cost(sum(gpus_of[n] for n in busy))
        work = ", ".join(dict.fromkeys(w for ws in busy.values() for w in ws))
        out.append(
            Meter(
                "busy",
                cluster,
                _plural(len(busy), "busy node"),
                f"{_plural(len(busy), 'GPU node')} held on {cluster} running {work}.",
                per,
                said,
                "stay held until the work on them ends",
                "stay held until the work on them ends (withdrawing pulls no new node; it stops nothing)",
                stop="they go when the work on them ends; x on Workloads (4) stops it sooner",
            )
        )
    # Reserved nodes serve requests before the market (the guide): work fills them first, and what is left of the
    # reservation is the idle nodes that the market does not bill. A fixed cluster's nodes are all its reservation.
    working = len(busy) + len({n for w in serve.values() for n in w})
    free_reserved = max(0, reserved - working)
    idle_billed = max(0, len(idle) - free_reserved) if market else 0
    if held >= 0:  # the market's own count of the nodes it bills
        idle_billed = min(idle_billed, max(0, held - max(0, working - reserved)))
    idle = idle[free_reserved:] if reserved else idle
    if idle_billed:
        per, said = cost(sum(g for _, g in idle[:idle_billed]))
        names = f" ({', '.join(n for n, _ in idle[:idle_billed])})" if not reserved else ""
        out.append(
            Meter(
                "idle",
                cluster,
                _plural(idle_billed, "idle node"),
                f"{_plural(idle_billed, 'idle GPU node')}{names} held on {cluster} with nothing running: billed "
                "until the cluster lets it go (it keeps an idle node a while for the next job). ncui cannot release "
                "a node.",
                per,
                said,
                "billed until the cluster lets it go",
                "not released sooner by withdrawing: billed until the cluster lets it go",
                stop="the cluster lets an idle node go by itself; ncui cannot release a node",
            )
        )
    return out


def _vm(store: Store, cluster: str) -> list[Meter]:
    cap = store.value("vm_capacity")
    if cap is not None and (cap.max_gpus is None or cap.max_price_per_gpu_hour is None):
        why = cap.unknown("max_gpus") or cap.unknown("max_price_per_gpu_hour")
        return [  # (a field not sent: never "nothing declared"; what it bills is unknown, and why)
            Meter(
                "vm",
                cluster,
                "VM capacity unknown",
                f"The VM capacity declared on {cluster} is unknown ({why}): it may go on granting and billing nodes.",
                None,
                f"unknown: {why}",
                "nodes may go on being granted and billed",
                "released (max_gpus 0 with the same price): every node is destroyed with its disk",
                cap.max_price_per_gpu_hour or 0,
                unknown=True,
            )
        ]
    if cap is None or not cap.max_gpus:
        return []
    held = [a for a in cap.allocations if a.state not in ("released", "reclaimed")]
    active = [a for a in held if a.state == "active"]
    # Released, a node is destroyed with its local disk (the guide): said here as Lease's R says it, since this
    # release does not offer to copy a folder off first.
    disks = (
        f" Released, {'each node is' if len(held) != 1 else 'its node is'} destroyed with its local "
        "disk: to copy a folder off first, Stay, then R on Lease."
        if held
        else ""
    )
    price = cap.max_price_per_gpu_hour
    gpus = sum(a.gpus for a in active)
    return [
        Meter(
            "vm",
            cluster,
            f"VM {cap.max_gpus} GPUs",
            f"VM capacity of {cap.max_gpus} GPUs at up to {fmt_price(price)} is declared on {cluster} "
            f"({_plural(len(held), 'allocation')}). Kept, nodes go on being granted and billed until it is "
            f"released.{disks}",
            price * gpus,  # (no node active yet: nothing billed now, as read)
            f"up to {_rate(price * gpus)} ({_plural(len(active), 'active node')}, {gpus} GPUs at up to "
            f"{fmt_price(price)})"
            if active
            else f"nothing until a node is active; then up to {fmt_price(price)} a GPU",
            "nodes go on being granted and billed",
            "released (max_gpus 0 with the same price): every node is destroyed with its disk",
            price,
        )
    ]


def _research(store: Store) -> list[Meter]:
    s, typed = store.value("research"), store.value("research_typed")
    if s is not None and s.state == "assigned":
        node = s.hostname or "the research node"
        if s.price_per_gpu_hour is not None and s.gpus:
            per: int | None = s.price_per_gpu_hour * s.gpus
            said = f"{_rate(s.price_per_gpu_hour * s.gpus)} ({s.gpus} GPUs at {fmt_price(s.price_per_gpu_hour)})"
        else:
            per, said = None, "unknown: its lease price is not in the node's status"
    elif typed is not None:
        node, per = f"{typed} (typed in)", None
        said = "unknown: its lease price is not published where ncui can read it (Marshall's request card shows it)"
    else:
        bal = store.value("balance")
        if bal is None or not bal.burn_ucredits_hr:
            return []
        node, per = "a research node", bal.burn_ucredits_hr  # what the meter last assessed for the organization
        said = f"{_rate(bal.burn_ucredits_hr)} (the meter's last assessment, org-wide, about 10 min behind)"
    return [
        Meter(
            "research",
            "",
            "research node",
            f"The public-research node {node} is leased: its meter runs until it is released, and the run ending "
            f"does not release it. {WHO_RELEASES_RESEARCH}",
            per,
            said,
            "goes on billing until Marshall releases it",
            f"goes on billing: {WHO_RELEASES_RESEARCH}",
            stop="only Marshall's workspace releases it (public_research_release); copy the results off first (c on "
            "Workloads): its disk dies with the lease",
        )
    ]
