"""The Slurm path in the app (the guide's "Slurm cluster" section): the sign-in, the first job, its jobs.

``SlurmFlowsMixin`` (mixed into NCApp) runs while the active cluster is a Slurm cluster:
- the sign-in: ``check_certificate`` at once and every minute while it is not valid (again when a valid one
  ends), into the ``slurm_signin`` slice (a ``CertCheck``); on the login node itself nothing to sign in to;
- the jobs: ``squeue --me`` every few seconds while Workloads shows them (slower otherwise) into ``slurm_jobs``
  (a tuple of ``SlurmJob``; a failed read keeps the last list, said stale by ``Slice.staleness``);
- the first job (``n``, asked first, with what is and is not known about its cost): ``prepare.sh`` when
  ``~/first-job`` lacks the starter, then ``sbatch --nodes=1 ~/first-job/nanogpt.sbatch``;
- a cancel (``x``, asked first): ``scancel``.
The runner comes from ``remote/login.slurm_runner`` (this machine on the login node, else ``ssh <cluster>``
through the human's ssh config: the box's NC_SSH_CONFIG in the demo); tests set ``slurm_runner_factory``.

``SlurmPanel`` is Workloads on a Slurm cluster: the jobs (id, name, state, reason in plain words, elapsed,
node), the selected job's ``nanogpt-<id>.out`` followed in a log pane (resumed after a drop with nothing lost
or repeated) with the loss chart. ``slurm_card`` is Account's line on what to do next.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from .modals import ConfirmModal

if TYPE_CHECKING:
    from textual.app import App

    from ..api import models as m
    from ..backend import Backend
    from ..remote.node import FileFollower
    from ..remote.runner import Runner
    from ..remote.slurm import CertCheck, SlurmJob
    from ..store import Store
    from ..widgets.logpane import LogPane

    _AppBase = App[None]
else:
    _AppBase = object

SIGNIN_RECHECK = 60.0  # seconds between sign-in checks while not signed in
JOBS_INTERVAL = 3.0  # squeue --me while Workloads shows the jobs
JOBS_IDLE = 30.0  # … while nobody looks
SLURM_SLICES = ("slurm_signin", "slurm_jobs")
SSH_CONFIG_ENV = "NC_SSH_CONFIG"  # an ssh_config to read the cluster's name from (what `ncui sim` prints)


def login_node_check() -> CertCheck:
    from ..remote.slurm import CertCheck

    return CertCheck(True, "login-node", "ncui runs on the login node itself: nothing to sign in to.")


def money_statement(store: Store, cluster: str) -> str:
    """What is and is not known about a Slurm job's cost, in the words the confirmation shows."""
    from ..formatting import fmt_rate
    from ..money import fmt_usd

    bal, summary = store.value("balance"), store.value("summary")
    balance = bal.balance_ucredits if bal is not None else summary.balance_ucredits if summary is not None else None
    lines = [
        f"Cost: ncui does not price Slurm jobs. Nothing is bid and no limit price is set for {cluster}: the job "
        "waits in the cluster's queue, and what it uses is counted by the cluster's own accounting, not by "
        "National Compute's market. ncui cannot show a price for it before it runs.",
    ]
    if balance is None:
        why = store.get("balance").staleness(store.now()) or "not read yet"
        lines.append(f"The organization's balance: unknown ({why}).")
    else:
        said = f"The organization's balance is {fmt_usd(balance)}"
        if bal is not None:
            said += (
                f"; its metered burn is {fmt_rate(bal.burn_ucredits_hr)} (the meter's last assessment, ~10 min behind)"
            )
        lines.append(said + ". Account (1) shows it as the job runs.")
    lines.append("It holds one whole node (the starter asks for every GPU of it) until it ends or you cancel it (x).")
    return "\n".join(lines)


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


class _State:
    """The active Slurm cluster's loops and runner."""

    def __init__(self, ref: m.ClusterRef) -> None:
        self.ref = ref
        self.runner: Runner | None = None
        self.lock = asyncio.Lock()
        self.wake = asyncio.Event()  # the jobs: read now
        self.recheck = asyncio.Event()  # the sign-in: check now
        self.signed_in = asyncio.Event()
        self.stopped = False


