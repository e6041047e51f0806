"""Workloads on a Kubernetes cluster: its pods, jobs, deployments and nodes from a watch; one line explaining the
selected pod; its log followed live (batched) with a loss chart; a prompt for a serve endpoint; stop.

``KubePane`` is the pane Workloads (``screens/workloads.py``) shows for a Kubernetes cluster, as it shows
``NodesPane`` for nodes over ssh and ``SlurmPanel`` for a Slurm queue. Its keys are bound on the view, which hands
them to the pane shown (so they answer wherever the keyboard is on the view); ``check_action`` here says which of
them are on. ``log_follower`` is its wiring of a pod's log into the pane and the chart (bench/logs.py measures it).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from itertools import compress, count
from operator import is_not
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from ..flows.connect import WATCHED  # the slices the cluster's watches feed
from ..formatting import short_names
from ..kube.chat import ready_endpoint
from ..kube.logs import LogFollower, LossCurve
from ..kube.status import owned_by
from ..lifecycle import advice, load_test_guard, pod_recipe
from ..widgets.chart import Chart
from ..widgets.patchtable import PatchTable
from .base import fit_columns, problem, show_text
from .losses import LOG_BATCH_INTERVAL, LOSS_CHART_INTERVAL, show_losses
from .modals import ConfirmModal

if TYPE_CHECKING:
    from textual.timer import Timer

    from ..app import NCApp
    from ..kube.client import KubeClient
    from ..store import Store
    from ..widgets.logpane import LogPane


def log_follower(
    kube: KubeClient,
    pod: str,
    container: str | None,
    pane: LogPane,
    losses: LossCurve,
    on_losses: Callable[[list[str]], None],
    *,
    previous: bool = False,
) -> LogFollower:
    """Follow a pod's log into the pane and its loss lines into ``losses`` (``on_losses(entries)`` when it grew):
    the Workloads screen's wiring, which bench/logs.py measures."""

    def on_entries(entries: list[str]) -> None:
        pane.write_entries(entries)
        if losses.add(entries, entries=True):
            on_losses(entries)

    def on_state(state: str) -> None:
        pane.set_status(log_state(state, follower))

    follower = LogFollower(
        kube,
        pod,
        container,
        on_entries=on_entries,
        previous=previous,
        batch_interval=LOG_BATCH_INTERVAL,
        on_state=on_state,
    )
    pane.source = follower.lines
    return follower


def log_state(state: str, follower: LogFollower) -> str:
    """The line under the log pane for the follower's state ('' while lines simply flow)."""
    if state.startswith("waiting: "):
        return f"log: the container has not started yet ({state[9:]})"
    if state == "resuming":
        return "log: the stream dropped; resuming where it stopped (no line lost or repeated)"
    if state == "not signed in":
        return "log: paused until the sign-in is approved, then resumes where it stopped (s shows the link)"
    if state == "ended" and follower.end_reason not in (None, "the container terminated", "previous log read"):
        return f"log ended: {follower.end_reason}"
    return ""


# A watch delivers each change as it comes (a big cluster: a hundred a second); the table redraws for what
# came in the last 100 ms at once, never per change (bench/pods.py: 1,000 pods, 100 changes/s).
WATCH_REDRAW = 0.1
# A pod the human moves onto has its log followed once the selection rests this long: a held ↓ walks the table at
# once and starts one follow (a GET of the pod and a new TLS stream, ~25 ms of CPU each), of the pod it stops
# on, not one for every pod it passes (bench/pods.py: key latency).
FOLLOW_SETTLE = 0.15


def freeze_long_lived() -> None:
    """Once a process, when the pods' table is first drawn: move what start-up and the first list made (modules,
    widgets, the pods and their rows, the box in the demo: ~180,000 objects with 1,000 pods) out of the cyclic
    collector's sight (``gc.freeze``). Its full collections then walk only what came after: on Workloads with
    1,000 busy pods one took ~120 ms of CPU every ~30 s, and a key press that met it waited that long
    (bench/pods.py: key p99); ~45 ms after. Frozen at start-up instead (before the pods): ~100 ms. What was
    cyclic garbage at that moment stays (once); a pod replaced later is freed as before (no cycles in it)."""
    global _FROZEN
    if not _FROZEN:
        _FROZEN = True
        gc.freeze()


