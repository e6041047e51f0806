"""Modals: help for the current screen, a yes/no confirmation that states what will happen."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from ..money import CENT, dollars_text, fmt_price, parse_dollars

if TYPE_CHECKING:
    from rich.text import Text
    from textual.events import DescendantFocus
    from textual.widgets import Input

    from ..flows.connect import LinkBoard
    from ..recipes import Plan

# CeilingModal's judge: a typed price (µ$/GPU-h) → (may it be set, the verdict's lines as (style, text)).
Judge = Callable[[int], "tuple[bool, list[tuple[str, str]]]"]
# CustomJobModal's build: (image, command, nodes, name, tolerant, gpus per pod) → (the plan or None, why not).
Build = Callable[[str, str, str, str, bool, str], "tuple[Plan | None, str]"]


def reflow(text: str) -> str:
    """Join hard-wrapped lines into paragraphs; a line starting with • starts a new item, and a title (a line
    that is one bold run) stays a line of its own. (A line that only ends in bold, "· [b]t[/b]", goes on.)"""
    out: list[str] = []
    for line in text.strip("\n").splitlines():
        stripped = line.strip()
        if not stripped:
            out.append("")
        elif out and out[-1] and not stripped.startswith("•") and not re.fullmatch(r"\[b\][^\[]*\[/b\]", out[-1]):
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

    def action_dismiss(self) -> None:  # type: ignore[override]  # Screen's is async with a result: Esc closes with None
        self.dismiss(None)


class ConfirmModal(ModalScreen[bool]):
    """Ask once, in plain words, before anything changes money or the cluster.

    The safe answer is highlighted first (``default``: "no" unless the question's safe answer is yes, as in
    "withdraw the limit you just set?"), and a line says what Enter does: Enter presses the highlighted
    button in every question ncui asks; Esc and n always answer no, y always yes."""

    BINDINGS = [
        Binding("escape,n", "answer(False)", "No"),
        Binding("y", "answer(True)", "Yes"),
        # A body taller than the screen (a whole command at 80x24) scrolls with the keys, whatever has focus.
        Binding("up", "scroll_body('up')", show=False),
        Binding("down", "scroll_body('down')", show=False),
        Binding("pageup", "scroll_body('page_up')", show=False),
        Binding("pagedown", "scroll_body('page_down')", show=False),
    ]
    DEFAULT_CSS = """
    ConfirmModal { align: center middle; }
    ConfirmModal > Vertical { width: 90%; max-width: 80; height: auto; max-height: 100%; border: thick $warning;
                              background: $surface; padding: 1 2; }
    ConfirmModal VerticalScroll { height: auto; max-height: 60vh; }
    ConfirmModal Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ConfirmModal Button { margin-left: 2; }
    ConfirmModal #enter { color: $text-muted; text-align: right; }
    """

    yes_key = "y"

    def __init__(self, title: str, body: str, yes: str = "Yes", no: str = "No", *, default: str = "no") -> None:
        super().__init__()
        self.title_text, self.body, self.yes, self.no = title, body, yes, no
        self.default = "yes" if default == "yes" else "no"

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{self.title_text}[/b]", markup=True)
            with VerticalScroll():  # a long body (a whole command) scrolls; the question stays on screen
                yield Static(self.body, markup=False)
            with Horizontal():
                yield Button(f"{self.no} (n, Esc)", id="no", variant="default")
                yield Button(f"{self.yes} ({self.yes_key})", id="yes", variant="warning")
            yield Static("", id="enter", markup=False)

    def on_mount(self) -> None:
        self.query_one(f"#{self.default}", Button).focus()
        self.call_after_refresh(self._say_keys)  # (whether the body overflows is known once it is laid out)

    def on_resize(self) -> None:
        self.call_after_refresh(self._say_keys)

    def on_descendant_focus(self, event: DescendantFocus) -> None:
        if isinstance(event.widget, Button):
            self._say_keys()

    def _say_keys(self) -> None:
        """Say what Enter does now (the highlighted button: Tab moves the highlight) and, when the body does not
        fit, that it goes on and how to read the rest: never a command that looks whole but is cut."""
        if not self.is_mounted:
            return
        body = self.query_one(VerticalScroll)
        focused = self.focused if isinstance(self.focused, Button) else self.query_one(f"#{self.default}", Button)
        label = self.no if focused.id == "no" else self.yes
        more = ""
        if body.max_scroll_y > 0:
            left = "↓ more below" if body.scroll_y < body.max_scroll_y else "↑ more above"
            more = f"{left} (↑/↓ scroll) · "
        self.query_one("#enter", Static).update(f"{more}Enter: {label}")

    def action_scroll_body(self, how: str) -> None:
        body = self.query_one(VerticalScroll)
        getattr(body, f"scroll_{how}")(animate=False)
        self.call_after_refresh(self._say_keys)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class RetryModal(ConfirmModal):
    """A question that could not be built from fresh reads (ncui/flows/fresh.py): what could not be read, said
    with its age and reason; r reads again (True), Esc or n gives up (False). Enter retries."""

    BINDINGS = [Binding("r", "answer(True)", "Retry")]
    yes_key = "r"

    def __init__(self, title: str, body: str) -> None:
        super().__init__(title, body, yes="Retry", no="Cancel", default="yes")


class SignInModal(ModalScreen[bool]):
    """The sign-in link, big and selectable; closes by itself once the link is approved."""

    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("c", "copy", "Copy link"),
        Binding("a", "approve", "Approve (demo)"),
    ]
    DEFAULT_CSS = """
    SignInModal { align: center middle; }
    SignInModal > Vertical { width: 90%; max-width: 100; height: auto; border: thick $accent;
                             background: $surface; padding: 1 2; }
    SignInModal #link { color: $text; background: $boost; padding: 0 1; margin: 1 0; }
    SignInModal #state { color: $text-muted; }
    SignInModal #demo { color: $warning; margin-bottom: 1; }
    """

    def __init__(
        self,
        cluster: str,
        link: str,
        reason: str = "",
        approve: Callable[[str], Awaitable[None]] | None = None,
        board: LinkBoard | None = None,
    ) -> None:
        super().__init__()
        self.cluster, self.link = cluster, link
        self.reason = reason  # why a sign-in that held needs approving again ("" for a first sign-in)
        self.approve = approve  # the demo only: the box does the human's browser step (key a); else None
        self.board = board  # the flow's: a fresh link, and the close once signed in (flows/connect.py)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]Sign in to {self.cluster}{' again' if self.reason else ''}[/b]", markup=True)
            if self.reason:
                yield Static(
                    f"{self.reason[:1].upper()}{self.reason[1:]}. The cluster's watches and the log wait "
                    "for your approval, then resume where they stopped.",
                    id="reason",
                    markup=False,
                )
            yield Static(
                "Open this link in a browser and approve it. Only you can do this step; "
                "ncui goes on by itself once you have.",
                markup=False,
            )
            yield Static(self.link, id="link", markup=False)
            if self.approve is not None:
                yield Static(
                    "This is the demo, and the link is the box's: a browser may not reach it (over ssh, a "
                    "laptop's cannot). Press a to approve it in the box, as the page's Approve button would.",
                    id="demo",
                    markup=False,
                )
            yield Static(
                "Waiting for approval…  ("
                + ("a approves (demo) · " if self.approve is not None else "")
                + "c copies the link · Esc closes; sign-in goes on in the background)",
                id="state",
                markup=False,
            )

    def on_mount(self) -> None:
        self.action_copy(quiet=True)
        if self.board is not None:
            if self.board.link != self.link:  # (a fresh link came before this was shown)
                self.new_link(self.board.link)
            self.board.watch(self.new_link, self._flow_closed)

    def _flow_closed(self, signed_in: bool) -> None:
        """The flow is done with the link (signed in, or another cluster now): closed when it is on top."""
        if self.app.screen is self:
            self.dismiss(signed_in)

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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.approve is not None if action == "approve" else True  # no a outside the demo

    async def action_approve(self) -> None:
        if self.approve is None:
            return
        state = self.query_one("#state", Static)
        state.update("Approving in the box…")
        try:
            await self.approve(self.link)
        except Exception as e:  # an expired code: the next poll brings a fresh link
            state.update(f"The box refused it ({' '.join(str(e).split())[:120]}); a fresh link follows.")
            return
        state.update("Approved in the box: signing in…")


class CeilingModal(ModalScreen["int | None"]):
    """Ask for the ceiling (never assumed): the most the human will pay per GPU hour.

    Judges it live against the ladder and the balance; returns micro-credits, or None when cancelled.
    What is typed is read strictly (``money.parse_dollars``: dollars and cents), so the figure judged, confirmed
    and sent is the figure typed. A standing limit is prefilled exactly as it stands; one finer than cents
    (set by another client, e.g. $4.105) is said so, and is accepted only exactly as it stands.
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    CeilingModal { align: center middle; }
    CeilingModal > Vertical { width: 90%; max-width: 90; height: auto; border: thick $warning;
                              background: $surface; padding: 1 2; }
    CeilingModal Input { width: 20; margin: 1 0; }
    CeilingModal Horizontal { height: auto; align-horizontal: right; }
    CeilingModal Button { margin-left: 2; }
    """

    def __init__(self, title: str, context: str, judge: Judge, standing: int = 0) -> None:
        super().__init__()
        self.title_text, self.context, self.judge, self.standing = title, context, judge, standing
        self.prefill = dollars_text(standing) if standing else ""
        self.value: int | None = None

    def compose(self) -> ComposeResult:
        from ..widgets.field import Field

        with Vertical():
            yield Static(f"[b]{self.title_text}[/b]", markup=True)
            yield Static(self.context, markup=False)
            yield Field(value=self.prefill, placeholder="e.g. 4.10", id="ceiling")
            if self.standing % CENT:
                yield Static(
                    f"Your standing limit, {fmt_price(self.standing)}, is finer than cents: keep it "
                    "exactly as it stands, or type dollars and cents.",
                    id="finer",
                    markup=False,
                )
            yield Static("", id="verdict")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button("Continue (Enter)", id="ok", variant="warning")

    def on_mount(self) -> None:
        from textual.widgets import Input

        fields = self.query("#ceiling").results(Input)
        field = next(fields, None)
        if field is None:  # the app closed while this was being built: nothing to show
            return
        field.focus()
        self._judge(self.prefill)

    def on_input_changed(self, event: Input.Changed) -> None:
        self._judge(event.value)

    def _judge(self, text: str) -> int | None:
        from rich.text import Text

        verdict = self.query_one("#verdict", Static)
        self.value = None
        if not text.strip():
            verdict.update(Text("Type the most you will pay per GPU hour, in dollars.", style="dim"))
            return None
        try:
            value = parse_dollars(text, keep=self.standing or None)
        except ValueError as e:
            verdict.update(Text(f"✗ {e}", style="bold red"))
            return None
        ok, lines = self.judge(value)
        out = Text()
        for style, line in lines:
            out.append(line + "\n", style=style)
        verdict.update(out)
        self.value = value if ok else None
        return self.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "ok":
            self._submit()
        else:
            self.dismiss(None)

    def _submit(self) -> None:
        from textual.widgets import Input

        # Judged now, on what the field holds (an Enter typed before the last change was judged sees the verdict
        # of the value it submits, never the one before).
        field = next(self.query("#ceiling").results(Input), None)
        if field is not None:
            self._judge(field.value)
        if self.value is not None:
            self.dismiss(self.value)
        else:
            # The reason is under the field already; a toast would cover it at 80x24.
            self.app.bell()

    def action_cancel(self) -> None:
        self.dismiss(None)


class CustomJobModal(ModalScreen["Plan | None"]):
    """Something else: image, command, nodes (and name), refused with reasons when invalid."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    CustomJobModal { align: center middle; }
    CustomJobModal > Vertical { width: 90%; max-width: 90; height: auto; max-height: 100%; border: thick $accent;
                                background: $surface; padding: 0 2; overflow-y: auto; }
    CustomJobModal .field-row { height: auto; }
    CustomJobModal .field-row Label { width: 10; padding-top: 1; }
    CustomJobModal .field-row Label.second { width: auto; padding: 1 1 0 2; }
    CustomJobModal .field-row Field { width: 1fr; }
    CustomJobModal #nodes { width: 8; }
    CustomJobModal #buttons { height: auto; align-horizontal: right; }
    CustomJobModal Button { margin-left: 2; }
    """

    def __init__(self, build: Build) -> None:
        super().__init__()
        self.build = build

    def compose(self) -> ComposeResult:
        from textual.widgets import Checkbox, Label

        from ..widgets.field import Field

        # At 80×24 the whole form shows, its title first: each label beside its field, nodes and GPUs on one row.
        with Vertical():
            yield Static("[b]Something else: your container as one Job on whole nodes[/b]", markup=True)
            with Horizontal(classes="field-row"):
                yield Label("Image")
                yield Field(placeholder="e.g. ghcr.io/you/trainer:1.2", id="image")
            with Horizontal(classes="field-row"):
                yield Label("Command")
                yield Field(placeholder="run with sh -c, e.g. python train.py --epochs 3", id="command")
            with Horizontal(classes="field-row"):
                yield Label("Nodes")
                yield Field(value="1", id="nodes")
                yield Label("GPUs per pod", classes="second")
                yield Field(value="", placeholder="blank: every GPU of a node", id="gpus")
            with Horizontal(classes="field-row"):
                yield Label("Job name")
                yield Field(value="my-job", id="name")
            yield Checkbox("Survive reclaims (ignore DisruptionTarget and exit 143)", True, id="tolerant")
            yield Static("", id="why")
            with Horizontal(id="buttons"):
                yield Button("Cancel (Esc)", id="cancel")
                yield Button("Preview and apply", id="ok", variant="primary")

    def on_mount(self) -> None:
        from textual.widgets import Input

        self.query_one("#image", Input).focus()

    def _values(self) -> tuple[str, str, str, str, bool, str]:
        from textual.widgets import Checkbox, Input

        def q(i: str) -> str:
            return self.query_one(f"#{i}", Input).value

        return (q("image"), q("command"), q("nodes"), q("name"), self.query_one("#tolerant", Checkbox).value, q("gpus"))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id != "ok":
            self.dismiss(None)
            return
        self._submit()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._submit()

    def _submit(self) -> None:
        from rich.text import Text

        result, message = self.build(*self._values())
        if result is None:
            self.query_one("#why", Static).update(Text(f"✗ {message}", style="bold red"))
            return
        self.dismiss(result)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ResultsModal(ModalScreen[None]):
    """What happened, step by step (apply results, a completion): read, then Esc."""

    BINDINGS = [Binding("escape,enter,q", "close", "Close")]
    DEFAULT_CSS = """
    ResultsModal { align: center middle; }
    ResultsModal > Vertical { width: 95%; max-width: 110; height: auto; max-height: 90%;
                              border: round $accent; background: $surface; padding: 0 1; }
    ResultsModal VerticalScroll { height: auto; max-height: 70vh; }
    ResultsModal #results-keys { color: $text-muted; }
    """
    # (the body scrolls within 70% of the terminal's height: at 80×24 the title, the body's frame and the keys
    # line all show, and a long body, such as a chat request with its curl, scrolls under ↑/↓)

    def __init__(self, title: str, body: str | Text) -> None:
        super().__init__()
        self.title_text, self.body = title, body

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(f"[b]{self.title_text}[/b]", markup=True)
            with VerticalScroll(id="results-body"):
                yield Static(self.body, markup=False)
            yield Static("Esc or Enter closes", id="results-keys", markup=False)

    def on_mount(self) -> None:
        self.query_one("#results-body").focus()  # ↑/↓, PgUp/PgDn scroll it
        self.call_after_refresh(self._say_keys)

    def on_resize(self) -> None:
        self.call_after_refresh(self._say_keys)

    def _say_keys(self) -> None:
        body = self.query("#results-body").results(VerticalScroll)
        scroll = next(body, None)
        if scroll is None:
            return
        more = scroll.max_scroll_y > 0
        self.query_one("#results-keys", Static).update(
            "↑/↓ PgUp/PgDn scroll · Esc or Enter closes" if more else "Esc or Enter closes"
        )

    def action_close(self) -> None:
        self.dismiss(None)


class PromptModal(ModalScreen["str | None"]):
    """One line asked for (a path, a name): Enter gives it, Esc gives None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    PromptModal { align: center middle; }
    PromptModal > Vertical { width: 90%; max-width: 90; height: auto; border: thick $accent;
                             background: $surface; padding: 1 2; }
    """

    def __init__(self, title: str, placeholder: str = "then Enter") -> None:
        super().__init__()
        self.title_text, self.placeholder = title, placeholder

    def compose(self) -> ComposeResult:
        from ..widgets.field import Field

        with Vertical():
            yield Static(f"[b]{self.title_text}[/b]", markup=True)
            yield Field(placeholder=self.placeholder, id="prompt")

    def on_mount(self) -> None:
        from textual.widgets import Input

        self.query_one("#prompt", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)
