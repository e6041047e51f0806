"""The spending limit's two modals: the question that sets it (``SpendingLimitModal``) and the last warning at
100% (``CountdownModal``). The limit's life and its enforcement are ``ncui/flows/limit.py`` (SpendingLimitFlow);
its rules and its file, ``ncui/limits.py``.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Static

from .. import limits as L
from ..money import fmt_usd, parse_dollars

if TYPE_CHECKING:
    from textual.widgets import Input


class CountdownModal(ModalScreen[bool]):
    """The last warning: ncui withdraws what stands when the countdown ends (True), or now on y/Enter; Esc or n
    keeps it (False), and the limit then reads "reached, kept by you"."""

    BINDINGS = [Binding("escape,n", "answer(False)", "Keep"), Binding("y", "answer(True)", "Withdraw now")]
    AUTO_FOCUS = "#yes"  # the safe answer here is to stop spending
    DEFAULT_CSS = """
    CountdownModal { align: center middle; }
    CountdownModal > Vertical { width: 90%; max-width: 80; height: auto; max-height: 100%; border: thick $error;
                                background: $surface; padding: 1 2; }
    CountdownModal #count { text-style: bold; color: $error; margin-top: 1; }
    CountdownModal Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    CountdownModal Button { margin-left: 2; }
    """

    def __init__(self, body: str, what: str, seconds: float, yes: str = "Withdraw now") -> None:
        super().__init__()
        self.body, self.what, self.left, self.yes = body, what, int(round(seconds)), yes

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Spending limit reached[/b]", markup=True)
            yield Static(self.body, markup=False)
            yield Static(self._count(), id="count", markup=False)
            with Horizontal():
                yield Button("Keep it (n, Esc)", id="no")
                yield Button(f"{self.yes} (y, Enter)", id="yes", variant="error")

    def _count(self) -> str:
        return f"ncui will {self.what} in {self.left} s. Esc keeps it."

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)

    def _tick(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.dismiss(True)
            return
        self.query_one("#count", Static).update(self._count())

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class _StopRunsBox(Checkbox, inherit_bindings=False):
    """Space ticks it; Enter sets the limit, as everywhere in the question (a Checkbox's Enter would untick it)."""

    BINDINGS = [Binding("space", "toggle_button", "Toggle", show=False)]


class SpendingLimitModal(ModalScreen["tuple[int, datetime | None, bool] | str | None"]):
    """Set (amount, until, stop_runs), clear ("clear"), or cancel (None) the spending limit. The amount is read
    strictly (``money.parse_dollars``); the end is blank (this session) or a date (``limits.parse_until``); on a
    market cluster a box chooses whether 100% also stops the runs that hold GPU nodes (off unless ticked)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("enter", "submit", show=False)]
    DEFAULT_CSS = """
    SpendingLimitModal { align: center middle; }
    SpendingLimitModal > Vertical { width: 90%; max-width: 84; height: auto; max-height: 100%; border: thick $warning;
                                    background: $surface; padding: 0 2; }
    SpendingLimitModal Field { width: 30; }
    SpendingLimitModal _StopRunsBox { border: none; padding: 0; height: auto; width: 100%; }
    SpendingLimitModal _StopRunsBox:focus { border: none; background-tint: $foreground 10%; }
    SpendingLimitModal Horizontal { height: auto; align-horizontal: right; }
    SpendingLimitModal Button { margin-left: 2; }
    """

    def __init__(self, current: L.Limit | None, now: datetime, counts: str, kind: L.Kind = "market") -> None:
        super().__init__()
        self.current, self.now, self.counts, self.kind = current, now, counts, kind
        self.value: tuple[int, datetime | None, bool] | None = None

    def compose(self) -> ComposeResult:
        from textual.widgets import Label

        from ..money import dollars_text
        from ..widgets.field import Field

        cur = self.current
        n = int(L.COUNTDOWN_S)
        what = {
            "market": f"at 100%, after a {n}-second countdown you can cancel, it withdraws your limit price: no new "
            "nodes. A run on a node you hold goes on, billed, until it ends, unless you tick the box to stop it too.",
            "vm": f"at 100%, after a {n}-second countdown you can cancel, it releases your VM capacity: billing stops, "
            "and every node is destroyed with its disk.",
            "none": "at 100% it warns again: nothing here is withdrawn or stopped.",
        }[self.kind]
        with Vertical():
            yield Static("[b]Spending limit[/b]", markup=True)
            yield Static(f"{self.counts} At 80% ncui warns; {what}", markup=False)
            yield Label("Most the meter may charge, in dollars")
            yield Field(value=dollars_text(cur.amount) if cur else "", placeholder="e.g. 50.00", id="amount")
            yield Label("Until (blank: this session; or YYYY-MM-DD, UTC)")
            yield Field(value=f"{cur.until:%Y-%m-%d %H:%M}" if cur and cur.until else "", id="until")
            if self.kind == "market":
                yield _StopRunsBox(
                    "At 100% also stop my runs on GPU nodes (shared volume kept)",
                    value=bool(cur and cur.stop_runs),
                    id="stop_runs",
                )
            yield Static("", id="why")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                if cur is not None:
                    yield Button("Clear the limit", id="clear")
                yield Button("Set (Enter)", id="ok", variant="warning")

    def on_mount(self) -> None:
        from textual.widgets import Input

        self.query_one("#amount", Input).focus()
        self._judge()

    def on_input_changed(self, event: Input.Changed) -> None:
        self._judge()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self._judge()

    def _stop_runs(self) -> bool:
        boxes = self.query("#stop_runs").results(_StopRunsBox)
        return any(b.value for b in boxes)

    def _judge(self) -> None:
        from textual.widgets import Input

        why = self.query_one("#why", Static)
        self.value = None
        amount_text, until_text = (self.query_one(f"#{i}", Input).value for i in ("amount", "until"))
        if not amount_text.strip():
            why.update(Text("Type the most ncui lets the meter charge, like 50.00.", style="dim"))
            return
        try:
            amount = parse_dollars(amount_text)
            if amount <= 0:
                raise ValueError("must be more than $0")
            until = L.parse_until(until_text, self.now)
        except ValueError as e:
            why.update(Text(f"✗ {e}", style="bold red"))
            return
        stop_runs = self._stop_runs()
        self.value = (amount, until, stop_runs)
        scope = L.scope_words(until)
        also = "; at 100% your runs on GPU nodes are stopped too (listed first, in the countdown)" if stop_runs else ""
        said = f"✓ {fmt_usd(amount)} {scope}, counted from now{also}."
        why.update(Text(said, style="green"))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        elif event.button.id == "clear":
            self.dismiss("clear")
        else:
            self.dismiss(None)

    def _submit(self) -> None:
        if self.value is not None:
            self.dismiss(self.value)
        else:
            self.app.bell()

    def action_submit(self) -> None:
        self._submit()

    def action_cancel(self) -> None:
        self.dismiss(None)
