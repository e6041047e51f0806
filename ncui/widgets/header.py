"""The header: who, which cluster, balance, burn, runway, the standing limit price, and live/stale."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from ..formatting import fmt_age, fmt_rate, fmt_runway
from ..limits import LIMIT_SLICE, limit_state
from ..money import UCREDITS_PER_DOLLAR, fmt_price, fmt_usd
from ..store import Store

if TYPE_CHECKING:
    from collections.abc import Callable

WATCH: tuple[str, ...] = ("whoami", "summary", "balance", "bid", "cluster", "spend", "transactions", LIMIT_SLICE)
# What the meters also read: the cluster's watches, the VM capacity, the research node's status. Drawn at most every
# METERS_EVERY seconds, not on each write: a pod watch writes up to a hundred times a second; the meters walk every pod
# (at 0.25 s that walk was half of ncui's CPU on bench/pods.py's stream; the meters line follows within a second).
METERS_EVERY = 1.0
METERS_WATCH = ("k8s_nodes", "k8s_pods", "k8s_deployments", "vm_capacity", "research", "research_typed")
STALE_AFTER = 45.0  # seconds without a fresh balance before the header says stale
# What the light names when a slice the header shows could not be read ("● stale 12s: limit").
LABELS = {
    "balance": "balance",
    "summary": "balance",
    "whoami": "account",
    "cluster": "cluster",
    "spend": "spend",
    "bid": "limit",
    "transactions": "charges",
    # the view's own slices (the light follows what the whole screen shows): named by the figure, not the slice
    "k8s_pods": "workloads",
    "k8s_jobs": "workloads",
    "k8s_deployments": "workloads",
    "k8s_nodes": "workloads",
    "vm_capacity": "capacity",
    "slurm_jobs": "queue",
    "ssh_keys": "keys",
    "ladder": "ladder",
    "ticks": "ticks",
    "catalog": "recipes",
    "kube_signin": "sign-in",
    "slurm_signin": "sign-in",
    "research": "node",
    "research_typed": "node",
}


class StatusHeader(Static):
    DEFAULT_CSS = """
    StatusHeader { height: 2; background: $panel; color: $text; padding: 0 1; text-wrap: nowrap; }
    """

    def __init__(self, store: Store, *, mode: str = "") -> None:
        super().__init__("")
        self.store = store
        self.mode = mode
        self._last: Text | None = None

    def on_mount(self) -> None:
        self._unsubs = [
            self.store.subscribe(WATCH, lambda s: self.render_now(), interested=True),
            self.store.subscribe(METERS_WATCH, lambda s: self._meters_changed(), interested=True),
        ]
        self.set_interval(1.0, self.render_now)
        self.render_now()

    def on_unmount(self) -> None:
        for unsub in self._unsubs:
            unsub()

    _meters_due = False

    def _meters_changed(self) -> None:
        if not self._meters_due:  # one drawing for a burst of watch events
            self._meters_due = True
            self.set_timer(METERS_EVERY, self._meters_render)

    def _meters_render(self) -> None:
        self._meters_due = False
        self.render_now()

    def render_now(self) -> None:
        text = self.compose_text()
        if text.plain != getattr(self._last, "plain", None) or text != self._last:
            self._last = text
            self.update(text, layout=False)  # two lines, always: no layout pass every second

    def compose_text(self) -> Text:
        st = self.store
        who, cluster_ref, info = st.value("whoami"), st.meta.get("cluster"), st.value("cluster")
        top = Text(no_wrap=True, overflow="ellipsis")
        top.append("ncui ", style="bold")
        if self.mode:
            top.append(f"[{self.mode}] ", style="bold magenta")
        no_token = bool(getattr(self.app, "first_run", ""))  # (the first-run screen: nothing connects)
        if who is None and not no_token:
            top.append("connecting…", style="dim")
        light = Text("● not connected: no token", style="yellow") if no_token else self._liveness()
        meters = self.meters_text()  # on the top line, before the light: the cluster's name gives way to them
        if meters.cell_len:
            meters.append(" ")
            light = meters + light
        # (Textual wraps a Text however no_wrap it is: the CSS above keeps each line one row, and the top line
        # gives way here, before the first layout too, so the light and the second line always stay on screen)
        width = self.content_size.width or self.app.size.width - 2
        room = width - light.cell_len - 2
        if who is not None:
            where = Text()
            if cluster_ref is not None:
                where.append(f" · {cluster_ref.name} ({cluster_ref.kind_said}")
                if info is not None and info.name == cluster_ref.name:
                    where.append(f", {info.gpu_model}")
                    where.append(", market" if info.market else ", fixed" if info.market is not None else ", market?")
                where.append(")")
            elif who.org_kind == "public_research":
                where.append(" · public research (no clusters)")
            org = (  # (not sent: Account says why)
                Text(who.org_name, style="bold", no_wrap=True, overflow="ellipsis")
                if who.org_name is not None
                else Text("organization unknown", style="bold red", no_wrap=True, overflow="ellipsis")
            )
            spare = room - top.cell_len - where.cell_len
            if who.org_kind == "public_research" and cluster_ref is None and 0 < room and spare < org.cell_len:
                where = Text(" · public research")  # (Account says it has no clusters) before the name is cut
                spare = room - top.cell_len - where.cell_len
            if 0 < room and spare < org.cell_len:  # the organization's name gives way first: the cluster's
                org.truncate(max(8, spare), overflow="ellipsis")  # kind, GPU class and market stay whole
            top.append_text(org)
            top.append_text(where)
        if 0 < room < top.cell_len:  # at 80 columns a long name gives way, never the light (nor the meters)
            top.truncate(room, overflow="ellipsis")
        top.append("  ")
        top.append_text(light)

        line = self._second_line("  ", True)
        if line.cell_len > width:  # at 80 columns a standing limit price and the spending limit's share both fit
            line = self._second_line(" ", False)
        if line.cell_len > width:  # never a figure cut short without saying so
            line.truncate(max(1, width), overflow="ellipsis")
        out = Text(no_wrap=True)
        out.append_text(top)
        out.append("\n")
        out.append_text(line)
        return out

    def _second_line(self, sep: str, padded: bool) -> Text:
        """Balance, burn, runway, the standing limit price and the spending limit: ``sep`` between them, and
        the highlighted ones ``padded`` with a space each side (tight at 80 columns: one space, no padding)."""
        st = self.store
        info, summary, bal, bid = st.value("cluster"), st.value("summary"), st.value("balance"), st.value("bid")

        def pad(text: str) -> str:
            return f" {text} " if padded else text

        line = Text(no_wrap=True, overflow="ellipsis")
        read = bal if bal is not None else summary  # (the balance's own answer first, the summary's until then)
        balance = read.balance_ucredits if read is not None else None
        burn = bal.burn_ucredits_hr if bal else None
        line.append("balance ", style="dim")
        if read is not None and balance is None:  # not sent (Account says why): never a guess
            line.append("unknown", style="bold red")
        else:
            line.append(fmt_usd(balance), style="bold")
        line.append(f"{sep}burn ", style="dim")
        if bal is not None and burn is None:
            line.append("unknown", style="bold red")
        else:
            line.append(fmt_rate(burn))
        line.append(f"{sep}runway ", style="dim")
        gone = (bal is not None and burn is None) or (read is not None and balance is None)
        line.append("unknown" if gone else fmt_runway(balance, burn))
        bid_failing = st.get("bid").failing
        if bid is not None and bid.max_price_per_gpu_hour:
            line.append(sep)
            line.append(pad(f"limit {fmt_price(bid.max_price_per_gpu_hour)}"), style="bold black on yellow")
            if bid_failing:  # the last limit read; the latest read failed
                line.append(" stale", style="bold red")
        elif info is not None and info.market:
            line.append(f"{sep}limit ", style="dim")
            if bid is not None:
                line.append("none")
                if bid_failing:
                    line.append(" stale", style="bold red")
            elif bid_failing:
                line.append("unknown", style="bold red")  # never read: Lease says why
            else:
                line.append("…", style="dim")
        self._spending_limit(line, sep, pad)
        return line

    def meters_text(self) -> Text:
        """What runs and bills besides the limit price (``meters.running_meters``), short, with what they cost an
        hour together: "meters serve+1 idle $64.00/h"; "+?" when a figure could not be read (Lease says why)."""
        from ..meters import running_meters, total_per_hour

        meters = [x for x in running_meters(self.store) if x.kind != "bid"]
        if not meters:
            return Text()
        total, unknown = total_per_hour(meters)
        known = any(x.per_hour is not None for x in meters)  # (a figure read: the sum of those read)
        upto = "≤" if any(x.kind == "vm" for x in meters) else ""  # (declared capacity bills up to its ceiling)
        cost = f"{upto}{fmt_usd(total)}/h" if known else ""
        if upto and not total and not unknown:  # capacity declared, no node active yet: nothing billed, none "≤$0"
            cost = "declared"
        cost += ("+?" if known else "?/h") if unknown else ""
        out = Text()
        out.append(f" meters {'+'.join(x.tag for x in meters)} {cost} ", style="bold black on yellow")
        return out

    def _spending_limit(self, line: Text, sep: str, pad: Callable[[str], str]) -> None:
        """The spending limit, short: "cap $50 24%"; highlighted from 80%, red once reached; "?" when the
        charges could not be read (Lease says why)."""
        state = limit_state(self.store)
        if state is None:
            return
        amount = state.limit.amount
        cap = fmt_usd(amount, cents=amount % UCREDITS_PER_DOLLAR != 0)
        line.append(sep)
        if state.level == "expired":
            line.append(f"cap {cap} expired", style="dim")
        elif state.percent is None:
            line.append(f"cap {cap} ?", style="bold red")
        elif state.level == "reached":
            line.append(pad(f"cap {cap} reached"), style="bold white on red")
        elif state.level == "kept":
            line.append(pad(f"cap {cap} kept"), style="bold white on red")
        elif state.level == "warn":
            line.append(pad(f"cap {cap} {state.percent}%"), style="bold black on yellow")
        else:
            line.append("cap ", style="dim")
            line.append(f"{cap} {state.percent}%")
        if state.problem and state.percent is not None:
            line.append(" stale", style="bold red")

    def shown(self) -> tuple[str, ...]:
        """The slices the header shows now: the account's always; on a Kubernetes cluster the cluster's and
        its spend; on a market cluster the limit price too."""
        st = self.store
        ref, info = st.meta.get("cluster"), st.value("cluster")
        names: tuple[str, ...] = ("balance", "summary", "whoami")
        if ref is not None and ref.kind == "kubernetes":
            names += ("cluster", "spend")
            if info is not None and info.market and info.name == ref.name:
                names += ("bid",)
        if st.value(LIMIT_SLICE) is not None:  # the spending limit counts the charges
            names += ("transactions",)
        return names

    def _liveness(self) -> Text:
        """Live only while every slice the screen shows is fresh (the header's, and the view's below it: "● live"
        never sits above a view's "⚠ Stale"); else which are stale, and for how long."""
        st = self.store
        now = st.now()
        s = st.get("balance")
        if not s.loaded:
            return Text("● connecting", style="yellow") if not s.error else Text("● offline", style="bold red")
        view = getattr(self.app, "current_view", lambda: None)()  # (NCApp's; None on the first-run screen)
        names = dict.fromkeys(self.shown() + tuple(getattr(view, "NEEDS", ())))
        slices = [st.get(n) for n in names]
        failing = [x for x in slices if x.failing]
        old = [x for x in slices if x.name == "balance" and (x.age(now) or 0) > STALE_AFTER]
        if not failing and not old:
            return Text("● live", style="green")
        ages = [a for x in failing + old if (a := x.age(now)) is not None]  # (None: never loaded)
        labels = list(dict.fromkeys(LABELS.get(x.name, x.name.replace("_", " ")) for x in failing + old))
        age = f" {fmt_age(max(ages))}" if ages else ""
        return Text(f"● stale{age}: {', '.join(labels)}", style="bold red" if failing else "yellow")
