"""The one adapter that writes a desktop notification's bytes to the terminal (``ncui/notify/escape.py`` builds
them), and the small settings modal (Ctrl-P, Notifications).

The bytes go through the channel Textual writes its own frames to: its driver's ``write``, which queues them, whole,
for the driver's writer thread, in order with the frames. Called from the app's thread (the event loop), a sequence
never lands inside a frame. ``App`` has no public way to write raw bytes (``App.bell`` writes its BEL this way
itself): the driver is read here alone, ``app._driver`` (tests/test_textual_api.py lists this read and fails when
a Textual upgrade moves it). A headless app (tests with Pilot, ``run_test``) writes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import SelectionList, Static

if TYPE_CHECKING:
    from textual.app import App

    from ..notify import Settings


def write(app: App[Any], text: str) -> bool:
    """Write ``text`` (a whole escape sequence, or a BEL) to the terminal the app draws on; False when there is
    none (headless, not started, or gone)."""
    driver = app._driver  # (Textual's own bell writes through it: see the module's docstring)
    if driver is None or app.is_headless:
        return False
    driver.write(text)
    driver.flush()
    return True


class NotifySettingsModal(ModalScreen["Settings | None"]):
    """Each kind of moment on or off for the desktop (Space or Enter toggles; Esc saves and closes)."""

    BINDINGS = [Binding("escape", "done", "Save and close")]
    DEFAULT_CSS = """
    NotifySettingsModal { align: center middle; }
    NotifySettingsModal > Vertical { width: 90%; max-width: 80; height: auto; max-height: 90%;
                                     border: round $accent; background: $surface; padding: 0 1; }
    NotifySettingsModal SelectionList { height: auto; max-height: 12; }
    """

    def __init__(self, settings: Settings, where: str, quiet: bool) -> None:
        super().__init__()
        self.settings = settings
        self.where = where
        self.quiet = quiet

    def compose(self) -> ComposeResult:
        from ..notify import KINDS

        with Vertical():
            yield Static(
                "[b]Desktop notifications[/b]: sent through the terminal while it is not focused"
                + (" ([b]off[/b] for this session: ncui --quiet)" if self.quiet else "")
                + ". In-app ones always show.",
                markup=True,
            )
            yield SelectionList[str](*((text, kind, self.settings.enabled(kind)) for kind, text in KINDS.items()))
            yield Static(f"Space or Enter toggles; Esc saves to {self.where} and closes", markup=False)

    def on_mount(self) -> None:
        self.query_one(SelectionList).focus()

    def action_done(self) -> None:
        from ..notify import KINDS, Settings

        chosen = set(self.query_one(SelectionList).selected)
        self.dismiss(Settings({k: k in chosen for k in KINDS}))
