"""Lease: the standing limit price, visible until withdrawn, and its withdrawal."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from ..money import fmt_price
from .base import View


class LeaseView(View):
    NEEDS = ("bid", "spend", "cluster", "vm_capacity")
    TITLE = "Lease"
    HELP = """\
[b]Lease[/b]

Your standing limit price. It keeps pulling nodes for any GPU job you apply later, so withdraw it
when you are done: press [b]w[/b] (you are asked first). Withdrawing pulls no new nodes; nodes that
still run a job stay until it ends.
"""
    BINDINGS = [Binding("w", "withdraw", "Withdraw limit")]

    def compose(self) -> ComposeResult:
        yield Static(id="lease")

    def refresh_view(self) -> None:
        bid, spend, info = self.store.value("bid"), self.store.value("spend"), self.store.value("cluster")
        t = Text()
        t.append("Lease\n\n", style="bold")
        if info is None or not info.market:
            t.append("No limit price here: this is not a market cluster." if info else "Loading…", style="dim")
        elif bid is None:
            t.append_text(self.problem("bid") or Text("Loading…", style="dim"))
        else:
            if bid.max_price_per_gpu_hour:
                t.append("Standing limit price ")
                t.append(f" {fmt_price(bid.max_price_per_gpu_hour)} ", style="bold black on yellow")
                t.append("\nIt keeps pulling nodes for any GPU job you apply. Press w to withdraw it.")
            else:
                t.append("No standing limit price: nothing is bid.")
            stale = self.problem("bid")  # the last limit read, marked: the latest read failed
            if stale:
                t.append("\n")
                t.append_text(stale)
        if spend is not None and spend.nodes_held:
            t.append(f"\nHeld: {spend.nodes_held} node(s), {spend.gpus_held} GPUs.")
        spend_problem = self.problem("spend")
        if info is not None and info.market and spend_problem:
            t.append("\n")
            t.append_text(spend_problem)
        self.query_one("#lease", Static).update(t)

    def action_withdraw(self) -> None:
        bid = self.store.value("bid")
        if bid is None or not bid.max_price_per_gpu_hour:
            self.notify("There is no standing limit price to withdraw.")
            return
        self.ncapp.confirm_withdraw()
