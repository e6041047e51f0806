"""A money question is built from reads made for it (issue 21, 1): the one rule, with no UI.

A question that spends (a limit price, an apply, a VM declare, a restart on a GPU node) reads the figures it
judges when it opens: ``read`` asks the pollers for a fetch of each slice now and waits (bounded) for a fetch
that started after it asked. A figure is fresh when its last read succeeded within its slice's poll interval
(``Slice.failing`` is the store's rule for a failed read); otherwise it is stale (its age and the reason) or
unknown (never read). ``sentence`` says a figure that is not fresh, and what that means for the question;
a question says "covered" only on fresh figures. At the yes, the flow reads again and ``changes`` says, in
words, what moved meanwhile, before anything is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..formatting import fmt_age
from ..money import fmt_price, fmt_usd
from .ui import Confirm, Results, Retry
from .wait import until

if TYPE_CHECKING:
    from ..pollers import Pollers
    from ..store import Store
    from .base import Context

FRESH, STALE, UNKNOWN = "fresh", "stale", "unknown"
READ_TIMEOUT = 8.0  # seconds a question waits for its reads (a failing GET retries with backoff first)

# What each figure is, as a person reads it, and what a question cannot do without it.
_LABEL = {
    "balance": "the balance",
    "summary": "the billing summary",
    "bid": "the standing limit price",
    "ladder": "the price-to-win ladder",
    "ticks": "the market's prices",
    "vm_capacity": "the declared VM capacity",
    "k8s_nodes": "the cluster's nodes",
    "k8s_pods": "the cluster's pods",
    "k8s_jobs": "the cluster's jobs",
}
_MEANS = {
    "balance": "the cover cannot be confirmed",
    "summary": "the cover cannot be confirmed",
    "bid": "ncui does not bid or change it on a guess",
    "ladder": "whether a price wins cannot be judged",
    "ticks": "the price winners pay cannot be judged",
    "vm_capacity": "ncui does not declare on a guess",
}


# The fields each figure's question judges (in the answer itself, or in each of its rows): when the service's
# answer left one out or sent it retyped (api/models.py: ``Model.unknown``), the figure is unknown, with that
# reason, however recently it was read: nothing is judged on it and nothing is sent.
_NEEDS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "balance": (None, ("balance_ucredits",)),
    "summary": (None, ("balance_ucredits",)),
    "ladder": ("rungs", ("price_per_gpu_hour",)),
    "ticks": ("ticks", ("price_per_gpu_hour",)),
    "vm_capacity": (None, ("version", "max_gpus", "max_price_per_gpu_hour")),
}


def unread(name: str, value: Any) -> str:
    """Why figure ``name``, read, is still unknown: a field it is judged on that the answer did not give ("" when
    every one was read)."""
    rows, fields = _NEEDS.get(name, (None, ()))
    for row in getattr(value, rows, ()) if rows else (value,):
        for f in fields:
            why = row.unknown(f) if hasattr(row, "unknown") else ""
            if why:
                return why
    return ""


@dataclass(frozen=True)
class Figure:
    """One figure a question judges, as it was when read: its value and its freshness."""

    name: str
    value: Any
    state: str  # FRESH | STALE | UNKNOWN
    age: float | None = None  # seconds since its last successful read
    reason: str | None = None  # why it is not fresh (the read's error), None when fresh

    @property
    def fresh(self) -> bool:
        return self.state == FRESH


@dataclass(frozen=True)
class Snapshot:
    """The figures a question was built from."""

    figures: tuple[Figure, ...]

    def __getitem__(self, name: str) -> Figure:
        for f in self.figures:
            if f.name == name:
                return f
        raise KeyError(name)

    def value(self, name: str) -> Any:
        return self[name].value

    @property
    def fresh(self) -> bool:
        return all(f.fresh for f in self.figures)

    def not_fresh(self) -> list[Figure]:
        return [f for f in self.figures if not f.fresh]


def figure(store: Store, name: str, interval: float | None) -> Figure:
    """The figure ``name`` now: fresh when its last read succeeded within ``interval`` seconds (any age when it
    has no poll interval: a watch keeps it current)."""
    s = store.get(name)
    age = s.age(store.now())
    if not s.loaded:
        return Figure(name, None, UNKNOWN, None, s.error or "not read yet")
    if s.failing:
        return Figure(name, s.value, STALE, age, s.error)
    if why := unread(name, s.value):
        return Figure(name, s.value, UNKNOWN, age, why)
    if interval is not None and age is not None and age > interval:
        return Figure(name, s.value, STALE, age, "not read again since")
    return Figure(name, s.value, FRESH, age)


def _interval(pollers: Pollers | None, name: str) -> float | None:
    spec = pollers.specs.get(name) if pollers is not None else None
    return spec.interval if spec is not None else None


def snapshot(store: Store, pollers: Pollers | None, names: Iterable[str]) -> Snapshot:
    """The figures as the store holds them now (no new read)."""
    return Snapshot(tuple(figure(store, n, _interval(pollers, n)) for n in names))


async def read(
    store: Store, pollers: Pollers | None, names: Iterable[str], *, timeout: float = READ_TIMEOUT
) -> Snapshot:
    """Read ``names`` now for a question: a fetch of each polled slice that starts after this call, waited for
    (bounded by ``timeout``), then the snapshot. A slice no poller fetches (a watch) is taken as it stands."""
    names = tuple(names)
    polled: dict[str, int] = {}
    if pollers is not None:
        polled = {n: pollers.polls.get(n, 0) for n in names if n in pollers.specs and pollers.specs[n].enabled()}
        if polled:
            pollers.refresh(*polled)
    if pollers is not None and polled:
        done = pollers.done
        await until(lambda: all(done.get(n, 0) > before for n, before in polled.items()), timeout, every=0.02)
    return snapshot(store, pollers, names)


def _what(f: Figure, cluster: str) -> str:
    """The figure as it was last read, in words: "you have $187.03"."""
    v, on = f.value, f" on {cluster}" if cluster else ""
    if f.name == "balance" and v is not None and v.balance_ucredits is not None:
        return f"you have {fmt_usd(v.balance_ucredits)}"
    if f.name == "bid" and v is not None:
        p = v.max_price_per_gpu_hour
        return f"the standing limit price{on} is {fmt_price(p)}" if p else f"no limit price stands{on}"
    if f.name == "vm_capacity" and v is not None and not unread(f.name, v):
        return f"{v.max_gpus} GPUs are declared{on} at up to {fmt_price(v.max_price_per_gpu_hour)}"
    return _LABEL.get(f.name, f.name)


def sentence(f: Figure, cluster: str = "") -> str:
    """A figure that is not fresh, said: "you have $187.03 as read 5m ago — could not read it since (HTTP 503):
    the cover cannot be confirmed; r to retry". Empty for a fresh figure."""
    if f.fresh:
        return ""
    means = _MEANS.get(f.name, "the question cannot be judged")
    if f.state == UNKNOWN:
        label = _LABEL.get(f.name, f.name)
        return f"{label[0].upper()}{label[1:]} could not be read ({f.reason}): {means}; r to retry."
    what = _what(f, cluster)
    since = "not read again since" if f.reason == "not read again since" else f"could not read it since ({f.reason})"
    return f"{what[0].upper()}{what[1:]} as read {fmt_age(f.age)} ago — {since}: {means}; r to retry."


