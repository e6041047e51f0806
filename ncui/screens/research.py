"""A public-research organization's node in the UI (the guide's "Public Research node"): where it comes from,
what its lease costs against the balance, and the node as a ``NodesPane`` row.

Only Marshall's workspace requests and releases the node (no API): ncui never does either, and says so. The
node comes from the box's stand-in for Marshall's status in the demo (queue position, an estimate that assumes
every lease ahead runs its full length, then ``public_ip``/``ssh_user``), or is typed in as ``user@ip`` (``a`` on
Workloads). Nothing defines a place where the workspace leaves the status for other programs, so ncui reads none.
``research_rows(store)`` feeds ``NodesPane``; ``research_text(store)`` is what Account and Lease say.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import timezone
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from ..flows.node import METER, TYPED
from ..money import fmt_price, fmt_usd
from ..remote.sessions import NodeRow
from ..textsafe import clean

if TYPE_CHECKING:
    from ..api import models as m
    from ..remote.research import Login
    from ..store import Store

WHO_RELEASES = (
    "Only Marshall's workspace requests and releases a public-research node (public_research_request and "
    "public_research_release, each a confirmation card your human approves; there is no API): ncui never "
    "requests or releases one."
)
NO_PLACE = (
    "Nothing defines a place where the workspace leaves the node's status for other programs "
    "(public_research_status is a workspace tool), so ncui reads none: type the node in with a on Workloads (4)."
)


def research_org(store: Store) -> bool:
    who = store.value("whoami")
    return who is not None and who.org_kind == "public_research"


def box_status(store: Store) -> m.ResearchStatus | None:
    """The box's stand-in status; None while unread or where there is none (the real service)."""
    s = store.value("research")
    return None if s is None or s.state == "unavailable" else s