class SlurmFlowsMixin(_AppBase):
    if TYPE_CHECKING:
        store: Store
        backend: Backend | None

        def start_worker(
            self, work: Callable[[], Any], *, name: str, group: str = ..., exclusive: bool = ...
        ) -> Any: ...

    # Tests: the runner for a cluster (default: remote/login.slurm_runner) and the sign-in check.
    slurm_runner_factory: Callable[[m.ClusterRef], Awaitable[Runner]] | None = None
    slurm_signin_check: Callable[[m.ClusterRef], Awaitable[CertCheck]] | None = None
    slurm_login_node: bool | None = None  # the command line's say (None: NCUI_LOGIN_NODE, or detected)
    slurm_signin_interval = SIGNIN_RECHECK
    slurm_jobs_interval = JOBS_INTERVAL
    _slurm: _State | None = None

    # ---- the active cluster -------------------------------------------------------------------------

    def slurm_cluster(self, ref: m.ClusterRef | None) -> None:
        """The active cluster changed: stop the old Slurm loops; start them for a Slurm cluster."""
        old = self._slurm
        if old is not None and ref is not None and old.ref.name == ref.name and not old.stopped:
            return
        self._slurm_stop()
        self.store.clear(*SLURM_SLICES)
        if ref is None or ref.kind != "slurm":
            return
        st = self._slurm = _State(ref)
        self.start_worker(partial(self._slurm_signin_loop, st), name="slurm-signin", group="slurm")
        self.start_worker(partial(self._slurm_jobs_loop, st), name="slurm-jobs", group="slurm")

    def _slurm_stop(self) -> None:
        st, self._slurm = self._slurm, None
        if st is None:
            return
        st.stopped = True
        self.workers.cancel_group(self, "slurm")
        if st.runner is not None:
            runner = st.runner
            self.start_worker(runner.close, name="slurm-close", group="slurm-close")

    async def slurm_close(self) -> None:
        """On quit: end the loops and the connection (or the commands running here)."""
        st, self._slurm = self._slurm, None
        if st is not None:
            st.stopped = True
            if st.runner is not None:
                await st.runner.close()

    async def slurm_demo_login(self) -> None:
        """In the demo only: the box plays the human's ``slurm-login`` (signs the box's stand-in key into a
        24-hour certificate where the box's ssh_config points), then the sign-in is checked again at once.
        Against a real cluster this is the human's own step, and ncui never does it."""
        import asyncio

        sim = self.backend.sim if self.backend is not None else None
        st = self._slurm
        if sim is None or st is None:
            self.notify("slurm-login is your step: run it in a shell on this machine.", timeout=8)
            return
        try:
            await asyncio.to_thread(sim.ssh.sign, st.ref.name)
        except Exception as e:  # noqa: BLE001 - the box's own error, said in a sentence
            self.notify(f"The box could not sign you in: {e}", severity="error", timeout=10)
            return
        self.notify(f"The box signed you in to {st.ref.name} as slurm-login would (24 hours).", timeout=8)
        st.recheck.set()

    def slurm_wake(self) -> None:
        """Read the jobs now (a screen that shows them appeared, an action changed them)."""
        if self._slurm is not None:
            self._slurm.wake.set()

    def _ssh_config(self) -> Path | None:
        """The box's NC_SSH_CONFIG in the demo, else NC_SSH_CONFIG when set, else the human's own."""
        sim = self.backend.sim if self.backend is not None else None
        if sim is not None:
            return Path(sim.ssh.config_path)
        env = os.environ.get(SSH_CONFIG_ENV, "")
        return Path(env) if env else None

    async def _slurm_runner(self, st: _State) -> Runner:
        async with st.lock:
            if st.runner is None:
                if self.slurm_runner_factory is not None:
                    st.runner = await self.slurm_runner_factory(st.ref)
                else:
                    from ..config import known_hosts_path
                    from ..remote.login import slurm_runner

                    st.runner = await slurm_runner(
                        st.ref.name,
                        ssh_config=self._ssh_config(),
                        known_hosts=self.backend.known_hosts_file() if self.backend is not None else known_hosts_path(),
                        confirm_host_key=self._slurm_host_key,
                        login_node=self.slurm_login_node,
                    )
            if st.stopped:  # the cluster changed while it was made
                await st.runner.close()
            return st.runner

    async def _ask(self, modal: ConfirmModal) -> bool:
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def done(yes: bool | None) -> None:
            if not answer.done():
                answer.set_result(bool(yes))

        await self.push_screen(modal, done)
        return await answer

    async def _slurm_host_key(self, host: str, port: int, fingerprint: str) -> bool:
        st = self._slurm
        name = st.ref.name if st is not None else host
        where = host if port == 22 else f"{host} port {port}"
        return await self._ask(
            ConfirmModal(
                f"First connection to {clean(name)}'s login node",
                f"ncui has not connected to {clean(where)} before. It presents the host key\n\n  {fingerprint}\n\n"
                "Trust it only if it is the login node's (your cluster's documentation or administrators publish "
                "its fingerprint). A yes remembers it in ncui's known_hosts; a changed key is refused later.",
                yes="Trust and connect",
                no="Do not connect",
            )
        )

    # ---- the sign-in ---------------------------------------------------------------------------------

    async def _slurm_check(self, ref: m.ClusterRef) -> CertCheck:
        if self.slurm_signin_check is not None:
            return await self.slurm_signin_check(ref)
        from ..remote.local import on_login_node
        from ..remote.slurm import check_certificate

        if self.slurm_runner_factory is None and on_login_node(self.slurm_login_node):
            return login_node_check()
        access = self.backend.endpoints.access if self.backend is not None and self.backend.endpoints else None
        kw: dict[str, Any] = {"access_url": access} if access else {}
        # The box signs certificates for 24 hours of its clock (which may run 60x): judged by that clock there.
        judged = self._slurm_now() or datetime.now(timezone.utc)
        check = await check_certificate(ref.name, ssh_config=self._ssh_config(), now=judged, **kw)
        return check.on_clock(judged, self.cert_now())  # its end on the service's clock: "… left" ticks by it

    def cert_now(self) -> datetime:
        """The clock a certificate's "… left" is counted down by, ticking: the service's (the box's, virtual,
        which may run 60x; the real service's is ours)."""
        return self.backend.now() if self.backend is not None else datetime.now(timezone.utc)

    def _slurm_now(self) -> datetime | None:
        """The login node's clock: the box's (virtual, it may run 60x) when the demo's box is the login node; else
        None, this machine's (a real cluster's clock and ours agree)."""
        sim = self.backend.sim if self.backend is not None else None
        return sim.world.now() if sim is not None else None

    async def _slurm_signin_loop(self, st: _State) -> None:
        from ..backoff import wait_event

        was_ok: bool | None = None
        while not st.stopped:
            st.recheck.clear()
            check = await self._slurm_check(st.ref)
            if st.stopped:
                return
            self.store.set("slurm_signin", check)
            delay: float | None = self.slurm_signin_interval
            if check.ok:
                st.signed_in.set()
                if was_ok is False:
                    self.notify(check.message, timeout=8)  # (it says "Signed in to …" itself)
                    self._slurm_signed_in_noted(st.ref.name, check)
                if check.valid_before is None:
                    delay = None if check.state == "login-node" else 600.0
                else:  # again when it ends by the service's clock (the box's may run 60x: at least each minute)
                    left = ((check.ends or check.valid_before) - self.cert_now()).total_seconds()
                    delay = min(60.0, max(5.0, left + 1))
            else:
                st.signed_in.clear()
            was_ok = check.ok
            await wait_event(st.recheck, delay)

    def _slurm_signed_in_noted(self, cluster: str, check: CertCheck) -> None:
        """The human's sign-in (the setup script, then slurm-login; in the demo L), seen while ncui runs: in the
        history as the guide's line, as kubectl's approval is (a certificate found at start is not a change)."""
        from .. import history
        from ..remote.slurm import signin_command

        access = self.backend.endpoints.access if self.backend is not None and self.backend.endpoints else None
        line = signin_command(cluster, access) if access else signin_command(cluster)
        end = check.valid_before
        until = f" (an ssh certificate valid until {end:%Y-%m-%d %H:%M} UTC)" if end else ""
        history.note("shell", line, f"sign in to {cluster}: the setup script, then slurm-login{until}", True)

    # ---- the jobs ------------------------------------------------------------------------------------

    async def _slurm_jobs_loop(self, st: _State) -> None:
        from ..backoff import backoff_delay, wait_event
        from ..remote import slurm
        from ..remote.runner import AuthFailed, HostKeyChanged, HostKeyUnknown, RemoteError

        rng, failures = random.Random(), 0
        while not st.stopped:
            await st.signed_in.wait()
            st.wake.clear()
            delay: float | None
            try:
                runner = await self._slurm_runner(st)
                now = self._slurm_now()  # a running job's elapsed time is counted to the login node's now
                found = await slurm.jobs(runner, now=now.timestamp() if now is not None else None)
            except RemoteError as e:
                if st.stopped:
                    return
                failures += 1
                self.store.fail("slurm_jobs", str(e))
                # A refused host key or key: asked again only on demand (n, x, showing Workloads), not every 3 s.
                refused = isinstance(e, (HostKeyUnknown, HostKeyChanged, AuthFailed))
                delay = None if refused else backoff_delay(failures, 1.0, 60.0, rng)
                if isinstance(e, AuthFailed):
                    st.recheck.set()  # the certificate may have just expired
            else:
                if st.stopped:
                    return
                failures = 0
                self.store.set("slurm_jobs", tuple(found))
                delay = self.slurm_jobs_interval if self.store.interest("slurm_jobs") else JOBS_IDLE
            await wait_event(st.wake, delay)

    # ---- the first job -------------------------------------------------------------------------------

    def action_slurm_first_job(self) -> None:
        self.start_worker(self.slurm_first_job_flow, name="slurm-first-job", group="slurm-flow", exclusive=True)

    async def slurm_first_job_flow(self) -> str | None:
        """Ask (with the cost statement), prepare when needed, submit; the job id (None: nothing submitted)."""
        from ..remote import slurm
        from ..remote.node import BadInput
        from ..remote.runner import RemoteError

        st = self._slurm
        if st is None:
            self.notify("The first Slurm job is for a Slurm cluster; the active cluster is not one.", timeout=5)
            return None
        check: CertCheck | None = self.store.value("slurm_signin")
        if check is None or not check.ok:
            self.notify(check.message if check else "Checking the sign-in first…", severity="warning", timeout=15)
            st.recheck.set()
            return None
        name = st.ref.name
        try:
            runner = await self._slurm_runner(st)
            ready = await slurm.prepared(runner)
        except RemoteError as e:
            self.notify(f"Cannot reach {name}'s login node: {e}", severity="error", timeout=12)
            return None
        steps = "" if ready else f"  {slurm.prepare_command(self._access())}   (~/first-job is not there yet)\n"
        body = (
            f"On {name}'s login node ({clean(runner.where)}), ncui runs:\n\n{steps}"
            f"  {slurm.submit_command()}\n\n"
            "The starter trains a small GPT on one node and writes nanogpt-<id>.out, which Workloads follows.\n\n"
            + money_statement(self.store, name)
        )
        if not await self._ask(ConfirmModal(f"Run the first job on {name}?", body, yes="Submit", no="Cancel")):
            self.notify("Nothing was submitted.", timeout=4)
            return None
        try:
            if not ready:
                self.notify("Preparing ~/first-job (prepare.sh)…", timeout=4)
                await slurm.prepare(runner, self._access())
            jid = await slurm.submit(runner)
        except (RemoteError, BadInput) as e:
            self.notify(f"The job was not submitted: {e}", severity="error", timeout=15)
            return None
        self.store.meta["slurm_job"] = jid  # Workloads selects it
        remember = getattr(self, "remember_job", None)  # (NCApp's: the report and the next session know it)
        if remember is not None:
            remember({"slurm_job": jid, "recipe": "slurm-nanogpt"}, new=True)
        self.notify(f"Submitted batch job {jid} on {name}: Workloads (4) follows nanogpt-{jid}.out.", timeout=8)
        self.slurm_wake()
        return jid

    def _access(self) -> str:
        e = self.backend.endpoints if self.backend is not None else None
        return e.access if e is not None else "https://access.nationalcompute.com"

    # ---- cancel ----------------------------------------------------------------------------------------

    async def slurm_cancel_flow(self, job: SlurmJob) -> bool:
        """Ask, then ``scancel``; True when Slurm took it."""
        from ..remote import slurm
        from ..remote.runner import RemoteError

        st = self._slurm
        if st is None:
            return False
        what = f"job {clean(job.id)} ({clean(job.name)}, {clean(job.state.lower())})"
        if not await self._ask(
            ConfirmModal(
                f"Cancel {what}?",
                f"scancel {clean(job.id)} on {st.ref.name}: a running job is stopped (its log so far stays in "
                f"nanogpt-{clean(job.id)}.out), a waiting one leaves the queue. This cannot be undone; "
                "n submits a new one.",
                yes="Cancel the job",
                no="Keep it",
            )
        ):
            return False
        try:
            await slurm.cancel(await self._slurm_runner(st), job.id)
        except RemoteError as e:
            self.notify(f"Job {clean(job.id)} was not cancelled: {e}", severity="error", timeout=12)
            return False
        self.notify(f"Cancelled job {clean(job.id)} (scancel).", timeout=6)
        self.slurm_wake()
        return True


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
        said = check.at(self._app().cert_now()).message
        if said != self._signin_said:
            self._signin_said = said
            self.refresh_panel()

    def _columns(self) -> bool:
        if fit_columns(self.query_one("#slurm-jobs", DataTable), self.COLUMNS, flex_min=8):
            self._rows = None
            return True
        return False

    def on_resize(self) -> None:
        if self._columns():
            self.refresh_panel()

    @property
    def table(self) -> DataTable[Any]:
        return self.query_one("#slurm-jobs", DataTable)

    def _app(self) -> SlurmFlowsMixin:
        app = self.app
        assert isinstance(app, SlurmFlowsMixin)
        return app

    def shown(self, yes: bool) -> None:
        """Workloads shows (or hides) this panel: the jobs are read now; the log stops while hidden."""
        if yes:
            self._app().slurm_wake()
        elif self.follower is not None:
            self.follower.stop()
            self.follower = None
            self.job = None

    # ---- rendering ---------------------------------------------------------------------------------

    def refresh_panel(self) -> None:
        from ..remote.slurm import explain

        st = self.store
        ref = st.meta.get("cluster")
        state = self.query_one("#slurm-state", Static)
        sign = st.get("slurm_signin")
        check: CertCheck | None = sign.value
        if check is not None:
            check = check.at(self._app().cert_now())  # the time left, counted down by the certificate's clock
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

        app = self._app()
        st = app._slurm
        if st is None:
            return
        now = app._slurm_now()
        try:
            job = await slurm.job(await app._slurm_runner(st), jid, now=now.timestamp() if now is not None else None)
        except RemoteError:  # (SlurmError too)
            return  # not known: the line says it left the queue, and no more
        self._ended[jid] = job
        self.refresh_panel()

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
        app = self._app()
        st = app._slurm
        job = next((j for j in self.store.value("slurm_jobs") or () if j.id == jid), None)
        if st is None or job is None:
            return
        try:
            path = await slurm.find_output(await app._slurm_runner(st), job)
        except RemoteError as e:
            pane.set_status(f"log: cannot find where job {jid} writes ({e})")
            return
        if self.job != jid:
            return

        def on_lines(lines: list[str]) -> None:
            pane.write_batch(lines)
            if self.losses.add(lines):
                self._chart()
                keep = getattr(app, "remember_loss_lines", None)  # (NCApp's: the report's first loss lines)
                if keep is not None:
                    keep(jid, lines)

        def on_state(state: str) -> None:
            if state == "resuming":
                pane.set_status("log: the connection dropped; resuming where it stopped (no line lost or repeated)")
            elif state == "ended" and follower.end_reason:
                pane.set_status(f"log ended: {follower.end_reason}")
            else:
                pane.set_status("")

        runner = await app._slurm_runner(st)
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
        self._app().action_slurm_first_job()

    def action_cancel(self) -> None:
        job = next((j for j in self.store.value("slurm_jobs") or () if j.id == self.job), None)
        if job is None:
            self.app.notify("Select a job of yours to cancel.", timeout=4)
            return
        app = self._app()
        app.start_worker(partial(app.slurm_cancel_flow, job), name="slurm-cancel", group="slurm-flow", exclusive=True)
