"""The exit guard: quitting while any meter runs asks first, and names every one (``ncui/meters.py``).

A standing limit price keeps pulling nodes for any GPU job applied later (by this person, by kubectl, by
a teammate); declared VM capacity keeps being granted and billed; held nodes (busy, idle, a serve's) and a
public-research node bill whatever ncui does. Quitting asks: stay, keep them and quit, or (when a limit price or
capacity stands) withdraw / release it and quit; each meter says what it costs per hour and what each answer does
to it. Quitting with no meter running is instant. Nothing is changed without the human's answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from ..meters import Meter

if TYPE_CHECKING:
    pass


def meter_text(meters: list[Meter]) -> str:
    """The quit question's body: each meter, what it costs per hour, and what each answer does to it."""
    acts = any(x.acts for x in meters)
    parts = []
    for x in meters:
        said = [x.sentence, f"Per hour: {x.cost}.", f"k: {x.keep}."]
        if acts:
            said.append(f"w: {x.withdraw}.")
        parts.append("• " + " ".join(said))
    return "\n".join(parts)


class ExitGuardModal(ModalScreen[str | None]):
    """Stay (the default: Esc, Enter), keep it and quit, or withdraw / release it and quit."""

    BINDINGS = [
        Binding("escape,s", "answer('stay')", "Stay"),
        Binding("k", "answer('keep')", "Keep and quit"),
        Binding("w", "answer('withdraw')", "Withdraw and quit"),
    ]
    DEFAULT_CSS = """
    ExitGuardModal { align: center middle; }
    ExitGuardModal > Vertical { width: 90%; max-width: 84; height: auto; max-height: 100%; border: thick $warning;
                                background: $surface; padding: 1 2; }
    ExitGuardModal Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ExitGuardModal Button { margin-left: 1; }
    ExitGuardModal #hint { color: $text-muted; }
    ExitGuardModal #meters { height: auto; max-height: 14; }
    """

    def __init__(self, meters: list[Meter]) -> None:
        super().__init__()
        self.meters = meters
        self.standing = [x for x in meters if x.acts]  # what w withdraws or releases

    def compose(self) -> ComposeResult:
        release = " / ".join(dict.fromkeys("withdraw" if s.kind == "bid" else "release" for s in self.standing))
        with Vertical():
            yield Static("[b]Quit while these meters run?[/b]", markup=True)
            with VerticalScroll(id="meters"):
                yield Static(meter_text(self.meters), markup=False)
            with Horizontal():
                yield Button("Stay (Esc)", id="stay", variant="primary")
                them = "it" if len(self.meters) == 1 else "them"
                keep = "Keep it, quit (k)" if self.standing else f"Leave {them} running, quit (k)"
                yield Button(keep, id="keep", variant="default")
                if self.standing:
                    yield Button(f"{release.capitalize()}, quit (w)", id="withdraw", variant="warning")
            yield Static("Enter answers the highlighted button; Stay is highlighted first.", id="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#stay", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)

    def action_answer(self, value: str) -> None:
        if value == "withdraw" and not self.standing:
            return  # nothing here that ncui can withdraw or release
        self.dismiss(value)
