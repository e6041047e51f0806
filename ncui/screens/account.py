"""Account & balance: who you are, your clusters (choose the active one), balance, burn, runway, what a
first job needs, recent transactions, and the balance over time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import DataTable, Static

from ..formatting import COVER_HOURS, clip_words, fmt_rate, fmt_runway, plan_sentence
from ..money import fmt_price, fmt_usd, ucredits_to_dollars
from .base import View, fit_columns, show_text
from .connect import kube_files_text

if TYPE_CHECKING:
    from ..api import models as m


class AccountView(View):
    NEEDS = (
        "whoami",
        "summary",
        "balance",
        "transactions",
        "cluster",
        "bid",
        "ladder",
        "vm_capacity",
        "ticks",
        "kube_signin",
        "kube_files",
        "slurm_signin",
        "slurm_jobs",
        "research",
    )
    TITLE = "Account"
    HELP = """\
[b]Account & balance[/b]

Who the token belongs to, your organization's clusters and its money.

• [b]kubectl[/b]: press [b]s[/b] to sign in to a Kubernetes cluster: ncui shows the sign-in link (and copies
it where the terminal allows); open it, approve it, and ncui goes on by itself. ncui saves the cluster's
kubeconfig to ~/.kube/<cluster>.yaml and asks once whether to add a <cluster> context to ~/.kube/config, so
that your own kubectl works beside it (Ctrl-P → kubectl context asks again).
• [b]Clusters[/b]: the cluster's kind picks the flow (kubernetes, vm, slurm). Move with ↑/↓ and press
  [b]Enter[/b] to make a cluster the active one: the header and the other screens follow it.
• [b]Balance[/b] is what the organization has now; [b]burn[/b] is the hourly rate the meter last
  assessed (it runs about ten minutes behind); [b]runway[/b] is how long the balance lasts at that burn.
• [b]First job[/b]: a Kubernetes job is refused unless the balance covers two hours of it at your
  ceiling. The line shows that sum and, when short, the exact top-up to ask for.
