"""History (h): what ncui changed on this service, as the commands a person would type, newest last.

Each entry is two lines: ``# when — what`` and the command (``curl`` with ``$NC_TOKEN``, ``kubectl --context``,
``ssh``). Enter or c copies the highlighted command (the app's copy: OSC 52, where the terminal allows); Esc, q
or h closes. ``ncui history`` prints the same on the command line. The entries come from ``ncui/history.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ..textsafe import clean

if TYPE_CHECKING:
    from ..history import Entry, History

SHOWN = 500  # the newest entries listed (the file keeps them all; ncui history prints them all)


def entry_text(e: Entry) -> Text:
    """The comment (dim; a failure in red) over the command, both made safe to show."""
    t = Text(clean(e.comment()), style="dim" if e.ok else "red")
    t.append("\n")
    t.append(clean(e.command), style="bold" if e.ok else "")
    return t


class HistoryScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,q,h", "close", "Close"),
        Binding("c", "copy", "Copy"),
    ]
    DEFAULT_CSS = """
    HistoryScreen { align: center middle; }
    HistoryScreen > Vertical { width: 100%; max-width: 140; height: 100%; border: round $accent;
                               background: $surface; padding: 0 1; }
    HistoryScreen > Vertical { border-title-style: bold; }
    HistoryScreen #title { color: $text-muted; }
    HistoryScreen #problems { color: $warning; }
    HistoryScreen OptionList, HistoryScreen OptionList:focus { height: 1fr; border: none; padding: 0;
                                                               background: $surface; }
    HistoryScreen #empty { height: 1fr; color: $text-muted; }
    HistoryScreen #keys { color: $text-muted; }
    """

    def __init__(self, history: History | None) -> None:
        super().__init__()
        self.history = history
        self.entries: list[Entry] = []

    def compose(self) -> ComposeResult:
        h = self.history
        read = h.read() if h is not None else None
        self.entries = list(read.entries[-SHOWN:]) if read is not None else []
        with Vertical() as box:
            box.border_title = "History" + (f" · {clean(h.origin)}" if h is not None else "")
            yield Static("What ncui changed, as the commands you would type (newest last)", id="title", markup=False)
            if read is not None and read.problems:
                shown = list(read.problems[:3]) + (
                    [f"… and {len(read.problems) - 3} more."] if len(read.problems) > 3 else []
                )
                yield Static("\n".join(clean(p) for p in shown), id="problems", markup=False)
            if self.entries:
                yield OptionList(*(Option(entry_text(e)) for e in self.entries), id="entries")
            else:
                yield Static(
                    ("Nothing changed yet." if h is not None else "Not connected to National Compute yet.")
                    + "\n\nEvery limit price set or withdrawn, apply, stop, scale, sign-in, key, declaration, release, "
                    "sbatch, scancel and docker run or rm on a node is listed here as the command you would type "
                    "(curl, kubectl --context, ssh), to copy.",
                    id="empty",
                    markup=False,
                )
            more = (
                f" · the newest {SHOWN} of {len(read.entries)}"
                if read is not None and len(read.entries) > SHOWN
                else ""
            )
            yield Static(
                f"Enter/c copies the highlighted command · Esc closes · also: ncui history{more}",
                id="keys",
                markup=False,
            )

    def on_mount(self) -> None:
        if self.entries:
            ol = self.query_one("#entries", OptionList)
            ol.highlighted = len(self.entries) - 1  # newest last, and highlighted
            ol.focus()
            self.call_after_refresh(ol.scroll_end, animate=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_copy()

    def action_copy(self) -> None:
        if not self.entries:
            self.notify("Nothing to copy yet.", timeout=3)
            return
        i = self.query_one("#entries", OptionList).highlighted
        if i is None:
            return
        command = clean(self.entries[i].command)
        self.app.copy_to_clipboard(command)
        self.notify(
            f"Copied (where the terminal allows): {command[:120]}{'…' if len(command) > 120 else ''}", timeout=6
        )

    def action_close(self) -> None:
        self.dismiss(None)