_FROZEN = False

PodRow = tuple[str, str, str, str, str]  # a pod as the table shows it: NAME, READY, STATUS, RESTARTS, NODE
CELLS = ("READY", "STATUS", "RESTARTS", "NODE")  # the columns after NAME that a watch event changes


def fit_node(node: str, width: int, cluster: str) -> str:
    """NODE as it fits its column: the cluster's name, which its nodes' names start with, gives way first
    (``halcyon-cpu-worker-0`` reads ``…cpu-worker-0`` at 80 columns, not ``halcyon-cpu-worke``)."""
    prefix = f"{cluster}-"
    if len(node) > width and cluster and node.startswith(prefix):
        return "…" + node[len(prefix) :]
    return node


def _same_version(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The same object at the same version (its uid: a pod of the same name made anew is another)."""
    ma, mb = a.get("metadata") or {}, b.get("metadata") or {}
    return ma.get("uid") == mb.get("uid") and ma.get("resourceVersion") == mb.get("resourceVersion")


def _status_text(status: str) -> Text:
    style = (
        "green"
        if status in ("Running", "Completed")
        else "red"
        if status in ("Error", "CrashLoopBackOff", "Failed")
        else "yellow"
    )
    return Text(status, style=style)


class KubePane(Vertical):
    """The pods' table, the line explaining the selected pod, its log with the loss chart (see the module's
    docstring). Shown by Workloads for a Kubernetes cluster, and for no cluster of a kind it shows (the line above
    the table says so; the Kubernetes keys are off)."""

    def __init__(self, store: Store, *, id: str) -> None:
        super().__init__(id=id)
        self.store = store
        self.pod: str | None = None
        self.container: str | None = None
        self.previous = False
        self.follower: LogFollower | None = None
        self._rows: list[PodRow] = []  # the rows shown, by name
        self._names: list[str] = []  # the pods' names in order, and as a set (the same pods: not sorted again)
        self._name_set: frozenset[str] = frozenset()
        self._keys: list[str] = []  # the last snapshot's names and objects in its own order (the rows were made from)
        self._pod_objs: list[Any] = []
        self._row_of: list[int] = []  # by a pod's index in the snapshot: its row in the table
        self._pod_list: list[PodRow | None] = []  # the rows, by _names
        self._name_width = 0  # the NAME column's width the names were shortened for
        self._refresh_due = False  # a watched slice changed: one redraw soon for the burst (watched)
        self._losses = LossCurve()
        self._applied_seen = 0  # the last apply (meta["applied_seq"]) whose new workload was selected
        self._want: list[tuple[str, str]] = []  # its Jobs and Deployments in order, until one has its pod
        self._auto: str | None = None  # the pod selected for it (a highlight of another is the human's)
        self._settle: Timer | None = None  # the follow to start once the human's selection rests (FOLLOW_SETTLE)

        self._offered_shown = False  # the footer's L (the load test offered) as last drawn

    @property
    def ncapp(self) -> NCApp:
        return cast("NCApp", self.app)  # Widget.app is an App[object]: the pane lives in NCApp only

    def compose(self) -> ComposeResult:
        from ..widgets.logpane import LogPane

        yield Static(id="wl-state")
        yield PatchTable(id="pods", cursor_type="row")
        yield Static(id="explain")
        with Horizontal(id="log-row"):
            yield LogPane(id="log", wrap=True)  # memos and long lines read whole; w turns it off
            yield Chart(id="loss-chart", min_interval=LOSS_CHART_INTERVAL)

    def on_mount(self) -> None:
        self._pod_columns()
        self._chart()  # hidden until the log has a loss line
        self.set_interval(1.0, self._tick_ages)

    def _tick_ages(self) -> None:
        """AGE counts by the clock (the box's in the demo) between watch events, as kubectl's would. Not while a
        question covers the screen: Textual draws a modal's whole screen again for any change beneath it (idle
        under the kube-context question: 9 KB/s to the terminal, bench/soak.py); the next tick after it catches up."""
        from ..kube import status as S

        if not self.display or not self._rows or self.app.screen is not self.screen:
            return
        pods, table = self.store.value("k8s_pods") or {}, self.query_one("#pods", PatchTable)
        now = self.ncapp.backend.now() if self.ncapp.backend else datetime.now(timezone.utc)
        top = int(table.scroll_y)  # the rows in sight (a scrolled-in row gets its age at the next tick)
        for name, *_ in self._rows[top : top + table.size.height]:
            p = pods.get(name)
            if p is not None and str(table.get_cell(name, "AGE")) != (age := S.age(p, now)):  # (cells hold Text)
                table.set_cells(name, {"AGE": Text(age)})

    # kubectl's columns; NAME takes what is left (14 at 80 columns): STATUS fits "ContainerCreating", AGE any
    # kubectl age ("9m45s", "2d10h") and NODE the box's GPU node names whole.
    POD_COLUMNS = (("NAME", 20), ("READY", 5), ("STATUS", 17), ("RESTARTS", 8), ("AGE", 5), ("NODE", 17))

    def _pod_columns(self) -> bool:
        if fit_columns(self.query_one("#pods", DataTable), self.POD_COLUMNS, flex=0, flex_min=12):
            self._rows = []  # the rows went with the columns
            return True
        return False

    def on_resize(self) -> None:
        if self._pod_columns():
            self.refresh_view()

    def watched(self) -> None:
        """A watched slice changed (Workloads hands it on): a burst of watch events is one redraw for all of them."""
        if not self._refresh_due and self._in_sight():
            self._refresh_due = True
            self.set_timer(WATCH_REDRAW, self._watched_refresh)

    def _watched_refresh(self) -> None:
        self._refresh_due = False
        if self._in_sight():
            self.refresh_view()

    def _in_sight(self) -> bool:
        """Shown: the pane Workloads chose, on the view shown (the other views are hidden)."""
        return self.display and self.parent is not None and self.parent.display

    def focus_target(self) -> DataTable[Any]:
        return self.query_one("#pods", DataTable)

    KUBE_ONLY = frozenset({"prompt", "previous", "container", "load_test", "tune_again", "restart_serve"})

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The chat, a pod's previous log or other container, and a recipe's lifecycle keys are Kubernetes
        things: off while no Kubernetes cluster is active (the pane stands in for a cluster of another kind)."""
        if action in self.KUBE_ONLY:
            active = self.store.meta.get("cluster")
            if active is None or active.kind != "kubernetes":
                return False
            if action == "load_test":  # the footer's L while it is offered, the hidden one otherwise
                return (parameters == ("offered",)) == self._load_test_offered()
        return True

    def _load_test_offered(self) -> bool:
        from ..lifecycle import serve_ready

        return serve_ready(self.store.value("k8s_deployments") or {}, "infera")

    def activate(self) -> None:
        """Workloads is shown on this cluster: its client is made when it is another cluster's (the watches start)."""
        active = self.store.meta.get("cluster")
        if active is not None and active.kind == "kubernetes" and self.ncapp.flows.connect.kube_for != active.name:
            self.connect()

    @work(group="wl-connect", exclusive=True, exit_on_error=False)
    async def connect(self) -> None:
        await self.ncapp.flows.connect.kube_client()

    # ---- rendering ----------------------------------------------------------------------------

    def refresh_view(self) -> None:
        from ..kube import status as S

        st = self.store
        active = st.meta.get("cluster")
        state = self.query_one("#wl-state", Static)
        offered = self._load_test_offered()
        if offered != self._offered_shown:  # L comes to the footer, or leaves it
            self._offered_shown = offered
            self.refresh_bindings()
        if active is None or active.kind != "kubernetes":
            show_text(state, Text("Workloads are shown for Kubernetes clusters.", style="italic"))
            return
        pods, jobs, deps, nodes = (
            st.value("k8s_pods"),
            st.value("k8s_jobs"),
            st.value("k8s_deployments"),
            st.value("k8s_nodes"),
        )
        if pods is None:
            sign = st.get("kube_signin")
            if sign.value == "not signed in" or sign.error:
                msg = Text(
                    f"Not signed in to {active.name}: press s to sign in (kubectl's sign-in, approved in a browser).",
                    style="bold",
                )
            else:
                msg = problem(st, "k8s_pods") or Text(
                    "Signing in to the cluster…"
                    if sign.value in ("checking", "waiting for approval")
                    else "Connecting to the cluster…",
                    style="dim",
                )
            show_text(state, msg)
            return
        self._pod_columns()  # (the table's width changes without the view's: a scrollbar came or went)
        now = self.ncapp.backend.now() if self.ncapp.backend else datetime.now(timezone.utc)
        summary = Text()
        for j in sorted((jobs or {}).values(), key=lambda o: o["metadata"]["name"]):
            summary.append(f"job/{j['metadata']['name']} ", style="bold")
            summary.append(f"{S.job_status(j)}  ")
        for d in sorted((deps or {}).values(), key=lambda o: o["metadata"]["name"]):
            summary.append(f"deploy/{d['metadata']['name']} ", style="bold")
            summary.append(f"{S.deployment_ready(d)}  ")
        gpu_nodes = [n for n in (nodes or {}).values() if S.is_gpu_node(n)]
        ready = sum(1 for n in gpu_nodes if S.node_status(n) == "Ready")
        summary.append(
            f"· GPU nodes {ready} ready" + (f", {len(gpu_nodes) - ready} joining" if len(gpu_nodes) > ready else ""),
            style="dim",
        )
        if not jobs and not deps:
            summary = Text("Nothing running. Pick a recipe on the Recipes screen (3) and press a.", style="dim")
        stale = problem(st, *WATCHED)
        if stale:  # the watch is down: what follows is the last it saw
            summary = Text.assemble(stale, "\n", summary)
        for level, line in advice(st):  # the guide's way on from where the recipes stand (ncui/lifecycle.py)
            summary.append("\n" + line, style={"bad": "bold red", "warn": "bold yellow"}.get(level, "cyan"))
        show_text(state, summary)
        table = self.query_one("#pods", PatchTable)
        rows, changed = self._pod_rows(pods)
        self._follow_apply(pods)
        # NAME as it fits the column, each told apart from the others (a recipe's pods share a prefix)
        columns = dict(getattr(table, "_ncui_columns", ()))
        width = columns.get("NAME", 20)
        active = self.store.meta.get("cluster")
        node_width, cluster = columns.get("NODE", 17), active.name if active is not None else ""
        if rows != self._rows or width != self._name_width:
            old, self._rows = self._rows, rows
            same = bool(old) and changed is not None and width == self._name_width
            self._name_width = width
            if same:  # the same pods: only the cells that changed (a row out of sight is drawn when it comes in)
                for i in changed or ():
                    was, r = old[i], rows[i]
                    cells = {
                        c: (
                            _status_text(b)
                            if c == "STATUS"
                            else Text(fit_node(b, node_width, cluster) if c == "NODE" else b)
                        )
                        for c, a, b in zip(CELLS, was[1:], r[1:], strict=True)
                        if a != b
                    }
                    if cells:
                        table.set_cells(r[0], cells)
            else:
                cursor = table.cursor_row
                table.clear()
                shown = short_names([r[0] for r in rows], width)
                for name, ready_text, status, restarts, node in rows:  # Text: never markup
                    age = S.age(pods[name], now)
                    table.add_row(
                        Text(shown[name]),
                        Text(ready_text),
                        _status_text(status),
                        Text(restarts),
                        Text(age),
                        Text(fit_node(node, node_width, cluster)),
                        key=name,
                    )
                if rows:
                    freeze_long_lived()
                    names = [r[0] for r in rows]
                    table.move_cursor(row=names.index(self.pod) if self.pod in names else min(cursor, len(rows) - 1))
        elif self.pod is not None and self.pod in self._name_set:
            if table.cursor_row != (i := self._names.index(self.pod)):
                table.move_cursor(row=i)
        if rows and (self.pod is None or self.pod not in pods):
            self.select(self._resumed(pods) or rows[0][0])
        elif not rows and self.pod is not None:  # its job was deleted: keep what it logged, stop following
            if self.follower is not None:
                self.follower.stop()
                self.follower = None
            kept = (self.store.meta.get("kept_logs") or {}).get(self.pod)
            self.query_one("#explain", Static).update(
                Text(
                    f"{self.pod} is gone; its log so far stays below" + (f" (saved to {kept})." if kept else "."),
                    style="italic",
                )
            )
            self.pod = None
            return
        self._explain()

    def _pod_rows(self, pods: Mapping[str, dict[str, Any]]) -> tuple[list[PodRow], list[int] | None]:
        """The table's rows for ``pods`` by name, and the indexes of those that changed since the last call (None
        when the pods are not the same ones, or nothing is shown). A thousand pods and a hundred changes a second:
        while the snapshot holds the same names in the same order (the watch's map keeps a changed pod's place),
        nothing is sorted or looked up by name: its objects, in its own order, are compared by identity in C with
        the last call's (the watch keeps an unchanged pod's object), and a row is worked out again only for a pod
        whose object is new and whose uid or version changed (bench/pods.py)."""
        from ..kube import status as S

        keys, objs, rows = list(pods), list(pods.values()), self._pod_list
        changed: list[int] | None
        todo: list[tuple[int, Any, dict[str, Any]]]  # (index in the table, the object its row was made from, new)
        if keys != self._keys:  # other pods, or the same ones in another order (a re-list): sorted again
            was = dict(zip(self._keys, self._pod_objs, strict=True))
            at = {n: i for i, n in enumerate(self._names)}
            names = self._names = sorted(keys)  # (the watch keys each pod by its metadata.name)
            self._name_set = frozenset(names)
            rows = [rows[at[n]] if n in at else None for n in names]
            todo = [(i, was.get(n), pods[n]) for i, n in enumerate(names) if was.get(n) is not pods[n]]
            at = {n: i for i, n in enumerate(names)}
            self._row_of = [at[n] for n in keys]
            changed = None
        else:
            row_of, old = self._row_of, self._pod_objs
            todo = [(row_of[j], old[j], objs[j]) for j in compress(count(), map(is_not, objs, old))]
            rows = list(rows)
            changed = [] if self._rows else None
        for i, o, p in todo:
            if o is not None and rows[i] is not None and _same_version(o, p):
                continue  # (a re-list: a new object of the same version)
            reason, ready, total, restarts = S.pod_reason(p)
            row = (
                p["metadata"]["name"],
                f"{ready}/{total}",
                reason,
                str(restarts),
                (p.get("spec") or {}).get("nodeName") or "<none>",
            )
            if row != rows[i]:
                rows[i] = row
                if changed is not None:
                    changed.append(i)
        self._keys, self._pod_objs, self._pod_list = keys, objs, rows
        return cast("list[PodRow]", rows), changed

    def _resumed(self, pods: dict[str, Any]) -> str | None:
        """The pod of the job ncui remembers on this cluster (a restart resumes watching it), running first."""
        job = self.ncapp.flows.recall.remembered_job()
        obj = (job or {}).get("object")
        if not obj:
            return None
        mine = [p for p in pods.values() if owned_by(p, obj[0], obj[1])]
        mine.sort(key=lambda p: ((p.get("status") or {}).get("phase") != "Running", p["metadata"].get("name", "")))
        return mine[0]["metadata"]["name"] if mine else None

    def _follow_apply(self, pods: dict[str, Any]) -> None:
        """After an apply (``ApplyFlow.applied_select`` counts them), select the new workload's pod: of the Jobs
        and Deployments it created, the first in the apply's order that has a pod (its newest), so a Post-train's
        launcher is shown until the tune's pod comes. Until the human moves the cursor."""
        seq = self.store.meta.get("applied_seq", 0)
        if seq != self._applied_seen:
            self._applied_seen = seq
            self._want = list(self.store.meta.get("applied_want") or ())
        if not self._want:
            return
        for i, (kind, name) in enumerate(self._want):
            mine = [p for p in pods.values() if owned_by(p, kind, name)]
            if mine:
                pick = max(mine, key=lambda p: p["metadata"].get("creationTimestamp") or "")["metadata"]["name"]
                if i == 0:
                    self._want = []  # the first workload it made has its pod: done
                if pick != self.pod:
                    self._auto = pick
                    self.select(pick)
                return

    def _explain(self) -> None:
        from ..kube import status as S

        st = self.store
        pods, jobs = st.value("k8s_pods") or {}, st.value("k8s_jobs") or {}
        bid, ladder = st.value("bid"), st.value("ladder")
        limit = bid.max_price_per_gpu_hour if bid and bid.max_price_per_gpu_hour else None
        to_win = ladder.rungs[0].price_per_gpu_hour if ladder and ladder.rungs else None
        nodes = tuple((st.value("k8s_nodes") or {}).values())
        line = ""
        if self.pod and self.pod in pods:
            p = pods[self.pod]
            owner = next(
                (o.get("name") for o in p["metadata"].get("ownerReferences") or () if o.get("kind") == "Job"), None
            )
            line = S.explain(
                p,
                job=jobs.get(owner) if owner else None,
                nodes=nodes,
                limit_price_ucredits=limit,
                price_to_win_ucredits=to_win,
            )
        else:
            waiting = [
                j
                for j in jobs.values()
                if not any(
                    (o.get("name") == j["metadata"]["name"])
                    for p in pods.values()
                    for o in p["metadata"].get("ownerReferences") or ()
                )
            ]
            if waiting:
                line = S.explain_job_without_pods(waiting[0], limit_price_ucredits=limit, price_to_win_ucredits=to_win)
        show_text(self.query_one("#explain", Static), Text(line, style="italic"))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        pod = event.row_key.value if event.row_key is not None else None  # (a row's key is its pod's name)
        if event.data_table.id != "pods" or pod is None or event.cursor_row != event.data_table.cursor_row:
            return  # (a highlight the cursor has since left: the table was redrawn, the selection moved)
        if pod != self._auto:
            self._want = []  # the human chose: an apply's new pods no longer take the selection
        if pod != self.pod:
            self.select(pod, settle=True)

    # ---- the log ------------------------------------------------------------------------------

    def select(self, pod: str, container: str | None = None, previous: bool = False, *, settle: bool = False) -> None:
        """Select ``pod``: its explanation at once, its log followed at once or, with ``settle`` (the human moving
        the selection), once the selection has rested FOLLOW_SETTLE seconds."""
        self.pod, self.container, self.previous = pod, container, previous
        if self.follower is not None:  # now: the old pod's lines must not reach the new pod's chart
            self.follower.stop()
            self.follower = None
        self._losses.clear()
        self._explain()
        if self._settle is not None:
            self._settle.stop()
            self._settle = None
        if settle:  # the old pod's lines go at once (one cheap repaint), the new pod's come when it rests
            from ..widgets.logpane import LogPane

            if (pane := self.query_one("#log", LogPane)).written:
                pane.clear()
            self._settle = self.set_timer(FOLLOW_SETTLE, self._settled)
        else:
            self.follow_log()

    def _settled(self) -> None:
        self._settle = None
        self.follow_log()

    def _pod(self) -> dict[str, Any] | None:
        return (self.store.value("k8s_pods") or {}).get(self.pod) if self.pod else None

    def kube_changed(self) -> None:
        """The app connected to the cluster anew (its endpoint moved): follow the selected pod through the
        new client, from the start of its log (the old cluster's log stays nowhere to resume from)."""
        if self.pod is not None and self.is_mounted:
            self.follow_log()

    @work(group="wl-log", exclusive=True, exit_on_error=False)
    async def follow_log(self) -> None:
        from ..widgets.logpane import LogPane

        pane = self.query_one("#log", LogPane)
        if self.follower is not None:
            self.follower.stop()
            self.follower = None
        self._losses.clear()  # (a batch of the old follower's may have landed since select)
        pane.clear()
        self._chart()
        kube = self.ncapp.flows.connect.kube
        if kube is None or self.pod is None:
            return

        pod = self.pod

        def on_losses(entries: list[str]) -> None:
            from ..logfollow import entry_text

            self._chart()
            self.ncapp.flows.recall.remember_loss_lines(pod, [entry_text(e) for e in entries])

        follower = log_follower(kube, pod, self.container, pane, self._losses, on_losses, previous=self.previous)
        self.follower = follower
        await follower.run()

    def _chart(self) -> None:
        show_losses(self.query_one("#loss-chart", Chart), self._losses)

    @property
    def pane(self) -> LogPane:
        from ..widgets.logpane import LogPane

        return self.query_one("#log", LogPane)

    def action_follow(self) -> None:
        pane = self.pane
        pane.action_toggle_follow()
        self.notify(f"Follow {'on' if pane.follow else 'off'}", timeout=1.5)

    def action_wrap(self) -> None:
        self.pane.action_toggle_wrap()

    def action_timestamps(self) -> None:
        self.pane.action_toggle_timestamps()

    def action_end(self) -> None:
        self.pane.action_jump_end()

    def action_filter(self) -> None:
        self.pane.action_filter()

    def action_previous(self) -> None:
        if self.pod:
            self.select(self.pod, self.container, not self.previous)
            self.notify("Previous container's log" if self.previous else "Current log", timeout=1.5)

    def action_container(self) -> None:
        p = self._pod()
        if not p or self.pod is None:  # (a pod is there only while one is selected)
            return
        names = [c["name"] for c in (p.get("spec") or {}).get("containers") or []]
        if len(names) > 1:
            i = names.index(self.container) if self.container in names else 0
            self.select(self.pod, names[(i + 1) % len(names)])
            self.notify(f"Container {self.container}", timeout=1.5)

    # ---- serve: talk to the model -------------------------------------------------------------

    def _service(self) -> str | None:
        """The serve recipe's service once the deployments behind it are READY (1/1)."""
        ep = ready_endpoint(self.store.value("k8s_deployments") or {})
        return ep.service if ep else None

    def action_prompt(self) -> None:
        ep = ready_endpoint(self.store.value("k8s_deployments") or {})
        if ep is None:
            self.notify("No serve endpoint is READY 1/1 yet.", timeout=4)
            return
        why = load_test_guard(self.store, self.ncapp.backend.now() if self.ncapp.backend else None)
        if why:  # the guide: send no requests of your own during the load test
            self.notify(why, severity="warning", timeout=10)
            return
        from .chat import ChatScreen

        cluster = self.store.value("cluster")
        self.app.push_screen(ChatScreen(ep, cluster.name if cluster is not None else "<cluster>"))

    # ---- stop ---------------------------------------------------------------------------------

    def action_stop(self) -> None:
        p = self._pod()
        jobs, deps = self.store.value("k8s_jobs") or {}, self.store.value("k8s_deployments") or {}
        recipe = pod_recipe(p, jobs, deps, self.store.value("catalog") or ()) if p is not None else None
        if recipe is None and p is None and len(jobs) + len(deps) >= 1:  # no pod selected: the one recipe there is
            from ..lifecycle import recipe_of

            found = {recipe_of(o, self.store.value("catalog") or ()) for o in (*jobs.values(), *deps.values())}
            recipe = found.pop() if len(found) == 1 else None
        if recipe is not None:  # the whole recipe: everything it created, after one question
            self.ncapp.flows.lifecycle.stop(recipe)
            return
        target: tuple[str, str] | None = None
        if p is not None:
            owners = p["metadata"].get("ownerReferences") or []
            job = next((o["name"] for o in owners if o.get("kind") == "Job"), None)
            rs = next((o["name"] for o in owners if o.get("kind") == "ReplicaSet"), None)
            if job:
                target = ("jobs", job)
            elif rs:
                dep = next((d for d in deps if rs.startswith(d + "-")), None)
                if dep:
                    target = ("deployments", dep)
        if target is None and len(jobs) + len(deps) == 1:
            target = ("jobs", next(iter(jobs))) if jobs else ("deployments", next(iter(deps)))
        if target is None:
            self.notify("Select a pod of the job or deployment to stop.", timeout=4)
            return
        kind, name = target
        what = "job" if kind == "jobs" else "deployment"

        def done(yes: bool | None) -> None:
            if yes:
                self.stop_it(kind, name)

        self.app.push_screen(
            ConfirmModal(
                f"Stop {what}/{name}?",
                f"Delete {what}/{name} and its pods. Its node stays held a few "
                f"minutes for a next job, then goes back to the market.\n"
                f"The standing limit price is not changed: withdraw it on Lease (5).",
                yes="Stop it",
                no="Keep",
            ),
            done,
        )

    def action_load_test(self, _offered: str = "") -> None:
        self.ncapp.flows.lifecycle.load_test()

    def action_tune_again(self) -> None:
        self.ncapp.flows.lifecycle.tune_again()

    def action_restart_serve(self) -> None:
        self.ncapp.flows.lifecycle.restart_serve()

    @work(group="wl-stop", exclusive=True, exit_on_error=False)
    async def stop_it(self, kind: str, name: str) -> None:
        from ..kube.client import KubeError

        kube = self.ncapp.flows.connect.kube
        if kube is None:
            return
        try:
            await kube.delete(kind, name)
        except KubeError as e:
            self.notify(f"Could not stop {name}: {e}", severity="error", timeout=8)
            return
        self.notify(f"Stopped {kind[:-1]}/{name}.")
