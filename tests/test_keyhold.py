"""Keys typed ahead of a question reach it (ncui/screens/keyhold.py), in a small real Textual app: a flow (a
worker of an asking group) reads for a while, then asks; the keys typed meanwhile go to its question in order,
none to the screen below. A flow that says it waits on something slow (``UI.waiting``) lets keys through at
once. A key replayed just as a question is pushed, before it is ready, is held again for it rather than lost
(on a busy machine, the failure of CI's stop 27: the ceiling got ``.10``, its ``4`` handed to a question still
mounting)."""

from __future__ import annotations

import asyncio

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ncui.screens.keyhold import HOLD_MAX, KeyHold
from ncui.screens.ui import ScreenUI

from .waits import until


class Ask(ModalScreen[str]):
    AUTO_FOCUS = ""  # (no focus until ``ready`` is set: a question slow to be ready)

    def __init__(self, ready: asyncio.Event | None = None) -> None:
        super().__init__()
        self.ready = ready

    def compose(self) -> ComposeResult:
        yield Input(id="q")

    async def on_mount(self) -> None:
        if self.ready is not None:
            self.run_worker(self._focus_when_ready())
        else:
            self.query_one(Input).focus()

    async def _focus_when_ready(self) -> None:
        assert self.ready is not None
        await self.ready.wait()
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)


class Box(App[None]):
    BINDINGS = [Binding("4", "below", "the screen below's 4")]

    def __init__(self) -> None:
        super().__init__()
        self.keyhold = KeyHold(self)
        self.ui = ScreenUI(self, self.keyhold)
        self.below: list[str] = []  # keys the screen below took
        self.answers: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static("below")

    def action_below(self) -> None:
        self.below.append("4")

    async def on_event(self, event: events.Event) -> None:
        if not self.keyhold.held(event):
            await super().on_event(event)


async def test_keys_typed_while_a_flow_reads_reach_its_question_in_order():
    app = Box()
    go = asyncio.Event()

    async def flow() -> None:
        await go.wait()  # (the reads a question is built from)
        app.answers.append(await app.push_screen_wait(Ask()))

    async with app.run_test() as pilot:
        app.ui.start(flow, name="apply_flow", group="apply")
        await pilot.press("4", ".", "1", "0")
        await pilot.pause()
        assert app.below == [] and len(app.keyhold._held) == 4  # held: not the screen below's
        go.set()
        await until(lambda: isinstance(app.screen, Ask), 5, "the question", sleep=pilot.pause)
        await until(lambda: app.screen.query_one(Input).value == "4.10", 5, "4.10 typed in it", sleep=pilot.pause)
        await pilot.press("enter")
        await until(lambda: app.answers == ["4.10"], 5, "the answer", sleep=pilot.pause)
        assert app.below == []


async def test_a_flow_waiting_on_something_slow_lets_keys_through():
    app = Box()
    go = asyncio.Event()

    async def flow() -> None:
        app.ui.waiting()  # (objects to go, after the yes: no question soon)
        await go.wait()

    async with app.run_test() as pilot:
        app.ui.start(flow, name="stop", group="lifecycle")
        await pilot.pause()
        await pilot.press("4")
        # (held, it would reach the screen below after HOLD_MAX: the deadline is well before)
        await until(lambda: app.below == ["4"], HOLD_MAX / 2, "4 on the screen below at once", sleep=pilot.pause)
        go.set()


async def test_two_flows_waiting_at_once_both_let_keys_through():
    app = Box()
    go = asyncio.Event()

    async def flow() -> None:
        app.ui.waiting()
        await go.wait()

    async with app.run_test() as pilot:
        app.ui.start(flow, name="stop", group="lifecycle")
        await pilot.pause()
        app.ui.start(flow, name="vm-release", group="vm")  # (the second to wait must not forget the first)
        await pilot.pause()
        await pilot.press("4")
        await until(lambda: app.below == ["4"], HOLD_MAX / 2, "4 on the screen below at once", sleep=pilot.pause)
        go.set()


async def test_keys_replayed_as_a_question_is_pushed_wait_for_it_to_be_ready():
    app = Box()
    ready = asyncio.Event()

    async with app.run_test() as pilot:
        kh = app.keyhold
        for ch in "4.1":  # (keys held; given back in the same turn as a question is pushed, not yet ready)
            kh._hold(events.Key(ch, ch), at=len(kh._held))
        kh._replay_held(everything=True)
        app.push_screen(Ask(ready))
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, Ask) and app.screen.focused is None
        assert len(kh._held) == 3  # held again, not handed to a question that would lose them
        ready.set()
        await until(lambda: app.screen.query_one(Input).value == "4.1", 5, "4.1 in the question", sleep=pilot.pause)
        assert app.below == []
