"""Nodes over ssh, as Workloads shows them: a VM cluster's allocations (and, later, a Slurm login node or the
research node): each node's state, GPUs and ssh login, what ncui started on it; connect (host key asked the
first time), run the starter or the human's own image detached, follow its log with the loss chart (resumed
after a dropped connection with nothing lost or repeated), stop it with ``docker rm -f``.

The app's ssh connections are ``NodeFlow.sessions`` (``flows/node.py``, its pool in ``remote/sessions.py``):
``NodesPane`` and the release flow's copy-off share them; the connect's host-key question and the copy-off are
the flow's. ``NodeRow`` is what the pane lists; ``vm_rows(store)`` makes them of the VM capacity. Everything
from a node is cleaned (``textsafe``) before the screen: the followers clean log lines, this module the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Label, Static

from ..flows.node import STARTER_NAME, CopyBoard, vm_rows
from ..logfollow import LossCurve
from ..remote.sessions import NodeRow, NodeRun
from ..textsafe import clean
from ..widgets.chart import Chart
from .base import fit_columns
from .losses import LOG_BATCH_INTERVAL, LOSS_CHART_INTERVAL, show_losses
from .modals import ConfirmModal

if TYPE_CHECKING:
    from ..app import NCApp
    from ..flows.node import NodeFlow
    from ..remote.node import _RemoteFollower
    from ..remote.runner import SshRunner
    from ..remote.sessions import NodeSessions
    from ..store import Store
    from ..widgets.logpane import LogPane


# ---- the nodes --------------------------------------------------------------------------------------


def node_rows(store: Store) -> list[NodeRow] | None:
    """The nodes of what the human has: a public-research organization's node, else the VM cluster's."""
    from .research import research_org, research_rows

    return research_rows(store) if research_org(store) else vm_rows(store)


def _remember_losses(app: Any, owner: str, entries: list[str]) -> None:
    """A log pane saw loss lines: the first ones are remembered for the report (``RecallFlow.remember_loss_lines``)."""
    from ..logfollow import entry_text

    app.flows.recall.remember_loss_lines(owner, [entry_text(e) for e in entries])


# ---- the forms ---------------------------------------------------------------------------------------


class RunImageModal(ModalScreen["tuple[str, str, str] | None"]):
    """Your own image and command, run detached on the node: (image, command, name), judged as typed."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    RunImageModal { align: center middle; }
    RunImageModal > Vertical { width: 90%; max-width: 90; height: auto; max-height: 100%; border: thick $accent;
                               background: $surface; padding: 0 2; overflow-y: auto; }
    RunImageModal Horizontal { height: auto; align-horizontal: right; }
    RunImageModal Button { margin-left: 2; }
    """

    def __init__(self, node: str, image: str = "", name: str = "my-job") -> None:
        super().__init__()
        self.node, self.image, self.name_ = node, image, name

    def compose(self) -> ComposeResult:
        from ..widgets.field import Field

        with Vertical():
            yield Static(f"[b]Your container on {self.node}, detached, on every GPU[/b]", markup=True)
            yield Label("Image")
            yield Field(value=self.image, placeholder="e.g. ghcr.io/you/trainer:1.2", id="image")
            yield Label("Command (run with sh -c; blank: the image's own)")
            yield Field(placeholder="e.g. python train.py --epochs 3", id="command")
            yield Label("Container name")
            yield Field(value=self.name_, id="name")
            yield Static("", id="why")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button("Review (Enter)", id="ok", variant="primary")

    def on_mount(self) -> None:
        from textual.widgets import Input

        self.query_one("#command" if self.image else "#image", Input).focus()

    def _values(self) -> tuple[str, str, str]:
        from textual.widgets import Input

        image, command, name = (self.query_one(f"#{i}", Input).value.strip() for i in ("image", "command", "name"))
        return image, command, name

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def on_input_submitted(self, _event: Any) -> None:
        self._submit()

    def _submit(self) -> None:
        from ..remote.node import BadInput, docker_run_command

        image, command, name = self._values()
        try:
            docker_run_command(image, command, name)
        except BadInput as e:
            self.query_one("#why", Static).update(Text(f"✗ {clean(str(e))}", style="bold red"))
            return
        self.dismiss((image, command, name))

    def action_cancel(self) -> None:
        self.dismiss(None)


class CopyOffModal(ModalScreen["tuple[str, str] | None"]):
    """Before a release: which folder of the node(s) to copy off, and where to. (remote, local) or None (skip)."""

    BINDINGS = [Binding("escape", "cancel", "Skip")]
    DEFAULT_CSS = """
    CopyOffModal { align: center middle; }
    CopyOffModal > Vertical { width: 90%; max-width: 90; height: auto; max-height: 100%; border: thick $warning;
                              background: $surface; padding: 0 2; overflow-y: auto; }
    CopyOffModal Horizontal { height: auto; align-horizontal: right; }
    CopyOffModal Button { margin-left: 2; }
    """

    def __init__(self, nodes: list[str], remote: str = "~/first-job", local: str = "", intro: str = "") -> None:
        super().__init__()
        self.nodes, self.remote, self.intro = nodes, remote, intro
        self.local = local or ("~/ncui-results/{node}" if len(nodes) > 1 else f"~/ncui-results/{nodes[0]}")

    def compose(self) -> ComposeResult:
        from ..widgets.field import Field

        with Vertical():
            yield Static("[b]Copy files off first?[/b]", markup=True)
            yield Static(
                self.intro
                or f"A release destroys every node with its disk: {', '.join(self.nodes)}. Copy a folder off "
                + (
                    "each node first (SFTP), or skip. {node} in the destination is the node's id; "
                    if len(self.nodes) > 1
                    else "it first (SFTP), or skip. "
                )
                + "The folder lands inside the destination.",
                markup=False,
            )
            yield Label("On the node" if self.intro else "Folder on the node")
            yield Field(value=self.remote, id="remote")
            yield Label("Into (on this machine)")
            yield Field(value=self.local, id="local")
            yield Static("", id="why")
            with Horizontal():
                yield Button("Skip (Esc)", id="skip")
                yield Button("Copy (Enter)", id="copy", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#copy", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "copy":
            self._submit()
        else:
            self.dismiss(None)

    def on_input_submitted(self, _event: Any) -> None:
        self._submit()

    def _submit(self) -> None:
        from textual.widgets import Input

        remote, local = (self.query_one(f"#{i}", Input).value.strip() for i in ("remote", "local"))
        if not remote or not local:
            self.query_one("#why", Static).update(Text("✗ Give both folders (or Esc skips).", style="bold red"))
            return
        self.dismiss((remote, local))

    def action_cancel(self) -> None:
        self.dismiss(None)


class CopyProgressModal(ModalScreen[None]):
    """A copy off a node: bytes so far, then where it went (or why not); Enter goes on once it is done."""

    BINDINGS = [Binding("escape,enter", "close", "Continue")]
    DEFAULT_CSS = """
    CopyProgressModal { align: center middle; }
    CopyProgressModal > Vertical { width: 90%; max-width: 90; height: auto; border: round $accent;
                                   background: $surface; padding: 1 2; }
    """

    def __init__(self, title: str, board: CopyBoard | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.board = board  # the flow's: the bytes so far, then what was copied (flows/node.py)
        self.done = False
        self.seen: list[tuple[int, int]] = []  # every (bytes done, bytes in all) shown

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{clean(self.title_text)}[/b]", markup=True)
            yield Static("Starting…", id="progress", markup=False)
            yield Static("", id="then", markup=False)

    def on_mount(self) -> None:
        if self.board is not None:
            self.board.watch(self.progress, self.finish)

    def progress(self, done: int, total: int) -> None:
        self.seen.append((done, total))
        if self.is_mounted:
            pct = f" ({100 * done // total}%)" if total else ""
            self.query_one("#progress", Static).update(f"{done:,} of {total:,} bytes{pct}")

    def finish(self, text: str | Text) -> None:
        self.done = True
        if self.is_mounted:
            self.query_one("#then", Static).update(text)

    def action_close(self) -> None:
        if self.done:
            self.dismiss(None)


# ---- the pane ----------------------------------------------------------------------------------------


def node_log_state(state: str, follower: _RemoteFollower) -> str:
    """The line under a node's log for its follower's state ('' while lines simply flow)."""
    if state == "resuming":
        why = f" ({follower.error})" if follower.error else ""
        return f"log: the connection dropped{why}; reconnecting, resuming where it stopped (no line lost or repeated)"
    if state == "failed":
        return f"log stopped: {follower.error or 'the node refused the connection'}"
    if state == "ended":
        return f"log ended: {follower.end_reason}"
    return ""


class NodesPane(Vertical):
    """The node view (see the module's docstring). ``rows()`` lists the nodes; the app's ``nodes.sessions``
    holds the connections."""

    # The footer fits 80 columns with ? Help, r Refresh and q Quit: the keys the line above the table names
    # (a, c on a research node) and the log's f, / (Workloads' keys, in its help) answer without a footer entry.
    BINDINGS = [
        Binding("o", "connect", "Connect"),
        Binding("n", "starter", "Starter"),
        Binding("u", "own", "Image"),  # your own image and command
        Binding("x", "stop", "Stop"),
        Binding("l", "copy_login", "Copy login", show=False),
        Binding("a", "add_node", "Add node", show=False),  # a research node typed in as user@ip
        Binding("c", "copy_off", "Copy off", show=False),  # a research node's checkpoint and log
        Binding("f", "pane('toggle_follow')", "Follow", show=False),
        Binding("slash", "pane('filter')", "Filter", show=False),
    ]
    RUN_CHECK = 5.0  # seconds between looks at whether a node's run still runs (docker ps)
    DEFAULT_CSS = """
    NodesPane { height: 1fr; }
    NodesPane #nodes-state, NodesPane #node-explain { height: auto; }
    NodesPane #node-explain { color: $text-muted; }
    NodesPane #nodes { height: auto; max-height: 6; }
    NodesPane #node-log-row { height: 1fr; min-height: 8; }
    NodesPane #node-log { width: 2fr; height: 1fr; }
    NodesPane #node-loss-chart { width: 1fr; height: 1fr; min-height: 8; }
    """
    # LOGIN takes what is left: at 80 columns the whole "ssh -p 41611 ubuntu@127.10.0.4"
    COLUMNS = (("NODE", 12), ("STATE", 12), ("GPUS", 4), ("LOGIN", 30), ("RUNS", 9))

    def __init__(self, store: Store, rows: Callable[[Store], list[NodeRow] | None] = node_rows, **kw: Any) -> None:
        super().__init__(**kw)
        self.store, self.rows = store, rows
        self.node: str | None = None  # the selected node's id
        self.follower: _RemoteFollower | None = None
        self.following: str | None = None  # the node whose log the pane shows
        self._shown: list[NodeRow] = []
        self._runs_shown: list[str] = []
        self.losses = LossCurve()
        self.display = False  # shown by Workloads on a VM cluster

    @property
    def flow(self) -> NodeFlow:
        return cast("NCApp", self.app).flows.nodes  # Widget.app is an App[object]: a view lives in NCApp only

    @property
    def sessions(self) -> NodeSessions:
        return self.flow.sessions

    def compose(self) -> ComposeResult:
        from ..widgets.logpane import LogPane

        yield Static(id="nodes-state")
        yield DataTable(id="nodes", cursor_type="row")
        yield Static(id="node-explain")
        with Horizontal(id="node-log-row"):
            yield LogPane(id="node-log")
            yield Chart(id="node-loss-chart", min_interval=LOSS_CHART_INTERVAL)

    def on_mount(self) -> None:
        self._columns()
        self._chart()

    def _research(self) -> bool:
        from .research import research_org

        return research_org(self.store)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("add_node", "copy_off"):
            return self._research()
        return True

    def _columns(self) -> bool:
        if fit_columns(self.query_one("#nodes", DataTable), self.COLUMNS, flex=3, flex_min=20):
            self._shown = []
            return True
        return False

    def on_resize(self) -> None:
        if self._columns():
            self.refresh_view()

    @property
    def pane(self) -> LogPane:
        from ..widgets.logpane import LogPane

        return self.query_one("#node-log", LogPane)

    def table(self) -> DataTable[Any]:
        return self.query_one("#nodes", DataTable)

    def focus_target(self) -> DataTable[Any]:
        return self.table()

    def selected(self) -> NodeRow | None:
        return next((r for r in self._shown if r.id == self.node), None)

    # ---- drawing ----------------------------------------------------------------------------------

    def refresh_view(self) -> None:
        rows = self.rows(self.store)
        state = self.query_one("#nodes-state", Static)
        self.refresh_bindings()
        if rows is None:
            if self._research():
                why = self.store.get("research").staleness(self.store.now())
                state.update(Text(why or "Reading the research node's status…", style="dim"))
                return
            cap = self.store.get("vm_capacity")
            state.update(Text(cap.staleness(self.store.now()) or "Reading the VM capacity…", style="dim"))
            return
        live = {r.id for r in rows}
        for gone in {*self.sessions.runners, *([self.following] if self.following else [])} - live:
            self._gone(gone)
        if not rows and self._research():
            from .research import NO_PLACE, box_status, where_from

            s = box_status(self.store)
            state.update(Text(f"No node: {where_from(s)}. a adds one." if s is not None else f"No node. {NO_PLACE}"))
        elif not rows:
            state.update(
                Text(
                    "No node: declare capacity on Lease (5, then d); a granted node shows here once it is up.",
                    style="dim",
                )
            )
        elif self._research():
            state.update(
                Text(
                    "Your research node (Marshall assigns and releases it). Enter connects; n starter; x stops it; "
                    "c copies results off; a adds a node by user@ip.",
                    style="dim",
                )
            )
        else:
            active = sum(r.reachable for r in rows)
            state.update(
                Text(
                    f"{len(rows)} node{'s' if len(rows) != 1 else ''}, {active} up. Enter connects; n runs the "
                    "starter (nanoGPT), u your own image; x stops it.",
                    style="dim",
                )
            )
        table = self.table()
        runs = [self._runs_label(r) for r in rows]  # the connection's state now, not when the rows last changed
        if rows != self._shown or runs != self._runs_shown:
            self._shown, self._runs_shown = rows, runs
            table.clear()
            for r, label in zip(rows, runs, strict=True):
                table.add_row(
                    Text(r.id),
                    Text(r.state, style="green" if r.state == "active" else "yellow"),
                    Text(str(r.gpus) if r.gpus else "?"),
                    Text(r.login or "—"),
                    Text(label),
                    key=r.id,
                )
            if rows:
                ids = [r.id for r in rows]
                table.move_cursor(row=ids.index(self.node) if self.node in ids else 0)
                if self.node not in ids:
                    self.node = ids[0]
        self._explain()

    def _runs_label(self, r: NodeRow) -> str:
        """The RUNS column: what ncui started there, else "connected" only while a connection is open."""
        run = self.sessions.runs.get(r.id)
        return run.label() if run else ("connected" if self.sessions.connected(r.id) else "—")

    def _redraw_rows(self) -> None:
        self._shown = []
        self.refresh_view()

    def _explain(self) -> None:
        r = self.selected()
        t = Text()
        if r is not None:
            gpus = f"{r.gpus}× {r.gpu_model}" if r.gpus else "GPUs unknown"
            when = f", {'assigned' if r.research else 'granted'} {r.since}" if r.since else ""
            t.append(f"{r.id}: {gpus}{when}" + (f" ({r.note})" if r.note and r.reachable else ""))
            if not r.reachable:
                t.append(f". {r.note}." if r.note else f". {r.state}: its ssh comes up once it is active.")
            else:
                t.append(f". {r.login}")
                run = self.sessions.runs.get(r.id)
                if run is not None:
                    what = ": the starter (nanoGPT, stock PyTorch image)" if run.starter else f" ({run.image or '?'})"
                    t.append(f"\nRuns {run.name}{what}. x stops it (docker rm -f {run.name}).")
                elif self.sessions.connected(r.id):
                    t.append("\nConnected. n runs the starter (nanoGPT); u your own image and command.")
                else:
                    t.append("\nEnter (or o) connects over ssh with your keys; l copies the ssh command.")
            if r.research:
                from ..flows.node import METER

                t.append(f"\n{METER} ncui never releases it.", style="yellow")
        self.query_one("#node-explain", Static).update(t)

    def _chart(self) -> None:

        show_losses(self.query_one("#node-loss-chart", Chart), self.losses)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value if event.row_key is not None else None
        if event.data_table.id == "nodes" and key is not None and key != self.node:
            self.node = key
            self._explain()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id == "nodes":
            event.stop()
            self.action_connect()

    def _gone(self, node_id: str) -> None:
        if self.following == node_id:
            if self.follower is not None:
                self.follower.stop()
            self.follower = self.following = None
            self.pane.set_status(f"log: {node_id} is gone (released or reclaimed); its log so far stays above")
        if node_id in self.sessions.runners:
            # (ui.start: the function, not its coroutine, which a closing app that never starts it leaves unawaited)
            cast("NCApp", self.app).ui.start(partial(self.sessions.forget, node_id), name="node-forget")

    # ---- connect -----------------------------------------------------------------------------------

    def _target(self) -> NodeRow | None:
        r = self.selected()
        if r is None:
            self.notify("No node is selected.", timeout=4)
        elif not r.reachable:
            self.notify(f"{r.id} is {r.state}: its ssh comes up once it is active.", timeout=5)
            return None
        return r

    def action_pane(self, name: str) -> None:
        pane = self.pane
        getattr(pane, f"action_{name}")()
        if name == "toggle_follow":
            self.notify(f"Follow {'on' if pane.follow else 'off'}", timeout=1.5)

    # The log's keys as Workloads hands them on (its f, /, w, t and G: screens/workloads.py); f and / are bound
    # here too, for the keyboard on this pane.
    def action_follow(self) -> None:
        self.action_pane("toggle_follow")

    def action_filter(self) -> None:
        self.action_pane("filter")

    def action_wrap(self) -> None:
        self.action_pane("toggle_wrap")

    def action_timestamps(self) -> None:
        self.action_pane("toggle_timestamps")

    def action_end(self) -> None:
        self.action_pane("jump_end")

    def action_copy_login(self) -> None:
        """The selected node's ``ssh`` command, to the clipboard where the terminal allows (OSC 52)."""
        row = self.selected()
        if row is None or not row.login:
            self.notify("No node is up to log in to yet.", timeout=4)
            return
        self.app.copy_to_clipboard(row.login)
        self.notify(f"Copied: {row.login}", timeout=5)

    def action_connect(self) -> None:
        r = self._target()
        if r is not None:
            self.connect(r)

    async def _connected(self, r: NodeRow) -> SshRunner | None:
        """The node's runner, connected (the host key asked about the first time); None when it failed (said)."""
        return await self.flow.connected(r, failed=self._redraw_rows)

    @work(group="node-connect", exclusive=True, exit_on_error=False)
    async def connect(self, r: NodeRow) -> None:
        from ..remote.runner import RemoteError

        was = self.sessions.connected(r.id)
        runner = await self._connected(r)
        if runner is None:
            return
        if not was:
            self.notify(f"Connected to {r.id} ({runner.where}).", timeout=4)
        if r.id not in self.sessions.runs:  # what runs there already (started by an earlier ncui, or by hand)
            from ..remote.node import docker_ps

            try:
                res = await runner.run("docker ps", timeout=30)
            except RemoteError:
                res = None
            running = docker_ps(res.stdout) if res is not None and res.ok else {}
            if STARTER_NAME in running:
                self.sessions.runs[r.id] = NodeRun(STARTER_NAME, True)
            elif running:
                name, image = next(iter(running.items()))
                self.sessions.runs[r.id] = NodeRun(name, False, image)
        self._redraw_rows()
        if r.id in self.sessions.runs and (self.following != r.id or self.follower is None):
            self.follow(r)
            self._watch(r)

    # ---- run -----------------------------------------------------------------------------------------

    def action_starter(self) -> None:
        r = self._target()
        if r is not None:
            self.run_starter(r)

    def action_own(self) -> None:
        r = self._target()
        if r is not None:
            self.run_own(r)

    @work(group="node-run", exclusive=True, exit_on_error=False)
    async def run_starter(self, r: NodeRow) -> None:
        if await self.flow.run_starter(r, failed=self._redraw_rows):
            self._started(r)

    @work(group="node-run", exclusive=True, exit_on_error=False)
    async def run_own(self, r: NodeRow) -> None:
        if await self.flow.run_own(r, failed=self._redraw_rows):
            self._started(r)

    def _started(self, r: NodeRow) -> None:
        self._redraw_rows()
        self.follow(r, fresh=True)
        self._watch(r)

    # ---- follow --------------------------------------------------------------------------------------

    def follow(self, r: NodeRow, fresh: bool = False) -> None:
        """Follow what runs on ``r`` into the pane: the starter's file (``tail -F``, resumed by line) or the
        container's log (``docker logs -f -t``, resumed ``--since``), loss lines into the chart."""
        from ..remote.node import NODE_LOG, ContainerLogFollower, FileFollower

        run = self.sessions.runs.get(r.id)
        held = self.sessions.runners.get(r.id)
        if run is None or held is None:
            return
        if self.follower is not None:
            self.follower.stop()
        pane = self.pane
        pane.clear()
        pane.set_status("")
        self.losses.clear()
        self._chart()

        def on_entries(entries: list[str]) -> None:
            pane.write_entries(entries)
            if self.losses.add(entries, entries=True):
                self._chart()
                _remember_losses(self.app, run.name, entries)

        def on_state(state: str) -> None:
            pane.set_status(node_log_state(state, follower))

        follower: _RemoteFollower
        if run.starter:
            follower = FileFollower(
                held[1], NODE_LOG, on_entries=on_entries, on_state=on_state, batch_interval=LOG_BATCH_INTERVAL
            )
        else:
            follower = ContainerLogFollower(
                held[1], run.name, on_entries=on_entries, on_state=on_state, batch_interval=LOG_BATCH_INTERVAL
            )
        pane.source = follower.lines
        self.follower, self.following = follower, r.id
        self.sessions.followers[r.id] = follower
        self._follow(follower)

    @work(group="node-log", exclusive=True, exit_on_error=False)
    async def _follow(self, follower: _RemoteFollower) -> None:
        await follower.run()

    # ---- stop ----------------------------------------------------------------------------------------

    def action_stop(self) -> None:
        r = self.selected()
        run = self.sessions.runs.get(r.id) if r is not None else None
        if r is None or run is None:
            self.notify("Nothing ncui knows of runs on this node (Enter connects and looks).", timeout=5)
            return
        self.stop_run(r, run)

    @work(group="node-run", exclusive=True, exit_on_error=False)
    async def stop_run(self, r: NodeRow, run: NodeRun) -> None:
        if not await self.flow.stop_run(r, run, failed=self._redraw_rows, still_runs=lambda: self._watch(r)):
            return
        if self.following == r.id and self.follower is not None:
            f, self.follower = self.follower, None
            if not f.ended:  # a file's tail -F runs on; a container's log ends by itself
                f.stop()
            self.pane.set_status(f"log ended: {run.name} was stopped (docker rm -f {run.name})")
        self._redraw_rows()

    # ---- a research node: add one by hand, notice the run's end, copy the results off ------------------

    def action_add_node(self) -> None:
        self.add_node()

    @work(group="node-add", exclusive=True, exit_on_error=False)
    async def add_node(self) -> None:
        login = await self.flow.add_node()
        if login is None:
            return
        self.node = f"{login.user}@{login.host}"
        self.notify(f"Added {login}. Enter connects (its host key is checked first).", timeout=5)

    def _watch(self, r: NodeRow) -> None:
        """Look every ``RUN_CHECK`` seconds whether what ncui runs on ``r`` still runs (the starter is time-boxed;
        any run may end by itself): the screen never says it runs once it ended. One watch per node."""
        if r.id in self.sessions.runs:
            cast("NCApp", self.app).ui.start(
                partial(self._watch_run, r), name="node-watch", group=f"node-watch:{r.id}", exclusive=True
            )

    async def _watch_run(self, r: NodeRow) -> None:
        """The run ended by itself (time-boxed, or it finished): the last lines in, the log stopped, then on a
        research node the starter's copy-off offered (a VM node's release offers it). Ends quietly when the run
        is stopped (x) or the node goes."""
        import asyncio
        import time

        from ..remote.node import NODE_LOG, docker_ps
        from ..remote.runner import RemoteError

        while True:
            await asyncio.sleep(self.RUN_CHECK)
            run, held = self.sessions.runs.get(r.id), self.sessions.runners.get(r.id)
            if run is None or held is None or run.stopping:
                return
            try:
                res = await held[1].run("docker ps", timeout=30)
            except RemoteError:
                continue  # dropped: the follower reconnects; look again next time
            if not res.ok or run.name in docker_ps(res.stdout):
                continue
            if run.stopping or self.sessions.runs.get(r.id) is not run:
                return  # stopped with x meanwhile (stop_run says so), or another run started
            break
        follower = self.follower if self.following == r.id else None
        deadline = time.monotonic() + 10
        if run.starter:  # every line the run wrote, into the pane before its follower (tail -F) stops
            try:
                lines = int((await held[1].run(f"cat {NODE_LOG} | wc -l", timeout=30)).stdout)
            except (RemoteError, ValueError):
                lines = 0
            while follower is not None and follower.total < lines and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
        else:  # docker logs -f ends by itself with its container, every line read
            while follower is not None and not follower.ended and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
        self.sessions.runs.pop(r.id, None)
        if follower is not None and self.follower is follower:
            self.follower = None
            if not follower.ended:
                follower.stop()
            self.pane.set_status(f"log ended: the run ended ({run.name} exited)")
        self._redraw_rows()
        if not (r.research and run.starter):
            self.notify(
                f"{run.name} on {r.id} ran to its end. The node stays {'assigned' if r.research else 'granted'} and "
                f"billed until it is released {r.release_hint}"
                + ("." if r.research else ", which offers to copy files off first."),
                timeout=15,
            )
            return
        if await self.app.push_screen_wait(
            ConfirmModal(
                f"The run on {r.id} ended",
                f"{STARTER_NAME} ran to its end. The node's disk is scratch and dies with the lease: copy the "
                "checkpoint (~/first-job/nanoGPT/out-shakespeare-char) and the log (~/first-job/nanogpt.out) off it "
                f"now? The node stays assigned and billed until it is released {r.release_hint}.",
                yes="Copy them off",
                no="Not now (c later)",
                default="yes",
            )
        ):
            await self._copy_off(r)

    def action_copy_off(self) -> None:
        r = self._target()
        if r is not None:
            self.copy_off(r)

    @work(group="node-copy", exclusive=True, exit_on_error=False)
    async def copy_off(self, r: NodeRow) -> None:
        await self._copy_off(r)

    async def _copy_off(self, r: NodeRow) -> None:
        await self.flow.results_copy_off(r)