• [b]Transactions[/b]: charges, top-ups and refunds, newest first. The chart shows the balance over time.
"""

    BINDINGS = [
        Binding("L", "demo_slurm_login('offered')", "slurm-login (demo)"),  # in the footer while it is the next step
        Binding("L", "demo_slurm_login", "slurm-login (demo)", show=False),
    ]

    def _slurm_login_offered(self) -> bool:
        """The demo's L is the next step: a Slurm cluster in the box, not signed in (the steps on screen say L)."""
        ref = self.store.meta.get("cluster")
        if ref is None or ref.kind != "slurm" or self.ncapp.backend is None or self.ncapp.backend.demo is None:
            return False
        signin = self.store.value("slurm_signin")
        return signin is None or not signin.ok

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "demo_slurm_login":  # the footer's L while it is offered, the hidden one otherwise
            return (parameters == ("offered",)) == self._slurm_login_offered()
        return True

    def action_demo_slurm_login(self, _offered: str = "") -> None:
        """The demo's stand-in for the human's slurm-login (a Slurm cluster in the demo only)."""
        ref = self.store.meta.get("cluster")
        if ref is None or ref.kind != "slurm":
            return
        self.ncapp.flows.slurm.demo_login()

    tables = False  # the clusters' and transactions' tables and the chart are mounted (just after the first frame)

    def compose(self) -> ComposeResult:
        # The first frame has the cards (who you are, the money: "Loading…" until read); the two tables and the
        # chart, most of Account's cost to build (~35 ms, bench/startup.py), are mounted just after it.
        with Horizontal(classes="row"):
            with Vertical(classes="col", id="account-left"):
                yield Static(id="identity", classes="card")
                yield Static(id="clusters-note", classes="note")
            yield Static(id="money", classes="card col")
        yield Static(id="wide", classes="card")  # a Slurm cluster's sign-in steps, at full width
        yield Horizontal(classes="row", id="account-lower")

    def mounted(self) -> None:
        self.set_interval(1.0, self._tick)
        # (once the first frame is drawn, and after the callbacks that waited for it: the bench's among them)
        self.call_after_refresh(self.call_later, self._mount_tables)

    async def _mount_tables(self) -> None:
        """The tables and the chart, after the first frame; nothing when the app is already quitting."""
        from textual.widget import MountError

        from ..widgets.chart import Chart

        if self.tables or not self.is_attached or self.app.return_code is not None or not self.app.is_running:
            return
        clusters: DataTable[Text] = DataTable(id="clusters", cursor_type="row", zebra_stripes=False, show_cursor=True)
        try:
            await self.query_one("#account-left").mount(clusters, after="#identity")
            await self.query_one("#account-lower").mount(
                DataTable(id="transactions", cursor_type="none", classes="col"),
                Chart(id="balance-chart", classes="col"),
            )
            clusters.add_column("cluster", width=16)
            clusters.add_column("kind", width=10)
            self.tables = True
            self._tx_columns()
            self.refresh_view()
            self.call_after_refresh(self._fit_when_sized)
        except (NoMatches, MountError):
            # The app quit while they were mounted (Textual mounts nothing under a closing widget): nothing to show
            # them on. At any other time it is a bug, raised.
            self.tables = False
            if self.app.return_code is None and self.app.is_running:
                raise

    def _tick(self) -> None:
        """A Slurm certificate's "… left" counts down by its clock (the card is redrawn only when it changed)."""
        active = self.store.meta.get("cluster")
        if active is not None and active.kind == "slurm" and self.store.value("slurm_signin") is not None:
            self._slurm_steps()

    def refresh_view(self) -> None:
        st = self.store
        who = st.value("whoami")
        ident = self.query_one("#identity", Static)
        if who is None:
            t = self.problem("whoami") or Text("Loading who you are…", style="dim")
        else:
            t = Text()
            t.append(who.user.email, style="bold")
            if who.org_name is None:  # (not sent: the header says unknown, this says why)
                t.append(f"\nOrganization unknown: {who.unknown('org_name')}", style="bold red")
            else:
                t.append(f"\n{who.org_name}")
            t.append(f" · {who.kind_said}", style="dim" if who.org_kind is not None else "bold red")
            active = self.store.meta.get("cluster")
            if active is not None and active.kind == "kubernetes":
                t.append("\nkubectl  ", style="dim")
                state = self.store.get("kube_signin")
                if state.value == "signed in":
                    t.append("signed in ✓", style="green")
                elif state.value == "expired":
                    t.append("sign-in expired: approve the new link (s shows it)", style="bold yellow")
                elif state.error:
                    t.append(f"sign-in failed: {clip_words(state.error, 90)}", style="red")  # (the toast said it whole)
                elif state.value in ("checking", "waiting for approval"):
                    t.append(state.value + "…", style="yellow")
                else:
                    t.append("press s to sign in", style="bold")
                kf = self.store.value("kube_files")  # ~/.kube/<cluster>.yaml and the context (flows/connect.py)
                if kf is not None and kf.cluster == active.name:
                    t.append("\n")
                    t.append_text(kube_files_text(kf))
        if self.store.meta.get("workspace"):  # the daemon holds the credential (the guide): never asked for here
            from ..config import WORKSPACE_NOTE

            t.append(f"\n{WORKSPACE_NOTE}", style="dim")
        if self.store.meta.get("token_warning"):  # the token file is readable by others: the fix, chmod 600
            t.append(f"\n⚠ {self.store.meta['token_warning']}", style="bold yellow")
        show_text(ident, t)
        self._clusters(who)
        self._money()
        self._slurm_steps()
        self._transactions()

    def _slurm_steps(self) -> None:
        """A Slurm cluster's sign-in and next step, under both columns: the setup command, whose URL is 40-odd
        characters, stays whole on one line at 80 columns (in the money column it broke as "setup.⏎sh")."""
        offered = self._slurm_login_offered()
        if offered != getattr(self, "_login_offered_shown", False):  # the demo's L comes to the footer, or leaves it
            self._login_offered_shown = offered
            self.refresh_bindings()
        wide = self.query_one("#wide", Static)
        active = self.store.meta.get("cluster")
        wide.display = active is not None and active.kind == "slurm"
        if active is not None and active.kind == "slurm":
            from .slurm import slurm_card

            demo = self.ncapp.backend is not None and self.ncapp.backend.demo is not None
            show_text(wide, slurm_card(self.store, active, demo=demo, now=self.ncapp.flows.slurm.cert_now()))

    def _clusters(self, who: m.Whoami | None) -> None:
        if not self.tables:
            return
        table = self.query_one("#clusters", DataTable)
        note = self.query_one("#clusters-note", Static)
        rows = [] if who is None else [(c.name, c.kind_short) for c in who.clusters]
        active = self.store.meta.get("cluster")
        shown = [
            tuple(str(c.plain if isinstance(c, Text) else c) for c in table.get_row_at(i))
            for i in range(table.row_count)
        ]
        want = [(("▸ " if active and active.name == n else "  ") + n, k) for n, k in rows]
        if shown != want:
            cursor = table.cursor_row
            table.clear()
            for name, kind in want:
                table.add_row(Text(name), Text(kind))  # not markup: a server's names
            if table.row_count:
                table.move_cursor(row=min(cursor, table.row_count - 1))
        table.display = bool(rows)
        if who is not None and not rows:
            if who.org_kind == "public_research":
                show_text(
                    note,
                    Text(
                        "A public research organization has no clusters: its members get whole GPU nodes "
                        "from Marshall inside a workspace, reached over ssh (Workloads, 4).",
                        style="italic",
                    ),
                )
            else:
                show_text(note, Text("This organization has no clusters yet.", style="italic"))
        elif len(rows) > 1 or (who is not None and not all(c.known for c in who.clusters)):
            said = Text()
            for c in who.clusters if who is not None else ():
                if not c.known:  # (whoami is still read: only this cluster is one ncui cannot show)
                    said.append(f"{c.not_known}.\n", style="bold")
            said.append("↑/↓ and Enter: choose the active cluster" if len(rows) > 1 else "", style="dim")
            show_text(note, said)
        else:
            show_text(note, "")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "clusters":
            return
        who = self.store.value("whoami")
        if who and 0 <= event.cursor_row < len(who.clusters):
            self.ncapp.flows.connect.select_cluster(who.clusters[event.cursor_row])

    def _money(self) -> None:
        st = self.store
        money = self.query_one("#money", Static)
        summary, bal = st.value("summary"), st.value("balance")
        if bal is None and summary is None:
            show_text(money, self.problem("balance", "summary") or Text("Loading the balance…", style="dim"))
            return
        read = bal if bal is not None else summary
        balance = read.balance_ucredits
        t = Text()
        t.append("Balance  ", style="dim")
        if balance is None:  # (a field the service no longer sends: the figures it feeds read unknown, and why)
            t.append(f"unknown: {read.unknown('balance_ucredits')}", style="bold red")
        else:
            t.append(fmt_usd(balance), style="bold")
        if summary is not None and summary.purchases is None:
            t.append(f"\nTop-up   unknown: {summary.unknown('purchases')}", style="bold red")
        elif summary is not None:
            t.append("  (can top up)" if summary.purchases else "  (no purchases)", style="dim")
        if bal is not None:
            t.append("\nBurn     ", style="dim")
            if bal.burn_ucredits_hr is None:  # (a field the service no longer sends: only these figures are lost)
                t.append(f"unknown: {bal.unknown('burn_ucredits_hr')}", style="bold red")
            else:
                t.append(fmt_rate(bal.burn_ucredits_hr))
            if bal.assessed_at:
                t.append(f"  assessed {bal.assessed_at:%H:%M}, ~10 min behind", style="dim")
            t.append("\nRunway   ", style="dim")
            known = bal.burn_ucredits_hr is not None and balance is not None
            t.append(fmt_runway(balance, bal.burn_ucredits_hr) if known else "unknown")
            if bal.burn_ucredits_hr:
                t.append(" at that burn", style="dim")
        problem = self.problem("balance", "summary", "transactions")
        if problem:
            t.append("\n")
            t.append_text(problem)
        plan = self._plan(balance, bool(summary.purchases) if summary else False)
        if plan is not None:
            t.append("\n\n")
            if any(self.store.get(n).failing for n in ("balance", "summary")):  # never "covered" on a stale read
                plan.stylize("yellow")
                plan.append(
                    "\n⚠ judged on the balance as last read, which could not be read since: an apply reads it again "
                    "before it asks.",
                    style="bold yellow",
                )
            t.append_text(plan)
            problem = self.problem("bid", "ladder")  # the plan's price: the last one read, or none read
            if problem:
                t.append("\n")
                t.append_text(problem)
        show_text(money, t)

    def _plan(self, balance: int | None, purchases: bool) -> Text | None:
        """The guide's money check for a first job on the active cluster (never on a figure not sent: the
        check says which is unknown and why)."""
        st = self.store
        active = st.meta.get("cluster")
        info, bid, ladder = st.value("cluster"), st.value("bid"), st.value("ladder")
        t = Text()
        if active is None:
            from .research import research_org, research_text

            return research_text(st, short=True) if research_org(st) else None

        def unknown(what: str, why: str) -> Text:
            t.append("First job: ", style="bold")
            t.append(f"its cover cannot be judged: {what} is unknown ({why}).", style="bold red")
            return t

        if balance is None:
            return None  # (the Balance line above says unknown, and why)
        if active.kind == "kubernetes":
            if info is None or info.name != active.name:
                return None
            if info.market is None:
                return unknown(f"whether {active.name} is a market cluster", info.unknown("market"))
            if not info.market:
                t.append("First job: ", style="bold")
                t.append(
                    f"{active.name} is a fixed cluster: no limit price; jobs run on its "
                    f"{info.reserved_nodes} reserved node(s)."
                )
                return t
            gpus = info.gpus_per_node
            if bid is not None and bid.max_price_per_gpu_hour:
                ceiling, basis = bid.max_price_per_gpu_hour, "at your limit price"
            elif ladder is not None and ladder.rungs:
                ceiling, basis = ladder.rungs[0].price_per_gpu_hour, "at today's price to win one node"
                if ceiling is None:
                    return unknown("today's price to win one node", ladder.rungs[0].unknown("price_per_gpu_hour"))
            else:
                return None
            sentence, short = plan_sentence(gpus, ceiling, balance, purchases)
            t.append(f"First job (one node, {COVER_HOURS} h cover, {basis}):\n", style="bold")
            t.append(sentence, style="bold red" if short else "green")
            return t
        if active.kind == "vm":
            cap = st.value("vm_capacity")
            gone = next((f for f in ("max_gpus", "max_price_per_gpu_hour") if cap is not None and cap.unknown(f)), "")
            if cap is not None and gone:
                return unknown("the declared capacity", cap.unknown(gone))
            if cap is not None and cap.max_gpus and cap.max_price_per_gpu_hour is not None:
                sentence, short = plan_sentence(cap.max_gpus, cap.max_price_per_gpu_hour, balance, purchases)
                t.append("Declared capacity for two hours:\n", style="bold")
                t.append(sentence, style="bold red" if short else "green")
                return t
            from .market import vm_gpu_model

            model = vm_gpu_model(st)
            ticks = [x for x in (st.value("ticks") or ()) if x.gpu_model == model]
            if ticks and ticks[-1].price_per_gpu_hour is None:  # (not sent: never a price from a guess)
                t.append("VM market: ", style="bold")
                t.append(f"what {model} winners are assessed is unknown ({ticks[-1].unknown('price_per_gpu_hour')}).")
                return t
            if ticks:
                t.append("VM market: ", style="bold")
                t.append(f"{model} winners were last assessed {fmt_price(ticks[-1].price_per_gpu_hour)}.")
                return t
            return None
        return None  # (a Slurm cluster's card is under both columns: _slurm_steps)

    _tx_sig: list[tuple[str, str, str]] | None = None  # the transactions shown, as text

    def _tx_columns(self) -> bool:
        if fit_columns(self.query_one("#transactions", DataTable), (("when", 11), ("amount", 9), ("what", 30))):
            self._tx_sig = None  # the rows went with the columns
            return True
        return False

    def _fit_when_sized(self) -> None:
        """The transactions' columns fit again once the new table has its width (a refresh or more after it is
        mounted: a loaded machine may lay it out later)."""
        if not self.tables or not self.is_attached:
            return
        if self.query_one("#transactions", DataTable).size.width == 0:
            self.call_after_refresh(self._fit_when_sized)
            return
        self.on_resize()

    def on_resize(self) -> None:
        if not self.tables:
            return
        if self._tx_columns():
            self._transactions()

    def _transactions(self) -> None:
        if not self.tables:
            return
        table = self.query_one("#transactions", DataTable)
        txs = self.store.value("transactions") or ()
        rows = [
            (
                f"{t.at:%m-%d %H:%M}",
                Text(
                    fmt_usd(t.amount_ucredits, sign=True),
                    style="green" if t.amount_ucredits > 0 else "red",
                    justify="right",
                )
                if t.amount_ucredits is not None
                else Text("unknown", style="bold red", justify="right"),  # (the chart says why)
                Text(t.description),
            )
            for t in txs[:50]
        ]  # not markup: the server's words
        sig = [(r[0], r[1].plain, r[2].plain) for r in rows]
        if sig != self._tx_sig:
            self._tx_sig = sig
            table.clear()
            for r in rows:
                table.add_row(*r)
        self._chart(txs)

    def _chart(self, txs: Sequence[m.Transaction]) -> None:
        from ..widgets.chart import Chart, ChartData, Series

        chart = self.query_one("#balance-chart", Chart)
        bal = self.store.value("balance")
        if bal is None or not txs:
            problem = self.problem("balance", "transactions")
            chart.set_data(
                ChartData(
                    empty=f"Balance over time: {problem.plain}" if problem else "Balance over time: no transactions yet"
                )
            )
            return
        gone = next((t for t in txs if t.amount_ucredits is None), None)
        why = bal.unknown("balance_ucredits") or (gone.unknown("amount_ucredits") if gone is not None else "")
        if why:  # a figure the walk needs was not sent: no line drawn from a guess
            chart.set_data(ChartData(empty=f"Balance over time: unknown: {why}"))
            return
        # Walk back from the balance now through the transactions (newest first).
        points: list[tuple[datetime, int]] = []
        b = bal.balance_ucredits
        for t in txs:
            points.append((t.at, b))
            b -= t.amount_ucredits
        points.reverse()
        if bal.assessed_at and bal.assessed_at > points[-1][0]:
            points.append((bal.assessed_at, bal.balance_ucredits))
        t0 = points[0][0]
        xs = tuple((p[0] - t0).total_seconds() / 3600 for p in points)
        ys = tuple(ucredits_to_dollars(p[1]) for p in points)
        ticks = ((xs[0], xs[-1]), (f"{points[0][0]:%m-%d %H:%M}", f"{points[-1][0]:%H:%M}"))
        chart.set_data(ChartData(series=(Series(xs, ys, "balance $", "green"),), xticks=ticks))