def changes(
    before: Snapshot,
    after: Snapshot,
    cluster: str = "",
    *,
    verdict: Callable[[Any], tuple[str, str]] | None = None,
) -> list[str]:
    """What moved between the question's reads and the reads at its yes, in words. ``verdict`` (the ladder's
    verdict for the exact value sent, as its level and its sentence) says the ladder only when the level changed
    (a price that cleared would not win now, or the other way), not when the same price wins more or fewer nodes."""
    out: list[str] = []
    on = f" on {cluster}" if cluster else ""
    for b in before.figures:
        try:
            a = after[b.name]
        except KeyError:
            continue
        old, new = b.value, a.value
        if old is None or new is None:
            continue
        if b.name == "balance" and old.balance_ucredits != new.balance_ucredits:
            out.append(f"the balance is now {fmt_usd(new.balance_ucredits)} (was {fmt_usd(old.balance_ucredits)})")
        elif b.name == "bid" and old.max_price_per_gpu_hour != new.max_price_per_gpu_hour:
            was = fmt_price(old.max_price_per_gpu_hour) if old.max_price_per_gpu_hour else "none"
            now = (
                f"the standing limit{on} is now {fmt_price(new.max_price_per_gpu_hour)}"
                if new.max_price_per_gpu_hour
                else f"no limit price stands{on} now"
            )
            out.append(f"{now} (it was {was} when you were asked)")
        elif b.name == "vm_capacity" and (old.max_gpus, old.max_price_per_gpu_hour) != (
            new.max_gpus,
            new.max_price_per_gpu_hour,
        ):
            out.append(
                f"the declared capacity{on} is now {new.max_gpus} GPUs at up to "
                f"{fmt_price(new.max_price_per_gpu_hour)} (it was {old.max_gpus} GPUs at up to "
                f"{fmt_price(old.max_price_per_gpu_hour)} when you were asked)"
            )
        elif b.name == "ladder" and verdict is not None:
            (was_level, was), (now_level, now) = verdict(old), verdict(new)
            if was_level != now_level:
                out.append(f"the market moved: {now.rstrip('.')} (when you were asked: {was.rstrip('.')})")
    return out


