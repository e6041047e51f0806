"""Recipes: the catalog for the active cluster, a preview of exactly what will be applied, the money
check, and apply. Train is the default when nobody chose."""

from __future__ import annotations

import contextlib
from functools import partial
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option, OptionDoesNotExist

from .. import recipes as R
from ..api.errors import NCError
from ..textsafe import clean
from .base import View

if TYPE_CHECKING:
    from ..api import models as m
    from ..store import Store


class RecipeList(OptionList):
    """Enter on Something else opens its form at once, while this key is handled: through the selection message
    the form came after the keys typed next had come back unused (h opened History, the image lost its first
    letters); opened here, those keys reach the form (screens/keyhold.py)."""

    def action_select(self) -> None:
        option = self.highlighted_option
        view = self.query_ancestor(RecipesView)
        if option is not None and option.id == "something-else":
            view.selected = option.id
            view.action_open()
            return
        super().action_select()


class RecipesView(View):
    NEEDS = ("catalog", "cluster", "bid", "ladder", "balance", "summary")
    TITLE = "Recipes"
    HELP = """\
[b]Recipes[/b]

The starter recipes of the catalog for your cluster. Train is the one to run when nobody said which: one node,
nothing to build, done in minutes. Serve only when you asked for a model endpoint; Something else only with
your own container image and command.

• ↑/↓ choose a recipe; the right side shows what it needs, whether this cluster can run it, and exactly what
will be applied (every document, step by step, with the vendor rule: a missing `<stem>-<vendor>.yaml` falls
back to `<stem>.yaml`).
• [b]a[/b] applies it: first the money check (the balance must cover two hours at your ceiling). On a market
cluster you are asked for your ceiling, it is compared with the price to win, and the limit price is set only
after you confirm. Then the objects are created in order and you land on Workloads.
• [b]Something else[/b]: Enter opens a form for your image, command and number of nodes.
"""
    BINDINGS = [Binding("a", "apply", "Apply"), Binding("enter", "open", "Open", show=False)]

    def __init__(self, store: Store, *, id: str) -> None:
        super().__init__(store, id=id)
        self.plans: dict[str, R.Plan] = {}
        self.errors: dict[str, str] = {}
        self.selected: str | None = None
        self.handed_off: str | None = None  # the recipe `ncui --recipe` named: the answer, not asked again
        self._shown: tuple[tuple[str, str], ...] = ()  # (recipe, cluster) of the options listed

    def compose(self) -> ComposeResult:
        with Horizontal(id="recipes-row"):
            yield RecipeList(id="recipe-list")
            with VerticalScroll(id="recipe-detail"):
                yield Static(id="recipe-info")
                yield Static(id="recipe-preview")

    def focus_target(self) -> OptionList:
        return self.query_one("#recipe-list", OptionList)

    def recipes(self) -> list[m.Recipe]:
        cat = self.store.value("catalog")
        active = self.store.meta.get("cluster")
        if cat is None or active is None:
            return []
        return R.for_kind(cat, active.kind)

    def refresh_view(self) -> None:
        ol = self.query_one("#recipe-list", OptionList)
        info = self.store.value("cluster")
        rs = self.recipes()
        key = tuple((r.name, info.name if info else "") for r in rs)
        if key != self._shown:
            self._shown = key
            self.refresh_bindings()  # (a: offered beside a recipe only)
            ol.clear_options()
            for r in rs:
                label = Text()
                ok = info is None or R.fit(r, info).runnable
                label.append("✓ " if ok else "✗ ", style="green" if ok else "red")
                label.append(r.title, style="" if ok else "dim")
                ol.add_option(Option(label, id=r.name))
            if rs:
                names = [r.name for r in rs]
                idx = names.index(self.selected) if self.selected in names else 0
                ol.highlighted = idx
                self.selected = names[idx]
        if not rs:
            msg = self.problem("catalog") or Text("Loading the catalog…", style="dim")
            active = self.store.meta.get("cluster")
            if active is None and self.store.value("whoami") is not None:
                msg = Text(
                    "No cluster: a public research node runs the same nanoGPT over ssh "
                    "(nanogpt-node.sh), requested from Marshall.",
                    style="italic",
                )
            elif active is not None and self.store.value("catalog") is not None:  # read, and nothing for this kind
                msg = Text(f"The catalog has no recipe for a {active.kind} cluster.", style="italic")
                if active.kind == "vm":
                    msg = Text(
                        f"{active.name} is a VM cluster: the catalog's recipes are Kubernetes manifests and Slurm "
                        "scripts, and none applies here. Nodes arrive as ssh hosts: declare capacity on Lease (5, "
                        "then d); on a granted node Workloads (4) runs the starter (n: nanoGPT in the stock PyTorch "
                        "container, the catalog's nanogpt-node.sh) or your own image and command (u).",
                        style="italic",
                    )
            self.query_one("#recipe-info", Static).update(msg)
            return
        self._detail()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if event.option.id and event.option.id != self.selected:
            self.selected = event.option.id
            self._detail()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.selected = event.option.id
        self.action_open()

    def choose(self, name: str, handed_off: bool = False) -> None:
        """Make ``name`` the chosen recipe (``handed_off``: the hand-off named it, ``ncui --recipe``)."""
        self.selected = name
        if handed_off:
            self.handed_off = name
        ol = self.query_one("#recipe-list", OptionList)
        with contextlib.suppress(OptionDoesNotExist):  # (listed once the catalog is in: refresh_view keeps the choice)
            ol.highlighted = ol.get_option_index(name)
        self.refresh_view()
        self._detail()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """``a`` is offered only beside a recipe (a VM cluster has none: nodes run the starter from Workloads)."""
        if action == "apply":
            return self.recipe() is not None
        return True

    def recipe(self) -> m.Recipe | None:
        return next((r for r in self.recipes() if r.name == self.selected), None)

    def _detail(self) -> None:
        r = self.recipe()
        info_w = self.query_one("#recipe-info", Static)
        prev_w = self.query_one("#recipe-preview", Static)
        cluster = self.store.value("cluster")
        if r is None:
            return
        t = Text()
        t.append(r.title, style="bold")
        t.append(f"  {r.category}", style="dim")
        if r.name == self.handed_off:
            t.append("  named by the hand-off (--recipe): a applies it", style="green")
        elif r.name == R.DEFAULT_RECIPE:
            t.append("  the default", style="green")
        t.append(f"\n{r.description}\n")
        if r.needs:
            t.append("Needs: ", style="dim")
            t.append(", ".join(n.replace("_", " ") for n in r.needs) + "\n")
        if cluster is not None and r.cluster_kind == "kubernetes":
            f = R.fit(r, cluster)
            for reason in f.reasons:
                t.append(
                    ("✗ " if not f.runnable else "• ") + reason + "\n", style="bold red" if not f.runnable else "yellow"
                )
        if r.name == "something-else":
            t.append("\nPress Enter for the form: your image, command and number of nodes.", style="bold")
        info_w.update(t)
        if r.name in self.errors:
            prev_w.update(Text(self.errors[r.name], style="bold red"))
        elif r.name in self.plans:
            prev_w.update(self._preview(self.plans[r.name]))
        elif r.cluster_kind == "kubernetes" and r.steps:
            prev_w.update(Text("Loading what will be applied…", style="dim"))
            self.load_plan(r.name)
        else:
            prev_w.update(Text(self._steps_text(r), style="dim"))

    def _steps_text(self, r: m.Recipe) -> str:
        return "\n".join(f"{i}. {s.title or s.stem}: {s.file}" for i, s in enumerate(r.steps, 1))

    def _preview(self, plan: R.Plan) -> Group:
        parts: list[RenderableType] = []
        head = Text()
        head.append(f"\nWhat will be applied ({plan.gpus} GPUs at once):\n", style="bold")
        for i, s in enumerate(plan.steps, 1):
            head.append(f"{i}. {s.title}: {s.file}" + ("  (optional, not applied by a)" if s.optional else "") + "\n")
            if s.note:
                head.append(f"   {s.note}\n", style="yellow")
        for skipped in plan.skipped:
            head.append(f"   skipped: {skipped} (this cluster has no shared volume / CPU worker)\n", style="dim")
        parts.append(head)
        for s in plan.steps:
            parts.append(Text(f"── {s.file} ──", style="bold cyan"))
            parts.append(
                Syntax(
                    clean(s.text, multiline=True).rstrip("\n"),
                    "yaml",
                    theme="ansi_dark",
                    word_wrap=True,
                    background_color="default",
                )
            )
        return Group(*parts)

    @work(group="plan", exclusive=False, exit_on_error=False)
    async def load_plan(self, name: str) -> None:
        r = next((x for x in self.recipes() if x.name == name), None)
        cluster = self.store.value("cluster")
        nc = self.ncapp.backend.nc if self.ncapp.backend else None
        if r is None or cluster is None or nc is None:
            return
        try:
            self.plans[name] = await R.resolve(nc, r, cluster)
        except R.NotOffered as e:
            self.errors[name] = str(e)
        except (NCError, ValueError) as e:
            self.errors[name] = f"Cannot load {r.title}: {e}"
        if self.selected == name:
            self._detail()

    # ---- actions ----------------------------------------------------------------------------

    def action_open(self) -> None:
        r = self.recipe()
        if r is not None and r.name == "something-else":
            self.ncapp.flows.apply.open_custom_job()

    def action_apply(self) -> None:
        r = self.recipe()
        if r is None:
            return
        if r.name == "something-else":
            self.ncapp.flows.apply.open_custom_job()
            return
        active = self.store.meta.get("cluster")
        if r.cluster_kind == "slurm" and active is not None and active.kind == "slurm":
            # Slurm's first job: asked, prepared and submitted from Workloads, where it is then followed
            self.ncapp.ui.start(partial(self.ncapp.action_show, "workloads"), name="recipes-go")
            self.ncapp.flows.slurm.first_job()
            return
        if r.cluster_kind != "kubernetes" or active is None or active.kind != "kubernetes":
            where = f"{active.name} is a {active.kind} cluster" if active is not None else "no cluster is active"
            self.notify(f"{r.title} is for a {r.cluster_kind} cluster, and {where}: its steps are listed here.")
            return
        if r.name in self.errors:
            self.notify(self.errors[r.name], severity="error", timeout=8)
            return
        plan = self.plans.get(r.name)
        if plan is None:
            self.notify("Still loading what will be applied…")
            return
        self.ncapp.flows.apply.start(plan)
