"""The lease: the limit price (set, change, put back, withdraw), what already stands at start, and the quit guard's
withdraw. No Textual here: each question is data (``Ceiling``, ``ExitGuard``, ``flows.ui.Confirm``…), shown by
``ncui/screens/ui.py``.

The one place a limit price is set is ``LeaseFlow.set_limit_price``: its question states exactly the figure sent
(for the GPUs it is for) and the ladder's verdict for it, and the figures it judges (the balance, the standing
limit, the ladder) are read for it and read again at the yes (``flows/fresh.py``) before ``PUT /api/k8s/bid``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from ..api.errors import NCError
from ..money import fmt_price, fmt_usd
from . import fresh
from .base import Context, Flow
from .ui import Confirm, Question, Results

if TYPE_CHECKING:
    from ..api import models as m
    from ..meters import Meter
    from ..store import Slice
    from .fresh import Snapshot

# A typed price (µ$/GPU-h) → (may it be set, the verdict's lines as (style, text)).
Judge = Callable[[int], "tuple[bool, list[tuple[str, str]]]"]

LIMIT_SLICES = ("balance", "bid", "ladder")  # the figures a limit price's question judges


# ---- the questions ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ceiling(Question["int | None"]):
    """The ceiling (never assumed): the most the human will pay per GPU hour, judged live by ``judge`` as it is
    typed; µ$/GPU-h, or None when they go back. ``standing`` (a limit that stands) is prefilled exactly."""

    title: str
    context: str
    judge: Judge
    standing: int = 0


@dataclass(frozen=True)
class ExitGuard(Question["str | None"]):
    """Quit while these meters run? "stay", "keep" (quit, leave them), "withdraw" (withdraw / release, quit)."""

    meters: tuple[Meter, ...]


# ---- the flow -----------------------------------------------------------------------------------------------


class LeaseFlow(Flow):
    """Set, change, put back or withdraw the limit price; what stands said at start; the quit guard.

    ``remember`` keeps the ceiling for the next session (ncui/memory.py); ``exit(end_session=…)`` ends the app
    (ending a session spending limit first when nothing is left standing)."""

    def __init__(
        self,
        ctx: Context,
        *,
        remember: Callable[..., None],
        exit: Callable[..., None],
    ) -> None:
        super().__init__(ctx)
        self._remember = remember
        self._exit = exit
        self._asking_exit = False  # the quit question is on screen: q again leaves it standing

    def _refresh(self, *names: str) -> None:
        if self.ctx.pollers is not None:
            self.ctx.pollers.refresh(*names)

    # ---- the limit price --------------------------------------------------------------------------------

    async def set_limit_price(
        self,
        cluster: str,
        ceiling: int,
        gpus: int,
        declined: str,
        *,
        snap: Snapshot | None = None,
        nodes: int = 1,
    ) -> m.Bid | None:
        """The one place a limit price is set: the question states the figure (exactly the one sent, for
        ``gpus`` GPUs an hour) and the ladder's verdict for it (for ``nodes`` nodes), then ``PUT /api/k8s/bid``
        after the human's yes, once the figures read again at that yes (``snap``'s: the balance, the standing
        limit, the ladder) still say the same. The new bid, or None when they said no (``declined`` is said) or
        it was refused (said)."""
        from .. import recipes as R
        from .apply import market_price

        info, summary = self.store.value("cluster"), self.store.value("summary")
        assessed = market_price(self.store, info.gpu_model) if info is not None else None
        purchases = bool(summary and summary.purchases)
        if snap is None:
            snap = await fresh.figures(self.ctx, LIMIT_SLICES, declined)
            if snap is None:
                return None

        def verdict(ladder: m.Ladder) -> R.CeilingVerdict:
            return R.judge_ceiling(ceiling, ladder, nodes)

        def body(now: Snapshot) -> str:
            return R.bid_confirmation(cluster, ceiling, gpus, assessed, verdict(now.value("ladder")))

        def judged(ladder: m.Ladder) -> tuple[str, str]:
            v = verdict(ladder)
            return v.level, v.message

        def still(before: Snapshot, now: Snapshot) -> tuple[list[str], str | None]:
            said = fresh.changes(before, now, cluster, verdict=judged)
            v = verdict(now.value("ladder"))
            if not v.ok:
                return said, v.message
            cover = R.money_check(gpus, ceiling, now.value("balance").balance_ucredits, purchases)
            return said, None if cover.ok else f"{fmt_price(ceiling)} is no longer covered: {cover.sentence}"

        if (
            await fresh.confirm(
                self.ctx,
                snap,
                LIMIT_SLICES,
                "Set the limit price?",
                body,
                still,
                yes="Set it",
                no="Cancel",
                declined=declined,
            )
            is None
        ):
            return None
        nc = self.client()
        if nc is None:
            return None
        try:
            new_bid: m.Bid = await nc.set_bid(ceiling, cluster)
        except NCError as e:
            await self.ui.ask(Results("The limit price was not set", str(e)))
            return None
        self.store.set("bid", new_bid)
        now = self.backend.now().isoformat() if self.backend is not None else None
        self._remember(ceiling={"cluster": cluster, "price_per_gpu_hour_ucredits": ceiling, "at": now})
        self._refresh("bid", "spend", "ladder")
        return new_bid

    def change(self) -> None:
        """Lease, c: set or change the standing limit price (in the background, one apply-or-limit at a time)."""
        self.ui.start(self.change_now, name="change_limit_flow", group="apply", exclusive=True)

    async def change_now(self) -> None:
        """Set or change the standing limit price on the active market cluster: the same ceiling question as an
        apply (judged for one node against the ladder and two hours of balance), then the same confirmation and
        PUT (``set_limit_price``)."""
        st = self.store
        info, ref = st.value("cluster"), st.meta.get("cluster")
        if info is None or ref is None or not info.market or info.name != ref.name:
            self.notify("A limit price is set on a market Kubernetes cluster only.")
            return
        snap = await fresh.figures(self.ctx, LIMIT_SLICES, "The limit price was not changed.")
        if snap is None:
            return
        summary = st.value("summary")
        standing = snap.value("bid").max_price_per_gpu_hour
        gpus = info.gpus_per_node
        need = f"A limit price on {ref.name} pulls nodes for any GPU job applied there; one node is {gpus} GPUs" + (
            f" (it stands at {fmt_price(standing)} now)." if standing else "."
        )
        ceiling = await self.ask_ceiling(need, gpus, snap, 1, bool(summary and summary.purchases), standing)
        if ceiling is None:
            self.notify("The limit price was not changed.")
            return
        if ceiling == standing:
            self.notify(f"{fmt_price(ceiling)} already stands on {ref.name}: nothing was sent.")
            return
        if (
            await self.set_limit_price(ref.name, ceiling, gpus, "The limit price was not changed.", snap=snap)
            is not None
        ):
            self.notify(f"Limit price {fmt_price(ceiling)} stands on {ref.name}.")

    async def ask_ceiling(
        self,
        need: str,
        gpus: int,
        snap: Snapshot,
        nodes_needed: int,
        purchases: bool,
        standing: int,
    ) -> int | None:
        """The ceiling question: ``need`` says what it is for, judged live for ``nodes_needed`` nodes against
        the ladder and for two hours of ``gpus`` against the balance, both as read for it (``snap``)."""
        from .. import recipes as R

        ladder, balance = snap.value("ladder"), snap.value("balance").balance_ucredits

        rungs = " · ".join(
            f"{r.nodes} node{'s' if r.nodes > 1 else ''} {fmt_price(r.price_per_gpu_hour)}" for r in ladder.rungs[:3]
        )
        context = (
            f"{need} "
            f"What is the most you will pay per GPU hour?\n"
            f"Price to win now: {rungs} · floor {fmt_price(ladder.floor_price_per_gpu_hour)}.\n"
            f"Balance {fmt_usd(balance)}."
        )

        def judge(value: int) -> tuple[bool, list[tuple[str, str]]]:
            v = R.judge_ceiling(value, ladder, nodes_needed)
            lines = [
                (
                    "bold red" if v.level == "refuse" else "yellow" if v.level == "warn" else "green",
                    ("✗ " if v.level == "refuse" else "! " if v.level == "warn" else "✓ ") + v.message,
                )
            ]
            if value <= 0:  # (no "$0.00 … covered" beside "must be more than $0")
                return False, lines
            m = R.money_check(gpus, value, balance, purchases)
            lines.append(("green" if m.ok else "bold red", ("✓ " if m.ok else "✗ ") + m.sentence))
            return v.ok and m.ok, lines

        return await self.ui.ask(Ceiling("Your ceiling", context, judge, standing))

    async def offer_back(self, cluster: str, set_here: tuple[int, int] | None) -> None:
        """A limit price set for an apply that did not happen is not left standing behind a toast: keep it, or
        put back what stood before (withdraw it when nothing did). The safe answer is the default."""
        if set_here is None:
            return
        before, now = set_here
        back = f"put back your earlier limit of {fmt_price(before)}" if before else "withdraw it"
        yes = await self.ui.ask(
            Confirm(
                "Keep the limit price you just set?",
                f"You set {fmt_price(now)} on {cluster} for this apply, and nothing was applied. Kept, it goes on "
                f"pulling nodes for any GPU job applied to {cluster} later.\n\nKeep it, or {back}?",
                yes="Put it back" if before else "Withdraw it",
                no="Keep it",
                default="yes",
            )
        )
        if not yes:
            self.notify(f"Limit price {fmt_price(now)} still stands on {cluster} (Lease, 5).", timeout=8)
            return
        nc = self.client()
        if nc is None:
            return
        from rich.text import Text

        try:
            self.store.set("bid", await nc.set_bid(before, cluster))
        except NCError as e:
            await self.ui.ask(
                Results("The limit price was not changed", Text(f"{fmt_price(now)} still stands on {cluster}: {e}"))
            )
            return
        self.notify(f"Limit price on {cluster}: " + (fmt_price(before) if before else "withdrawn") + ".")
        self._refresh("bid", "spend", "ladder")

    # ---- withdraw (Lease, w) ---------------------------------------------------------------------------

    def confirm_withdraw(self) -> None:
        """Lease, w: withdraw the standing limit price, asked first."""
        bid = self.store.value("bid")
        ref = self.store.meta.get("cluster")
        if bid is None or ref is None:
            return
        body = (
            f"Withdraw the standing limit price of {fmt_price(bid.max_price_per_gpu_hour)} on "
            f"{ref.name}?\nNo new nodes will be pulled for GPU jobs. Nodes still running a job stay "
            "until it ends."
        )

        def done(yes: bool | None) -> None:
            if yes:
                self.ui.start(partial(self.withdraw, ref.name), name="withdraw")

        self.ui.ask_then(Confirm("Withdraw the limit price?", body, yes="Withdraw", no="Keep"), done)

    async def withdraw(self, cluster: str) -> None:
        """``PUT /api/k8s/bid`` with 0 on ``cluster``, said either way."""
        from ..actions import withdraw_bid  # (the API's models: imported when first used, not before the first frame)

        nc = self.client()
        if nc is None:
            return
        try:
            await withdraw_bid(nc, self.store, cluster)
        except NCError as e:
            self.notify(str(e), severity="error", timeout=8)
            return
        self.notify("Limit price withdrawn: nothing is bid now.")
        self._refresh("bid", "spend", "ladder")

    # ---- what already stands, said at start -------------------------------------------------------------

    def on_standing(self, s: Slice) -> None:
        """Once per cluster and session: say what already stands when ncui starts (set before, by a session
        that ended with its terminal, by kubectl, by a teammate). (Subscribed to ``bid`` and ``vm_capacity``.)"""
        ref = self.store.meta.get("cluster")
        if s.value is None or ref is None:
            return
        told = self.store.meta.setdefault("told_standing", set())
        key = (s.name, ref.name)
        if key in told:
            return
        told.add(key)
        if s.name == "bid" and getattr(s.value, "cluster", ref.name) == ref.name and s.value.max_price_per_gpu_hour:
            self.notify(
                f"A limit price of {fmt_price(s.value.max_price_per_gpu_hour)} stands on {ref.name}: it "
                "pulls nodes for any GPU job applied there. Lease (5) shows it; w withdraws it.",
                title="Still standing",
                severity="warning",
                timeout=15,
            )
        elif s.name == "vm_capacity" and s.value.max_gpus is None:
            self.notify(
                f"The VM capacity on {ref.name} is unknown ({s.value.unknown('max_gpus')}): it may still be declared, "
                "granting and billing nodes. Lease (5) shows it.",
                title="Still standing?",
                severity="warning",
                timeout=15,
            )
        elif s.name == "vm_capacity" and s.value.max_gpus:
            self.notify(
                f"VM capacity of {s.value.max_gpus} GPUs at up to "
                f"{fmt_price(s.value.max_price_per_gpu_hour)} is declared on {ref.name}: nodes are granted "
                "and billed until it is released.",
                title="Still standing",
                severity="warning",
                timeout=15,
            )

    # ---- quitting (q, Ctrl-C, Ctrl-Q, the palette's Quit) -----------------------------------------------

    def quit(self) -> None:
        """Instant when no meter runs (a session spending limit ends with it); else the exit guard asks first:
        stay, keep what runs and quit, or withdraw / release what ncui can and quit."""
        from ..meters import running_meters

        if self._asking_exit:  # q again while asked: the question stands
            return
        meters = running_meters(self.store)
        if not meters:
            self._exit(end_session=True)
            return
        standing = [x for x in meters if x.acts]  # what w withdraws or releases
        self._asking_exit = True
        self.ui.ask_then(ExitGuard(tuple(meters)), partial(self._exit_answer, standing))

    def _exit_answer(self, standing: list[Meter], answer: str | None) -> None:
        self._asking_exit = False
        if answer == "keep":
            self._exit(end_session=False)
        elif answer == "withdraw":
            self.ui.start(
                partial(self.withdraw_then_exit, standing), name="withdraw-exit", group="withdraw", exclusive=True
            )

    async def withdraw_then_exit(self, standing: list[Meter]) -> None:
        """Withdraw the limit price and release the VM capacity of ``standing``, then quit; stay (said) when one
        could not be: nothing is assumed gone."""
        from ..actions import release_vm, withdraw_bid

        nc = self.client()  # (the guard was asked only when connected)
        if nc is None:
            return
        for s in standing:
            try:
                if s.kind == "bid":
                    await withdraw_bid(nc, self.store, s.cluster)
                else:
                    await release_vm(nc, self.store)
            except NCError as e:  # nothing is assumed gone: stay, say why
                what = "withdraw the limit price" if s.kind == "bid" else "release the VM capacity"
                self.notify(f"Could not {what}, so ncui stays open: {e}", severity="error", timeout=15)
                return
        self._exit(end_session=True)
