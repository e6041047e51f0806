"""The VM path on screen (the guide's "VM cluster" section): the questions of the key and declare flows
(``ncui/flows/vm.py``: the flows themselves) as modals, and Lease's words on a VM cluster. The nodes' ssh
connections and the copy-off before a release are ``ncui/flows/node.py`` and ``ncui/remote/``.
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

from ..money import fmt_price

if TYPE_CHECKING:
    from ..remote.keys import LocalKey
    from ..store import Store


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
    why = next((cap.unknown(f) for f in ("max_gpus", "max_price_per_gpu_hour", "version") if cap.unknown(f)), "")
    if why:  # (a field not sent: never "nothing declared")
        t.append(f"Declared capacity unknown: {why}\n", style="bold red")
    elif cap.max_gpus:
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
        t.append(a.state_said, style="green" if a.state == "active" else "yellow")
        t.append(f"  {a.gpus}× {a.gpu_model}  granted {when}")
        if a.state == "active" and a.public_ip:
            port = f" -p {a.ssh_port}" if a.ssh_port != 22 else ""
            if user is None:  # (not sent: never a guessed login)
                t.append(f"\n  ssh login unknown: {cap.environment.unknown('ssh_user')}", style="bold red")
            else:
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
