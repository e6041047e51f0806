"""The exit guard: quitting while something still spends money asks first.

A standing limit price keeps pulling nodes for any GPU job applied later (by this person, by kubectl, by
a teammate); declared VM capacity keeps being granted and billed. Quitting with either standing asks:
stay, keep it and quit, or withdraw / release it and quit. Quitting with nothing standing is instant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from ..money import fmt_price

if TYPE_CHECKING:
    from ..store import Store


@dataclass(frozen=True)
class Standing:
    """One thing that still spends after ncui quits."""

    kind: str  # "bid" | "vm"
    cluster: str
    sentence: str  # what it is and what it keeps doing
    price: int = 0  # the limit price (µ$/GPU-h): a VM release repeats it, as the PUT needs both fields
    unknown: bool = False  # could not be read: we cannot say it is gone


def standing_spend(store: Store) -> list[Standing]:
    """What stands now on the active cluster, from the store (no network: quitting stays instant).

    A value that could not be read is not taken for "nothing": an unread bid on a market cluster is
    reported as unknown, so the human decides."""
    ref, info = store.meta.get("cluster"), store.value("cluster")
    out: list[Standing] = []
    if ref is None:
        return out
    if ref.kind == "kubernetes" and info is not None and info.name == ref.name and info.market:
        bid_slice = store.get("bid")
        bid = bid_slice.value
        if bid is not None and bid.max_price_per_gpu_hour:
            stale = (
                " (last read; the latest read failed)"
                if bid_slice.error and (bid_slice.error_at or 0) >= (bid_slice.fetched_at or 0)
                else ""
            )
            out.append(
                Standing(
                    "bid",
                    ref.name,
                    f"A limit price of {fmt_price(bid.max_price_per_gpu_hour)} "
                    f"stands on {ref.name}{stale}. Kept, it goes on pulling nodes for any GPU job "
                    "applied to this cluster later (by you, kubectl or a teammate), billed while "
                    "they run.",
                    bid.max_price_per_gpu_hour,
                )
            )
        elif bid is None and bid_slice.error:
            out.append(
                Standing(
                    "bid",
                    ref.name,
                    f"Whether a limit price stands on {ref.name} is unknown (could not read it: {bid_slice.error}).",
                    unknown=True,
                )
            )
    if ref.kind == "vm":
        cap = store.value("vm_capacity")
        if cap is not None and cap.max_gpus:
            held = [a for a in cap.allocations if a.state not in ("released", "reclaimed")]
            out.append(
                Standing(
                    "vm",
                    ref.name,
                    f"VM capacity of {cap.max_gpus} GPUs at up to "
                    f"{fmt_price(cap.max_price_per_gpu_hour)} is declared on {ref.name} "
                    f"({len(held)} allocation{'s' if len(held) != 1 else ''}). Kept, nodes go on "
                    "being granted and billed until it is released."
                    + (
                        " Released, every node is destroyed with its local disk (to copy files off first: Stay, "
                        "then R on Lease)."
                        if held
                        else ""
                    ),
                    cap.max_price_per_gpu_hour,
                )
            )
    return out


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
    """

    def __init__(self, standing: list[Standing]) -> None:
        super().__init__()
        self.standing = standing

    def compose(self) -> ComposeResult:
        release = " / ".join(dict.fromkeys("withdraw" if s.kind == "bid" else "release" for s in self.standing))
        with Vertical():
            yield Static("[b]Quit while this still stands?[/b]", markup=True)
            yield Static("\n\n".join(s.sentence for s in self.standing), markup=False)
            with Horizontal():
                yield Button("Stay (Esc)", id="stay", variant="primary")
                yield Button("Keep it, quit (k)", id="keep", variant="default")
                yield Button(f"{release.capitalize()}, quit (w)", id="withdraw", variant="warning")
            yield Static("Enter answers the highlighted button; Stay is highlighted first.", id="hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#stay", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)

    def action_answer(self, value: str) -> None:
        self.dismiss(value)
