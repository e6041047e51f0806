"""The VM path's flows (the guide's "VM cluster" section): register a public key, declare capacity with the
version echoed, release it. Everything that changes money is asked first and states the figure it sends; a
version race is never overwritten silently (409: read again, show what changed, ask again). No Textual here: the
questions are data (their modals are in ``ncui/screens/vmflows.py``, registered in ``ncui/screens/ui.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from ..api.errors import BidTooLow, NCError, VersionConflict
from ..money import cost_ucredits, fmt_price, fmt_usd
from . import fresh
from .base import Context, Flow
from .ui import Question, Results

if TYPE_CHECKING:
    from ..api import models as m
    from ..api.client import NCClient
    from ..remote.keys import LocalKey
    from .fresh import Snapshot


MAX_CONFLICTS = 3  # version races in a row before ncui stops asking and says so
BALANCE = ("balance",)  # the figure a declare judges, read for its question
# What a declaration is sent with and judged on; a release sends 0 GPUs with the same price and version. A field
# the service's answer did not give (api/models.py: Model.unknown) is never guessed: nothing is sent, and why.
DECLARE_NEEDS = ("version", "max_gpus", "max_price_per_gpu_hour")
RELEASE_NEEDS = ("version", "max_price_per_gpu_hour")


def cap_unknown(cap: m.VmCapacity, needs: tuple[str, ...]) -> str:
    """Why a figure ``needs`` names is unknown in ``cap`` ("" when each was read)."""
    return next((cap.unknown(f) for f in needs if cap.unknown(f)), "")


DECLINED = "Nothing was declared."


# ---- the questions ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PickKey(Question["LocalKey | None"]):
    """Which of the human's public keys to register (each with whether the organization has it); None: cancel."""

    keys: tuple[LocalKey, ...]
    registered: frozenset[str]  # fingerprints the organization has


@dataclass(frozen=True)
class AskGpus(Question["int | None"]):
    """How many GPUs to declare: whole nodes of ``gpus_per_node``, judged as typed; None: cancel."""

    context: str
    gpus_per_node: int | None
    prefill: int = 0


@dataclass(frozen=True)
class AskCeiling(Question["int | None"]):
    """A ceiling in µcredits per GPU hour, judged as typed by ``judge`` (ok, and the lines to show); None: cancel."""

    title: str
    body: str
    judge: Callable[[int], tuple[bool, list[tuple[str, str]]]]
    standing: int = 0  # the ceiling that stands (prefilled), 0: none


# ---- the words ----------------------------------------------------------------------------------------------


def declare_question(
    cluster: str,
    gpus: int,
    gpn: int | None,
    price: int,
    version: int,
    no_key: bool = False,
    assessed: int | None = None,
) -> str:
    """The declaration's question: exactly what is sent, and what it will do (``no_key``: none of the
    organization's keys is registered, so a node granted now lets nobody in); its quote per node-hour at what
    winners are assessed now (``assessed``) and at the limit declared (ncui/quote.py)."""
    from ..quote import vm_quote

    nodes = gpus // (gpn or 1)
    quote = "\n".join(vm_quote(gpn or gpus, assessed, price).lines()) + "\n" if gpus else ""
    return (
        f"Declare {gpus} GPUs ({nodes} node{'s' if nodes != 1 else ''}) at up to {fmt_price(price)} on {cluster}?\n\n"
        + quote
        + f"Sent: max_gpus {gpus}, max_price_per_gpu_hour {fmt_price(price)}, expected_version {version}.\n"
        + (f"{nodes} nodes: at most {fmt_usd(cost_ucredits(price, gpus, 1))} per hour in all. " if nodes > 1 else "")
        + "You pay what winners are assessed, never more than your limit. Nodes are granted as the market clears "
        "and billed until you release the capacity (Lease)."
        + (
            "\n\n! No ssh key is registered: a node granted now lets nobody in, billed all the same (keys install "
            "on nodes granted after they are registered). Cancel, then k registers yours first."
            if no_key
            else ""
        )
    )


def changed(before: m.VmCapacity, now: m.VmCapacity) -> str:
    """What another writer changed between two reads, in one sentence."""
    parts = []
    if before.max_gpus != now.max_gpus:
        parts.append(f"GPUs {before.max_gpus} → {now.max_gpus}")
    if before.max_price_per_gpu_hour != now.max_price_per_gpu_hour:
        parts.append(f"price {fmt_price(before.max_price_per_gpu_hour)} → {fmt_price(now.max_price_per_gpu_hour)}")
    what = ", ".join(parts) or "nothing you can see (another write came and went)"
    return f"The capacity changed while you were asked (version {before.version} → {now.version}): {what}."


