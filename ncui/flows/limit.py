"""The spending limit, enforced by ncui (``ncui/limits.py`` has the rules and the file): loaded once the organization
is known, checked on every balance, transactions, bid and capacity update whichever view is shown, a warning at
80%, and at 100% a last warning with a countdown before ncui withdraws what stands. No Textual here: its two
questions (``SpendingLimitAsk``, ``Countdown``) are shown by the modals in ``ncui/screens/limitguard.py``.

The balance poller is the clock of the check: a balance that moved (a new assessment) fetches the transactions
at once, so a limit is acted on within one balance poll interval at any demo speed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from .. import limits as L
from ..api.errors import NCError
from ..lifecycle import stays, stop_list
from ..limits import LIMIT_SLICE, limit_state
from ..money import fmt_price, fmt_usd
from ..notify import Moment
from .base import Context, Flow
from .ui import Question

if TYPE_CHECKING:
    from ..api import models as m
    from ..kube.client import KubeClient
    from ..lifecycle import Obj
    from ..meters import Meter
    from ..store import Slice


# ---- the questions ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpendingLimitAsk(Question["tuple[int, datetime | None, bool] | str | None"]):
    """Set (amount, until, stop_runs), clear ("clear"), or cancel (None) the spending limit; ``current`` is the one
    set, ``counts`` says what counts, ``kind`` what 100% does on this cluster (``limits.limit_kind``)."""

    current: L.Limit | None
    now: datetime
    counts: str
    kind: L.Kind = "market"


@dataclass(frozen=True)
class Countdown(Question[bool]):
    """The last warning: True when the countdown of ``seconds`` ends or the human says ``yes`` now; False keeps it."""

    body: str
    what: str
    seconds: float
    yes: str = "Withdraw now"


def _stops(standing: list[Meter]) -> str:
    """What ncui does at 100% to what stands: "withdraw the limit price of $5.00/GPU-h on halcyon", "release
    the VM capacity on tern-vm"."""
    return " and ".join(
        f"withdraw the limit price of {fmt_price(s.price)} on {s.cluster}"
        if s.kind == "bid"
        else f"release the VM capacity on {s.cluster}"
        for s in standing
    )


@dataclass(frozen=True)
class RunStop:
    """A run that holds a GPU node, as the limit stops it: Stop's objects and commands (``stop_plan``)."""

    recipe: m.Recipe
    objs: list[Obj]
    cmds: list[str]
    stays: str

    def said(self) -> str:
        """``nanoGPT: job/nanogpt (Running). Nothing of the run stays on the cluster: …``"""
        return f"{self.recipe.title}: {stop_list(self.objs)}. {self.stays}"


# ---- the flow -----------------------------------------------------------------------------------------------


