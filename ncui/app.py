"""The ncui app: header, six screens on keys 1–6, history on h, help on ?, the command palette, q to quit.

Screens read the store and call actions; the backend's pollers feed the store.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Static
from textual.worker import Worker, WorkerState

from .backend import Backend
from .flows.base import Context
from .flows.wiring import Flows
from .screens.account import AccountView
from .screens.base import VIEWS, View, view_class
from .screens.commands import commands
from .screens.keyhold import KeyHold
from .screens.signals import catch_signals
from .screens.ui import ScreenUI
from .store import Store
from .textsafe import clean
from .widgets.header import StatusHeader
from .widgets.navbar import NavBar
from .widgets.scrollbar import install as install_scrollbars

if TYPE_CHECKING:
    from . import history
    from .flows.connect import Handoff
    from .notify import Moment, Notifier
    from .pollers import Pollers

log = logging.getLogger("ncui")


install_scrollbars()

GLOBAL_HELP = """
[b]Keys[/b]  1–6 screens · Tab/Shift-Tab move focus · ? help · Ctrl-P commands · r refresh · h history · q quit
"""


class NCApp(App[None]):
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
        quiet: bool = False,
    ) -> None:
        from .config import in_workspace

        super().__init__()
        self.backend = backend
        self.store = store or Store()
        self.store.meta.setdefault("workspace", in_workspace())  # Account says the daemon holds the credential
        self.mode = mode
        self.first_run = first_run  # a message when there is no token
        self.pollers: Pollers | None = None
        self._unsubs: list[Callable[[], None]] = []
        self._ended = False  # unmounted (NCApp.on_unmount)
        self.history: history.History | None = None  # this service's, once connected
        # what every flow is given (ncui/flows/base.py): its history and pollers are set once connected
        self.keyhold = KeyHold(self)  # keys typed ahead of a question reach it (screens/keyhold.py)
        self.ui = ScreenUI(self, self.keyhold)  # how the flows ask, say and start work (screens/ui.py)
        self.ctx = Context(backend, self.store, self.ui)
        self.flows = Flows(self.ctx, self, handoff=handoff)  # each built at its first use (ncui/flows/wiring.py)
        self.quiet = quiet  # --quiet: no desktop notification (in-app ones stay)
        self.notifier: Notifier | None = None  # the moments (ncui/notify): made after the first frame

    def desktop_out(self, text: str) -> None:
        """A desktop notification's bytes to the terminal (screens/desktop.py, the one adapter)."""
        from .screens.desktop import write

        write(self, text)

    # ---- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(self.store, mode=self.mode)
        if self.first_run:
            yield Static(self.first_run, id="first-run", markup=False)
            yield Footer()
            return
        yield NavBar(tuple((name, title) for name, title, _, _ in VIEWS), active="account", id="tabs")
        with ContentSwitcher(initial="account", id="views"):  # the others are built when first shown
            yield AccountView(self.store, id="account")
        yield Footer()

    async def on_mount(self) -> None:
        if self.first_run:
            return
        account = self.query_one("#account", View)
        account.activate(True)
        account.focus()
        catch_signals(self)
        if self.store.meta.get("token_warning"):  # also a line on Account until it is fixed
            self.notify(self.store.meta["token_warning"], severity="warning", timeout=20)
        self.call_after_refresh(self._start)

    def _start(self) -> None:
        """After the first frame (bench/startup.py times it): the flows that follow the store from the start, then
        connecting (the first answers fill Account's cards)."""
        flows = self.flows
        self._start_moments()
        flows.connect.start()  # the active cluster from whoami; --recipe chosen on Recipes once the catalog is read
        self._unsubs.append(self.store.subscribe(("bid", "vm_capacity"), flows.lease.on_standing, interested=False))
        # a defective tune, a serve on the previous model, the load test's end: said at once
        self._unsubs.append(flows.lifecycle.watch())
        self.ui.start(self._connect, name="connect")

    def _start_moments(self) -> None:
        """The moments (ncui/notify): in the app always; to the desktop while the terminal is not focused (Textual's
        ``app_focus``, from the terminal's focus reports), when their kind is on and not ``--quiet``."""
        import os

        from . import notify
        from .notify.escape import protocol
        from .notify.moments import StoreMoments

        settings = notify.load()
        if settings.problem:
            self.notify(settings.problem, title="Notification settings", severity="warning", timeout=15)
        self.notifier = self.ctx.moments = notify.Notifier(
            settings,
            say=self._say_moment,
            write=lambda text: self.desktop_out(text),
            desktop_now=lambda: not self.app_focus,
            protocol=lambda: protocol(os.environ),
            quiet=self.quiet,
            tmux=bool(os.environ.get("TMUX")),
        )
        self._unsubs.append(StoreMoments(self.store, self.notifier.moment).start())

    def _say_moment(self, m: Moment) -> None:
        self.notify(m.body, title=m.title, severity=m.severity, timeout=12 if m.severity == "information" else 20)

    def action_notify_settings(self) -> None:
        """The palette's Notifications: each kind on or off for the desktop, saved to the settings file."""
        from . import notify
        from .screens.desktop import NotifySettingsModal

        if self.notifier is None:
            return
        notifier = self.notifier

        def saved(new: notify.Settings | None) -> None:
            if new is None or new.on == notifier.settings.on:
                return
            notifier.settings = new
            try:
                notify.save(new)
            except OSError as e:
                self.notify(f"Not saved ({e.strerror or e}): kept for this session.", severity="warning", timeout=10)
                return
            self.notify(f"Notification settings saved to {notify.settings_path()}.", timeout=5)

        self.push_screen(NotifySettingsModal(notifier.settings, str(notify.settings_path()), self.quiet), saved)

    async def _connect(self) -> None:
        if self.backend is None:  # the first-run screen has no backend, and never connects
            return
        from .api.errors import NCError

        try:
            await self.backend.connect()
        except Exception as e:  # the box failed to start, or a bad endpoint: say so, keep the app up
            log.exception("connect failed")
            self.store.fail("balance", f"Cannot start: {e}" if not isinstance(e, NCError) else str(e))
            return
        if self._ended:  # quit while connecting: on_unmount has closed what stood then; the client made since too
            await self.backend.close()
            return
        assert self.backend.endpoints is not None
        # every change, as its command (h), dated on the clock the Report dates by (the box's in the demo)
        self.history = self.backend.history
        self.ctx.history = self.history
        self.flows.limit.start()  # the spending limit: loaded with the organization, checked on every update
        self.flows.recall.state_notices()
        self.pollers = self.ctx.pollers = self.backend.pollers(self.store)
        self.pollers.start()
        if self.mode != "demo":  # the service's contract, once a day (the demo's box serves ncui's own reading)
            self.set_timer(3, lambda: self.ui.start(self._contract_check, name="contract-check"))

    async def _contract_check(self) -> None:
        """A drift of the service's contract (ncui/doctor/background.py): one line, a notification and in ``?``."""
        from .doctor.background import daily_drift

        assert self.backend is not None and self.backend.endpoints is not None
        line = await daily_drift(self.backend.endpoints)
        if line:
            self.store.meta["contract_drift"] = clean(line)
            self.notify(line, severity="warning", timeout=30)

    async def on_unmount(self) -> None:
        self._ended = True  # (a connect still under way starts no pollers after this: _connect)
        for u in self._unsubs:
            u()
        if self.flows.built("connect"):
            await self.flows.connect.close()  # the watches, the cluster's client
        if self.flows.built("nodes"):
            await self.flows.nodes.close()  # the nodes' ssh connections
        if self.flows.built("slurm"):
            await self.flows.slurm.close()
        if self.pollers is not None:
            await self.pollers.stop()
        if self.backend is not None:
            await self.backend.close()

    def box_ssh_config(self) -> Path | None:
        from .remote.research import box_ssh_config  # (asyncssh with it: ~160 ms, never before the first frame)

        return box_ssh_config(self.backend)

    async def on_event(self, event: events.Event) -> None:
        if not self.keyhold.held(event):  # (a key typed ahead of a question waits for it)
            await super().on_event(event)

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

    # ---- what the flows are given -------------------------------------------------------------------

    def choose_recipe(self, name: str) -> None:
        """The hand-off's recipe: Recipes shown, with it chosen."""

        async def show() -> None:
            from .screens.recipes import RecipesView

            await self.action_show("recipes")
            for view in self.query(RecipesView):
                view.choose(name, handed_off=True)

        self.call_later(show)

    def kube_moved(self) -> None:
        """The cluster's client was made anew (its endpoint moved): Workloads follows its log through it."""
        from .screens.kubepane import KubePane

        for pane in self.query(KubePane):
            pane.kube_changed()

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
        if self.store.meta.get("contract_drift"):  # (a server's words: never markup)
            body += "\n[b]The service's contract[/b]  " + escape(self.store.meta["contract_drift"])
        from .screens.modals import HelpModal

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
            from .screens.modals import ResultsModal

            self.push_screen(ResultsModal(escape(f"Last error: {failure.what}"), failure.body()))

    def action_doctor(self) -> None:
        """The palette's Doctor: ``ncui doctor``'s lines (ncui/doctor/), in a modal."""

        async def run() -> None:
            from .doctor import render_text
            from .doctor.run import diagnose
            from .screens.modals import ResultsModal

            assert self.backend is not None and self.backend.endpoints is not None
            self.notify("ncui doctor: checking the service's contract and this machine…", timeout=4)
            checks = await diagnose(self.backend.endpoints)
            self.push_screen(ResultsModal("ncui doctor", render_text(checks)))

        self.ui.start(run, name="doctor", exclusive=True)

    # ---- quitting ----------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """q, Ctrl-C, Ctrl-Q and the palette's Quit: instant when no meter runs, else asked first (LeaseFlow.quit)."""
        if self.first_run or self.backend is None or self.backend.nc is None:
            self.exit()
            return
        self.flows.lease.quit()

    def quit(self, *, end_session: bool) -> None:
        """The end of the app once the quit was decided; ``end_session``: nothing stands, so a spending limit for
        this session ends with it (a dated one stays)."""
        if end_session:
            self.flows.limit.end_session()
        self.exit()

    # ---- kubectl sign-in ----------------------------------------------------------------------

    def action_kube_signin(self) -> None:
        self.flows.connect.sign_in()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not self.first_run:
            yield from commands(self, VIEWS)


# What is imported by now (Textual, ncui's modules and classes) lives as long as the process: out of the
# collector's sight, the full collection that otherwise falls due as the first frame is drawn costs ~35 ms less.
gc.freeze()

__all__ = ["NCApp", "Text"]