# ---- the flow -------------------------------------------------------------------------------------------------


class VmFlow(Flow):
    """The VM cluster's key, declare and release flows (Lease: k, d, R; also in the palette).

    Given: ``copy_off(cap)``: before a
    release, the offer to copy a folder off each active node; ``node_sessions()``: the nodes' ssh pool (a released
    node's connection goes with it)."""

    def __init__(
        self,
        ctx: Context,
        *,
        copy_off: Callable[[m.VmCapacity], Awaitable[None]],
        node_sessions: Callable[[], Any],
    ) -> None:
        super().__init__(ctx)
        self.copy_off = copy_off
        self.node_sessions = node_sessions

    def start(self, flow: str) -> None:
        """k, d, R on Lease and the palette: ``keys``, ``declare`` or ``release``, one VM flow at a time."""
        ref = self.store.meta.get("cluster")
        if ref is None or ref.kind != "vm":
            self.notify("That is for a VM cluster; the active cluster is not one.", timeout=5)
            return
        work = {"keys": self.keys, "declare": self.declare, "release": self.release}[flow]
        self.ui.start(work, name=f"vm-{flow}", group="vm", exclusive=True)

    # ---- keys -----------------------------------------------------------------------------------------

    async def keys(self) -> None:
        from ..remote.keys import local_keys

        nc, who = self.client(), self.store.value("whoami")
        if nc is None or who is None:
            return
        try:
            got = (await nc.ssh_keys(who.org_id)).keys
        except NCError as e:
            await self.ui.ask(Results("Cannot read the registered keys", str(e)))
            return
        if why := next((k.unknown("fingerprint") for k in got if k.fingerprint is None), ""):
            await self.ui.ask(Results("Cannot read the registered keys", f"{why}: which are registered is unknown."))
            return
        registered = {k.fingerprint for k in got if k.fingerprint is not None}
        keys = await local_keys()
        if not keys:
            await self.ui.ask(
                Results(
                    "No public key found",
                    Text(
                        "ncui found no public key in ~/.ssh/*.pub nor in an ssh agent. Make one with\n\n"
                        "  ssh-keygen -t ed25519\n\nthen come back here."
                    ),
                )
            )
            return
        key = await self.ui.ask(PickKey(tuple(keys), frozenset(registered)))
        if key is None:
            return
        if key.fingerprint in registered:
            self.notify(f"{key.fingerprint} is registered already.", timeout=6)
            return
        try:
            await nc.add_ssh_key(who.org_id, key.comment or key.source, key.public_key)
        except NCError as e:
            await self.ui.ask(Results("The key was not registered", str(e)))
            return
        cap = self.store.value("vm_capacity")
        running = [a.id for a in (cap.allocations if cap else []) if a.state not in ("released", "reclaimed")]
        later = (
            f" Nodes granted before now ({', '.join(running)}) do not have it: it installs on the next grant."
            if running
            else " It installs on the next node granted."
        )
        self.notify(f"Registered {key.fingerprint}.{later}", timeout=12)
        self._refresh("ssh_keys", "vm_capacity")

    # ---- declare ------------------------------------------------------------------------------------------

    async def declare(self) -> None:
        from .. import recipes as R

        opened = await self._read(DECLARE_NEEDS, DECLINED)
        if opened is None:
            return
        nc, ref, cap = opened
        assert cap.max_gpus is not None and cap.max_price_per_gpu_hour is not None  # (_read: each was read)
        gpn = cap.gpus_per_node
        gpus = await self.ui.ask(
            AskGpus(
                f"{ref.name} trades {cap.gpu_model or 'GPU nodes'}"
                + (f", {gpn} GPUs a node" if gpn else "")
                + f". Declared now: {cap.max_gpus} GPUs.",
                gpn,
                cap.max_gpus or (gpn or 0),
            )
        )
        if gpus is None:
            self.notify(DECLINED)
            return
        read = await fresh.figures(self.ctx, BALANCE, DECLINED)  # read for this question
        if read is None:
            return
        snap: Snapshot = read
        summary = self.store.value("summary")
        balance = snap.value("balance").balance_ucredits
        purchases = bool(summary and summary.purchases)
        ticks = [t for t in (self.store.value("ticks") or ()) if t.gpu_model == cap.gpu_model]
        assessed = ticks[-1].price_per_gpu_hour if ticks else None

        def judge(value: int) -> tuple[bool, list[tuple[str, str]]]:
            check = R.money_check(gpus, value, balance, purchases)
            lines = []
            if value <= 0:
                return False, [("bold red", "✗ A limit price must be more than $0.")]
            if assessed is not None and value < assessed:
                lines.append(
                    (
                        "yellow",
                        f"! Winners are assessed {fmt_price(assessed)} now: {fmt_price(value)} may "
                        "not win a node until the price falls.",
                    )
                )
            elif assessed is not None:
                lines.append(("green", f"✓ At or above what winners are assessed now ({fmt_price(assessed)})."))
            lines.append(("green" if check.ok else "bold red", ("✓ " if check.ok else "✗ ") + check.sentence))
            return check.ok, lines

        price = await self.ui.ask(
            AskCeiling(
                "Your ceiling",
                f"The most you will pay per GPU hour for {gpus} GPUs on {ref.name}."
                + (f"\nWinners of {cap.gpu_model} were last assessed {fmt_price(assessed)}." if assessed else ""),
                judge,
                cap.max_price_per_gpu_hour,
            )
        )
        if price is None:
            self.notify(DECLINED)
            return

        def still(before: Snapshot, now: Snapshot) -> tuple[list[str], str | None]:
            check = R.money_check(gpus, price, now.value("balance").balance_ucredits, purchases)
            return fresh.changes(before, now, ref.name), None if check.ok else check.sentence

        async def ask(cap: m.VmCapacity) -> tuple[int, int] | None:
            nonlocal snap

            def body(_now: Snapshot) -> str:
                keyless = self.store.value("ssh_keys") == ()
                assert cap.version is not None  # (read with it: DECLARE_NEEDS)
                return declare_question(ref.name, gpus, gpn, price, cap.version, keyless, assessed)

            asked = await fresh.confirm(
                self.ctx,
                snap,
                BALANCE,
                "Declare VM capacity?",
                body,
                still,
                yes="Declare",
                no="Cancel",
                declined=DECLINED,
            )
            if asked is None:
                return None
            snap = asked
            return gpus, price

        if await self._ask_and_put(nc, cap, ask, "Nothing was declared") is None:
            return
        self.notify(
            f"Declared {gpus} GPUs at up to {fmt_price(price)} on {ref.name}: nodes come as the market "
            "clears (Lease shows them).",
            timeout=10,
        )
        self._refresh("vm_capacity", "balance")

    # ---- release ------------------------------------------------------------------------------------------

    async def release(self) -> None:
        from .ui import Confirm

        opened = await self._read(RELEASE_NEEDS, "Nothing was released.")
        if opened is None:
            return
        nc, ref, cap = opened
        await self.copy_off(cap)  # the disks die with the release: offered first, never required
        live: list[m.Allocation] = []

        async def ask(cap: m.VmCapacity) -> tuple[int, int] | None:
            nonlocal live
            live = [a for a in cap.allocations if a.state not in ("released", "reclaimed")]
            if cap.max_gpus == 0 and not live:  # (max_gpus not sent: asked all the same, the price and version read)
                self.notify("No VM capacity is declared: nothing to release.")
                return None
            if (why := cap_unknown(cap, RELEASE_NEEDS)) or cap.max_price_per_gpu_hour is None:
                await self.ui.ask(Results("Nothing was released", f"{why}: ncui sends nothing on a guess."))
                return None
            nodes = ", ".join(f"{a.id} ({a.public_ip or a.state})" for a in live) or "none yet"
            if not await self.ui.ask(
                Confirm(
                    "Release the VM capacity?",
                    f"Release {ref.name}: sent max_gpus 0 with the same price, "
                    f"{fmt_price(cap.max_price_per_gpu_hour)}, expected_version {cap.version}.\n\n"
                    f"Billing stops. Every node is destroyed with its local disk: {nodes}. Copy off what you "
                    "need first.",
                    yes="Release",
                    no="Cancel",
                )
            ):
                self.notify("Nothing was released.")
                return None
            return 0, cap.max_price_per_gpu_hour

        if await self._ask_and_put(nc, cap, ask, "Nothing was released", RELEASE_NEEDS) is None:
            return
        for a in live:  # their connections and followers go with them
            await self.node_sessions().forget(a.id)
        self.notify(f"Released {ref.name}: billing stops; its nodes are gone.", timeout=10)
        self._refresh("vm_capacity", "balance")

    # ---- the common steps -------------------------------------------------------------------------------

    async def _read(
        self, needs: tuple[str, ...] = (), nothing: str = DECLINED
    ) -> tuple[NCClient, m.ClusterRef, m.VmCapacity] | None:
        """The start of a VM flow: the client, the active VM cluster and its capacity read now, with each field
        ``needs`` names; None (said on screen when the read failed or a field was not sent) otherwise."""
        nc, ref = self.client(), self.store.meta.get("cluster")
        if nc is None or ref is None or ref.kind != "vm":
            return None
        try:
            cap: m.VmCapacity = await nc.vm_capacity()
        except NCError as e:
            await self.ui.ask(Results("Cannot read the VM capacity", str(e)))
            return None
        if why := cap_unknown(cap, needs):
            await self.ui.ask(
                Results(
                    "The VM capacity is unknown",
                    Text(f"{why}.\n\nncui does not declare or release on a guess: {nothing[0].lower()}{nothing[1:]}"),
                )
            )
            return None
        return nc, ref, cap

    async def _ask_and_put(
        self,
        nc: NCClient,
        cap: m.VmCapacity,
        ask: Callable[[m.VmCapacity], Awaitable[tuple[int, int] | None]],
        nothing: str,
        needs: tuple[str, ...] = DECLARE_NEEDS,
    ) -> m.VmCapacity | None:
        """Ask against ``cap`` (``ask``: the GPUs and price to send, or None when the human said no, said), send
        them with its version; after a version race, say what changed and ask again against what stands, up to
        ``MAX_CONFLICTS`` times. What stands after the PUT (in the store), or None when nothing was sent."""
        for _ in range(MAX_CONFLICTS):
            sent = await ask(cap)
            if sent is None:
                return None
            new, again = await self._put(nc, cap, *sent, nothing, needs)
            if again is None:
                if new is not None:
                    self.store.set("vm_capacity", new)
                return new
            cap = again
        await self._raced(nothing)
        return None

    async def _put(
        self, nc: NCClient, cap: m.VmCapacity, gpus: int, price: int, nothing: str, needs: tuple[str, ...]
    ) -> tuple[m.VmCapacity | None, m.VmCapacity | None]:
        """Send ``gpus`` at ``price`` with ``cap``'s version: (what stands now, None) when it was taken; (None, the
        capacity read again) after a version race, to ask again against; (None, None) when refused (said)."""
        assert cap.version is not None  # (_read and _after_race send nothing on a capacity without it)
        try:
            return await nc.set_vm_capacity(gpus, price, cap.version), None
        except VersionConflict:
            return None, await self._after_race(nc, cap, nothing, needs)
        except NCError as e:
            floor = isinstance(e, BidTooLow) and gpus > 0  # (a declare under the floor; a release sends 0 GPUs)
            await self.ui.ask(Results("The price is under the market's floor" if floor else nothing, str(e)))
            return None, None

    async def _after_race(
        self, nc: NCClient, cap: m.VmCapacity, nothing: str, needs: tuple[str, ...]
    ) -> m.VmCapacity | None:
        """A 409: read the capacity again and say what the other writer changed (nothing of ours was sent
        over it); the fresh capacity to ask against, or None (said) when it cannot be read."""
        try:
            again: m.VmCapacity = await nc.vm_capacity()
        except NCError as e:
            await self.ui.ask(Results(nothing, str(e)))
            return None
        if why := cap_unknown(again, needs):
            await self.ui.ask(Results(nothing, Text(f"{why}: nothing was sent over it on a guess.")))
            return None
        await self.ui.ask(
            Results(
                "Someone else changed the capacity",
                Text(
                    changed(cap, again) + "\n\nNothing of yours was sent over it. You are asked again, against what "
                    "stands now."
                ),
            )
        )
        return again

    async def _raced(self, nothing: str) -> None:
        """The capacity changed ``MAX_CONFLICTS`` times while the human was asked: said, nothing sent."""
        await self.ui.ask(
            Results(
                nothing,
                Text(
                    f"The capacity changed {MAX_CONFLICTS} times while you were asked; look at Lease, then try again."
                ),
            )
        )

    def _refresh(self, *names: str) -> None:
        if self.ctx.pollers is not None:
            self.ctx.pollers.refresh(*names)
