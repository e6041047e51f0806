"""Workloads: what runs on the active cluster, in the one pane for its kind. A Kubernetes cluster's pods, jobs and
deployments with the selected pod's log (``KubePane``, screens/kubepane.py); a VM cluster's nodes or a public-research
organization's node over ssh (``NodesPane``, screens/nodes.py); a Slurm cluster's queue (``SlurmPanel``,
screens/slurm.py). ``pane_kind`` chooses; the view shows that pane, hides the others, and hands it the redraws, the
keyboard and the keys."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from textual.app import ComposeResult
from textual.binding import Binding

from ..flows.connect import WATCHED  # the slices the cluster's watches feed
from .base import View
from .kubepane import KubePane
from .nodes import NodesPane
from .slurm import SlurmPanel

if TYPE_CHECKING:
    from textual.widget import Widget

    from ..store import Slice, Store

PaneKind = Literal["kubernetes", "nodes", "slurm"]


def pane_kind(store: Store) -> PaneKind | None:
    """Which pane Workloads shows: the queue on a Slurm cluster; the nodes over ssh on a VM cluster or for a
    public-research organization (its node, from Marshall's workspace: no cluster); the pods on a Kubernetes
    cluster. None for no cluster of these kinds: the Kubernetes pane stands in and says so, its keys off."""
    from .research import research_org

    active = store.meta.get("cluster")
    kind = active.kind if active is not None else None
    if kind == "slurm":
        return "slurm"
    if kind == "vm" or research_org(store):
        return "nodes"
    if kind == "kubernetes":
        return "kubernetes"
    return None


Pane = KubePane | NodesPane | SlurmPanel
PANES: dict[PaneKind | None, type[Pane]] = {
    "kubernetes": KubePane,
    "nodes": NodesPane,
    "slurm": SlurmPanel,
    None: KubePane,
}


class WorkloadsView(View):
    NEEDS = WATCHED + (
        "bid",
        "ladder",
        "cluster",
        "kube_signin",
        "vm_capacity",
        "slurm_signin",
        "slurm_jobs",
        "research",
        "research_typed",
    )
    TITLE = "Workloads"
    HELP = """\
[b]Workloads[/b]

The active cluster's pods (READY and STATUS as kubectl prints them), jobs, deployments and nodes, watched
live. The line under the table explains the selected pod's state in plain words.

• ↑/↓ select a pod; its log follows below. [b]f[/b] follow on/off · [b]/[/b] filter · [b]w[/b] wrap · [b]t[/b]
timestamps · [b]G[/b] jump to the end · [b]p[/b] the previous container's log · [b]c[/b] next container.
• Loss lines (nanoGPT's iter N: loss X, the tune's epoch E step S: loss X) are charted beside the log as they
arrive; a log without them takes the whole width. Long lines wrap at the pane's width ([b]w[/b] turns it off).
• [b]m[/b] talks to a serve recipe's model at READY 1/1 (through the service proxy), with the guide's request:
answers stream in, the thinking apart, with time to first token and tokens/s; the exact request and the
guide's curl on demand.
• [b]x[/b] stops the selected pod's recipe: one question lists everything it created (Kimi K3's router, worker,
services and jobs; Post-train's tune, launcher and serve) and says what stays on the shared volume (staged
weights, the tuned model), then deletes it all, as the guide's kubectl delete -f <file> and delete job would.
• One serving recipe at a time: applying a serve recipe while another serves asks to stop the other first.
• [b]L[/b] Kimi K3's optional load test at READY 1/1 (about 17 minutes, from inside the cluster, asked first): ncui
sends none of your own requests while it runs, and shows its summary when it ends.
• [b]T[/b] Post-train: tune again (deletes the tune Job, then applies it again through the money check). A tune
that grades its model defective fails and the serve leg keeps waiting; a new attempt gets a new outcome.
• [b]R[/b] Post-train: restart the serve (kubectl rollout restart deploy/finance-analyst) when it started before
the new tune finished and so serves the previous model.

