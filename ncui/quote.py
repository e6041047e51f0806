"""The quote: what a recipe will cost before the yes, and what a run did cost after it. No Textual, no I/O.

A node bills from the moment it is Ready until it is released (shared/CONTRACT.md, Billing). A quote is the run's
billed time × its GPUs × a price per GPU hour, at two prices: the price that wins its nodes today (the ladder:
the expected figure) and the human's ceiling (the most a node can be assessed: the top of the range). What the
duration is and where it comes from is part of the quote (``Duration``): the catalog's optional
``expected_minutes``, else this human's earlier runs of the recipe (``memory.durations``), else none (then the
quote is per hour only). Serves run until stopped: per hour, beside the two-hour cover the service demands.
Idle nodes already held host a job with nothing new to pay: the quote says so.

Money is integer µcredits through ``ncui.money`` (the one place): ``cost_ucredits`` and ``fmt_usd``.
``Quote.to_dict()`` is what ``ncui quote --json`` prints and what is remembered with the run (``memory``), so the
report can set it beside what the run then cost (``spent``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from .money import cost_ucredits, fmt_price, fmt_usd

if TYPE_CHECKING:
    from . import recipes as R
    from .api import models as m

SCHEMA = "ncui.quote/1"
# After a run ends its node bills until the market releases it. How long the market keeps an idle node is the
# market's (the box keeps one ten minutes for the next job): the expected figure allows RELEASE_MINUTES, the top of
# the range RELEASE_MAX_MINUTES, and the bottom none (a node released at once).
RELEASE_MINUTES = 10
RELEASE_MAX_MINUTES = 15
# A run's length varies (the image pull, the machine): the top of the range allows it LONGER × its expected length.
LONGER = 1.5


@dataclass(frozen=True)
class Duration:
    """How long the run is expected to take on its node once it starts (None: unknown), and where that comes from
    (``source``: catalog | memory | none | serve | lease), as said on screen (``said``)."""

    minutes: float | None
    source: str
    said: str


def duration_for(recipe: m.Recipe | None, remembered: Sequence[float] = ()) -> Duration:
    """The catalog's ``expected_minutes`` for ``recipe``, else the median of this human's earlier runs of it
    (``remembered``, minutes), else unknown."""
    expected = getattr(recipe, "expected_minutes", None) if recipe is not None else None
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and 0 < expected <= 7 * 24 * 60:
        return Duration(float(expected), "catalog", f"the catalog's {_minutes(expected)} run")
    runs = [float(x) for x in remembered if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0]
    if runs:
        med = statistics.median(runs)
        n = len(runs)
        runs_said = (
            f"your last run of it, {_minutes(med)}" if n == 1 else f"your {n} runs of it, {_minutes(med)} median"
        )
        return Duration(med, "memory", runs_said)
    return Duration(None, "none", "unknown: per hour only")


def _minutes(x: float) -> str:
    x = round(x)
    return f"{x} min" if x < 120 else f"{x // 60} h" + (f" {x % 60:02d} min" if x % 60 else "")


def win_price(ladder: m.Ladder | None, nodes: int) -> int | None:
    """The price per GPU hour that wins ``nodes`` nodes now (the ladder's rung for that many, else its last)."""
    if ladder is None or not ladder.rungs:
        return None
    rungs = sorted(ladder.rungs, key=lambda r: r.nodes)
    return next((r.price_per_gpu_hour for r in rungs if r.nodes >= max(1, nodes)), rungs[-1].price_per_gpu_hour)


@dataclass(frozen=True)
class Quote:
    """A recipe's quote. ``kind``: run (a fixed length: Train, a tune), serve (per hour until stopped), hourly (a
    length unknown: Something else, a recipe with no duration known), vm (per hour per node), lease (one full
    research lease), idle (idle held nodes host it: nothing new). Totals in µcredits; None when not known."""

    kind: str
    recipe: str
    gpus: int
    nodes: int
    win: int | None  # µcredits per GPU hour: the price that wins today (the expected figure's)
    ceiling: int | None  # µcredits per GPU hour: the most a node can be assessed (the range's top)
    price_said: str  # what ``win`` is ("wins today": the ladder's; "the class's price"; "the lease's price")
    duration: Duration
    expected: int | None = None
    low: int | None = None
    high: int | None = None
    per_hour: int | None = None  # at ``win``, for all its GPUs
    per_hour_max: int | None = None  # at ``ceiling``
    then_per_hour: int | None = None  # Post-train: serving after the tune, per hour at ``win``
    then_per_hour_max: int | None = None
    idle: int = 0  # idle held nodes that host it
    cover: int | None = None  # the two-hour cover at the ceiling (serves: said beside it)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["schema"] = SCHEMA
        d["duration"] = asdict(self.duration)
        return d

    def lines(self) -> list[str]:
        """The quote as the apply question and ``ncui quote`` say it: a few lines that fit 80 columns."""
        if self.kind == "idle":
            held = f"{self.idle} idle node{'s' if self.idle != 1 else ''} already held"
            return [f"Quote: nothing new: {held} host{'s' if self.idle == 1 else ''} it."]
        price = fmt_price(self.win) if self.win is not None else "a price not read yet"
        if self.kind == "lease":
            return [
                f"Quote: {fmt_usd(self.expected)} for one full lease: {_minutes(self.duration.minutes or 0)} × "
                f"{self.gpus} GPUs × {price};",
                "the meter runs until the node is released.",
            ]
        most = f"at most {fmt_usd(self.per_hour_max)}" if self._has_ceiling() else ""
        if self.kind == "vm":
            return [
                f"Quote: {fmt_usd(self.per_hour)} per node-hour: {self.gpus} GPUs × {price} ({self.price_said});",
                (f"{most} per node-hour at your limit, " if most else "") + "until you release it.",
            ]
        hourly = f"Quote: {fmt_usd(self.per_hour)}/h: {self.gpus} GPUs × {price} ({self.price_said})"
        if self.kind == "serve":
            return [hourly + ";", (f"{most}/h at your ceiling, " if most else "") + "until you stop it (no end)."]
        if self.kind == "hourly":
            return [hourly + ";", (f"{most}/h at your ceiling. " if most else "") + f"Duration {self.duration.said}."]
        out = [f"Quote ≈ {fmt_usd(self.expected)}: {self._billed()} × {self.gpus} GPUs × {price} ({self.price_said})."]
        top = (
            f"the most: {self._billed_max()} at your ceiling"
            if self._has_ceiling()
            else f"{self._billed_max()} at most"
        )
        out.append(f"Range {fmt_usd(self.low)}–{fmt_usd(self.high)} ({top}).")
        out.append(f"Duration: {self.duration.said}, + {RELEASE_MINUTES} min to release the node.")
        if self.then_per_hour is not None:
            then_most = f" (at most {fmt_usd(self.then_per_hour_max)}/h)" if self.then_per_hour_max is not None else ""
            out.append(f"Then serving: {fmt_usd(self.then_per_hour)}/h{then_most} until you stop it.")
        return out

    def _has_ceiling(self) -> bool:
        return self.ceiling is not None and self.ceiling != self.win

    def _billed(self) -> str:
        return _minutes((self.duration.minutes or 0) + RELEASE_MINUTES)

    def _billed_max(self) -> str:
        return _minutes((self.duration.minutes or 0) * LONGER + RELEASE_MAX_MINUTES)


def quote(
    kind: str,
    recipe: str,
    gpus: int,
    nodes: int,
    win: int | None,
    ceiling: int | None,
    duration: Duration,
    *,
    price_said: str = "wins today",
    then_serve_gpus: int = 0,
    idle: int = 0,
) -> Quote:
    """The quote for ``gpus`` GPUs on ``nodes`` nodes: ``kind`` run (``duration`` long; a Post-train's tune with
    ``then_serve_gpus`` serving after it), serve or hourly; ``idle`` > 0: idle held nodes host it."""
    if idle:
        return Quote("idle", recipe, gpus, nodes, win, ceiling, price_said, duration, expected=0, low=0, high=0,
                     per_hour=0, per_hour_max=0, idle=idle)  # fmt: skip
    top = ceiling if ceiling is not None else win
    per_hour = cost_ucredits(win, gpus, 1) if win is not None else None
    per_hour_max = cost_ucredits(top, gpus, 1) if top is not None else None
    cover = cost_ucredits(top, gpus, 2) if top is not None else None
    if kind == "run" and duration.minutes is None:
        kind = "hourly"  # (a run whose length nobody knows: per hour only)
    if kind != "run":
        return Quote(kind, recipe, gpus, nodes, win, ceiling, price_said, duration, per_hour=per_hour,
                     per_hour_max=per_hour_max, cover=cover if kind == "serve" else None)  # fmt: skip
    run = duration.minutes or 0.0
    expected = _cost(win, gpus, run + RELEASE_MINUTES)
    low = _cost(win, gpus, run)
    high = _cost(top, gpus, run * LONGER + RELEASE_MAX_MINUTES)
    then = then_max = None
    if then_serve_gpus:
        then = cost_ucredits(win, then_serve_gpus, 1) if win is not None else None
        then_max = cost_ucredits(top, then_serve_gpus, 1) if top is not None and top != win else None
    return Quote("run", recipe, gpus, nodes, win, ceiling, price_said, duration, expected, low, high, per_hour,
                 per_hour_max, then, then_max)  # fmt: skip


def for_plan(
    plan: R.Plan,
    recipe: m.Recipe | None,
    cluster: m.K8sCluster,
    nodes: int,
    win: int | None,
    ceiling: int | None,
    remembered: Sequence[float] = (),
    *,
    idle: int = 0,
) -> Quote:
    """The quote for a resolved recipe (``plan``) on ``cluster``: by its catalog category a run (Train; Post-train's
    tune, then its serve per hour), a serve, or per hour (Something else); at ``win`` (the ladder's price for its
    ``nodes``; on a fixed cluster the class's market price, and no ceiling) and ``ceiling``."""
    from .recipes import gpus_of

    category = recipe.category if recipe is not None else ""
    if category in ("train", "post-train"):
        duration = duration_for(recipe, remembered)
    else:
        duration = Duration(None, "serve" if category == "serve" else "none", "unknown: per hour only")
    kind = {"train": "run", "post-train": "run", "serve": "serve"}.get(category, "hourly")
    said = "wins today"
    if not cluster.market:
        said, ceiling = "the class's price", None
    per_step = [gpus_of(list(st.docs), cluster.gpu_vendor) for st in plan.steps if not st.optional]
    first = next((i for i, g in enumerate(per_step) if g), None)
    gpus = per_step[first] if first is not None else plan.gpus  # a Post-train's tune (its serve follows it)
    then = 0
    if category == "post-train" and first is not None:
        then = next((g for g in per_step[first + 1 :] if g), 0)
    return quote(kind, plan.recipe, gpus, nodes, win, ceiling, duration, price_said=said, then_serve_gpus=then,
                 idle=idle)  # fmt: skip


def _cost(price: int | None, gpus: int, minutes: float) -> int | None:
    return None if price is None else cost_ucredits(price, gpus, minutes / 60)


def vm_quote(gpus_per_node: int, win: int | None, ceiling: int | None) -> Quote:
    """A VM declaration: per hour per node, at today's winning price and at the limit declared."""
    per = cost_ucredits(win, gpus_per_node, 1) if win is not None else None
    most = cost_ucredits(ceiling, gpus_per_node, 1) if ceiling is not None else None
    return Quote("vm", "vm", gpus_per_node, 1, win, ceiling, "assessed now",
                 Duration(None, "none", "until released"), per_hour=per, per_hour_max=most)  # fmt: skip


def lease_quote(gpus: int, price: int | None, lease_seconds: int | None, total: int | None = None) -> Quote:
    """A research node: one full lease at the lease's price (the service's ``lease_ucredits`` when it says it)."""
    minutes = lease_seconds / 60 if lease_seconds else None
    if total is None and price is not None and lease_seconds:
        total = cost_ucredits(price, gpus, lease_seconds / 3600)
    return Quote("lease", "research-node", gpus, 1, price, price, "the lease's price",
                 Duration(minutes, "lease", "one full lease"), expected=total, low=total, high=total,
                 per_hour=cost_ucredits(price, gpus, 1) if price is not None else None)  # fmt: skip


# ---- what a run did cost (the meter's charge transactions) ----------------------------------------------------


def spent(
    transactions: Iterable[m.Transaction],
    cluster: str | None,
    nodes: Iterable[str],
    start: datetime,
    end: datetime | None,
    lag: timedelta = timedelta(minutes=10),
) -> dict[str, Any]:
    """What the run cost: the charges naming ``cluster`` and one of the run's ``nodes`` (its first and any that
    replaced a reclaimed one), assessed from ``start`` up to ``lag`` after ``end`` (the meter's interval and the
    node's release; ``end`` None: it still runs). Charges in that window that name no node cannot be tied to
    the run: counted apart (``untied``), never added in. Charges for other nodes are not the run's."""
    want = {n for n in nodes if n}
    until = end + lag if end is not None else None
    tied = untied = 0
    count = 0
    by_node: dict[str, int] = {}
    for t in transactions:
        if t.kind != "charge":
            continue
        at = t.at
        if at < start or (until is not None and at > until):
            continue
        node, where = getattr(t, "node", None), getattr(t, "cluster", None)
        if t.amount_ucredits is None:  # (not sent: the report says the cost is at least the rest, and why)
            continue
        amount = -t.amount_ucredits
        if node in want and (where is None or cluster is None or where == cluster):
            tied += amount
            count += 1
            by_node[node] = by_node.get(node, 0) + amount
        elif not node and (where is None or cluster is None or where == cluster):
            untied += amount
    return {"ucredits": tied, "charges": count, "by_node": by_node, "untied_ucredits": untied}


__all__ = [
    "SCHEMA",
    "Duration",
    "Quote",
    "duration_for",
    "for_plan",
    "lease_quote",
    "quote",
    "spent",
    "vm_quote",
    "win_price",
]
