"""The VM path's flows (the guide's "VM cluster" section): register a public key, declare capacity with the
version echoed, release it. Everything that changes money is asked first and states the figure it sends;
a version race is never overwritten silently (409: read again, show what changed, ask again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, OptionList, Static
from textual.widgets.option_list import Option

from ..api.errors import BidTooLow, NCError, VersionConflict
from ..money import cost_ucredits, fmt_price, fmt_usd
from .freshask import FreshQuestions
from .modals import CeilingModal, ConfirmModal, ResultsModal

if TYPE_CHECKING:
    from ..api import models as m
    from ..flows.fresh import Snapshot
    from ..flows.node import NodeFlow
    from ..remote.keys import LocalKey
    from ..store import Store


MAX_CONFLICTS = 3  # version races in a row before ncui stops asking and says so


class KeyPickModal(ModalScreen["LocalKey | None"]):
    """The human's public keys, each with its fingerprint and whether the organization has it."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    KeyPickModal { align: center middle; }
    KeyPickModal > Vertical { width: 95%; max-width: 110; height: auto; max-height: 100%; border: thick $accent;
                              background: $surface; padding: 0 1; }
    KeyPickModal OptionList { height: auto; max-height: 12; margin: 1 0; }
    """

    def __init__(self, keys: list[LocalKey], registered: set[str]) -> None:
        super().__init__()
        self.keys, self.registered = keys, registered

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Register a public key with the VM cluster[/b]", markup=True)
            yield Static(
                "Keys install on nodes granted after they are registered, never on a node already running. "
                "Enter registers the highlighted key; Esc cancels.",
                markup=False,
            )
            options = []
            for k in self.keys:
                line = Text(no_wrap=True, overflow="ellipsis")
                line.append(
                    "✓ registered " if k.fingerprint in self.registered else "  new        ",
                    style="green" if k.fingerprint in self.registered else "bold",
                )
                line.append(f"{k.fingerprint}  {k.comment}\n             {k.kind} · {k.source}")
                options.append(Option(line))
            yield OptionList(*options, id="keys")

    def on_mount(self) -> None:
        self.query_one("#keys", OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.keys[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)


class GpusModal(ModalScreen["int | None"]):
    """How many GPUs to declare: whole nodes, judged as typed."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    GpusModal { align: center middle; }
    GpusModal > Vertical { width: 90%; max-width: 90; height: auto; border: thick $warning; background: $surface;
                           padding: 1 2; }
    GpusModal Input { width: 20; margin: 1 0; }
    GpusModal Horizontal { height: auto; align-horizontal: right; }
    GpusModal Button { margin-left: 2; }
    """

    def __init__(self, context: str, gpus_per_node: int | None, prefill: int = 0) -> None:
        super().__init__()
        self.context, self.gpn, self.prefill = context, gpus_per_node, prefill
        self.value: int | None = None

    def compose(self) -> ComposeResult:
        from ..widgets.field import Field

        with Vertical():
            yield Static("[b]GPUs to declare[/b]", markup=True)
            yield Static(self.context, markup=False)
            yield Field(value=str(self.prefill) if self.prefill else "", placeholder="e.g. 8", id="gpus")
            yield Static("", id="verdict")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button("Continue (Enter)", id="ok", variant="warning")

    def on_mount(self) -> None:
        from textual.widgets import Input

        field = next(self.query("#gpus").results(Input), None)
        if field is not None:
            field.focus()
            self._judge(field.value)

    def on_input_changed(self, event: Any) -> None:
        self._judge(event.value)

    def _judge(self, text: str) -> None:
        from ..recipes import MAX_NODES, parse_count

        verdict = self.query_one("#verdict", Static)
        self.value = None
        if not text.strip():
            verdict.update(
                Text("Type a number of GPUs" + (f": whole nodes of {self.gpn}." if self.gpn else "."), style="dim")
            )
            return
        try:
            gpus = parse_count(text, "GPUs")
        except ValueError as e:
            verdict.update(Text(f"✗ {e}", style="bold red"))
            return
        gpn = self.gpn or 1
        if gpus <= 0:
            verdict.update(
                Text("✗ Declare at least one node; to release, use release (it keeps the price).", style="bold red")
            )
        elif gpus % gpn:
            verdict.update(
                Text(f"✗ {gpus} GPUs is not whole nodes: a node has {gpn}; type {gpn}, {2 * gpn}, …", style="bold red")
            )
        elif gpus > MAX_NODES * gpn:
            verdict.update(Text(f"✗ {gpus} GPUs is more than {MAX_NODES} nodes; type fewer.", style="bold red"))
        else:
            nodes = gpus // gpn
            verdict.update(Text(f"✓ {gpus} GPUs: {nodes} node{'s' if nodes != 1 else ''}.", style="green"))
            self.value = gpus

    def on_input_submitted(self, _event: Any) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def _submit(self) -> None:
        if self.value is not None:
            self.dismiss(self.value)
        else:
            self.app.bell()

    def action_cancel(self) -> None:
        self.dismiss(None)


def declare_question(cluster: str, gpus: int, gpn: int | None, price: int, version: int, no_key: bool = False) -> str:
    """The declaration's question: exactly what is sent, and what it will do (``no_key``: none of the
    organization's keys is registered, so a node granted now lets nobody in)."""
    nodes = gpus // (gpn or 1)
    return (
        f"Declare {gpus} GPUs ({nodes} node{'s' if nodes != 1 else ''}) at up to {fmt_price(price)} on {cluster}?\n\n"
        f"Sent: max_gpus {gpus}, max_price_per_gpu_hour {fmt_price(price)}, expected_version {version}.\n"
        f"At most {fmt_usd(cost_ucredits(price, gpus, 1))} per hour while the nodes are held; you pay what winners "
        "are assessed, never more than your limit. Nodes are granted as the market clears and billed until "
        "you release the capacity (Lease)."
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


def vm_lease_text(store: Store) -> Text:
    """Lease on a VM cluster: what is declared, each allocation and how to log in to it, the keys, and what
    the keys mean for nodes already granted. A value that could not be read says so (the staleness rule)."""
    from datetime import timezone

    cap_slice, keys_slice = store.get("vm_capacity"), store.get("ssh_keys")
    cap = cap_slice.value
    t = Text()
    if cap is None:
        t.append(
            cap_slice.staleness(store.now()) or "Reading the VM capacity…",
            style="dim" if not cap_slice.error else "bold red",
        )
        return t
    stale = cap_slice.staleness(store.now())
    if stale:
        t.append(f"⚠ {stale}\n", style="bold red")
    if cap.max_gpus:
        t.append("Declared ")
        t.append(
            f" {cap.max_gpus} GPUs at up to {fmt_price(cap.max_price_per_gpu_hour)} ", style="bold black on yellow"
        )
        t.append(f"  version {cap.version}\nNodes are granted and billed until you release (R).\n")
    else:
        t.append("Nothing declared: no node is granted or billed. d declares capacity.\n")
    live = [a for a in cap.allocations if a.state not in ("released", "reclaimed")]
    user = cap.environment.ssh_user
    for a in live:
        when = a.granted_at.astimezone(timezone.utc).strftime("%H:%M") if a.granted_at else "—"
        t.append(f"\n{a.id}  ", style="bold")
        t.append(f"{a.state}", style="green" if a.state == "active" else "yellow")
        t.append(f"  {a.gpus}× {a.gpu_model}  granted {when}")
        if a.state == "active" and a.public_ip:
            port = f" -p {a.ssh_port}" if a.ssh_port != 22 else ""
            t.append(f"\n  ssh{port} {user}@{a.public_ip}", style="bold")
    keys = keys_slice.value
    t.append("\n\nKeys ", style="bold")
    if keys is None:
        t.append(keys_slice.staleness(store.now()) or "reading…", style="dim")
    elif not keys:
        t.append("none registered: k registers one of yours (nodes granted after it get it).", style="yellow")
    else:
        t.append(", ".join(f"{k.name} {k.fingerprint[:19]}…" for k in keys))
        newest = max(k.created_at for k in keys)
        early = [a.id for a in live if a.granted_at is not None and a.granted_at < newest]
        if early:
            t.append(
                f"\n! {', '.join(early)} was granted before your newest key: that key is not on it.", style="yellow"
            )
    t.append("\n\nk keys · d declare · R release", style="dim")
    return t


class VmFlowsMixin(FreshQuestions):
    """Mixed into NCApp: the VM cluster's key, declare and release flows."""

    if TYPE_CHECKING:
        store: Store

        nodes: NodeFlow

        def _client(self) -> Any: ...

    # ---- keys -----------------------------------------------------------------------------------

    async def vm_keys_flow(self) -> None:
        from ..remote.keys import local_keys

        nc, who = self._client(), self.store.value("whoami")
        if nc is None or who is None:
            return
        try:
            registered = {k.fingerprint for k in (await nc.ssh_keys(who.org_id)).keys}
        except NCError as e:
            await self.push_screen_wait(ResultsModal("Cannot read the registered keys", str(e)))
            return
        keys = await local_keys()
        if not keys:
            await self.push_screen_wait(
                ResultsModal(
                    "No public key found",
                    Text(
                        "ncui found no public key in ~/.ssh/*.pub nor in an ssh agent. Make one with\n\n"
                        "  ssh-keygen -t ed25519\n\nthen come back here."
                    ),
                )
            )
            return
        key = await self.push_screen_wait(KeyPickModal(keys, registered))
        if key is None:
            return
        if key.fingerprint in registered:
            self.notify(f"{key.fingerprint} is registered already.", timeout=6)
            return
        try:
            await nc.add_ssh_key(who.org_id, key.comment or key.source, key.public_key)
        except NCError as e:
            await self.push_screen_wait(ResultsModal("The key was not registered", str(e)))
            return
        cap = self.store.value("vm_capacity")
        running = [a.id for a in (cap.allocations if cap else []) if a.state not in ("released", "reclaimed")]
        later = (
            f" Nodes granted before now ({', '.join(running)}) do not have it: it installs on the next grant."
            if running
            else " It installs on the next node granted."
        )
        self.notify(f"Registered {key.fingerprint}.{later}", timeout=12)
        self._refresh_slices("ssh_keys", "vm_capacity")

    # ---- declare --------------------------------------------------------------------------------

    async def vm_declare_flow(self) -> None:
        from .. import recipes as R
        from ..flows import fresh

        opened = await self._vm_read()
        if opened is None:
            return
        nc, ref, cap = opened
        gpn = cap.gpus_per_node
        gpus = await self.push_screen_wait(
            GpusModal(
                f"{ref.name} trades {cap.gpu_model or 'GPU nodes'}"
                + (f", {gpn} GPUs a node" if gpn else "")
                + f". Declared now: {cap.max_gpus} GPUs.",
                gpn,
                cap.max_gpus or (gpn or 0),
            )
        )
        if gpus is None:
            self.notify("Nothing was declared.")
            return
        snap = await self.fresh_figures(("balance",), "Nothing was declared.")  # read for this question
        if snap is None:
            return
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

        price = await self.push_screen_wait(
            CeilingModal(
                "Your ceiling",
                f"The most you will pay per GPU hour for {gpus} GPUs on {ref.name}."
                + (f"\nWinners of {cap.gpu_model} were last assessed {fmt_price(assessed)}." if assessed else ""),
                judge,
                cap.max_price_per_gpu_hour,
            )
        )
        if price is None:
            self.notify("Nothing was declared.")
            return

        def still(before: Snapshot, now: Snapshot) -> tuple[list[str], str | None]:
            check = R.money_check(gpus, price, now.value("balance").balance_ucredits, purchases)
            return fresh.changes(before, now, ref.name), None if check.ok else check.sentence

        for _ in range(MAX_CONFLICTS):
            asked = await self.confirm_fresh(
                snap,
                ("balance",),
                "Declare VM capacity?",
                lambda _now, version=cap.version: declare_question(
                    ref.name, gpus, gpn, price, version, self.store.value("ssh_keys") == ()
                ),
                still,
                yes="Declare",
                no="Cancel",
                declined="Nothing was declared.",
            )
            if asked is None:
                return
            snap = asked
            try:
                new = await nc.set_vm_capacity(gpus, price, cap.version)
            except VersionConflict:
                again = await self._after_race(nc, cap, "Nothing was declared")
                if again is None:
                    return
                cap = again
                continue
            except BidTooLow as e:
                await self.push_screen_wait(ResultsModal("The price is under the market's floor", str(e)))
                return
            except NCError as e:
                await self.push_screen_wait(ResultsModal("Nothing was declared", str(e)))
                return
            self.store.set("vm_capacity", new)
            self.notify(
                f"Declared {gpus} GPUs at up to {fmt_price(price)} on {ref.name}: nodes come as the market "
                "clears (Lease shows them).",
                timeout=10,
            )
            self._refresh_slices("vm_capacity", "balance")
            return
        await self.push_screen_wait(
            ResultsModal(
                "Nothing was declared",
                Text(
                    f"The capacity changed {MAX_CONFLICTS} times while you were asked; look at Lease, then try again."
                ),
            )
        )

    # ---- release --------------------------------------------------------------------------------

    async def vm_release_flow(self) -> None:
        opened = await self._vm_read()
        if opened is None:
            return
        nc, ref, cap = opened
        await self.nodes.vm_copy_off(cap)  # the disks die with the release: offered first, never required
        for _ in range(MAX_CONFLICTS):
            live = [a for a in cap.allocations if a.state not in ("released", "reclaimed")]
            if not cap.max_gpus and not live:
                self.notify("No VM capacity is declared: nothing to release.")
                return
            nodes = ", ".join(f"{a.id} ({a.public_ip or a.state})" for a in live) or "none yet"
            if not await self.push_screen_wait(
                ConfirmModal(
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
                return
            try:
                new = await nc.set_vm_capacity(0, cap.max_price_per_gpu_hour, cap.version)
            except VersionConflict:
                fresh = await self._after_race(nc, cap, "Nothing was released")
                if fresh is None:
                    return
                cap = fresh
                continue
            except NCError as e:
                await self.push_screen_wait(ResultsModal("Nothing was released", str(e)))
                return
            self.store.set("vm_capacity", new)
            for a in live:  # their connections and followers go with them
                await self.nodes.sessions.forget(a.id)
            self.notify(f"Released {ref.name}: billing stops; its nodes are gone.", timeout=10)
            self._refresh_slices("vm_capacity", "balance")
            return
        await self.push_screen_wait(
            ResultsModal(
                "Nothing was released",
                Text(
                    f"The capacity changed {MAX_CONFLICTS} times while you were asked; look at Lease, then try again."
                ),
            )
        )

    async def _vm_read(self) -> tuple[Any, m.ClusterRef, m.VmCapacity] | None:
        """The start of a VM flow: the client, the active VM cluster and its capacity read now; None (said on
        screen when the read failed) otherwise."""
        nc, ref = self._client(), self.store.meta.get("cluster")
        if nc is None or ref is None or ref.kind != "vm":
            return None
        try:
            cap: m.VmCapacity = await nc.vm_capacity()
        except NCError as e:
            await self.push_screen_wait(ResultsModal("Cannot read the VM capacity", str(e)))
            return None
        return nc, ref, cap

    async def _after_race(self, nc: Any, cap: m.VmCapacity, nothing: str) -> m.VmCapacity | None:
        """A 409: read the capacity again and say what the other writer changed (nothing of ours was sent
        over it); the fresh capacity to ask against, or None (said) when it cannot be read."""
        try:
            fresh: m.VmCapacity = await nc.vm_capacity()
        except NCError as e:
            await self.push_screen_wait(ResultsModal(nothing, str(e)))
            return None
        await self.push_screen_wait(
            ResultsModal(
                "Someone else changed the capacity",
                Text(
                    changed(cap, fresh) + "\n\nNothing of yours was sent over it. You are asked again, against what "
                    "stands now."
                ),
            )
        )
        return fresh

    def _refresh_slices(self, *names: str) -> None:
        pollers = getattr(self, "pollers", None)
        if pollers is not None:
            pollers.refresh(*names)