[b]On a VM cluster[/b] the granted nodes take the pods' place: state, GPUs, the ssh login, what runs there.
• [b]Enter[/b] (or [b]o[/b]) connects over ssh with your keys and agent; the first time, the node's host key
fingerprint is shown and asked about (remembered in ncui's known_hosts; a changed key is refused).
• [b]n[/b] runs the starter (nanoGPT in the stock PyTorch container, detached); [b]u[/b] your own image and
command (shown whole before it is sent). Its log follows below with the loss chart, and resumes after a
dropped connection with no line lost or repeated. [b]x[/b] stops it (docker rm -f, asked first).
• Releasing (Lease, R) offers to copy a folder off the nodes first: their disks go with them.
On a public research node the same, for the one node Marshall's workspace assigned you: ncui never releases it.

[b]On a Slurm cluster[/b] your queue (squeue --me) takes the pods' place: state, the reason in plain words,
elapsed on the login node's clock, the node.
• [b]n[/b] (or [b]a[/b] on the recipe) submits the first job, asked first: prepare.sh when ~/first-job is
missing, then sbatch --nodes=1 ~/first-job/nanogpt.sbatch. Its nanogpt-<id>.out follows below with the loss
chart; [b]f[/b], [b]/[/b] and [b]w[/b] as above. [b]x[/b] cancels the selected job (scancel, asked first).
"""
    # The keys go to the pane shown (pane('…'): its action of that name), and are off where it has none. They are
    # bound here, not on the panes, so they answer wherever the keyboard is on the view (a click on a line of text
    # gives it to the view itself). NodesPane and SlurmPanel bind their own keys besides, which come first.
    BINDINGS = [
        Binding("f", "pane('follow')", "Follow", show=False),  # (in the help: at 80 columns the footer gives L room)
        Binding("slash", "pane('filter')", "Filter"),
        Binding("w", "pane('wrap')", "Wrap", show=False),  # (in the help: the footer keeps q Quit at 80 columns)
        Binding("t", "pane('timestamps')", "Times", show=False),
        Binding("G", "pane('end')", "End", show=False),
        Binding("p", "pane('previous')", "Previous", show=False),
        Binding("c", "pane('container')", "Container", show=False),
        Binding("m", "pane('prompt')", "Chat"),
        Binding("x", "pane('stop')", "Stop"),
        # L is in the footer while Kimi K3 serves (READY 1/1: the load test is offered); else it says why not
        Binding("L", "pane('load_test', 'offered')", "Load test"),
        Binding("L", "pane('load_test')", "Load test", show=False),
        Binding("T", "pane('tune_again')", "Tune again", show=False),
        Binding("R", "pane('restart_serve')", "Restart serve", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield KubePane(self.store, id="kube-pane")  # a Kubernetes cluster's pods (screens/kubepane.py)
        yield NodesPane(self.store, id="nodes-view")  # a VM cluster's nodes, or the research node (screens/nodes.py)
        yield SlurmPanel(self.store, id="slurm-panel")  # a Slurm cluster's jobs (screens/slurm.py)

    def shown_pane(self) -> Pane:
        """The pane for the active cluster (``pane_kind``)."""
        return self.query_one(PANES[pane_kind(self.store)])

    def _choose(self) -> Pane:
        """Show the pane for the active cluster and hide the others; the keyboard, if it was on the view, goes to
        the pane that came, and the footer is drawn again for its keys."""
        shown = self.shown_pane()
        moved = False
        for cls in (KubePane, NodesPane, SlurmPanel):
            pane = self.query_one(cls)
            if pane.display != (pane is shown):
                pane.display = pane is shown
                moved = True
                if isinstance(pane, SlurmPanel):
                    pane.shown(pane is shown)  # (the jobs read now; its log stops while hidden)
        if moved:
            self.refresh_bindings()
            if self.has_focus_within:
                shown.focus_target().focus()
        return shown

    def focus_target(self) -> Widget:
        return self.shown_pane().focus_target()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A key is off where the pane shown has no action for it (the chat on a VM cluster, a pod's previous log
        on Slurm: not in the footer, where the pane's own keys need the room at 80 columns); else the pane says."""
        if action != "pane" or not parameters:
            return True
        name, *args = parameters
        pane = self.shown_pane()
        if not callable(getattr(pane, f"action_{name}", None)):
            return False
        return pane.check_action(str(name), tuple(args))

    def action_pane(self, name: str, *args: str) -> None:
        getattr(self.shown_pane(), f"action_{name}")(*args)

    def activate(self, shown: bool) -> None:
        super().activate(shown)
        if shown:
            kind = pane_kind(self.store)
            if kind == "kubernetes":
                self.query_one(KubePane).activate()  # the cluster's client, if it is another cluster's
            elif kind == "slurm":
                self.ncapp.flows.slurm.wake()  # the queue now, not at the next idle poll

    def _changed(self, slice_: Slice) -> None:
        if slice_.name in WATCHED:  # the pods' watch: the Kubernetes pane redraws once for a burst
            self.query_one(KubePane).watched()
        else:
            super()._changed(slice_)

    def refresh_view(self) -> None:
        self._choose().refresh_view()
