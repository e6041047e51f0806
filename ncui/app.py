"""The ncui app: header, six screens on keys 1–6, history on h, help on ?, the command palette, q to quit.

Screens read the store and call actions; the backend's pollers feed the store.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

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
from .flows.apply import ApplyFlow, market_price
from .flows.base import Context
from .flows.lease import LeaseFlow
from .flows.lifecycle import LifecycleFlow
from .flows.limit import SpendingLimitFlow
from .flows.recall import RecallFlow
from .flows.slurm import SlurmFlow
from .flows.vm import VmFlow
from .screens.account import AccountView
from .screens.base import View
from .screens.connect import ConnectMixin
from .screens.flows import FlowsMixin
from .screens.keyhold import KeyHoldMixin
from .screens.modals import HelpModal
from .screens.ui import ScreenUI
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


def _box_ssh_config(ctx: Context) -> Path | None:
    from .screens.research import box_ssh_config  # (the nodes' module: imported when a report reads a node)

    return box_ssh_config(ctx)


SIGNED_IN = "sign in: kubectl prints the link, you approve it in a browser, then it signs in silently"

CLUSTER_SLICES = ("cluster", "bid", "ladder", "spend", "ticks", "vm_capacity", "ssh_keys")
# The cluster's watches write the store at most every 50 ms: a big cluster's hundred changes a second are a few
# writes (the subscribers, the header, the lifecycle watch: each once per write), not a hundred (bench/pods.py).
WATCH_COALESCE = 0.05

GLOBAL_HELP = """
[b]Keys[/b]  1–6 screens · Tab/Shift-Tab move focus · ? help · Ctrl-P commands · r refresh · h history · q quit
"""


class NCApp(KeyHoldMixin, ConnectMixin, FlowsMixin, VmFlowsMixin, App[None]):
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
        # what every flow is given (ncui/flows/base.py): its history and pollers are set once connected
        self.ctx = Context(backend, self.store, ScreenUI(self))
        # the flows (ncui/flows/), each given what it calls; apply and lifecycle call each other (one binds late)
        self.recall = RecallFlow(
            self.ctx,
            kube_signed_in=self.kube_signed_in,
            slurm_runner=lambda name: self.slurm.runner_for(name),  # (self.slurm: built below)
            node_sessions=self.vm_sessions,
            box_ssh_config=partial(_box_ssh_config, self.ctx),
        )
        self.lease = LeaseFlow(self.ctx, remember=self.recall.remember, exit=self._quit)
        self.lifecycle = LifecycleFlow(
            self.ctx,
            kube_client=self.kube_client,
            kube_in_use=lambda: (self._kube, self._kube_for),
            start_apply=lambda plan: self.apply.start(plan),  # (self.apply: built below)
            applied_select=lambda docs: self.apply.applied_select(docs),
            cover=lambda *a: self.apply.cover(*a),
            market_price=market_price,
        )
        self.limit = SpendingLimitFlow(
            self.ctx,
            kube_signed_in=self.kube_signed_in,
            stop_plan=self.lifecycle.stop_plan,
            stop_objects=self.lifecycle.stop_objects,
            recipe=self.lifecycle.recipe,
            state_notices=self.recall.state_notices,
        )
        self.apply = ApplyFlow(
            self.ctx,
            lease=self.lease,
            kube_client=self.kube_client,
            before_apply=self.lifecycle.before_apply,
            remember_job=self.recall.remember_job,
        )
        self.vm = VmFlow(self.ctx, copy_off=self.vm_copy_off, node_sessions=self.vm_sessions)
        self.slurm = SlurmFlow(self.ctx, remember_job=self.recall.remember_job)

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
        self._unsubs.append(self.store.subscribe(("bid", "vm_capacity"), self.lease.on_standing, interested=False))
        self._catch_signals()
        self.handoff_watch()  # --recipe: chosen on Recipes once the catalog is read (after the cluster: above)
        # a defective tune, a serve on the previous model, the load test's end: said at once
        self._unsubs.append(self.lifecycle.watch())
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
        self.history = self.backend.history
        history.activate(self.history)
        self.ctx.history = self.history
        self.limit.start()  # the spending limit: loaded with the organization, checked on every update
        self.recall.state_notices()
        self.pollers = self.ctx.pollers = self.backend.pollers(self.store)
        self.pollers.start()

    async def on_unmount(self) -> None:
        for u in self._unsubs:
            u()
        if self.history is not None and history.active() is self.history:
            history.activate(None)
        self.stop_watchers()
        await self.vm_sessions_close()  # the nodes' ssh connections
        await self.slurm.close()
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
            last = self.recall.remembered().get("active_cluster")  # the cluster of the last session, resumed
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
            self.recall.remember(active_cluster=ref.name)
        if old is not None and ref is not None and old.name == ref.name:
            return
        self.store.clear(*CLUSTER_SLICES, "k8s_pods", "k8s_jobs", "k8s_deployments", "k8s_nodes", "kube_signin")
        self.stop_watchers()
        self._kube_for = None
        if self.pollers is not None:
            self.pollers.refresh(*CLUSTER_SLICES)
        self.slurm.cluster(ref)  # a Slurm cluster's sign-in check and queue (flows/slurm.py)
        if ref is not None and old is not None:
            self.notify(f"Active cluster: {ref.name} ({ref.kind})")

    # ---- TRANSITIONAL (issue 22): screens/nodes.py (F-connect's) still calls these; self.recall has them ------

    def remember_job(self, fields: dict[str, Any], *, new: bool = False) -> None:  # TRANSITIONAL: nodes.py
        self.recall.remember_job(fields, new=new)

    def remember_loss_lines(self, owner: str, lines: list[str]) -> None:  # TRANSITIONAL: screens/nodes.py
        self.recall.remember_loss_lines(owner, lines)

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
        a sentence, logged in full; never a traceback in the human's face, never silently gone."""
        if event.state != WorkerState.ERROR:
            return
        err = event.worker.error
        log.error("worker %s failed", event.worker.name, exc_info=err)
        text = " ".join(str(err).split())[:200]
        self.notify(
            f"Something went wrong ({event.worker.name}): {type(err).__name__}"
            + (f": {text}" if text else "")
            + ". Nothing else was changed.",
            severity="error",
            timeout=12,
        )

    # ---- quitting ----------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """q, Ctrl-C, Ctrl-Q and the palette's Quit: instant when no meter runs, else asked first (LeaseFlow.quit)."""
        if self.first_run or self.backend is None or self.backend.nc is None:
            self.exit()
            return
        self.lease.quit()

    def _quit(self, *, end_session: bool) -> None:
        """The end of the app once the quit was decided; ``end_session``: nothing stands, so a spending limit for
        this session ends with it (a dated one stays)."""
        if end_session:
            self.limit.end_session()
        self.exit()

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
        ref = self.store.meta.get("cluster")
        if ref is not None and ref.kind == "vm":
            yield SystemCommand(
                "VM: register an ssh key",
                "One of your public keys, for nodes granted later",
                partial(self.vm.start, "keys"),
            )
            yield SystemCommand(
                "VM: declare capacity", "GPUs and your ceiling, asked first", partial(self.vm.start, "declare")
            )
            yield SystemCommand(
                "VM: release capacity",
                "max_gpus 0 with the same price, asked first",
                partial(self.vm.start, "release"),
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