def _wait(seconds: int) -> str:
    h, m = divmod(max(1, round(seconds / 60)), 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"


def where_from(s: m.ResearchStatus) -> str:
    """The box's status in a sentence: the queue, then the address."""
    if s.state == "queued":
        return (
            f"queued for Marshall's pool: position {s.queue_position}, "
            f"an estimated {_wait(s.estimated_wait_seconds or 0)}"
            " (an estimate that assumes every lease ahead runs its full length; runs that end early bring it sooner)"
        )
    if s.state == "assigning":
        return "assigned; its ssh comes up in a moment"
    if s.state == "assigned":
        at = f" at {s.assigned_at.astimezone(timezone.utc):%H:%M}" if s.assigned_at else ""
        return f"assigned{at}: ssh {s.ssh_user}@{s.public_ip}" + (
            "" if s.ssh_port in (22, None) else f" (the box's port {s.ssh_port})"
        )
    if s.state == "released":
        at = f" at {s.released_at.astimezone(timezone.utc):%H:%M}" if s.released_at else ""
        return f"released through Marshall{at}: its disk went with it"
    return clean(s.state)


def research_rows(store: Store) -> list[NodeRow] | None:
    """The research node as ``NodesPane`` rows: the box's (queued, assigning or assigned) and the one typed in.
    None while the status is still being read."""
    rows: list[NodeRow] = []
    s = store.value("research")
    if s is None and store.value(TYPED) is None:
        return None
    if s is not None and s.state in ("queued", "assigning", "assigned"):
        live = s.state == "assigned" and bool(s.public_ip)
        since = s.assigned_at.astimezone(timezone.utc).strftime("%H:%M") if live and s.assigned_at else ""
        rows.append(
            NodeRow(
                s.hostname or s.ssh_host or "research-node",
                "active" if live else s.state,
                s.gpus or 0,
                s.gpu_model or "",
                s.public_ip if live else None,
                s.ssh_port or 22,
                s.ssh_user or "",
                since,
                kind="research",
                alias=s.ssh_host or "",
                note="" if live else where_from(s),
            )
        )
    typed: Login | None = store.value(TYPED)
    if typed is not None and not any((r.host, r.port) == (typed.host, typed.port) for r in rows):
        rows.append(NodeRow(f"{typed.user}@{typed.host}", "active", 0, "", typed.host, typed.port, typed.user,
                            kind="research", note="typed in"))  # fmt: skip
    return rows


def research_text(store: Store, *, short: bool = False) -> Text:
    """Account's and Lease's words for a public-research organization: who requests and releases the node,
    whether the balance covers one full lease, where the node comes from, and the meter."""
    t = Text()
    who = store.value("whoami")
    s, read = box_status(store), store.get("research")
    t.append(WHO_RELEASES)
    bal = store.value("balance") or store.value("summary")
    purchases = getattr(store.value("summary"), "purchases", False)
    t.append("\n\nOne full lease (what a node request needs): ", style="bold")
    if s is not None and s.lease_ucredits is not None and s.price_per_gpu_hour is not None:
        need = s.lease_ucredits
        t.append(
            f"{s.gpus} × {s.gpu_model} at {fmt_price(s.price_per_gpu_hour)} for {(s.lease_seconds or 0) / 3600:g} h = "
            f"{fmt_usd(need)} (the box's figures). "
        )
        if bal is None:
            t.append("The balance is not read yet.", style="dim")
        elif bal.balance_ucredits is None:  # (not sent: the cover is never judged on a guess)
            t.append(f"Whether the balance covers it is unknown: {bal.unknown('balance_ucredits')}", style="bold red")
        elif bal.balance_ucredits >= need:
            t.append(f"The balance {fmt_usd(bal.balance_ucredits)} covers it.", style="green")
        else:
            short_by = need - bal.balance_ucredits
            t.append(
                f"The balance {fmt_usd(bal.balance_ucredits)} is {fmt_usd(short_by)} short of it: a new node request "
                "needs it all. "
                + ("Top up on the console's Billing page." if purchases else "Ask your organization's admin."),
                style="bold red",
            )
    elif read.value is None and not read.failing:
        t.append("reading the node's status…", style="dim")
    else:
        t.append(
            "its price and length are not published where ncui can read them (Marshall's request card shows them), "
            "so ncui cannot tell whether the balance"
            + (f" ({fmt_usd(bal.balance_ucredits)})" if bal is not None and bal.balance_ucredits is not None else "")
            + " covers it."
        )
    if short:
        return t
    t.append("\nThe node: ", style="bold")
    if s is not None:
        t.append(f"{s.hostname or 'the node'} ({s.gpus} × {s.gpu_model}), {where_from(s)}.")
        t.append(" In the demo the box stands in for Marshall's pool watch.", style="dim")
    else:
        typed = store.value(TYPED)
        if typed is not None:
            t.append(f"{typed} (typed in). ")
        t.append(NO_PLACE)
    t.append(f"\n{METER} Copy the checkpoint and the log off first (c on Workloads): the disk dies with the lease.")
    if who is not None and read.failing:
        t.append(f"\n{read.staleness(store.now())}", style="yellow")
    return t


class AddNodeModal(ModalScreen["Login | None"]):
    """``a`` on Workloads: the node's login typed in as ``user@ip`` (port 22; the box's own port allowed)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    AddNodeModal { align: center middle; }
    AddNodeModal > Vertical { width: 90%; max-width: 80; height: auto; max-height: 100%; border: thick $accent;
                              background: $surface; padding: 0 2; }
    AddNodeModal Horizontal { height: auto; align-horizontal: right; }
    AddNodeModal Button { margin-left: 2; }
    """

    def __init__(self, box_ports: Collection[int] = ()) -> None:
        super().__init__()
        self.box_ports = box_ports

    def compose(self) -> ComposeResult:
        from ..remote.research import EXAMPLE
        from ..widgets.field import Field

        with Vertical():
            yield Static("[b]Your research node[/b]", markup=True)
            yield Static(
                "Marshall's status (public_research_status, a workspace tool) names the node's public_ip and "
                "ssh_user once it is assigned; nothing defines a place where the workspace leaves it for other "
                "programs, so type them here as user@ip. Port 22 is the only way in.",
                markup=False,
            )
            yield Label("Login")
            yield Field(placeholder=EXAMPLE, id="login")
            yield Static("", id="why")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button("Add (Enter)", id="ok", variant="primary")

    def on_mount(self) -> None:
        from textual.widgets import Input

        self.query_one("#login", Input).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def on_input_submitted(self, _event: Any) -> None:
        self._submit()

    def _submit(self) -> None:
        from textual.widgets import Input

        from ..remote.node import BadInput
        from ..remote.research import parse_login

        try:
            login = parse_login(self.query_one("#login", Input).value, box_ports=self.box_ports)
        except BadInput as e:
            self.query_one("#why", Static).update(Text(f"✗ {e}", style="bold red"))
            return
        self.dismiss(login)

    def action_cancel(self) -> None:
        self.dismiss(None)
