"""Market: the price-to-win ladder, recent ticks with your limit price drawn on them, whether your
limit clears now and how many nodes it would win, the nodes you hold and the live rate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import DataTable, Static

from ..formatting import COVER_HOURS, fmt_rate
from ..money import cost_ucredits, fmt_price, fmt_usd, ucredits_to_dollars
from ..widgets.chart import Chart, ChartData, HLine, Series
from .base import View

if TYPE_CHECKING:
    from ..api import models as m
    from ..store import Store


def vm_gpu_model(store: Store) -> str | None:
    """The GPU model a VM cluster trades: its allocations', else the first model the feed has."""
    cap = store.value("vm_capacity")
    if cap is not None and cap.gpu_model:
        return str(cap.gpu_model)
    if cap is not None and cap.allocations:
        return cap.allocations[0].gpu_model
    models = sorted({t.gpu_model for t in (store.value("ticks") or ())})
    return models[0] if models else None


def nodes_won(ladder: m.Ladder, price: int) -> int:
    """How many nodes a limit price would win now, read off the ladder."""
    won = 0
    for r in ladder.rungs:
        if r.price_per_gpu_hour is not None and price >= r.price_per_gpu_hour:  # (a price not sent wins nothing)
            won = max(won, r.nodes)
    return won


class MarketView(View):
    NEEDS = ("cluster", "ladder", "ticks", "bid", "spend", "vm_capacity")
    TITLE = "Market"
    HELP = """\
[b]Market[/b]

The market prices capacity per GPU hour. Only a market cluster has a limit price.

• [b]Price to win[/b]: the price per GPU hour that wins 1, 2, … nodes now, per node-hour, and the
  two-hour cover the balance needs at that price before a job is admitted.
• [b]Ticks[/b]: what winners were assessed each minute; your limit price is the yellow line.
• [b]Your limit[/b]: whether it clears now and how many nodes it would win. You pay the assessed
  price, never more than your limit. A standing limit keeps pulling nodes for any GPU job you apply:
  withdraw it (set it to 0) when you are done.
• Idle nodes you already hold host a job with no new bid.
"""

    def compose(self) -> ComposeResult:
        yield Static(id="market-title", classes="title")
        yield DataTable(id="ladder", cursor_type="none")
        yield Static(id="bid-status", classes="card")
        yield Chart(id="ticks-chart")

    def mounted(self) -> None:
        table = self.query_one("#ladder", DataTable)
        table.add_column("nodes", key="nodes", width=5)
        table.add_column("$/GPU-h", key="gpu", width=8)
        table.add_column("$/node-h", key="node", width=9)
        table.add_column(f"{COVER_HOURS}-h cover", key="cover", width=10)
        table.add_column("", key="mark", width=18)

    def refresh_view(self) -> None:
        active = self.store.meta.get("cluster")
        title = self.query_one("#market-title", Static)
        table = self.query_one("#ladder", DataTable)
        status = self.query_one("#bid-status", Static)
        chart = self.query_one("#ticks-chart", Chart)
        info = self.store.value("cluster")
        if active is None:
            who = self.store.value("whoami")
            msg = (
                "A public research organization has no market view: nodes come from Marshall."
                if who is not None and who.org_kind == "public_research"
                else "Loading…"
            )
            title.update(Text(msg, style="italic"))
            table.display = chart.display = status.display = False
            return
        if active.kind == "slurm":
            title.update(
                Text(f"{active.name} is a Slurm cluster: no limit price; sbatch queues the job.", style="italic")
            )
            table.display = chart.display = status.display = False
            return
        if active.kind == "vm":
            self._vm(title, table, status, chart)
            return
        if info is None or info.name != active.name:
            title.update(self.problem("cluster") or Text("Loading the cluster…", style="dim"))
            table.display = chart.display = status.display = False
            return
        if info.market is None:
            said = f"Whether {info.name} has a market is unknown: {info.unknown('market')}"
            title.update(Text(said, style="bold red"))
            table.display = chart.display = status.display = False
            return
        if not info.market:
            title.update(
                Text(
                    f"{info.name} is a fixed cluster: there is no market and no limit price. "
                    f"Its {info.reserved_nodes} reserved {info.gpu_model} node(s) run your jobs.",
                    style="italic",
                )
            )
            table.display = chart.display = False
            status.display = True
            self._held(status, info)
            return
        table.display = chart.display = status.display = True
        self._ladder(title, table, info)
        self._held(status, info)
        self._ticks(chart, info.gpu_model)

    # ---- kubernetes market ------------------------------------------------------------------

    def _ladder(self, title: Static, table: DataTable[Any], info: m.K8sCluster) -> None:
        ladder, bid = self.store.value("ladder"), self.store.value("bid")
        t = Text()
        t.append("Price to win ", style="bold")
        t.append(f"{info.gpu_model} · {info.gpus_per_node} GPUs/node")
        if ladder is not None:
            t.append(f" · as of {ladder.as_of:%H:%M}", style="dim")
            if ladder.floor_price_per_gpu_hour:
                t.append(f" · floor {fmt_price(ladder.floor_price_per_gpu_hour)}", style="dim")
        problem = self.problem("ladder")
        if problem:
            t.append("\n")
            t.append_text(problem)
        gone = next((r for r in ladder.rungs if r.price_per_gpu_hour is None), None) if ladder is not None else None
        if gone is not None:  # (a rung's price not sent: its row reads unknown, and this says why)
            t.append(f"\nPrice unknown: {gone.unknown('price_per_gpu_hour')}", style="bold red")
        title.update(t)
        if ladder is None:
            return
        limit = bid.max_price_per_gpu_hour if bid else 0
        rows: list[tuple[Text, ...]] = []
        for r in ladder.rungs:
            p = r.price_per_gpu_hour
            if p is None:
                unknown = Text("unknown", style="bold red", justify="right")
                rows.append((Text(str(r.nodes), justify="right"), unknown, unknown, unknown, Text("")))
                continue
            node_h = p * ladder.gpus_per_node
            cover = cost_ucredits(p, ladder.gpus_per_node * r.nodes, COVER_HOURS)
            mark = Text("✓ your limit wins", style="green") if limit and limit >= p else Text("")
            rows.append(
                (
                    Text(str(r.nodes), justify="right"),
                    Text(fmt_usd(p), justify="right"),
                    Text(fmt_usd(node_h), justify="right"),
                    Text(fmt_usd(cover), justify="right"),
                    mark,
                )
            )
        sig = [tuple(c.plain for c in row) for row in rows]
        if sig != getattr(self, "_ladder_sig", None):
            self._ladder_sig = sig
            table.clear()
            for row in rows:
                table.add_row(*row)

    def _held(self, status: Static, info: m.K8sCluster) -> None:
        ladder, bid, spend = self.store.value("ladder"), self.store.value("bid"), self.store.value("spend")
        t = Text()
        if info.market:
            limit = bid.max_price_per_gpu_hour if bid else 0
            t.append("Your limit ", style="dim")
            if bid is None:  # never read: not "none" (the line below says why when the read failed)
                t.append("unknown" if self.store.get("bid").failing else "…", style="bold")
            elif not limit:
                t.append("none", style="bold")
                t.append(" — nothing is bid; idle nodes you hold still run jobs.", style="dim")
            else:
                t.append(f" {fmt_price(limit)} ", style="bold black on yellow")
                if ladder is not None and ladder.rungs:
                    n = nodes_won(ladder, limit)
                    if n:
                        t.append(f"  clears now: wins up to {n} node{'s' if n > 1 else ''}", style="green")
                    elif ladder.rungs[0].price_per_gpu_hour is None:
                        t.append(
                            f"  whether it clears is unknown: {ladder.rungs[0].unknown('price_per_gpu_hour')}",
                            style="bold red",
                        )
                    else:
                        t.append(
                            f"  does not clear now: one node takes {fmt_price(ladder.rungs[0].price_per_gpu_hour)}",
                            style="bold red",
                        )
        t.append("\nHeld  ", style="dim")
        if spend is None:
            t.append("—")
        elif spend.nodes_held == 0:
            t.append("no nodes")
        else:
            t.append(f"{spend.nodes_held} node{'s' if spend.nodes_held > 1 else ''} ({spend.gpus_held} GPUs)")
            if spend.spend_ucredits_hr is not None and spend.price_per_gpu_hour is not None:  # (not sent: below)
                t.append(f" at {fmt_price(spend.price_per_gpu_hour)} = ")
                t.append(fmt_rate(spend.spend_ucredits_hr), style="bold")
                t.append(" live", style="dim")
            elif spend.spend_ucredits_hr is not None:
                t.append(" (reserved: no market rate)", style="dim")
        if spend is not None and spend.spend_ucredits_hr is None:  # (not sent: never a rate from a guess)
            t.append(f"\nSpend per hour unknown: {spend.unknown('spend_ucredits_hr')}", style="bold red")
        problem = self.problem("bid", "spend", "ticks")
        if problem:
            t.append("\n")
            t.append_text(problem)
        status.update(t)

    def _ticks(self, chart: Chart, model: str | None) -> None:
        ticks = [t for t in (self.store.value("ticks") or ()) if model is None or t.gpu_model == model]
        bid = self.store.value("bid")
        gone = next((t for t in ticks if t.price_per_gpu_hour is None), None)
        if gone is not None:  # (a price not sent: no line drawn through a guess)
            chart.set_data(ChartData(empty=f"Ticks: unknown: {gone.unknown('price_per_gpu_hour')}"))
            return
        if not ticks:
            problem = self.problem("ticks")
            chart.set_data(ChartData(empty=f"Ticks: {problem.plain}" if problem else "Ticks: loading…"))
            return
        t_end = ticks[-1].at
        xs = tuple((t.at - t_end).total_seconds() / 3600 for t in ticks)
        ys = tuple(ucredits_to_dollars(t.price_per_gpu_hour or 0) for t in ticks)  # (each read: gone above)
        hlines: tuple[HLine, ...] = ()
        if bid is not None and bid.max_price_per_gpu_hour:
            hlines = (HLine(ucredits_to_dollars(bid.max_price_per_gpu_hour), "yellow", "your limit"),)
        span = xs[0]
        labels = (
            (span, span / 2, 0.0),
            (
                f"{span:.0f}h" if span <= -1 else f"{span * 60:.0f}m",
                f"{span / 2:.1f}h" if span <= -1 else f"{span * 30:.0f}m",
                f"{t_end:%H:%M}",
            ),
        )
        chart.set_data(ChartData(series=(Series(xs, ys, "assessed $/GPU-h", "cyan"),), hlines=hlines, xticks=labels))

    # ---- VM ---------------------------------------------------------------------------------

    def _vm(self, title: Static, table: DataTable[Any], status: Static, chart: Chart) -> None:
        table.display = False
        chart.display = status.display = True
        cap = self.store.value("vm_capacity")
        model = vm_gpu_model(self.store)
        t = Text()
        t.append("VM market ", style="bold")
        t.append("· what winners are assessed" + (f" · {model}" if model else ""), style="dim")
        title.update(t)
        s = Text()
        if cap is None:
            s.append_text(self.problem("vm_capacity") or Text("Loading VM capacity…", style="dim"))
        else:
            s.append("Declared ", style="dim")
            why = cap.unknown("max_gpus") or cap.unknown("max_price_per_gpu_hour")
            if why:  # (not sent: never "nothing")
                s.append(f"unknown: {why}", style="bold red")
            elif cap.max_gpus:
                s.append(
                    f" {cap.max_gpus} GPUs at most {fmt_price(cap.max_price_per_gpu_hour)} ",
                    style="bold black on yellow",
                )
            else:
                s.append("nothing")
            live = [a for a in cap.allocations if a.state not in ("released", "reclaimed")]
            s.append("\nAllocations ", style="dim")
            s.append(", ".join(f"{a.id} {a.state_said}" for a in live) or "none")
        status.update(s)
        self._ticks(chart, model)
