"""The Slurm path on screen (the guide's "Slurm cluster" section). The sign-in and jobs loops, the first job and a
cancel are ``ncui/flows/slurm.py`` (``SlurmFlow``, the App's ``slurm``).

``SlurmPanel`` is Workloads on a Slurm cluster: the jobs (id, name, state, reason in plain words, elapsed,
node), the selected job's ``nanogpt-<id>.out`` followed in a log pane (resumed after a drop with nothing lost
or repeated) with the loss chart. ``slurm_card`` is Account's line on what to do next.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from ..logfollow import LossCurve
from ..textsafe import clean
from ..widgets.chart import Chart
from .base import fit_columns
from .losses import LOG_BATCH_INTERVAL, LOSS_CHART_INTERVAL, show_losses

if TYPE_CHECKING:
    from ..api import models as m
    from ..app import NCApp
    from ..flows.slurm import SlurmFlow
    from ..remote.node import FileFollower
    from ..remote.slurm import CertCheck, SlurmJob
    from ..store import Store
    from ..widgets.logpane import LogPane


def slurm_card(store: Store, ref: m.ClusterRef, *, demo: bool = False, now: datetime | None = None) -> Text:
    """Account's Slurm card: the sign-in (as of ``now``, the certificate's clock) and what to do next."""
    t = Text()
    t.append("Slurm: ", style="bold")
    s = store.get("slurm_signin")
    check: CertCheck | None = s.value
    if check is not None and now is not None:
        check = check.at(now)
    if check is None:
        t.append_text(Text(s.error) if s.error else Text(f"checking the sign-in to {ref.name}…", style="dim"))
        return t
    if not check.ok:
        t.append(check.message, style="bold yellow")
        if demo:
            t.append("\nIn the demo, L plays your slurm-login (the box signs you in).", style="bold")
        return t
    t.append(check.message, style="green")
    jobs = store.value("slurm_jobs")
    if jobs:
        t.append(f"\n{len(jobs)} job(s) in the queue: Workloads (4) shows them and follows the log.")
    else:
        t.append("\nNext: Workloads (4), then n runs the first job (prepare.sh, then sbatch; asked first).")
    return t


# ---- Workloads on a Slurm cluster -----------------------------------------------------------------------


class SlurmPanel(Vertical):
    """The jobs of ``squeue --me``, the selected one explained, its log followed with the loss chart."""

    DEFAULT_CSS = """
    SlurmPanel { height: 1fr; }
    SlurmPanel #slurm-state, SlurmPanel #slurm-explain { height: auto; }
    SlurmPanel #slurm-explain { color: $text-muted; }
    SlurmPanel #slurm-jobs { height: auto; max-height: 8; }
    SlurmPanel #slurm-log-row { height: 1fr; min-height: 8; }
    SlurmPanel #slurm-log { width: 2fr; height: 1fr; }
    SlurmPanel #slurm-chart { width: 1fr; height: 1fr; min-height: 8; }
    """
    BINDINGS = [
        Binding("n", "first_job", "First job"),
        Binding("x", "cancel", "Cancel job"),
        # f, / and w: in the help, off the footer (it keeps ? Help, r Refresh and q Quit at 80 columns), as on a node
        Binding("f", "pane('toggle_follow')", "Follow", show=False),
        Binding("slash", "pane('filter')", "Filter", show=False),
        Binding("w", "pane('toggle_wrap')", "Wrap", show=False),
        Binding("G", "pane('jump_end')", "End", show=False),
    ]
    # widths: TIME holds squeue's D-HH:MM:SS, NODE a name like plover-gpu-003, STATE CONFIGURING (80 columns: the
    # reason is what gives way, and the line under the table says it in full)
    COLUMNS = (("JOBID", 8), ("NAME", 10), ("STATE", 11), ("TIME", 10), ("NODE", 14), ("REASON", 20))

    def __init__(self, store: Store, *, id: str) -> None:
        super().__init__(id=id)
        self.store = store
        self.job: str | None = None  # the selected job's id
        self.follower: FileFollower | None = None
        self.losses = LossCurve()
        self._rows: list[tuple[str, ...]] | None = None
        self._ended: dict[str, SlurmJob | None] = {}  # a job that left the queue: how it ended (None: not known)
        self._signin_said = ""

    def compose(self) -> ComposeResult:
        from ..widgets.logpane import LogPane

        yield Static(id="slurm-state")
        yield DataTable(id="slurm-jobs", cursor_type="row")
        yield Static(id="slurm-explain")
        with Horizontal(id="slurm-log-row"):
            yield LogPane(id="slurm-log")
            yield Chart(id="slurm-chart", min_interval=LOSS_CHART_INTERVAL)

    def on_mount(self) -> None:
        self._columns()
        self._chart()
        self.set_interval(1.0, self._tick_signin)

    def _tick_signin(self) -> None:
        """The sign-in line ticks: its "… left" counted down (redrawn when the words change)."""
        check: CertCheck | None = self.store.value("slurm_signin")
        if check is None or check.valid_before is None:
            return
        said = check.at(self._flow().cert_now()).message
        if said != self._signin_said:
            self._signin_said = said
            self.refresh_view()

    def _columns(self) -> bool:
        if fit_columns(self.query_one("#slurm-jobs", DataTable), self.COLUMNS, flex_min=8):
            self._rows = None
            return True
        return False

    def on_resize(self) -> None:
        if self._columns():
            self.refresh_view()

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one("#slurm-jobs", DataTable)

    def focus_target(self) -> DataTable[Any]:
        return self.table

    def _app(self) -> NCApp:
        return cast("NCApp", self.app)  # (Widget.app is an App[object]: the panel lives in NCApp only)

    def _flow(self) -> SlurmFlow:
        return self._app().flows.slurm

    def shown(self, yes: bool) -> None:
        """Workloads shows (or hides) this panel: the jobs are read now; the log stops while hidden."""
        if yes:
            self._flow().wake()
        elif self.follower is not None:
            self.follower.stop()
            self.follower = None
            self.job = None

    # ---- rendering ---------------------------------------------------------------------------------

    def refresh_view(self) -> None:
        from ..remote.slurm import explain

        st = self.store
        ref = st.meta.get("cluster")
        state = self.query_one("#slurm-state", Static)
        sign = st.get("slurm_signin")
        check: CertCheck | None = sign.value
        if check is not None:
            check = check.at(self._flow().cert_now())  # the time left, counted down by the certificate's clock
        jobs_slice = st.get("slurm_jobs")
        jobs: tuple[SlurmJob, ...] | None = jobs_slice.value
        name = ref.name if ref is not None else "the cluster"
        if check is None or not check.ok:
            msg = (
                Text(check.message, style="bold yellow")
                if check
                else Text(f"Checking the sign-in to {name}…", style="dim")
            )
            state.update(msg)
        elif jobs is None:
            why = jobs_slice.staleness(st.now())
            state.update(
                Text(f"⚠ {why[0].upper()}{why[1:]}", style="bold red")
                if why
                else Text(f"Reading {name}'s queue (squeue --me)…", style="dim")
            )
        else:
            t = Text()
            why = jobs_slice.staleness(st.now())
            if why:
                t.append(f"⚠ {why[0].upper()}{why[1:]}\n", style="bold red")
            t.append(f"{check.message} ", style="dim")
            if not jobs:
                t.append("\nNo job of yours in the queue. n runs the first job (asked first).", style="bold")
            state.update(t)
        self._table(jobs or ())
        self._explain(jobs or (), explain)

    def _table(self, jobs: tuple[SlurmJob, ...]) -> None:
        table = self.table
        rows: list[tuple[str, ...]] = [
            (
                clean(j.id),
                clean(j.name),
                clean(j.state),
                clean(j.elapsed),
                clean(j.nodelist) or "-",
                clean(j.reason) if j.pending else "",
            )
            for j in jobs
        ]
        if rows != self._rows:
            self._rows = rows
            cursor = table.cursor_row
            table.clear()
            for r in rows:
                style = "green" if r[2] == "RUNNING" else "yellow" if r[2] == "PENDING" else ""
                table.add_row(*(Text(c, style=style if i == 2 else "") for i, c in enumerate(r)), key=r[0])
            ids = [r[0] for r in rows]
            want = self.store.meta.get("slurm_job")
            if want in ids:
                self.store.meta.pop("slurm_job", None)
                table.move_cursor(row=ids.index(want))
                self.select(want)
            elif self.job in ids:
                table.move_cursor(row=ids.index(self.job))
            elif rows:
                table.move_cursor(row=min(cursor, len(rows) - 1))
        if rows and (self.job is None or self.job not in [r[0] for r in rows]) and self.follower is None:
            self.select(rows[max(0, min(table.cursor_row, len(rows) - 1))][0])

    def _explain(self, jobs: tuple[SlurmJob, ...], explain: Callable[[SlurmJob], str]) -> None:
        job = next((j for j in jobs if j.id == self.job), None)
        if job is not None:
            line = f"job {clean(job.id)}: {explain(job)}"
        elif self.job is not None:
            if self.job not in self._ended:
                self._ended[self.job] = None
                self._look_up_end(self.job)
            ended = self._ended[self.job]
            said = ". Its log so far stays below."
            if ended is not None and not ended.active:
                how = explain(ended)
                said = f": {how[0].lower()}{how[1:]} Its log stays below."
            line = f"job {self.job} has left the queue{said}"
        else:
            line = ""
        self.query_one("#slurm-explain", Static).update(Text(line, style="italic"))

    @work(group="slurm-end", exit_on_error=False)
    async def _look_up_end(self, jid: str) -> None:
        """How a job that left ``squeue --me`` ended (COMPLETED, CANCELLED, FAILED…), while Slurm still lists it."""
        from ..remote import slurm
        from ..remote.runner import RemoteError

        flow = self._flow()
        st = flow.state
        if st is None:
            return
        now = flow.login_now()
        try:
            job = await slurm.job(await flow.runner(st), jid, now=now.timestamp() if now is not None else None)
        except RemoteError:  # (SlurmError too)
            return  # not known: the line says it left the queue, and no more
        self._ended[jid] = job
        self.refresh_view()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        jid = event.row_key.value if event.row_key is not None else None
        if event.data_table.id == "slurm-jobs" and jid is not None and jid != self.job:
            self.select(jid)

    # ---- the log -----------------------------------------------------------------------------------

    def select(self, jid: str) -> None:
        self.job = jid
        self.losses.clear()
        self.follow_log(jid)

    def _pane(self) -> LogPane:
        from ..widgets.logpane import LogPane

        return self.query_one("#slurm-log", LogPane)

    def _chart(self) -> None:

        show_losses(self.query_one("#slurm-chart", Chart), self.losses)

    @work(group="slurm-log", exclusive=True, exit_on_error=False)
    async def follow_log(self, jid: str) -> None:
        from ..remote import slurm
        from ..remote.runner import RemoteError

        pane = self._pane()
        if self.follower is not None:
            self.follower.stop()
            self.follower = None
        pane.clear()
        self._chart()
        app, flow = self._app(), self._flow()
        st = flow.state
        job = next((j for j in self.store.value("slurm_jobs") or () if j.id == jid), None)
        if st is None or job is None:
            return
        try:
            path = await slurm.find_output(await flow.runner(st), job)
        except RemoteError as e:
            pane.set_status(f"log: cannot find where job {jid} writes ({e})")
            return
        if self.job != jid:
            return

        def on_lines(lines: list[str]) -> None:
            pane.write_batch(lines)
            if self.losses.add(lines):
                self._chart()
                app.flows.recall.remember_loss_lines(jid, lines)  # the report's first loss lines

        def on_state(state: str) -> None:
            if state == "resuming":
                pane.set_status("log: the connection dropped; resuming where it stopped (no line lost or repeated)")
            elif state == "ended" and follower.end_reason:
                pane.set_status(f"log ended: {follower.end_reason}")
            else:
                pane.set_status("")

        runner = await flow.runner(st)
        follower = slurm.output_follower(
            runner, path, on_lines=on_lines, on_state=on_state, batch_interval=LOG_BATCH_INTERVAL
        )
        self.follower = follower
        pane.source = follower.lines
        pane.set_status(f"log: tail -F {clean(path)}")
        await follower.run()

    # ---- keys --------------------------------------------------------------------------------------

    def action_pane(self, what: str) -> None:
        getattr(self._pane(), f"action_{what}")()

    def action_first_job(self) -> None:
        self._flow().first_job()

    def action_cancel(self) -> None:
        job = next((j for j in self.store.value("slurm_jobs") or () if j.id == self.job), None)
        if job is None:
            self.app.notify("Select a job of yours to cancel.", timeout=4)
            return
        self._flow().cancel(job)
