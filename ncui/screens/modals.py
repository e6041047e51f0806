"""Modals: help for the current screen, a yes/no confirmation that states what will happen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static


def reflow(text: str) -> str:
    """Join hard-wrapped lines into paragraphs; a line starting with • starts a new item."""
    out: list[str] = []
    for line in text.strip("\n").splitlines():
        stripped = line.strip()
        if not stripped:
            out.append("")
        elif out and out[-1] and not stripped.startswith("•") and not out[-1].endswith("[/b]"):
            out[-1] += " " + stripped
        else:
            out.append(stripped)
    return "\n".join(out)


class HelpModal(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,f1", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpModal { align: center middle; }
    HelpModal > Vertical { width: 90%; max-width: 100; height: auto; max-height: 90%;
                           border: round $accent; background: $surface; padding: 0 1; }
    HelpModal VerticalScroll { height: auto; max-height: 100%; }
    """

    def __init__(self, body: str) -> None:
        super().__init__()
        self.body = reflow(body)

    def compose(self) -> ComposeResult:
        with Vertical():
            with VerticalScroll():
                yield Static(self.body, markup=True)
            yield Static("[dim]Esc closes[/dim]", markup=True)

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class ConfirmModal(ModalScreen[bool]):
    """Ask once, in plain words, before anything changes money or the cluster. Default: no."""

    BINDINGS = [Binding("escape,n", "answer(False)", "No"), Binding("y", "answer(True)", "Yes")]
    DEFAULT_CSS = """
    ConfirmModal { align: center middle; }
    ConfirmModal > Vertical { width: 90%; max-width: 80; height: auto; border: thick $warning;
                              background: $surface; padding: 1 2; }
    ConfirmModal Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ConfirmModal Button { margin-left: 2; }
    """

    def __init__(self, title: str, body: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.title_text, self.body, self.yes, self.no = title, body, yes, no

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{self.title_text}[/b]", markup=True)
            yield Static(self.body, markup=False)
            with Horizontal():
                yield Button(f"{self.no} (n)", id="no", variant="default")
                yield Button(f"{self.yes} (y)", id="yes", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class SignInModal(ModalScreen[bool]):
    """The sign-in link, big and selectable; closes by itself once the link is approved."""

    BINDINGS = [Binding("escape", "close", "Close"), Binding("c", "copy", "Copy link")]
    DEFAULT_CSS = """
    SignInModal { align: center middle; }
    SignInModal > Vertical { width: 90%; max-width: 100; height: auto; border: thick $accent;
                             background: $surface; padding: 1 2; }
    SignInModal #link { color: $text; background: $boost; padding: 0 1; margin: 1 0; }
    SignInModal #state { color: $text-muted; }
    """

    def __init__(self, cluster: str, link: str) -> None:
        super().__init__()
        self.cluster, self.link = cluster, link

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]Sign in to {self.cluster}[/b]", markup=True)
            yield Static("Open this link in a browser and approve it. Only you can do this step; "
                         "ncui goes on by itself once you have.", markup=False)
            yield Static(self.link, id="link", markup=False)
            yield Static("Waiting for approval…  (c copies the link · Esc closes; sign-in goes on in the "
                         "background)", id="state", markup=False)

    def on_mount(self) -> None:
        self.action_copy(quiet=True)

    def new_link(self, link: str) -> None:
        """The code expired: show the fresh link."""
        self.link = link
        self.query_one("#link", Static).update(link)
        self.query_one("#state", Static).update("That link expired; here is a fresh one. Waiting for approval…")
        self.action_copy(quiet=True)

    def action_copy(self, quiet: bool = False) -> None:
        self.app.copy_to_clipboard(self.link)
        if not quiet:
            self.notify("Sign-in link copied (where the terminal allows).")

    def action_close(self) -> None:
        self.dismiss(False)