class SpendingLimitFlow(Flow):
    """The spending limit's life (load, set, clear, keep) and its enforcement. Given: ``kube_signed_in()`` (the
    active cluster's client when it needs no sign-in question), Stop's ``stop_plan`` and ``stop_objects`` and the
    catalog's ``recipe(name)`` (lifecycle), and ``state_notices()`` (a state file set aside, said)."""

    def __init__(
        self,
        ctx: Context,
        *,
        kube_signed_in: Callable[[], Awaitable[KubeClient | None]],
        stop_plan: Callable[[KubeClient, m.Recipe], Awaitable[tuple[list[Obj], list[str]]]],
        stop_objects: Callable[[KubeClient, m.Recipe, list[Obj], list[str]], Awaitable[bool]],
        recipe: Callable[[str], m.Recipe],
        state_notices: Callable[[], None],
    ) -> None:
        super().__init__(ctx)
        self._kube_signed_in = kube_signed_in
        self._stop_plan = stop_plan
        self._stop_objects = stop_objects
        self._recipe = recipe
        self._state_notices = state_notices
        self.key: str | None = None  # the organization's key in limits.json, once whoami is read
        self.counting = False  # the fresh read, the countdown or the withdrawal is under way
        self._warned: frozenset[tuple[int, datetime]] = frozenset()  # the limits warned at 80% (amount, set_at)
        self._reached_told: frozenset[tuple[int, datetime]] = frozenset()  # the limits whose 100% was a moment
        self._looked: tuple[object, ...] | None = None  # what the last look at 100% saw (limit, charged, standing)
        self._nothing_told: frozenset[tuple[int, datetime]] = frozenset()
        self._last_assessment: tuple[int, object] | None = None

    def start(self) -> None:
        """At connect: the service's clock, when ncui started on it, and the checks on every update."""
        backend = self.backend
        if backend is None:
            return
        self.store.meta["service_now"] = backend.now
        self._session_start()
        self.store.subscribe("whoami", self._load, interested=False)
        self.store.subscribe("balance", self._balance, interested=False)
        # interested: the transactions stay polled at the shown rate wherever the human is
        self.store.subscribe(("transactions", "bid", "vm_capacity", LIMIT_SLICE), self.check, interested=True)

    def _session_start(self) -> None:
        """ "Since start" counts from the service's clock when ncui started on it: set on the first dated answer
        (before it, ``Backend.now`` is the wall clock, which may be hours off the service's)."""
        if "session_start" not in self.store.meta and self.backend is not None:
            if (now := self.backend.service_now()) is not None:
                self.store.meta["session_start"] = now

    def _load(self, s: Slice) -> None:
        self._session_start()
        if s.value is None or self.backend is None or self.backend.endpoints is None:
            return
        key = L.key_for(self.backend.endpoints.api, s.value.org_id)
        if key != self.key:
            self.key = key
            self.store.set(LIMIT_SLICE, L.load(key))
            self._state_notices()  # a limits.json set aside is said now, not when another file is next read

    def _balance(self, s: Slice) -> None:
        """A new assessment (the balance or its time moved): read the charges now, not a poll later."""
        self._session_start()
        bal = s.value
        if bal is None or s.failing:
            return
        mark = (bal.balance_ucredits, bal.assessed_at)
        if self._last_assessment is not None and mark != self._last_assessment and self.ctx.pollers is not None:
            self.ctx.pollers.refresh("transactions")
        self._last_assessment = mark

    def save(self, limit: L.Limit | None) -> bool:
        """Keep ``limit`` (None: no limit) for the organization; False (said) before the organization is known."""
        if self.key is None:
            self.notify("The organization is still loading; try again in a moment.")
            return False
        try:
            L.save(self.key, limit)
        except OSError as e:
            self.notify(
                f"The spending limit could not be saved in {L.limits_path().parent} ({e.strerror or e}): it "
                "holds for this run only.",
                severity="warning",
                timeout=12,
            )
        self._state_notices()
        self.store.set(LIMIT_SLICE, limit)
        return True

    def open(self) -> None:
        """Lease, b: set, change or clear the spending limit."""
        backend = self.backend
        if backend is None or self.key is None:
            self.notify("Still connecting; try again in a moment.")
            return
        counts = (
            "What counts: the charges the meter records from now on (billing transactions; the meter assesses "
            "about every ten minutes, so a charge lands after the minutes it covers)."
        )
        kind = L.limit_kind(self.store)

        def done(answer: tuple[int, datetime | None, bool] | str | None) -> None:
            if answer is None:
                return
            if answer == "clear":
                if self.save(None):
                    self.notify("Spending limit cleared: ncui enforces none now.")
                return
            assert isinstance(answer, tuple)
            amount, until, stop_runs = answer
            limit = L.Limit(amount, backend.now(), until, stop_runs=stop_runs and kind == "market")
            if self.save(limit):
                self.notify(
                    f"Spending limit {fmt_usd(amount)} {limit.scope()}: counted from now. "
                    + L.stops(kind, limit.stop_runs)
                )

        self.ui.ask_then(SpendingLimitAsk(self.store.value(LIMIT_SLICE), backend.now(), counts, kind), done)

    def end_session(self) -> None:
        """ncui quits with nothing standing: a session limit ends with the session (a dated one stays)."""
        limit = self.store.value(LIMIT_SLICE)
        if limit is not None and limit.until is None and self.key is not None:
            try:
                L.save(self.key, None)
            except OSError:
                pass

    # ---- the check, on every update ---------------------------------------------------------------------

    def check(self, _s: Slice | None = None) -> None:
        """The limit against what the meter charged: a warning at 80% (once a limit), at 100% the last warning
        (looked at again only when something moved)."""
        from ..meters import (
            standing,
        )  # (the meters: imported when a limit is first checked, not before the first frame)

        self._session_start()
        state = limit_state(self.store)
        if state is None or self.counting:
            return
        ident = (state.limit.amount, state.limit.set_at)
        now_standing = [s for s in standing(self.store) if not s.unknown]
        if state.level == "warn" and ident not in self._warned:
            self._warned |= {ident}
            kind = L.limit_kind(self.store)
            then = (
                f"ncui will {_stops(now_standing)}"
                + (" and stop your runs on GPU nodes" if state.limit.stop_runs else "")
                if now_standing
                else L.stops(kind, state.limit.stop_runs)[len("At 100% ") :].rstrip(".")
            )
            self.notify(
                f"{state.percent}% of your spending limit: {fmt_usd(state.spent)} of {fmt_usd(state.limit.amount)} "
                f"charged since {state.limit.set_at:%H:%M}. At 100% {then} (Lease, 5).",
                title="Spending limit",
                severity="warning",
                timeout=20,
            )
            self.moment(
                Moment(
                    "limit",
                    f"Spending limit {L.WARN_PERCENT}%",
                    f"{fmt_usd(state.spent)} of {fmt_usd(state.limit.amount)} charged since "
                    f"{state.limit.set_at:%H:%M} ({state.percent}%).",
                    "warning",
                ),
                in_app=False,  # (said in full just above)
            )
        if state.level != "reached":
            return
        if ident not in self._reached_told:  # the desktop hears it once a limit; the app says what follows
            self._reached_told |= {ident}
            self.moment(
                Moment(
                    "limit",
                    "Spending limit reached",
                    f"{fmt_usd(state.spent)} of {fmt_usd(state.limit.amount)} charged since "
                    f"{state.limit.set_at:%H:%M}: ncui acts now (Lease, 5).",
                    "error",
                ),
                in_app=False,  # (the countdown, or the sentence on what stays billed, says it in the app)
            )
        # Looked at again only when something moved (a new charge, what stands, the limit): each look reads what
        # stands fresh first, so a limit price already withdrawn is never counted down for (or PUT 0) again.
        looked = (ident, state.spent, state.limit.stop_runs, tuple((s.kind, s.cluster, s.price) for s in now_standing))
        if looked == self._looked:
            return
        self._looked = looked
        self.counting = True
        self.ui.start(partial(self._reached, state), name="limit-reached", group="limit")

    async def _reached(self, state: L.LimitState) -> None:
        """At 100%: read what stands now (and, when chosen, the runs on GPU nodes), then the last warning."""
        from ..meters import standing

        try:
            await self._fresh()
            now_standing = [s for s in standing(self.store) if not s.unknown]
            runs, runs_problem = await self._runs() if state.limit.stop_runs else ([], None)
        except BaseException:
            self.counting = False
            raise
        ident = (state.limit.amount, state.limit.set_at)
        if not now_standing and not runs:
            self.counting = False
            if ident not in self._nothing_told:
                self._nothing_told |= {ident}
                self.notify(
                    f"Spending limit reached: {fmt_usd(state.spent)} of {fmt_usd(state.limit.amount)}. "
                    + self._still_billed(state.limit.stop_runs, runs_problem),
                    title="Spending limit",
                    severity="error",
                    timeout=30,
                )
            return
        after = {
            "bid": "Once it is withdrawn, no new nodes are pulled.",
            "vm": "Once it is released (max_gpus 0, the same price), billing stops and every node is destroyed with "
            "its disk: Esc keeps it, to copy files off first (Lease, R offers to).",
        }
        parts = list(dict.fromkeys(after[s.kind] for s in now_standing))
        if runs:
            parts.append("These runs are stopped (deleted) then, each with what stays:")
            parts.extend(f"• {r.said()}" for r in runs)
            parts.append("Their nodes go back to the market after a few idle minutes; billing ends then.")
        elif any(s.kind == "bid" for s in now_standing):
            parts.append(self._still_billed(state.limit.stop_runs, runs_problem))
        body = (
            f"The meter charged {fmt_usd(state.spent)} since {state.limit.set_at:%H:%M}: your limit is "
            f"{fmt_usd(state.limit.amount)} {state.limit.scope()}.\n\n" + "\n".join(parts)
        )
        what = " and ".join(
            x for x in (_stops(now_standing), "stop " + ", ".join(r.recipe.title for r in runs) if runs else "") if x
        )
        yes = (
            "Withdraw now"
            if any(s.kind == "bid" for s in now_standing)
            else ("Release now" if now_standing else "Stop them now")
        )
        self.ui.ask_then(Countdown(body, what, L.COUNTDOWN_S, yes), partial(self._answer, now_standing, runs))

    def _still_billed(self, stop_runs: bool, runs_problem: str | None) -> str:
        """What goes on billing after the limit acted: a node running a job (said with what Lease shows held)."""
        spend = self.store.value("spend")
        held = (
            f"{spend.nodes_held} node{'s' if spend.nodes_held != 1 else ''} ({spend.gpus_held} GPUs) still held"
            if spend is not None and spend.nodes_held
            else "A node still running a job"
        )
        if runs_problem:
            return (
                f"{held} stays, billed, until its job ends: your runs could not be listed ({runs_problem}), so "
                "none is stopped (Workloads, x)."
            )
        if stop_runs:
            return f"{held} stays, billed, while a job runs on it: no run of yours sits on a GPU node for ncui to stop."
        return f"{held} stays, billed, until its job ends: you did not choose to stop runs (Workloads, x stops one)."

    async def _fresh(self) -> None:
        """What stands, read now (the countdown shows what it withdraws, never a poll's older read)."""
        nc, ref = self.client(), self.store.meta.get("cluster")
        if nc is None or ref is None:
            return
        try:
            if ref.kind == "kubernetes" and L.limit_kind(self.store) == "market":
                self.store.set("bid", await nc.bid(ref.name))
            elif ref.kind == "vm":
                self.store.set("vm_capacity", await nc.vm_capacity())
        except NCError as e:  # the last read stands, said as stale by the slice
            self.store.fail("bid" if ref.kind == "kubernetes" else "vm_capacity", str(e))

    async def _runs(self) -> tuple[list[RunStop], str | None]:
        """The runs that hold GPU nodes on the active cluster now (Stop's objects for each), or why they could
        not be listed. Never a sign-in question: a countdown does not wait on a browser."""
        from ..kube.client import KubeError
        from ..lifecycle import Obj, runs_on_gpu_nodes

        if L.limit_kind(self.store) != "market":
            return [], None
        kube = await self._kube_signed_in()
        if kube is None:
            return [], "not signed in to the cluster: s on Workloads signs in"
        try:
            pods, jobs, deps, nodes = [(await kube.list(k))[0] for k in ("pods", "jobs", "deployments", "nodes")]
            out: list[RunStop] = []
            for run in runs_on_gpu_nodes(pods, jobs, deps, nodes, self.store.value("catalog") or ()):
                if run.recipe is not None:
                    recipe = self._recipe(run.recipe)
                    objs, cmds = await self._stop_plan(kube, recipe)
                    if objs:
                        out.append(RunStop(recipe, objs, cmds, stays(run.recipe)))
                else:
                    obj = Obj(run.plural, run.name)
                    recipe = self._recipe(obj.ref)
                    out.append(RunStop(recipe, [obj], [], "What it wrote to the shared volume stays there."))
        except KubeError as e:
            return [], str(e)
        return out, None

    def _answer(self, now_standing: list[Meter], runs: list[RunStop], withdraw: bool | None) -> None:
        limit = self.store.value(LIMIT_SLICE)
        if withdraw:
            if limit is not None:  # what follows the withdrawal is said once, not "nothing stands" again
                self._nothing_told |= {(limit.amount, limit.set_at)}
            self.ui.start(partial(self._withdraw, now_standing, runs), name="limit-withdraw", group="limit")
            return  # (still counting: until the withdrawal is done, no second countdown)
        self.counting = False
        if limit is not None:
            self.save(L.kept(limit))
        self.notify(
            "Spending limit reached, kept by you: nothing was withdrawn or stopped.", severity="warning", timeout=12
        )

    async def _withdraw(self, now_standing: list[Meter], runs: list[RunStop]) -> None:
        from ..actions import withdraw_bid
        from ..kube.client import KubeError

        try:
            nc = self.client()
            if nc is None:
                return
            for s in now_standing:
                try:
                    if s.kind == "bid":
                        await withdraw_bid(nc, self.store, s.cluster)
                        self.notify(f"Spending limit reached: the limit price on {s.cluster} is withdrawn.", timeout=15)
                    else:
                        await self.release_for_limit(s)
                except NCError as e:
                    self.notify(f"The spending limit could not stop the spending: {e}", severity="error", timeout=20)
            kube = await self._kube_signed_in() if runs else None
            for r in runs:
                why = "not signed in to the cluster"
                try:
                    if kube is not None:
                        await self._stop_objects(kube, r.recipe, r.objs, r.cmds)  # (says what it stopped)
                        continue
                except KubeError as e:
                    why = str(e)
                self.notify(
                    f"The spending limit could not stop {r.recipe.title}: {why}. Stop it on Workloads (x).",
                    severity="error",
                    timeout=20,
                )
            if self.ctx.pollers is not None:
                self.ctx.pollers.refresh("bid", "spend", "ladder", "vm_capacity")
        finally:
            self.counting = False

    async def release_for_limit(self, standing: Meter) -> None:
        """Declared VM capacity at 100%, after the countdown the human let run: release it (max_gpus 0 with the
        same price; a version race is not overwritten: it is said, and the capacity stays)."""
        from ..actions import release_vm

        nc = self.backend.nc if self.backend is not None else None
        if nc is None:
            return
        try:
            await release_vm(nc, self.store)
        except NCError as e:
            self.notify(
                f"Spending limit reached, but the VM capacity on {standing.cluster} was not released: {e}. "
                "Release it on Lease (5, R).",
                severity="error",
                timeout=30,
            )
            return
        self.notify(
            f"Spending limit reached: the VM capacity on {standing.cluster} is released (its nodes are gone).",
            severity="warning",
            timeout=30,
        )
