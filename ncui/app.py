"""The ncui app: header, six screens on keys 1–6, history on h, help on ?, the command palette, q to quit.

Screens read the store and call actions; the backend's pollers feed the store.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.markup import escape
from rich.text import Text
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.widgets import ContentSwitcher, Footer, Static
from textual.worker import Worker, WorkerState

from . import history
from .api.errors import NCError
from .backend import Backend
from .screens.account import AccountView
from .screens.base import View
from .screens.connect import ConnectMixin
from .screens.flows import FlowsMixin
from .screens.keyhold import KeyHoldMixin
from .screens.lifecycle import LifecycleMixin
from .screens.limitguard import LimitGuardMixin
from .screens.modals import ConfirmModal, HelpModal, ResultsModal
from .screens.slurm import SlurmFlowsMixin
from .screens.vmflows import VmFlowsMixin
from .store import Slice, Store
from .textsafe import clean
from .widgets.header import StatusHeader
from .widgets.navbar import NavBar

if TYPE_CHECKING:
    from .api import models as m
    from .backoff import RetryLoop
    from .kube.client import KubeClient
    from .kube.gate import SignInGate
    from .kube.session import SigninResult
    from .meters import Meter
    from .pollers import Pollers
    from .screens.connect import Handoff

log = logging.getLogger("ncui")
SIGNAL_EXIT_GRACE_S = 5.0  # a SIGTERM or SIGHUP: seconds Textual gets to end before the process ends anyway


class CellScrollBarRender(ScrollBarRender):
    """Scrollbars in whole cells. Textual draws a thumb's ends with eighth blocks (▂, ▅, ▊) for smoothness;
    beside a chart's or a list's border, and in a terminal of few colours, those read as stray blocks."""

    VERTICAL_BARS: ClassVar[list[str]] = [" "] * 8
    HORIZONTAL_BARS: ClassVar[list[str]] = [" "] * 8


ScrollBar.renderer = CellScrollBarRender  # every scrollbar of the app (Textual's documented hook)

# The five screens: (id, title, module, class). Only Account is imported before the first frame; the
# others are imported and built when first shown.
VIEWS: tuple[tuple[str, str, str, str], ...] = (
    ("account", "Account", "account", "AccountView"),
    ("market", "Market", "market", "MarketView"),
    ("recipes", "Recipes", "recipes", "RecipesView"),
    ("workloads", "Workloads", "workloads", "WorkloadsView"),
    ("lease", "Lease", "lease", "LeaseView"),
    ("report", "Report", "report", "ReportView"),
)


def view_class(name: str) -> type[View]:
    import importlib

    _, _, module, cls = next(v for v in VIEWS if v[0] == name)
    view: type[View] = getattr(importlib.import_module(f".screens.{module}", __package__), cls)
    return view


SIGNED_IN = "sign in: kubectl prints the link, you approve it in a browser, then it signs in silently"

CLUSTER_SLICES = ("cluster", "bid", "ladder", "spend", "ticks", "vm_capacity", "ssh_keys")
# The cluster's watches write the store at most every 50 ms: a big cluster's hundred changes a second are a few
# writes (the subscribers, the header, the lifecycle watch: each once per write), not a hundred (bench/pods.py).
WATCH_COALESCE = 0.05

GLOBAL_HELP = """
[b]Keys[/b]  1–6 screens · Tab/Shift-Tab move focus · ? help · Ctrl-P commands · r refresh · h history · q quit
"""


class NCApp(
    KeyHoldMixin, ConnectMixin, LimitGuardMixin, LifecycleMixin, FlowsMixin, VmFlowsMixin, SlurmFlowsMixin, App[None]
):
    CSS_PATH = str(Path(__file__).parent / "styles" / "app.tcss")
    SUSPENDED_SCREEN_CLASS = "-suspended"  # a screen beneath another (its toasts hidden: app.tcss)
    TITLE = "ncui"
    ENABLE_COMMAND_PALETTE = True
    BINDINGS = [
        Binding("1", "show('account')", "Account", show=False),
        Binding("2", "show('market')", "Market", show=False),
        Binding("3", "show('recipes')", "Recipes", show=False),
        Binding("4", "show('workloads')", "Workloads", show=False),
        Binding("5", "show('lease')", "Lease", show=False),
        Binding("6", "show('report')", "Report", show=False),
        Binding("question_mark,f1", "help", "Help"),
        Binding("r", "refresh", "Refresh"),
        Binding("s", "kube_signin", "Sign in", show=False),
        Binding("h", "history", "History", show=False),
        Binding("q", "quit", "Quit"),
        # Ctrl-C quits too (Textual's default only says "press Ctrl-Q"): a person over ssh reaches for it. Both
        # go through the exit guard. Inputs keep Ctrl-C for copying (a focused widget's binding comes first).
        Binding("ctrl+c", "quit", "Quit", show=False, priority=False),
    ]

    def __init__(
        self,
        backend: Backend | None,
        *,
        store: Store | None = None,
        mode: str = "",
        first_run: str = "",
        handoff: Handoff | None = None,
    ) -> None:
        from .config import in_workspace

        super().__init__()
        self.backend = backend
        self.store = store or Store()
        self.store.meta.setdefault("workspace", in_workspace())  # Account says the daemon holds the credential
        self.handoff = handoff  # --cluster / --recipe: what the hand-off named (screens/connect.py)
        self.mode = mode
        self.first_run = first_run  # a message when there is no token
        self.pollers: Pollers | None = None
        self._unsubs: list[Callable[[], None]] = []
        self._kube: KubeClient | None = None  # the active cluster's, once signed in
        self._kube_for: str | None = None
        self._watchers: list[RetryLoop] = []
        self._endpoint_checked = 0.0  # when the cluster's kubeconfig was last read again (time.monotonic())
        self.history: history.History | None = None  # this service's, once connected
        self._losses_kept = 0  # first loss lines remembered for the remembered job (memory.FIRST_LINES at most)

    # ---- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.store, mode=self.mode)
        if self.first_run:
            yield Static(self.first_run, id="first-run", markup=False)
            yield Footer()
            return
        yield NavBar(tuple((name, title) for name, title, _, _ in VIEWS), active="account", id="tabs")
        with ContentSwitcher(initial="account", id="views"):
            yield AccountView(self.store, id="account")  # the others are built when first shown
        yield Footer()

    async def on_mount(self) -> None:
        if self.first_run:
            return
        account = self.query_one("#account", View)
        account.activate(True)
        account.focus()
        self._unsubs.append(self.store.subscribe("whoami", self._on_whoami, interested=False))
        self._unsubs.append(self.store.subscribe("cluster", self._on_cluster, interested=False))
        self._unsubs.append(self.store.subscribe(("bid", "vm_capacity"), self._on_standing, interested=False))
        self._catch_signals()
        self.handoff_watch()  # --recipe: chosen on Recipes once the catalog is read (after the cluster: above)
        self.lifecycle_start()  # a defective tune, a serve on the previous model, the load test's end: said at once
        if self.store.meta.get("token_warning"):  # also a line on Account until it is fixed
            self.notify(self.store.meta["token_warning"], severity="warning", timeout=20)
        self.call_after_refresh(self._start)

    def _catch_signals(self) -> None:
        """SIGTERM (a kill, a supervisor) and SIGHUP (the terminal went away) end ncui as q does when no meter runs:
        through Textual's exit, which puts the terminal back (main screen, no mouse reporting, the cursor shown)
        and closes the demo's box and its folder. Nothing that stands is touched, and nothing is asked: the next
        start says what still stands. (Not under a test's Pilot: the test process keeps its own handlers.)"""
        import asyncio
        import signal

        if self.is_headless:
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
            except (NotImplementedError, RuntimeError, ValueError):  # (no such signal here, or not the main thread)
                continue

    def _on_signal(self, sig: int) -> None:
        import os
        import signal
        import threading

        log.info("signal %s: exiting without changing anything", sig)
        if sig == signal.SIGHUP:
            # The terminal is gone: nothing is left to restore, and what is still written on the way out goes nowhere
            # (a write to the hung-up tty fails).
            try:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
                os.close(null)
            except OSError:
                pass

        def hard_exit() -> None:
            # Textual's exit can stall on a terminal that went away (its writer thread's queue, seen here with a
            # hung-up pty): after a grace period the process ends anyway, its demo folder removed. Nothing that
            # stands is touched either way; state files are written atomically.
            if self.backend is not None:
                self.backend.remove_demo_home()
            os._exit(0)

        timer = threading.Timer(SIGNAL_EXIT_GRACE_S, hard_exit)
        timer.daemon = True
        timer.start()
        self.exit()

    def start_worker(
        self,
        work: Callable[[], Coroutine[Any, Any, object]],
        *,
        name: str,
        group: str = "default",
        exclusive: bool = False,
    ) -> Worker[object]:
        """``run_worker`` for an async function, with exit_on_error=False: a failure is said on screen
        (``on_worker_state_changed``), never the end of the app. The worker gets the function, not a
        coroutine: cancelled before it starts (a quit, a second s), a coroutine object would be left never
        awaited. (Textual's WorkType is a union of a coroutine function, a plain function and an awaitable:
        given an async function alone, mypy cannot pick the result type; the annotated local gives it.)"""
        worker: Worker[object] = self.run_worker(work, name=name, group=group, exclusive=exclusive, exit_on_error=False)
        return worker

    def _start(self) -> None:
        self.start_worker(self._connect, name="connect")

    async def _connect(self) -> None:
        if self.backend is None:  # the first-run screen has no backend, and never connects
            return
        try:
            await self.backend.connect()
        except Exception as e:  # the box failed to start, or a bad endpoint: say so, keep the app up
            log.exception("connect failed")
            self.store.fail("balance", f"Cannot start: {e}" if not isinstance(e, NCError) else str(e))
            return
        assert self.backend.endpoints is not None
        # every change, as its command (h), dated on the clock the Report dates by (the box's in the demo)
        self.history = history.History(self.backend.endpoints.api, clock=self.backend.now)
        history.activate(self.history)
        self.limit_start()  # the spending limit: loaded with the organization, checked on every update
        self._state_notices()
        self.pollers = self.backend.pollers(self.store)
        self.pollers.start()

    async def on_unmount(self) -> None:
        for u in self._unsubs:
            u()
        if self.history is not None and history.active() is self.history:
            history.activate(None)
        self.stop_watchers()
        await self.vm_sessions_close()  # the nodes' ssh connections
        await self.slurm_close()
        if self.pollers is not None:
            await self.pollers.stop()
        if self._kube is not None:
            await self._kube.aclose()
        if self.backend is not None:
            await self.backend.close()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Never markup: a notification carries a server's words (names, errors), and a ``[/]`` in one
        would be a MarkupError when the toast draws (Widget.notify asks for markup by default). Cleaned here too
        (textsafe), the one belt for every toast: a failed worker's exception text is whatever it carried."""
        super().notify(
            clean(message, multiline=True), title=clean(title), severity=severity, timeout=timeout, markup=False
        )

    # ---- data-driven decisions ----------------------------------------------------------------

    def _on_whoami(self, s: Slice) -> None:
        who = s.value
        if who is None:
            return
        if who.org_kind == "public_research" and self.pollers is not None:  # its node's status (enabled by whoami)
            self.pollers.refresh("research")
        active = self.store.meta.get("cluster")
        names = [c.name for c in who.clusters]
        if active is None or active.name not in names:
            last = self.remembered().get("active_cluster")  # the cluster of the last session, resumed
            first = (
                self.handoff_cluster(who)  # --cluster / --recipe first, then the last session's
                or next((c for c in who.clusters if c.name == last), None)
                or next((c for c in who.clusters if c.kind == "kubernetes"), None)
                or (who.clusters[0] if who.clusters else None)
            )
            self.select_cluster(first)

    def _on_cluster(self, s: Slice) -> None:
        # The market slices are enabled only once the cluster is known to be a market cluster.
        if self.pollers is not None and s.value is not None:
            self.pollers.refresh("bid", "ladder", "spend", "ticks")

    def select_cluster(self, ref: m.ClusterRef | None) -> None:
        old = self.store.meta.get("cluster")
        self.store.meta["cluster"] = ref
        if ref is not None:
            self.remember(active_cluster=ref.name)
        if old is not None and ref is not None and old.name == ref.name:
            return
        self.store.clear(*CLUSTER_SLICES, "k8s_pods", "k8s_jobs", "k8s_deployments", "k8s_nodes", "kube_signin")
        self.stop_watchers()
        self._kube_for = None
        if self.pollers is not None:
            self.pollers.refresh(*CLUSTER_SLICES)
        self.slurm_cluster(ref)  # a Slurm cluster's sign-in check and queue (screens/slurm.py)
        if ref is not None and old is not None:
            self.notify(f"Active cluster: {ref.name} ({ref.kind})")

    # ---- memory between sessions (ncui/memory.py) and the report (ncui/report.py) ------------------

    def memory_key(self) -> str | None:
        """The service and organization ncui remembers things under (None before whoami is read)."""
        from .memory import key_for

        who = self.store.value("whoami")
        if who is None or self.backend is None or self.backend.endpoints is None:
            return None
        return key_for(self.backend.endpoints.api, who.org_id)

    def remembered(self) -> dict[str, Any]:
        from . import memory

        key = self.memory_key()
        return memory.recall(key) if key is not None else {}

    def remember(self, **fields: Any) -> None:
        from . import memory

        key = self.memory_key()
        if key is not None:
            memory.remember(key, **fields)
        self._state_notices()

    def remembered_job(self) -> dict[str, Any] | None:
        """The last job remembered on the active cluster (the research node's: cluster "")."""
        ref = self.store.meta.get("cluster")
        jobs = self.remembered().get("jobs") or {}
        job = jobs.get(ref.name if ref is not None else "")
        return job if isinstance(job, dict) else None

    def remember_job(self, fields: dict[str, Any], *, new: bool = False) -> None:
        """What ncui applied, submitted or started on the active cluster (``new``), or learned of it since."""
        from . import memory

        key, ref = self.memory_key(), self.store.meta.get("cluster")
        if key is None:
            return
        if new:
            self._losses_kept = 0
            fields = {
                "applied_by": "ncui",
                "applied_at": memory.iso(self.backend.now() if self.backend else None),
            } | fields
        memory.remember_job(key, ref.name if ref is not None else "", fields, new=new)
        self._state_notices()

    def remember_loss_lines(self, owner: str, lines: list[str]) -> None:
        """A log pane saw loss lines of ``owner`` (a pod, a container, a Slurm job id): the first ones are kept
        for the remembered job, once; and the report is read once then (the node's arrival with them)."""
        from . import memory
        from .logfollow import parse_loss

        job = self.remembered_job()
        if job is None or self._losses_kept >= memory.FIRST_LINES:
            return
        obj = job.get("object") or ["", ""]
        pod = bool(obj[1]) and owner.startswith(f"{obj[1]}-")  # (a Kubernetes job's pod: its lines say whose)
        ours = owner == job.get("container") or owner == str(job.get("slurm_job")) or pod
        have = list(job.get("first_loss_lines") or ()) if not pod or job.get("first_loss_pod") in (None, owner) else []
        if not ours or len(have) >= memory.FIRST_LINES:
            self._losses_kept = memory.FIRST_LINES
            return
        found = have + [x for x in lines if parse_loss(x) is not None][: memory.FIRST_LINES - len(have)]
        self._losses_kept = len(found)
        self.remember_job({"first_loss_lines": found} | ({"first_loss_pod": owner} if pod else {}))
        if not have:  # the first loss line: the node is there; the report remembers its arrival
            self.start_worker(self.read_report, name="report", group="report")

    async def read_report(self) -> dict[str, Any] | None:
        """``report.collect`` for the active cluster through this session's clients (its kubectl sign-in, its
        Slurm login node); None before ncui has connected."""
        from .report import collect, node_runner

        nc = self.backend.nc if self.backend is not None else None
        ref = self.store.meta.get("cluster")
        if nc is None or self.backend is None:
            return None

        async def kube(name: str) -> KubeClient | None:
            return await self.kube_signed_in(name)

        async def slurm(name: str) -> Any:
            st = self._slurm
            return await self._slurm_runner(st) if st is not None and st.ref.name == name else None

        made: list[Any] = []  # runners opened for this read alone (a node Workloads is not connected to)

        async def node(node_id: str, host: str, port: int, user: str, alias: str) -> Any:
            from .screens.research import box_ssh_config

            sessions = self.vm_sessions()
            if sessions.connected(node_id):
                return sessions.runners[node_id][1]
            runner = await node_runner(
                host,
                port,
                user,
                alias=alias,
                ssh_config=box_ssh_config(self) if alias else None,
                known_hosts=self.backend.known_hosts_file() if self.backend is not None else None,
            )
            made.append(runner)
            return runner

        try:
            report = await collect(
                nc,
                now=self.backend.now(),
                cluster=ref.name if ref else None,
                kube=kube,
                slurm=slurm,
                node=node,
                token_from=self.store.meta.get("token_from"),
            )
        finally:
            for runner in made:
                await runner.close()
        self._state_notices()
        return report

    async def kube_signed_in(self, name: str | None = None) -> KubeClient | None:
        """The client for cluster ``name`` (the active one) when it needs no sign-in question: the one connected,
        or a connect with the sign-in kept from before (silently, as kubectl would); None otherwise."""
        ref = self.store.meta.get("cluster")
        name = name or (ref.name if ref is not None else None)
        if self._kube_for == name and self._kube is not None:
            return self._kube if self._kube.gate.is_open else None
        from .kube import signin

        if name and self.backend is not None and self.backend.endpoints is not None:  # signed in before: connect
            if signin.cred_path(self.backend.endpoints.api, name).exists():
                return await self.kube_client()
        return None

    def _state_notices(self) -> None:
        """A state file set aside (corrupt, unreadable, another version): said once, as a warning."""
        from . import statefile

        for said in statefile.notices():
            self.notify(said, title="State file set aside", severity="warning", timeout=20)

    # ---- actions ------------------------------------------------------------------------------

    async def action_show(self, name: str) -> None:
        if self.first_run or name not in [v[0] for v in VIEWS]:
            return
        switcher = self.query_one("#views", ContentSwitcher)
        if switcher.current == name:
            return
        if not switcher.query(f"#{name}"):
            await switcher.mount(view_class(name)(self.store, id=name))
        if switcher.current:
            self.query_one(f"#{switcher.current}", View).activate(False)
        switcher.current = name
        view = self.query_one(f"#{name}", View)
        view.activate(True)
        view.focus_target().focus()
        self.query_one("#tabs", NavBar).show(name)
        if self.pollers is not None:  # anything stale that this screen needs: fetch it now
            stale = [n for n in view.NEEDS if (self.store.get(n).age(self.store.now()) or 1e9) > 5]
            if stale:
                self.pollers.refresh(*stale)

    def current_view(self) -> View | None:
        if self.first_run:
            return None
        cur = self.query_one("#views", ContentSwitcher).current
        return self.query_one(f"#{cur}", View) if cur else None

    def action_help(self) -> None:
        view = self.current_view()
        body = (view.HELP if view else "[b]Welcome to ncui[/b]") + "\n" + GLOBAL_HELP
        self.push_screen(HelpModal(body))

    def action_history(self) -> None:
        """h: what ncui changed, as the commands a person would type (h or Esc closes it)."""
        from .screens.history import HistoryScreen

        if isinstance(self.screen, HistoryScreen):
            self.screen.dismiss(None)
        elif not self.first_run:
            self.push_screen(HistoryScreen(self.history))

    def action_refresh(self) -> None:
        if self.pollers is not None:
            self.pollers.refresh()
            self.notify("Refreshing…", timeout=1.5)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one handler for a worker that failed (workers run with exit_on_error=False): said on screen in
        a sentence, logged in full (ncui.log: logfile.py) and kept for the palette's "Last error"; never a
        traceback in the human's face unasked, never silently gone."""
        if event.state != WorkerState.ERROR:
            return
        from . import logfile

        err = event.worker.error
        log.error("worker %s failed", event.worker.name, exc_info=err)  # (to ncui.log: logfile.py)
        assert err is not None
        secrets = self.backend.secrets() if self.backend is not None else ()
        self.store.meta["last_error"] = logfile.Failure.of(event.worker.name, err, secrets)  # the palette's
        text = " ".join(logfile.redact(str(err), secrets).split())[:200]
        where = logfile.where()
        self.notify(
            f"Something went wrong ({event.worker.name}): {type(err).__name__}"
            + (f": {text}" if text else "")
            + ". Nothing else was changed. The full error: Ctrl-P, Last error"
            + (f"; also in {where}." if where else "."),
            severity="error",
            timeout=12,
        )

    def action_last_error(self) -> None:
        failure = self.store.meta.get("last_error")
        if failure is None:
            self.notify("No error so far in this session.", timeout=4)
        else:
            self.push_screen(ResultsModal(escape(f"Last error: {failure.what}"), failure.body()))

    # ---- the VM cluster (Lease: k keys, d declare, R release; also in the palette) -----------------------

    def action_vm(self, flow: str) -> None:
        ref = self.store.meta.get("cluster")
        if ref is None or ref.kind != "vm":
            self.notify("That is for a VM cluster; the active cluster is not one.", timeout=5)
            return
        work = {"keys": self.vm_keys_flow, "declare": self.vm_declare_flow, "release": self.vm_release_flow}[flow]
        self.start_worker(work, name=f"vm-{flow}", group="vm", exclusive=True)

    # ---- quitting ----------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """q, Ctrl-C, Ctrl-Q and the palette's Quit: instant when no meter runs, else asked first."""
        from .meters import running_meters
        from .screens.exitguard import ExitGuardModal

        if self.first_run or self.backend is None or self.backend.nc is None:
            self.exit()
            return
        if isinstance(self.screen, ExitGuardModal):  # q again while asked: the question stands
            return
        meters = running_meters(self.store)
        if not meters:
            self.limit_end_session()
            self.exit()
            return
        standing = [x for x in meters if x.acts]  # what w withdraws or releases
        self.push_screen(ExitGuardModal(meters), partial(self._exit_answer, standing))

    def _exit_answer(self, standing: list[Meter], answer: str | None) -> None:
        if answer == "keep":
            self.exit()
        elif answer == "withdraw":
            self.start_worker(
                partial(self._withdraw_then_exit, standing), name="withdraw-exit", group="withdraw", exclusive=True
            )

    async def _withdraw_then_exit(self, standing: list[Meter]) -> None:
        from .actions import release_vm, withdraw_bid

        nc = self._client()  # (the guard was asked only when connected)
        if nc is None:
            return
        for s in standing:
            try:
                if s.kind == "bid":
                    await withdraw_bid(nc, self.store, s.cluster)
                else:
                    await release_vm(nc, self.store)
            except NCError as e:  # nothing is assumed gone: stay, say why
                what = "withdraw the limit price" if s.kind == "bid" else "release the VM capacity"
                self.notify(f"Could not {what}, so ncui stays open: {e}", severity="error", timeout=15)
                return
        self.limit_end_session()
        self.exit()

    def _on_standing(self, s: Slice) -> None:
        """Once per cluster and session: say what already stands when ncui starts (set before, by a session
        that ended with its terminal, by kubectl, by a teammate)."""
        ref = self.store.meta.get("cluster")
        if s.value is None or ref is None:
            return
        told = self.store.meta.setdefault("told_standing", set())
        key = (s.name, ref.name)
        if key in told:
            return
        told.add(key)
        from .money import fmt_price

        if s.name == "bid" and getattr(s.value, "cluster", ref.name) == ref.name and s.value.max_price_per_gpu_hour:
            self.notify(
                f"A limit price of {fmt_price(s.value.max_price_per_gpu_hour)} stands on {ref.name}: it "
                "pulls nodes for any GPU job applied there. Lease (5) shows it; w withdraws it.",
                title="Still standing",
                severity="warning",
                timeout=15,
            )
        elif s.name == "vm_capacity" and s.value.max_gpus:
            self.notify(
                f"VM capacity of {s.value.max_gpus} GPUs at up to "
                f"{fmt_price(s.value.max_price_per_gpu_hour)} is declared on {ref.name}: nodes are granted "
                "and billed until it is released.",
                title="Still standing",
                severity="warning",
                timeout=15,
            )

    def confirm_withdraw(self) -> None:
        bid = self.store.value("bid")
        ref = self.store.meta.get("cluster")
        if bid is None or ref is None:
            return
        from .money import fmt_price

        body = (
            f"Withdraw the standing limit price of {fmt_price(bid.max_price_per_gpu_hour)} on "
            f"{ref.name}?\nNo new nodes will be pulled for GPU jobs. Nodes still running a job stay "
            "until it ends."
        )

        def done(yes: bool | None) -> None:
            if yes:
                self.start_worker(partial(self._withdraw, ref.name), name="withdraw")

        self.push_screen(ConfirmModal("Withdraw the limit price?", body, yes="Withdraw", no="Keep"), done)

    async def _withdraw(self, cluster: str) -> None:
        from .actions import withdraw_bid

        nc = self._client()
        if nc is None:
            return
        try:
            await withdraw_bid(nc, self.store, cluster)
        except NCError as e:
            self.notify(str(e), severity="error", timeout=8)
            return
        self.notify("Limit price withdrawn: nothing is bid now.")
        if self.pollers is not None:
            self.pollers.refresh("bid", "spend", "ladder")

    # ---- kubectl sign-in ----------------------------------------------------------------------

    def action_kube_signin(self) -> None:
        self.start_worker(self._signin_then_connect, name="signin", group="signin", exclusive=True)

    async def _signin_then_connect(self) -> None:
        ref = self.store.meta.get("cluster")
        kube = self._kube if ref is not None and self._kube_for == ref.name else None  # its sign-in, checked again
        if await self.sign_in_flow(announce=True, kube=kube):
            await self.kube_client()

    async def sign_in_flow(
        self, announce: bool = False, link: str | None = None, kube: KubeClient | None = None
    ) -> bool:
        """Run the kubeconfig's sign-in plugin as kubectl would (through ``kube``, a KubeClient, when given:
        its gate opens on approval); show its link until it is approved. When ``kube`` is the client in use,
        the watches and the log follower wait on this sign-in: closing the link's window leaves it to the
        SignInKeeper to notice the approval."""
        import asyncio

        from .backoff import wait_event
        from .kube.session import exec_spec, run_plugin
        from .screens.modals import SignInModal

        ref = self.store.meta.get("cluster")
        nc = self.backend.nc if self.backend is not None else None
        if ref is None or ref.kind != "kubernetes" or nc is None:
            self.notify("kubectl sign-in is for a Kubernetes cluster.")
            return False
        # The client in use: its gate (the watches and the log wait on it). None: a sign-in of its own.
        gate = kube.gate if kube is not None and kube is self._kube else None
        in_use = gate is not None
        if not (gate is not None and not gate.is_open):  # (an expired sign-in stays "expired" until approved)
            self.store.set("kube_signin", "checking")
        attempt: Callable[[], Awaitable[SigninResult]]
        if kube is not None:
            attempt = kube.check_sign_in
        else:
            try:
                text = await nc.kubeconfig(ref.name)
                spec = exec_spec(text)
            except (NCError, ValueError) as e:
                self.store.fail("kube_signin", f"Cannot sign in: {e}")
                self.notify(f"Cannot sign in: {e}", severity="error", timeout=8)
                return False
            if not await self.plugin_cleared(ref.name, text, ask_again=announce):  # (s: a remembered no asked again)
                return False
            attempt = lambda: run_plugin(spec)  # noqa: E731
        result = await attempt()
        if result.signed_in:
            self.store.set("kube_signin", "signed in")
            if announce:
                self.notify(f"kubectl is signed in to {ref.name}.")
            return True
        if not result.link and link:  # the plugin prints a link once per caller: we were told it already
            from dataclasses import replace

            result = replace(result, link=link)
        if not result.link:
            why = result.message or "the sign-in plugin gave no link"
            self.store.fail("kube_signin", why)
            self.notify(f"Sign-in failed: {why[:200]}", severity="error", timeout=10)
            return False
        self.store.set("kube_signin", "expired" if in_use else "waiting for approval")
        closed = asyncio.Event()
        modal = SignInModal(
            ref.name, result.link, reason=gate.reason if gate is not None else "", approve=self.box_approver()
        )
        await self.push_screen(modal, callback=lambda _ok: closed.set())
        link = result.link
        while not closed.is_set():
            if await wait_event(closed, 2.0):
                break
            if in_use and (kube is not self._kube or self._kube_for != ref.name):  # another cluster now
                if self.screen is modal:
                    modal.dismiss(False)
                return False
            result = await attempt()
            if result.signed_in:
                self.store.set("kube_signin", "signed in")
                history.note("kubectl", history.kubectl_command(ref.name, "get", "nodes"), SIGNED_IN, True)
                if not closed.is_set() and self.screen is modal:
                    modal.dismiss(True)
                self.notify(
                    f"Signed in to {ref.name}: kubectl signs in silently from now on."
                    + (" The watches and the log resume where they stopped." if in_use else "")
                )
                return True
            if result.link and result.link != link:
                link = result.link
                modal.new_link(link)
        if in_use:
            self.notify(
                "The sign-in link stays valid: approve it and ncui resumes by itself (s shows it again).", timeout=8
            )
            return False
        self.store.set("kube_signin", "not signed in")
        self.notify("Sign-in goes on in the background: approve the link, then press s again.", timeout=8)
        return False

    def start_watchers(self, kube: KubeClient) -> None:
        """Watch the cluster's objects into the store (pods, jobs, deployments, nodes), and whether the
        cluster still accepts the sign-in."""
        from .kube.gate import SignInKeeper
        from .kube.watch import ResourceWatcher

        self.stop_watchers()
        for kind in ("pods", "jobs", "deployments", "nodes"):
            slice_name = f"k8s_{kind}"
            w = ResourceWatcher(
                kube,
                kind,
                on_snapshot=partial(self._watched, slice_name),
                on_error=partial(self._watch_failed, kube, slice_name),
                coalesce=WATCH_COALESCE,
            )
            self._watchers.append(w)
            self.start_worker(w.run, name=f"watch-{kind}", group="watch")
        keeper = SignInKeeper(kube, on_change=lambda gate: self._on_signin_gate(kube, gate))
        self._watchers.append(keeper)
        self.start_worker(keeper.run, name="signin-keeper", group="watch")  # (no coroutine made before it
        # runs: quitting first leaves none un-awaited)

    def _watched(self, slice_name: str, snapshot: Mapping[str, dict[str, Any]]) -> None:
        self.store.set(slice_name, snapshot)

    def _on_signin_gate(self, kube: KubeClient, gate: SignInGate) -> None:
        """The cluster stopped accepting the sign-in (or its link changed, or it accepts it again): say so
        where the human is, with the new link (one sign-in flow at a time)."""
        if kube is not self._kube:
            return
        if gate.is_open:
            self.store.set("kube_signin", "signed in")
            return
        self.store.set("kube_signin", "expired")
        if not any(w.group == "signin" and not w.is_finished for w in self.workers):
            self.start_worker(
                partial(self.sign_in_flow, link=gate.link, kube=kube), name="signin", group="signin", exclusive=True
            )

    def _watch_failed(self, kube: KubeClient, slice_name: str, message: str) -> None:
        self.store.fail(slice_name, message)
        # The cluster cannot be reached: its endpoint may have moved (a restarted cluster, a new certificate).
        # Read its kubeconfig again, at most every 15 s, and connect to the new one when it changed.
        import time

        if kube is self._kube and message.startswith("cannot reach") and time.monotonic() - self._endpoint_checked > 15:
            self._endpoint_checked = time.monotonic()
            self.start_worker(partial(self._recheck_endpoint, kube), name="endpoint", group="endpoint", exclusive=True)

    async def _recheck_endpoint(self, kube: KubeClient) -> None:
        ref = self.store.meta.get("cluster")
        if ref is None or kube is not self._kube or self.backend is None or self.backend.nc is None:
            return
        try:
            text = await self.backend.nc.kubeconfig(ref.name)
        except NCError:
            return  # the service is down too: the header says so; the next failure asks again
        if kube.kubeconfig is None or text == kube.kubeconfig or kube is not self._kube:
            return
        self.notify(f"{ref.name}'s Kubernetes API moved (a new address or certificate): connecting again.", timeout=8)
        self._kube_for = None  # the next kube_client() builds a client from the new kubeconfig
        if await self.kube_client() is not None:
            from .screens.workloads import WorkloadsView

            for view in self.query(WorkloadsView):
                view.kube_changed()

    def stop_watchers(self) -> None:
        for w in self._watchers:
            w.stop()
        self._watchers.clear()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if self.first_run:
            return
        for i, (name, title, _, _) in enumerate(VIEWS, 1):
            yield SystemCommand(
                f"Go to {title}",
                f"Show the {title} screen (key {i})",
                lambda name=name: self.run_action(f"show('{name}')"),
            )
        yield SystemCommand("Refresh", "Fetch everything now (key r)", self.action_refresh)
        yield SystemCommand(
            "History: the commands", "What ncui changed, as the commands you would type (key h)", self.action_history
        )
        yield SystemCommand(
            "Sign in to the cluster (kubectl)", "Run the kubeconfig's sign-in (key s)", self.action_kube_signin
        )
        yield from self.connect_commands()
        yield SystemCommand("Help for this screen", "What this screen shows and its keys (key ?)", self.action_help)
        yield SystemCommand("Last error", "The full text of the last failure said on screen", self.action_last_error)
        ref = self.store.meta.get("cluster")
        if ref is not None and ref.kind == "vm":
            yield SystemCommand(
                "VM: register an ssh key",
                "One of your public keys, for nodes granted later",
                partial(self.action_vm, "keys"),
            )
            yield SystemCommand(
                "VM: declare capacity", "GPUs and your ceiling, asked first", partial(self.action_vm, "declare")
            )
            yield SystemCommand(
                "VM: release capacity",
                "max_gpus 0 with the same price, asked first",
                partial(self.action_vm, "release"),
            )


def first_run_message(token_path: str, warning: str = "", *, workspace: bool = False) -> str:
    if workspace:  # the daemon holds the credential: never a word asking for one
        from .config import WORKSPACE_NO_CREDENTIAL

        return "\n".join(["Welcome to ncui.", "", WORKSPACE_NO_CREDENTIAL, "", "Press q to quit."])
    lines = [
        "Welcome to ncui.",
        "",
        "ncui needs your National Compute token to show your account, the market and your jobs.",
        "",
        f"  Save it to {token_path} (then: chmod 600 {token_path})",
        "  or set NC_TOKEN in the environment, and start ncui again.",
        "",
        "Inside a Marshall workspace the daemon holds the credential: never mint a token there.",
        "",
        "To try everything offline first, with a simulated National Compute:  ncui --demo",
        "",
        "Press q to quit.",
    ]
    if warning:
        lines[1:1] = ["", f"Note: {warning}"]
    return "\n".join(lines)


__all__ = ["NCApp", "first_run_message", "Text"]
