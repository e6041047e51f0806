"""Talking to a served model (Workloads, ``m`` at READY 1/1): the conversation so far, each answer streamed as it
arrives with its thinking apart, time to first token and tokens per second under it, the exact request on
demand and the guide's curl to copy. The request itself is the guide's (``ncui/kube/chat.py``)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rich.console import Group
from rich.panel import Panel
from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static, TextArea

from ..kube.chat import Answer, ChatError, Endpoint, Turn, curl_command, request_body, stream_chat
from ..lifecycle import load_test_guard
from ..textsafe import clean
from .modals import PromptModal, ResultsModal

if TYPE_CHECKING:
    from ..app import NCApp

THINKING_LINES = 4  # lines of a thinking shown (the newest while it streams, then the first) until Ctrl+G
MAX_DOCUMENT = 400_000  # bytes of a document file read into the box (a filing fits; a dump does not)
REPAINT = 0.1  # seconds between repaints of an answer as it streams


def _secs(s: float | None) -> str:
    return "…" if s is None else f"{s * 1000:.0f} ms" if s < 1 else f"{s:.2f} s"


def stats_line(a: Answer, *, live: bool) -> str:
    """Under an answer: time to first token, tokens per second, tokens (thinking among them), finish."""
    parts = [f"first token {_secs(a.ttft)}"]
    rate = a.tokens_per_second
    parts.append(f"{rate:.0f} tok/s" if rate is not None else "… tok/s")
    counted = "" if a.completion_tokens is not None or live else " (chunks: the server sent no usage)"
    parts.append(f"{a.tokens} tokens{counted}")
    if a.prompt_tokens is not None:
        parts.append(f"prompt {a.prompt_tokens}")
    if a.finish_reason:
        parts.append(
            "finish: length (max_tokens reached: the answer is cut)" if a.finish_reason == "length" else "finish: stop"
        )
    return " · ".join(parts)


class Composer(TextArea):
    """The message box: Enter sends in a chat, and is a new line in a document (Ctrl+S sends either way)."""

    def __init__(self, *, send_on_enter: bool, id: str) -> None:
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.send_on_enter = send_on_enter

    async def on_key(self, event: events.Key) -> None:  # Textual then calls TextArea's own, unless prevented
        if event.key == "enter" and self.send_on_enter:
            event.stop()
            event.prevent_default()
            screen = self.screen
            if isinstance(screen, ChatScreen):
                screen.action_send()


class ChatScreen(ModalScreen[None]):
    """One endpoint's conversation. ``turns`` holds what was said; ``last_body`` the exact body last sent."""

    BINDINGS = [
        Binding("ctrl+s", "send", "Send"),
        Binding("ctrl+o", "open_file", "Open file"),
        Binding("ctrl+r", "request", "Request"),
        Binding("ctrl+t", "curl", "curl"),
        Binding("ctrl+g", "thinking", "Thinking", show=False),
        Binding("escape", "back", "Back"),
    ]
    DEFAULT_CSS = """
    ChatScreen { background: $background 60%; }
    ChatScreen > Vertical { width: 100%; height: 100%; border: round $accent; background: $surface; padding: 0 1; }
    ChatScreen #chat-title { height: 1; }
    ChatScreen #conversation { height: 1fr; }
    ChatScreen #conversation > Static { margin-bottom: 1; }
    ChatScreen #composer { height: auto; min-height: 3; max-height: 8; border: tall $accent; }
    ChatScreen #chat-keys { height: auto; color: $text-muted; }  /* (two lines for a document at 80 columns) */
    """

    def __init__(self, ep: Endpoint, context: str) -> None:
        super().__init__()
        self.ep, self.context = ep, context
        self.turns: list[Turn] = []  # the finished exchanges (what a next chat request carries)
        self.shown: list[tuple[str, Answer | None, str]] = []  # (the human's text, its answer, its error)
        self.last_body: dict | None = None
        self.answer: Answer | None = None  # the answer streaming now
        self._live: Static | None = None
        self.full_thinking = False  # Ctrl+G: every thinking shown whole

    # ---- layout ---------------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title(), id="chat-title")
            with VerticalScroll(id="conversation"):
                yield Static(self._intro(), id="chat-intro")
            yield Composer(send_on_enter=not self.ep.document, id="composer")
            yield Static(self._keys(), id="chat-keys")

    def on_mount(self) -> None:
        self.query_one("#composer", Composer).focus()
        self.set_interval(REPAINT, self._repaint)

    def _title(self) -> Text:
        t = Text()
        t.append(f"{self.ep.recipe}", style="bold")
        t.append(f" · svc/{self.ep.service} · {self.ep.model}", style="dim")
        return t

    def _intro(self) -> Text:
        t = Text(style="dim")
        params = ", ".join(f"{k} {json.dumps(v)}" for k, v in self.ep.params.items())
        if self.ep.document:
            t.append(
                "Paste or type a document (or Ctrl+O to read a file); Ctrl+S sends it with the system prompt the "
                "model was tuned with, as the guide's request does. Each document is asked on its own."
            )
        else:
            t.append("Type a message; Enter sends it with the conversation so far (Ctrl+S too).")
        t.append(f"\nThe guide's request: {params or 'the model and the messages only'}; sampling left unset.")
        if self.ep.reasoning:
            t.append(" It thinks before it answers: the thinking is shown apart.")
        return t

    def _keys(self) -> Text:
        send = "Ctrl+S send · Enter new line" if self.ep.document else "Enter send"
        return Text(f"{send} · Ctrl+O file · Ctrl+R the request · Ctrl+T copy curl · Esc back")

    def _turn(self, text: str, a: Answer | None, error: str, *, live: bool) -> Group:
        parts: list[Text | Panel] = []
        you = Text("You: ", style="bold cyan")
        lines = text.splitlines() or [""]
        if self.ep.document and len(lines) > 3:
            you.append("\n".join(lines[:3]))
            you.append(f"\n… a document of {len(lines)} lines, {len(text.split())} words", style="dim")
        else:
            you.append(text)
        parts.append(you)
        if a is not None:
            if a.reasoning:
                parts.append(self._thinking(a.reasoning.strip(), live=live))
            body = Text(f"{self.ep.recipe}: ", style="bold green")
            body.append(a.content.strip() or ("…" if live else "(no answer text)"))
            parts.append(body)
            parts.append(Text(stats_line(a, live=live), style="dim italic"))
        if error:
            parts.append(Text(f"✗ {error}", style="bold red"))
        return Group(*parts)

    def _thinking(self, text: str, *, live: bool) -> Panel:
        """The thinking, apart: while it streams its last lines (a window on it), then its first lines, unless
        Ctrl+G shows every thinking whole."""
        width = max(20, self.size.width - 8)
        lines = [ln for para in text.splitlines() for ln in (textwrap.wrap(para, width) or [""])]
        shown, note = lines, ""
        if not self.full_thinking and len(lines) > THINKING_LINES:
            shown = lines[-THINKING_LINES:] if live else lines[:THINKING_LINES]
            note = f"{len(lines) - THINKING_LINES} more lines · Ctrl+G shows the thinking whole"
        body = Text("\n".join(shown), style="dim")
        return Panel(body, title="thinking", title_align="left", subtitle=note or None, subtitle_align="right")

    def _repaint(self) -> None:
        if self._live is not None and self.answer is not None and self.shown:
            text, a, err = self.shown[-1]
            self._live.update(self._turn(text, a, err, live=True))
            self.query_one("#conversation", VerticalScroll).scroll_end(animate=False)

    # ---- actions --------------------------------------------------------------------------------------------

    def action_send(self) -> None:
        box = self.query_one("#composer", Composer)
        text = box.text.strip("\n")
        if not text.strip():
            self.notify("Nothing to send: type a message first.", timeout=3)
            return
        if self.answer is not None:
            self.notify("An answer is still arriving: wait for it, or Esc stops it.", timeout=4)
            return
        app = cast("NCApp", self.app)  # Widget.app is an App[object]: this screen lives in NCApp only
        if app.flows.connect.kube is None:
            self.notify("kubectl is not signed in to the cluster: press s on the main screen.", timeout=6)
            return
        why = load_test_guard(app.store, app.backend.now() if app.backend else None)
        if why:  # the guide: none of your own requests during the load test (it may have started after m)
            self.notify(why, severity="warning", timeout=10)  # (what is typed stays, to send once it ends)
            return
        self.last_body = request_body(self.ep, self.turns, text)
        box.text = ""
        self.answer = Answer()
        self.shown.append((text, self.answer, ""))
        self._live = Static(self._turn(text, self.answer, "", live=True), classes="turn")
        self.query_one("#conversation", VerticalScroll).mount(self._live)
        self.stream(text, self.last_body, self.answer)

    @work(group="chat", exclusive=True, exit_on_error=False)
    async def stream(self, text: str, body: dict, a: Answer) -> None:
        from ..kube.client import KubeError

        app = cast("NCApp", self.app)  # Widget.app is an App[object]: this screen lives in NCApp only
        kube = app.flows.connect.kube
        error = ""
        try:
            if kube is None:
                raise ChatError("kubectl is not signed in to the cluster")
            async for _ in stream_chat(kube, self.ep, body, a):
                pass
        except (ChatError, KubeError) as e:
            error = str(e)
        if not error:
            self.turns.append(Turn(text, a.content.strip(), a.reasoning.strip()))
        self._finish(text, a, error)

    def _finish(self, text: str, a: Answer, error: str) -> None:
        if self.shown and self.shown[-1][1] is a:
            self.shown[-1] = (text, a, error)
        if self._live is not None:
            self._live.update(self._turn(text, a, error, live=False))
            self.query_one("#conversation", VerticalScroll).scroll_end(animate=False)
        self._live, self.answer = None, None

    def action_thinking(self) -> None:
        self.full_thinking = not self.full_thinking
        turns = list(self.query("#conversation > .turn").results(Static))
        for w, (text, a, err) in zip(turns, self.shown, strict=True):  # one turn widget per exchange shown
            if w is not self._live:
                w.update(self._turn(text, a, err, live=False))

    def action_back(self) -> None:
        if self.answer is not None:  # Esc stops an answer first; a second Esc goes back
            a = self.answer
            self.workers.cancel_group(self, "chat")
            text = self.shown[-1][0] if self.shown else ""
            self._finish(text, a, f"stopped by you after {a.chunks} token(s)")
            return
        self.dismiss(None)

    def _request_text(self) -> tuple[str, Text]:
        body = self.last_body
        t = Text()
        if body is None:
            text = self.query_one("#composer", Composer).text.strip("\n") or "…"
            body = request_body(self.ep, self.turns, text)
            t.append("Nothing sent yet. With what is typed now, ncui would send:\n\n", style="bold")
            title = f"The request ncui would send to {self.ep.recipe}"
        else:
            title = f"The last request sent to {self.ep.recipe}"
        t.append(
            f"POST …/services/{self.ep.service}:{self.ep.port}/proxy/v1/chat/completions (the cluster's service "
            "proxy; the same body a port-forward and curl send)\n\n",
            style="dim",
        )
        t.append(clean(json.dumps(body, indent=2, ensure_ascii=False), multiline=True))
        t.append(
            "\n\nThe guide's curl (Ctrl+T copies it; without stream, it prints one JSON answer):\n\n", style="bold"
        )
        t.append(curl_command(self.ep, body, self.context, cast("NCApp", self.app).history))
        return title, t

    def action_request(self) -> None:
        title, t = self._request_text()
        self.app.push_screen(ResultsModal(title, t))

    def action_curl(self) -> None:
        body = self.last_body or request_body(
            self.ep, self.turns, self.query_one("#composer", Composer).text.strip("\n") or "…"
        )
        cmd = curl_command(self.ep, body, self.context, cast("NCApp", self.app).history)
        self.app.copy_to_clipboard(cmd)
        self.notify(
            "The guide's port-forward and curl are copied (where the terminal allows: Ctrl+R shows them to copy by "
            "hand).",
            timeout=5,
        )

    def action_open_file(self) -> None:
        def done(path: str | None) -> None:
            if path:
                self._read_document(path)

        self.app.push_screen(PromptModal("Read a document from a file", placeholder="path, then Enter"), done)

    def _read_document(self, path: str) -> None:
        p = Path(path).expanduser()
        try:
            if p.is_dir():
                raise IsADirectoryError(f"{p} is a folder: give a file")
            size = p.stat().st_size
            if size > MAX_DOCUMENT:
                raise ValueError(f"{p} is {size:,} bytes: more than {MAX_DOCUMENT:,} (paste the part to analyse)")
            text = p.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            self.notify(f"{p} is not UTF-8 text: nothing was read.", severity="error", timeout=8)
            return
        except (OSError, ValueError) as e:
            why = f"{p}: {e.strerror}" if isinstance(e, OSError) and e.strerror else str(e)
            self.notify(f"Cannot read the document: {clean(why)}", severity="error", timeout=8)
            return
        box = self.query_one("#composer", Composer)
        box.text = clean(text, multiline=True)
        box.focus()
        self.notify(f"Read {p.name}: {len(text.splitlines())} lines. Ctrl+S sends it.", timeout=4)
