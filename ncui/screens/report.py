"""Report (key 6): the guide's report back for the job that runs now or ran last on the active cluster, read by the
same ``report.collect`` as ``ncui report`` and drawn by the same ``report.rows`` as its markdown: GPU class, the
node's arrival, the first loss lines or the completion, the assessed rate, spend so far, how to stop it, what
still stands. Read when shown and every 30 s while shown; ``c`` copies it as markdown."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from .base import View

LABEL = 16
EVERY = 30.0  # seconds between reads while shown


class ReportView(View):
    NEEDS: ClassVar[tuple[str, ...]] = ("whoami",)
    TITLE = "Report"
    HELP = """\
[b]Report[/b]: what to tell your human, for the job that runs now or ran last on the active cluster.

• The GPU class, when the node arrived (the Node's Ready time, or its pod's start there once the Node is gone;
  an allocation's granted_at; the Slurm job's start), each reclaim and the pod that replaced it, the first loss
  lines of the pod that ran (or the completion), the assessed rate per GPU hour (first the running rate the
  guide reports for the cluster's kind: the market's live rate on Kubernetes, what winners are assessed on a VM
  cluster; then your newest charge and the organization's metered rate, about ten minutes behind), spend so
  far, the exact command to stop it, and what still stands (limit price, declared capacity) with the command to
  withdraw it.
• It reads the cluster itself: a job applied by hand with kubectl is reported too. What ncui saw is remembered
  ($XDG_STATE_HOME/ncui/session.json, never the token): the report holds after a restart and once the pod is gone.
• [b]c[/b] copies it as markdown (for a chat or an issue); [b]u[/b] reads it again now.
  On the command line: ncui report (--json, --markdown).
"""
    BINDINGS = [
        Binding("c", "copy", "Copy markdown"),
        Binding("u", "update", "Update"),
    ]

    def __init__(self, store: Any, *, id: str) -> None:
        super().__init__(store, id=id)
        self.report: dict[str, Any] | None = None
        self.reading = False

    def compose(self) -> ComposeResult:
        yield Static(id="report")

    def mounted(self) -> None:
        self.set_interval(EVERY, self._tick)

    def _tick(self) -> None:
        if self.display and self.ncapp.current_view() is self:
            self.read()

    def activate(self, shown: bool) -> None:
        super().activate(shown)
        if shown:
            self.read()

    @work(group="report", exclusive=True, exit_on_error=False)
    async def read(self) -> None:
        self.reading = True
        self.refresh_view()
        try:
            report = await self.ncapp.flows.recall.read_report()
        finally:
            self.reading = False
        if report is not None:
            self.report = report
        self.refresh_view()

    def refresh_view(self) -> None:
        from rich.console import Group
        from rich.table import Table

        from ..report import rows

        head = Text()
        head.append("Report", style="bold")
        head.append(" · what to tell your human", style="dim")
        if self.report is None:
            body = self.problem("whoami") or Text("Reading the service and the cluster…", style="dim")
            self.query_one("#report", Static).update(Group(head, Text(), body))
            return
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=LABEL, style="bold", no_wrap=True)
        grid.add_column(ratio=1, overflow="fold")  # (commands and log lines fold whole, never cut with …)
        for label, lines in rows(self.report, self.ncapp.history):
            value = Text()
            for i, line in enumerate(lines):
                unknown = line.startswith("unknown (")
                code = label in ("Stop it", "First loss lines") or line.startswith("withdraw: ")
                value.append(("\n" if i else "") + line, style="bold red" if unknown else "cyan" if code else "")
            grid.add_row(label, value)
        foot = Text(f"As of {self.report['generated_at'][:16].replace('T', ' ')} UTC", style="dim")
        foot.append(" · reading…" if self.reading else " · c copies it as markdown · u reads it again", style="dim")
        self.query_one("#report", Static).update(Group(head, Text(), grid, Text(), foot))

    def action_copy(self) -> None:
        from ..report import markdown

        if self.report is None:
            self.notify("The report is still being read.", timeout=3)
            return
        self.app.copy_to_clipboard(markdown(self.report, self.ncapp.history))
        self.notify("Copied the report as markdown (your terminal's clipboard).", timeout=4)

    def action_update(self) -> None:
        self.read()