__all__ = [
    "Figure",
    "Snapshot",
    "figure",
    "snapshot",
    "read",
    "sentence",
    "changes",
    "unread",
    "FRESH",
    "STALE",
    "UNKNOWN",
]


# ---- the two steps of a money question, asked through the flow's UI (flows/base.py) ------------------------

MAX_ROUNDS = 3  # questions asked again because a figure changed meanwhile, before ncui gives up and says so


async def figures(ctx: Context, names: tuple[str, ...], declined: str) -> Snapshot | None:
    """Read the figures a money question judges, for it. While one is not fresh, say which (as read how long
    ago, and why not since) and offer r to read again: nothing is judged "covered" on an old figure. None
    (``declined`` said) when the human gives up."""
    ref = ctx.store.meta.get("cluster")
    while True:
        snap = await read(ctx.store, ctx.pollers, names)
        bad = snap.not_fresh()
        if not bad:
            return snap
        said = "\n".join(sentence(f, ref.name if ref is not None else "") for f in bad)
        if not await ctx.ui.ask(Retry("The figures could not be confirmed", said)):
            ctx.ui.notify(declined)
            return None


async def confirm(
    ctx: Context,
    snap: Snapshot,
    names: tuple[str, ...],
    title: str,
    body: Callable[[Snapshot], Any],
    still: Callable[[Snapshot, Snapshot], tuple[list[str], str | None]],
    *,
    yes: str,
    no: str,
    declined: str,
) -> Snapshot | None:
    """Ask ``title`` with ``body(snap)``; at the yes read ``names`` again: ``still(snap, new)`` gives what
    changed meanwhile in words and, when the change makes the answer wrong, why (then nothing is sent: said
    in a modal). A change is said in a new question before anything is sent. The snapshot the yes was given
    on, or None (said) when the human said no, a figure could not be read again, or it was refused."""
    from rich.text import Text

    heading, lead = title, ""
    for _ in range(MAX_ROUNDS):
        if not await ctx.ui.ask(Confirm(heading, lead + body(snap), yes=yes, no=no)):
            ctx.ui.notify(declined)
            return None
        new = await figures(ctx, names, declined)
        if new is None:
            return None
        said, wrong = still(snap, new)
        if wrong is not None:
            moved = f"While you were asked, {'; '.join(said)}.\n\n" if said else ""
            await ctx.ui.ask(Results(declined.rstrip("."), Text(f"{moved}{wrong}")))
            return None
        if not said:
            return new
        snap = new
        heading = f"Something changed while you were asked: {title[0].lower()}{title[1:]}"
        lead = f"While you were asked, {'; '.join(said)}.\n\n"
    await ctx.ui.ask(
        Results(
            declined.rstrip("."),
            Text(f"The figures changed {MAX_ROUNDS} times while you were asked; look at Lease, then try again."),
        )
    )
    return None
