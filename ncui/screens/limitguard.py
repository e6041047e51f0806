"""The spending limit, enforced by the app (``ncui/limits.py`` has the rules and the file): loaded once the
organization is known, checked on every balance, transactions, bid and capacity update whichever screen is
shown, a warning at 80%, and at 100% a last warning with a countdown before ncui withdraws what stands.

The balance poller is the clock of the check: a balance that moved (a new assessment) fetches the
transactions at once, so a limit is acted on within one balance poll interval at any demo speed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Static

from .. import limits as L
from ..api.errors import NCError
from ..limits import LIMIT_SLICE, limit_state
from ..money import fmt_price, fmt_usd, parse_dollars
from .lifecycle import stays, stop_list

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine
    from typing import Any

    from textual.app import App
    from textual.widgets import Input
    from textual.worker import Worker

    from ..api import models as m
    from ..api.client import NCClient
    from ..backend import Backend
    from ..flows.connect import ConnectFlow
    from ..kube.client import KubeClient
    from ..lifecycle import Obj
    from ..pollers import Pollers
    from ..store import Slice, Store
    from .exitguard import Standing

    _AppBase = App[None]
else:
    _AppBase = object


def _stops(standing: list[Standing]) -> str:
    """What ncui does at 100% to what stands: "withdraw the limit price of $5.00/GPU-h on halcyon", "release
    the VM capacity on tern-vm"."""
    return " and ".join(
        f"withdraw the limit price of {fmt_price(s.price)} on {s.cluster}"
        if s.kind == "bid"
        else f"release the VM capacity on {s.cluster}"
        for s in standing
    )


class CountdownModal(ModalScreen[bool]):
    """The last warning: ncui withdraws what stands when the countdown ends (True), or now on y/Enter; Esc or n
    keeps it (False), and the limit then reads "reached, kept by you"."""

    BINDINGS = [Binding("escape,n", "answer(False)", "Keep"), Binding("y", "answer(True)", "Withdraw now")]
    AUTO_FOCUS = "#yes"  # the safe answer here is to stop spending
    DEFAULT_CSS = """
    CountdownModal { align: center middle; }
    CountdownModal > Vertical { width: 90%; max-width: 80; height: auto; max-height: 100%; border: thick $error;
                                background: $surface; padding: 1 2; }
    CountdownModal #count { text-style: bold; color: $error; margin-top: 1; }
    CountdownModal Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    CountdownModal Button { margin-left: 2; }
    """

    def __init__(self, body: str, what: str, seconds: float, yes: str = "Withdraw now") -> None:
        super().__init__()
        self.body, self.what, self.left, self.yes = body, what, int(round(seconds)), yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Spending limit reached[/b]", markup=True)
            yield Static(self.body, markup=False)
            yield Static(self._count(), id="count", markup=False)
            with Horizontal():
                yield Button("Keep it (n, Esc)", id="no")
                yield Button(f"{self.yes} (y, Enter)", id="yes", variant="error")

    def _count(self) -> str:
        return f"ncui will {self.what} in {self.left} s. Esc keeps it."

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.dismiss(True)
            return
        self.query_one("#count", Static).update(self._count())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class _StopRunsBox(Checkbox, inherit_bindings=False):
    """Space ticks it; Enter sets the limit, as everywhere in the question (a Checkbox's Enter would untick it)."""

    BINDINGS = [Binding("space", "toggle_button", "Toggle", show=False)]


