"""Lease: everything that costs money, in one place. On a market cluster the standing limit price (set,
change, withdraw), what it wins now, the live market rate beside the organization's metered rate, and what
the meter charged since ncui started; on any other cluster or organization, one sentence of what stands and
what does not; everywhere, the spending limit. Every figure follows the staleness rule (``View.problem``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.console import Console
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from ..formatting import fmt_rate
from ..limits import LIMIT_SLICE, limit_kind, limit_state, spent_since_start, stops, unread_charge
from ..money import fmt_price, fmt_usd
from .base import View
from .market import nodes_won

if TYPE_CHECKING:
    from ..api import models as m

LABEL = 16  # the width of a row's label


def hang(t: Text, width: int, indent: int = LABEL) -> Text:
    """``t`` with each row's long value wrapped under the value, not under the label (at 80 columns a sentence
    runs past the edge). A row is a line that starts with its dim label, or with ``indent`` spaces (a row's
    second line); other lines (the screen's opening sentences) wrap as usual. ``width`` 0: not laid out yet."""
    if width <= indent + 16:
        return t
    out = Text()
    for i, line in enumerate(t.split("\n")):
        if i:
            out.append("\n")
        plain = line.plain
        row = plain[:indent].isspace() or any(s.start == 0 and s.end == indent and s.style == "dim" for s in line.spans)
        if len(plain) <= width or not row:
            out.append_text(line)
            continue
        head, value = line[:indent], line[indent:]
        for j, part in enumerate(value.wrap(_CONSOLE, width - indent)):
            if j:
                out.append("\n" + " " * indent)
            else:
                out.append_text(head)
            part.rstrip()
            out.append_text(part)
    return out


_CONSOLE = Console(width=200, color_system=None)  # (Text.wrap measures with a console; nothing is printed)


class LeaseView(View):
    NEEDS: ClassVar[tuple[str, ...]] = (
        "bid",
        "spend",
        "cluster",
        "vm_capacity",
        "ssh_keys",
        "ladder",
        "balance",
        "transactions",
    )
    NEEDS += (LIMIT_SLICE, "summary", "research", "research_typed")  # summary, research: a public-research org
    TITLE = "Lease"
    HELP = """\
[b]Lease[/b]: everything that costs money, in one place.

• [b]Limit price[/b] (market clusters): the most you pay per GPU hour. It keeps pulling nodes for any GPU
  job applied later, so withdraw it when you are done. [b]l[/b] sets or changes it (the same ceiling
  question as an apply, then a confirmation); [b]w[/b] withdraws it (asked first). Withdrawing pulls no
  new nodes; nodes that still run a job stay until it ends.
• [b]Market rate[/b] is live (what the nodes you hold are assessed now); the [b]metered rate[/b] is the
  meter's last assessment for the whole organization, about ten minutes behind.
• [b]Spending limit[/b] ([b]b[/b]): the most ncui lets the meter charge, for this session or until a date.
  It counts the charge transactions recorded after you set it. At 80% ncui warns; at 100% it withdraws
  your limit price after a 15-second countdown (Esc keeps it: "reached, kept by you"): no new nodes, but a
  run on a node you hold goes on, billed, until it ends, unless you chose (when setting it) to stop those
  runs too; the countdown lists them and what stays. It is remembered across restarts; National Compute
  itself enforces none.
• [b]VM clusters[/b]: [b]k[/b] registers one of your public keys (it installs on nodes granted later, never on a
  running one); [b]d[/b] declares capacity (GPUs in whole nodes and your ceiling, asked first, the version
  echoed: if someone else changed it meanwhile you see what changed and are asked again); each allocation
  shows its state and, once active, its ssh login; [b]R[/b] releases (max_gpus 0 with the same price: every
  node is destroyed with its disk). At 100% of a spending limit the capacity is released after the countdown.
• [b]Public research[/b]: only Marshall's workspace requests and releases the node (no API; ncui does neither).
  Shown: whether the balance covers one full lease, where the node comes from, and that the meter runs until
  the release.
"""
    # Short labels: the footer keeps ? Help, r Refresh and q Quit at 80 columns (the header calls the limit "cap");
    # k is named twice on a VM cluster's Lease itself ("k registers one of yours", "k keys · d declare · R release")
    BINDINGS = [
        Binding("l", "limit", "Limit price"),
        Binding("w", "withdraw", "Withdraw"),
        Binding("b", "spending_limit", "Spend cap"),
        Binding("k", "vm('keys')", "Key"),  # (registers one ssh key)
        # On a VM cluster r still refreshes but leaves the footer (in the help): at 80 columns k, d and R need it
        Binding("r", "refresh_quietly", "Refresh", show=False),
        Binding("d", "vm('declare')", "Declare"),
        Binding("R", "vm('release')", "Release"),
    ]

    def compose(self) -> ComposeResult:
        yield Static(id="lease")

    # ---- drawing ------------------------------------------------------------------------------

    def _row(self, t: Text, label: str) -> None:
        t.append(f"\n{label:<{LABEL}}", style="dim")

    def _stale(self, t: Text, *names: str) -> None:
        """The reason a figure just drawn is stale or unknown, on the line under it."""
        why = self.problem(*names)
        if why is not None:
            t.append(f"\n{'':<{LABEL}}")
            t.append_text(why)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer offers what this cluster has: the limit price on a market cluster, keys, declare and
        release on a VM cluster (the keys still answer elsewhere, with a sentence)."""
        ref = self.store.meta.get("cluster")
        kind = ref.kind if ref is not None else ""
        if action in ("limit", "withdraw"):
            info = self.store.value("cluster")
            return kind == "kubernetes" and (info is None or info.market)
        if action in ("vm", "refresh_quietly"):
            return kind == "vm"
        return True

    def action_refresh_quietly(self) -> None:
        self.ncapp.action_refresh()

    def refresh_view(self) -> None:
        self.refresh_bindings()
        st = self.store
        ref, info, who = st.meta.get("cluster"), st.value("cluster"), st.value("whoami")
        t = Text()
        t.append("Lease", style="bold")
        t.append(" · everything that costs money\n", style="dim")
        if who is None:
            t.append_text(self.problem("whoami") or Text("Loading the account…", style="dim"))
        elif ref is None:
            if who.org_kind == "public_research":
                from .research import research_text

                t.append(f"{who.org_said} is a public research organization: nothing stands here that ncui sets or "
                         "withdraws.\n")  # fmt: skip
                t.append_text(research_text(st))
            else:
                t.append(f"{who.org_said} has no cluster: nothing stands that costs money here.")
        elif ref.kind is None:
            t.append(f"{ref.not_known} (ncui doctor says what else changed).")
        elif not ref.known:
            t.append(
                f"{ref.name} is of a kind ncui does not know ({ref.kind}): ncui shows nothing of it and sets nothing "
                "on it (a newer ncui may; ncui doctor says what else changed)."
            )
        elif ref.kind == "slurm":
            t.append(
                f"{ref.name} is a Slurm cluster: no limit price and no capacity stand here. sbatch queues a job "
                "and scancel stops it."
            )
        elif ref.kind == "vm":
            self._vm(t, ref.name)
        elif info is None or info.name != ref.name:
            t.append_text(self.problem("cluster") or Text(f"Loading {ref.name}…", style="dim"))
        elif info.market is None:
            t.append(f"Whether {info.name} has a market is unknown: {info.unknown('market')}", style="bold red")
        elif not info.market:
            t.append(
                f"{info.name} is a fixed cluster: there is no limit price to set or withdraw, and nothing is bid. "
                f"Its {info.reserved_nodes} reserved {info.gpu_model} node{'s' if info.reserved_nodes != 1 else ''} "
                "run your jobs."
            )
        else:
            self._market(t, info)
        if who is not None:
            self._meter_rows(t)
            self._meter(t)
            self._limit(t)
        box = self.query_one("#lease", Static)
        box.update(hang(t, box.content_size.width))

    def on_resize(self) -> None:
        self.refresh_view()  # the rows' wrapping follows the width

    def _vm(self, t: Text, name: str) -> None:
        from .vmflows import vm_lease_text

        t.append(f"{name} is a VM cluster: nodes arrive as ssh hosts.\n")
        t.append_text(vm_lease_text(self.store))

    def _market(self, t: Text, info: m.K8sCluster) -> None:
        st = self.store
        bid, ladder, spend = st.value("bid"), st.value("ladder"), st.value("spend")
        self._row(t, "Limit price")
        if bid is None:
            t.append_text(self.problem("bid") or Text("…", style="dim"))
        else:
            price = bid.max_price_per_gpu_hour
            if price:
                t.append(f" {fmt_price(price)} ", style="bold black on yellow")
                if ladder is not None and ladder.rungs:
                    won = nodes_won(ladder, price)
                    if won:
                        t.append(f"  wins {won} node{'s' if won > 1 else ''} now", style="green")
                    else:
                        t.append(
                            f"  wins no node now (one takes {fmt_price(ladder.rungs[0].price_per_gpu_hour)})",
                            style="bold red",
                        )
                t.append(f"\n{'':<{LABEL}}Pulls nodes for any GPU job here. l changes, w withdraws.")
            else:
                t.append("none: nothing is bid. l sets one.")
            self._stale(t, "bid", "ladder")
        self._row(t, "Held")
        if spend is None:
            t.append_text(self.problem("spend") or Text("…", style="dim"))
        else:
            t.append(
                f"{spend.nodes_held} node{'s' if spend.nodes_held != 1 else ''} ({spend.gpus_held} GPUs)"
                if spend.nodes_held
                else "no nodes"
            )
            self._row(t, "Market rate")
            if spend.spend_ucredits_hr is None:  # (not sent: never a rate from a guess)
                t.append(f"unknown: {spend.unknown('spend_ucredits_hr')}", style="bold red")
            elif spend.price_per_gpu_hour is not None and spend.gpus_held:
                t.append(fmt_rate(spend.spend_ucredits_hr), style="bold")
                t.append(
                    f" live: {spend.gpus_held} GPUs at {fmt_price(spend.price_per_gpu_hour)}, as of {spend.as_of:%H:%M}"
                )
            else:
                t.append(f"{fmt_rate(spend.spend_ucredits_hr)} live: no node held")
            self._stale(t, "spend")

    def _meter_rows(self, t: Text) -> None:
        """Every meter that runs now (``meters.running_meters``, as the quit question lists them): what it costs per
        hour, and what w / R do to it or how it stops."""
        from ..meters import running_meters

        meters = running_meters(self.store)
        t.append("\n")
        self._row(t, "Meters running")
        if not meters:
            t.append("none: nothing bills while ncui is closed.")
            return
        for i, x in enumerate(meters):
            if i:
                t.append(f"\n{'':<{LABEL}}")
            t.append(f"{x.name}: ", style="bold")
            t.append(x.cost, style="bold red" if x.cost.startswith("unknown") else "")
            if x.stop:  # (the limit price and the capacity have their rows and keys above: w, R)
                t.append(f"\n{'':<{LABEL}}{x.stop[0].upper()}{x.stop[1:]}.")

    def _meter(self, t: Text) -> None:
        st = self.store
        bal = st.value("balance")
        t.append("\n")
        self._row(t, "Metered rate")
        if bal is None:
            t.append_text(self.problem("balance") or Text("…", style="dim"))
        else:
            burn = bal.burn_ucredits_hr
            t.append(
                fmt_rate(burn) if burn is not None else f"unknown: {bal.unknown('burn_ucredits_hr')}", style="bold"
            )
            at = f", assessed {bal.assessed_at:%H:%M}" if bal.assessed_at else ""
            t.append(f" org-wide{at} (about 10 min behind)")
            self._stale(t, "balance")
        self._row(t, "Since start")  # ncui's start, on the service's clock
        spent, partial, start = spent_since_start(st)
        why = unread_charge(st.value("transactions") or (), start) if spent is None and start is not None else ""
        if why:  # a charge the service sent without its amount: never a smaller figure
            t.append(f"unknown: {why}", style="bold red")
        elif spent is None:
            t.append_text(self.problem("transactions") or Text("…", style="dim"))
        else:
            t.append(f"{'at least ' if partial else ''}{fmt_usd(spent)}", style="bold")
            t.append(f" charged since {start:%H:%M} (the meter's charges)" if start else " charged")
            self._stale(t, "transactions")

    def _limit(self, t: Text) -> None:
        state = limit_state(self.store)
        t.append("\n")
        self._row(t, "Spending limit")
        kind = limit_kind(self.store)
        if state is None:
            at100 = {
                "market": "withdraws your limit price, and stops your runs if you choose",
                "vm": "releases your VM capacity",
                "none": "warns again: nothing here is withdrawn",
            }[kind]
            t.append(f"none. b sets one (it warns at 80%; at 100% {at100}).")
            return
        style = {
            "warn": "bold black on yellow",
            "reached": "bold white on red",
            "kept": "bold white on red",
            "unknown": "bold red",
        }.get(state.level, "")
        t.append(state.sentence(), style=style)
        t.append(f"\n{'':<{LABEL}}{stops(kind, state.limit.stop_runs)}")
        t.append(f"\n{'':<{LABEL}}Counts charges after it was set. b changes or clears it.")
        if state.spent is not None:
            self._stale(t, "transactions")

    # ---- keys ---------------------------------------------------------------------------------

    def action_limit(self) -> None:
        self.ncapp.flows.lease.change()

    def action_withdraw(self) -> None:
        bid = self.store.value("bid")
        if bid is None or not bid.max_price_per_gpu_hour:
            self.notify("There is no standing limit price to withdraw.")
            return
        self.ncapp.flows.lease.confirm_withdraw()

    def action_vm(self, flow: str) -> None:
        self.ncapp.flows.vm.start(flow)

    def action_spending_limit(self) -> None:
        self.ncapp.flows.limit.open()
