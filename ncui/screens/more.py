"""Recipes, Workloads and Lease: what this build shows of them so far."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from ..money import fmt_price
from .base import View


class RecipesView(View):
    NEEDS = ("catalog", "cluster")
    TITLE = "Recipes"
    HELP = """\
[b]Recipes[/b]

The starter recipes of the catalog for your cluster's kind. Train is the one to run when nobody said
which: one node, nothing to build, done in minutes. Serve only when you asked for a model endpoint;
Something else only with your own container image and command.
"""

    def compose(self) -> ComposeResult:
        yield Static(id="recipes")

    def refresh_view(self) -> None:
        cat = self.store.value("catalog")
        active = self.store.meta.get("cluster")
        box = self.query_one("#recipes", Static)
        if cat is None:
            box.update(self.problem("catalog") or Text("Loading the catalog…", style="dim"))
            return
        kind = active.kind if active else "public_research"
        t = Text()
        t.append(f"Recipes for a {kind.replace('_', ' ')} cluster\n", style="bold")
        for r in cat:
            if r.cluster_kind != kind:
                continue
            t.append(f"\n{r.title}", style="bold")
            t.append(f"  {r.category}", style="dim")
            if r.name == "nanogpt":
                t.append("  (the default)", style="green")
            t.append(f"\n{r.description}\n")
        t.append("\nPreview, the money check and apply are not in this build yet.", style="italic dim")
        box.update(t)


class WorkloadsView(View):
    NEEDS = ("cluster",)
    TITLE = "Workloads"
    HELP = "[b]Workloads[/b]\n\nPods, jobs and logs of the active cluster."

    def compose(self) -> ComposeResult:
        yield Static(id="workloads")

    def refresh_view(self) -> None:
        active = self.store.meta.get("cluster")
        t = Text()
        t.append("Workloads\n\n", style="bold")
        t.append("The live pod and log view is not in this build yet.", style="italic dim")
        if active is not None and active.kind == "kubernetes":
            t.append("\nMeanwhile, from a shell:\n", style="dim")
            t.append(f"  kubectl --context {active.name} get pods -w\n")
            t.append(f"  kubectl --context {active.name} logs -f job/nanogpt\n")
        self.query_one("#workloads", Static).update(t)


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
        elif bid.max_price_per_gpu_hour:
            t.append("Standing limit price ")
            t.append(f" {fmt_price(bid.max_price_per_gpu_hour)} ", style="bold black on yellow")
            t.append("\nIt keeps pulling nodes for any GPU job you apply. Press w to withdraw it.")
        else:
            t.append("No standing limit price: nothing is bid.")
        if spend is not None and spend.nodes_held:
            t.append(f"\nHeld: {spend.nodes_held} node(s), {spend.gpus_held} GPUs.")
        self.query_one("#lease", Static).update(t)

    def action_withdraw(self) -> None:
        bid = self.store.value("bid")
        if bid is None or not bid.max_price_per_gpu_hour:
            self.notify("There is no standing limit price to withdraw.")
            return
        self.ncapp.confirm_withdraw()