class SpendingLimitModal(ModalScreen["tuple[int, datetime | None, bool] | str | None"]):
    """Set (amount, until, stop_runs), clear ("clear"), or cancel (None) the spending limit. The amount is read
    strictly (``money.parse_dollars``); the end is blank (this session) or a date (``limits.parse_until``); on a
    market cluster a box chooses whether 100% also stops the runs that hold GPU nodes (off unless ticked)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("enter", "submit", show=False)]
    DEFAULT_CSS = """
    SpendingLimitModal { align: center middle; }
    SpendingLimitModal > Vertical { width: 90%; max-width: 84; height: auto; max-height: 100%; border: thick $warning;
                                    background: $surface; padding: 0 2; }
    SpendingLimitModal Field { width: 30; }
    SpendingLimitModal _StopRunsBox { border: none; padding: 0; height: auto; width: 100%; }
    SpendingLimitModal _StopRunsBox:focus { border: none; background-tint: $foreground 10%; }
    SpendingLimitModal Horizontal { height: auto; align-horizontal: right; }
    SpendingLimitModal Button { margin-left: 2; }
    """

    def __init__(self, current: L.Limit | None, now: datetime, counts: str, kind: L.Kind = "market") -> None:
        super().__init__()
        self.current, self.now, self.counts, self.kind = current, now, counts, kind
        self.value: tuple[int, datetime | None, bool] | None = None

    def compose(self) -> ComposeResult:
        from textual.widgets import Label

        from ..money import dollars_text
        from ..widgets.field import Field

        cur = self.current
        n = int(L.COUNTDOWN_S)
        what = {
            "market": f"at 100%, after a {n}-second countdown you can cancel, it withdraws your limit price: no new "
            "nodes. A run on a node you hold goes on, billed, until it ends, unless you tick the box to stop it too.",
            "vm": f"at 100%, after a {n}-second countdown you can cancel, it releases your VM capacity: billing stops, "
            "and every node is destroyed with its disk.",
            "none": "at 100% it warns again: nothing here is withdrawn or stopped.",
        }[self.kind]
        with Vertical():
            yield Static("[b]Spending limit[/b]", markup=True)
            yield Static(f"{self.counts} At 80% ncui warns; {what}", markup=False)
            yield Label("Most the meter may charge, in dollars")
            yield Field(value=dollars_text(cur.amount) if cur else "", placeholder="e.g. 50.00", id="amount")
            yield Label("Until (blank: this session; or YYYY-MM-DD, UTC)")
            yield Field(value=f"{cur.until:%Y-%m-%d %H:%M}" if cur and cur.until else "", id="until")
            if self.kind == "market":
                yield _StopRunsBox(
                    "At 100% also stop my runs on GPU nodes (shared volume kept)",
                    value=bool(cur and cur.stop_runs),
                    id="stop_runs",
                )
            yield Static("", id="why")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                if cur is not None:
                    yield Button("Clear the limit", id="clear")
                yield Button("Set (Enter)", id="ok", variant="warning")

    def on_mount(self) -> None:
        from textual.widgets import Input

        self.query_one("#amount", Input).focus()
        self._judge()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._judge()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self._judge()

    def _stop_runs(self) -> bool:
        boxes = self.query("#stop_runs").results(_StopRunsBox)
        return any(b.value for b in boxes)

    def _judge(self) -> None:
        from textual.widgets import Input

        why = self.query_one("#why", Static)
        self.value = None
        amount_text, until_text = (self.query_one(f"#{i}", Input).value for i in ("amount", "until"))
        if not amount_text.strip():
            why.update(Text("Type the most ncui lets the meter charge, like 50.00.", style="dim"))
            return
        try:
            amount = parse_dollars(amount_text)
            if amount <= 0:
                raise ValueError("must be more than $0")
            until = L.parse_until(until_text, self.now)
        except ValueError as e:
            why.update(Text(f"✗ {e}", style="bold red"))
            return
        stop_runs = self._stop_runs()
        self.value = (amount, until, stop_runs)
        scope = L.scope_words(until)
        also = "; at 100% your runs on GPU nodes are stopped too (listed first, in the countdown)" if stop_runs else ""
        said = f"✓ {fmt_usd(amount)} {scope}, counted from now{also}."
        why.update(Text(said, style="green"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        elif event.button.id == "clear":
            self.dismiss("clear")
        else:
            self.dismiss(None)

    def _submit(self) -> None:
        if self.value is not None:
            self.dismiss(self.value)
        else:
            self.app.bell()

    def action_submit(self) -> None:
        self._submit()

    def action_cancel(self) -> None:
        self.dismiss(None)


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


class LimitGuardMixin(_AppBase):
    """Mixed into NCApp: the spending limit's life (load, set, clear, keep) and its enforcement."""

    if TYPE_CHECKING:
        store: Store
        backend: Backend | None
        pollers: Pollers | None

        def _client(self) -> NCClient | None: ...
        def _state_notices(self) -> None: ...

        connect: ConnectFlow

        async def stop_plan(self, kube: KubeClient, recipe: m.Recipe) -> tuple[list[Obj], list[str]]: ...
        async def stop_objects(self, kube: KubeClient, recipe: m.Recipe, objs: list[Obj], cmds: list[str]) -> bool: ...
        def _recipe(self, name: str) -> m.Recipe: ...

        def start_worker(
            self, work: Callable[[], Coroutine[Any, Any, object]], *, name: str, group: str = ..., exclusive: bool = ...
        ) -> Worker[object]: ...

    _limit_key: str | None = None
    _limit_warned: frozenset[tuple[int, datetime]] = frozenset()  # the limits warned at 80% (amount, set_at)
    _limit_counting: bool = False  # the fresh read, the countdown or the withdrawal is under way
    _limit_looked: tuple[object, ...] | None = None  # what the last look at 100% saw (limit, charged, standing)
    _limit_nothing_told: frozenset[tuple[int, datetime]] = frozenset()
    _last_assessment: tuple[int, object] | None = None

    def limit_start(self) -> None:
        """At connect: the service's clock, when ncui started on it, and the checks on every update."""
        backend = self.backend
        if backend is None:
            return
        self.store.meta["service_now"] = backend.now
        self._session_start()
        self.store.subscribe("whoami", self._limit_load, interested=False)
        self.store.subscribe("balance", self._limit_balance, interested=False)
        # interested: the transactions stay polled at the shown rate wherever the human is
        self.store.subscribe(("transactions", "bid", "vm_capacity", LIMIT_SLICE), self._limit_check, interested=True)

    def _session_start(self) -> None:
        """ "Since start" counts from the service's clock when ncui started on it: set on the first dated answer
        (before it, ``Backend.now`` is the wall clock, which may be hours off the service's)."""
        if "session_start" not in self.store.meta and self.backend is not None:
            if (now := self.backend.service_now()) is not None:
                self.store.meta["session_start"] = now

    def _limit_load(self, s: Slice) -> None:
        self._session_start()
        if s.value is None or self.backend is None or self.backend.endpoints is None:
            return
        key = L.key_for(self.backend.endpoints.api, s.value.org_id)
        if key != self._limit_key:
            self._limit_key = key
            self.store.set(LIMIT_SLICE, L.load(key))
            self._state_notices()  # a limits.json set aside is said now, not when another file is next read

    def _limit_balance(self, s: Slice) -> None:
        """A new assessment (the balance or its time moved): read the charges now, not a poll later."""
        self._session_start()
        bal = s.value
        if bal is None or s.failing:
            return
        mark = (bal.balance_ucredits, bal.assessed_at)
        if self._last_assessment is not None and mark != self._last_assessment and self.pollers is not None:
            self.pollers.refresh("transactions")
        self._last_assessment = mark

    def _limit_save(self, limit: L.Limit | None) -> bool:
        if self._limit_key is None:
            self.notify("The organization is still loading; try again in a moment.")
            return False
        try:
            L.save(self._limit_key, limit)
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

    def open_spending_limit(self) -> None:
        """Lease, b: set, change or clear the spending limit."""
        backend = self.backend
        if backend is None or self._limit_key is None:
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
                if self._limit_save(None):
                    self.notify("Spending limit cleared: ncui enforces none now.")
                return
            assert isinstance(answer, tuple)
            amount, until, stop_runs = answer
            limit = L.Limit(amount, backend.now(), until, stop_runs=stop_runs and kind == "market")
            if self._limit_save(limit):
                self.notify(
                    f"Spending limit {fmt_usd(amount)} {limit.scope()}: counted from now. "
                    + L.stops(kind, limit.stop_runs)
                )

        self.push_screen(SpendingLimitModal(self.store.value(LIMIT_SLICE), backend.now(), counts, kind), done)

    def limit_end_session(self) -> None:
        """ncui quits with nothing standing: a session limit ends with the session (a dated one stays)."""
        limit = self.store.value(LIMIT_SLICE)
        if limit is not None and limit.until is None and self._limit_key is not None:
            try:
                L.save(self._limit_key, None)
            except OSError:
                pass

    def _limit_check(self, _s: Slice | None = None) -> None:
        from .exitguard import standing_spend

        self._session_start()
        state = limit_state(self.store)
        if state is None or self._limit_counting:
            return
        ident = (state.limit.amount, state.limit.set_at)
        standing = [s for s in standing_spend(self.store) if not s.unknown]
        if state.level == "warn" and ident not in self._limit_warned:
            self._limit_warned |= {ident}
            kind = L.limit_kind(self.store)
            then = (
                f"ncui will {_stops(standing)}" + (" and stop your runs on GPU nodes" if state.limit.stop_runs else "")
                if standing
                else L.stops(kind, state.limit.stop_runs)[len("At 100% ") :].rstrip(".")
            )
            self.notify(
                f"{state.percent}% of your spending limit: {fmt_usd(state.spent)} of {fmt_usd(state.limit.amount)} "
                f"charged since {state.limit.set_at:%H:%M}. At 100% {then} (Lease, 5).",
                title="Spending limit",
                severity="warning",
                timeout=20,
            )
        if state.level != "reached":
            return
        # Looked at again only when something moved (a new charge, what stands, the limit): each look reads what
        # stands fresh first, so a limit price already withdrawn is never counted down for (or PUT 0) again.
        looked = (ident, state.spent, state.limit.stop_runs, tuple((s.kind, s.cluster, s.price) for s in standing))
        if looked == self._limit_looked:
            return
        self._limit_looked = looked
        self._limit_counting = True
        self.start_worker(partial(self._limit_reached, state), name="limit-reached", group="limit")

    async def _limit_reached(self, state: L.LimitState) -> None:
        """At 100%: read what stands now (and, when chosen, the runs on GPU nodes), then the last warning."""
        from .exitguard import standing_spend

        try:
            await self._limit_fresh()
            standing = [s for s in standing_spend(self.store) if not s.unknown]
            runs, runs_problem = await self._limit_runs() if state.limit.stop_runs else ([], None)
        except BaseException:
            self._limit_counting = False
            raise
        ident = (state.limit.amount, state.limit.set_at)
        if not standing and not runs:
            self._limit_counting = False
            if ident not in self._limit_nothing_told:
                self._limit_nothing_told |= {ident}
                self.notify(
                    f"Spending limit reached: {fmt_usd(state.spent)} of {fmt_usd(state.limit.amount)}. "
                    + self._limit_still_billed(state.limit.stop_runs, runs_problem),
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
        parts = list(dict.fromkeys(after[s.kind] for s in standing))
        if runs:
            parts.append("These runs are stopped (deleted) then, each with what stays:")
            parts.extend(f"• {r.said()}" for r in runs)
            parts.append("Their nodes go back to the market after a few idle minutes; billing ends then.")
        elif any(s.kind == "bid" for s in standing):
            parts.append(self._limit_still_billed(state.limit.stop_runs, runs_problem))
        body = (
            f"The meter charged {fmt_usd(state.spent)} since {state.limit.set_at:%H:%M}: your limit is "
            f"{fmt_usd(state.limit.amount)} {state.limit.scope()}.\n\n" + "\n".join(parts)
        )
        what = " and ".join(
            x for x in (_stops(standing), "stop " + ", ".join(r.recipe.title for r in runs) if runs else "") if x
        )
        yes = (
            "Withdraw now"
            if any(s.kind == "bid" for s in standing)
            else ("Release now" if standing else "Stop them now")
        )
        self.push_screen(CountdownModal(body, what, L.COUNTDOWN_S, yes), partial(self._limit_answer, standing, runs))

    def _limit_still_billed(self, stop_runs: bool, runs_problem: str | None) -> str:
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

    async def _limit_fresh(self) -> None:
        """What stands, read now (the countdown shows what it withdraws, never a poll's older read)."""
        nc, ref = self._client(), self.store.meta.get("cluster")
        if nc is None or ref is None:
            return
        try:
            if ref.kind == "kubernetes" and L.limit_kind(self.store) == "market":
                self.store.set("bid", await nc.bid(ref.name))
            elif ref.kind == "vm":
                self.store.set("vm_capacity", await nc.vm_capacity())
        except NCError as e:  # the last read stands, said as stale by the slice
            self.store.fail("bid" if ref.kind == "kubernetes" else "vm_capacity", str(e))

    async def _limit_runs(self) -> tuple[list[RunStop], str | None]:
        """The runs that hold GPU nodes on the active cluster now (Stop's objects for each), or why they could
        not be listed. Never a sign-in question: a countdown does not wait on a browser."""
        from ..kube.client import KubeError
        from ..lifecycle import Obj, runs_on_gpu_nodes

        if L.limit_kind(self.store) != "market":
            return [], None
        kube = await self.connect.kube_signed_in()
        if kube is None:
            return [], "not signed in to the cluster: s on Workloads signs in"
        try:
            pods, jobs, deps, nodes = [(await kube.list(k))[0] for k in ("pods", "jobs", "deployments", "nodes")]
            out: list[RunStop] = []
            for run in runs_on_gpu_nodes(pods, jobs, deps, nodes, self.store.value("catalog") or ()):
                if run.recipe is not None:
                    recipe = self._recipe(run.recipe)
                    objs, cmds = await self.stop_plan(kube, recipe)
                    if objs:
                        out.append(RunStop(recipe, objs, cmds, stays(run.recipe)))
                else:
                    obj = Obj(run.plural, run.name)
                    recipe = self._recipe(obj.ref)
                    out.append(RunStop(recipe, [obj], [], "What it wrote to the shared volume stays there."))
        except KubeError as e:
            return [], str(e)
        return out, None

    def _limit_answer(self, standing: list[Standing], runs: list[RunStop], withdraw: bool | None) -> None:
        limit = self.store.value(LIMIT_SLICE)
        if withdraw:
            if limit is not None:  # what follows the withdrawal is said once, not "nothing stands" again
                self._limit_nothing_told |= {(limit.amount, limit.set_at)}
            self.start_worker(partial(self._limit_withdraw, standing, runs), name="limit-withdraw", group="limit")
            return  # (still counting: until the withdrawal is done, no second countdown)
        self._limit_counting = False
        if limit is not None:
            self._limit_save(L.kept(limit))
        self.notify(
            "Spending limit reached, kept by you: nothing was withdrawn or stopped.", severity="warning", timeout=12
        )

    async def _limit_withdraw(self, standing: list[Standing], runs: list[RunStop]) -> None:
        from ..actions import withdraw_bid
        from ..kube.client import KubeError

        try:
            nc = self._client()
            if nc is None:
                return
            for s in standing:
                try:
                    if s.kind == "bid":
                        await withdraw_bid(nc, self.store, s.cluster)
                        self.notify(f"Spending limit reached: the limit price on {s.cluster} is withdrawn.", timeout=15)
                    else:
                        await self.release_for_limit(s)
                except NCError as e:
                    self.notify(f"The spending limit could not stop the spending: {e}", severity="error", timeout=20)
            kube = await self.connect.kube_signed_in() if runs else None
            for r in runs:
                why = "not signed in to the cluster"
                try:
                    if kube is not None:
                        await self.stop_objects(kube, r.recipe, r.objs, r.cmds)  # (says what it stopped)
                        continue
                except KubeError as e:
                    why = str(e)
                self.notify(
                    f"The spending limit could not stop {r.recipe.title}: {why}. Stop it on Workloads (x).",
                    severity="error",
                    timeout=20,
                )
            if self.pollers is not None:
                self.pollers.refresh("bid", "spend", "ladder", "vm_capacity")
        finally:
            self._limit_counting = False

    async def release_for_limit(self, standing: Standing) -> None:
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
