"""Keys typed ahead of a question reach it.

A flow that asks (apply: the ceiling, the bid, the apply; declare; sbatch …) first reads the cluster and the
market, and a question is a screen that takes a moment to mount and focus its field. Keys typed in between
(``a`` then ``4.10⏎yy`` at once, as tmux's send-keys or a fast typist does) went to the screen below: ``4``
switched to Workloads, ``1`` to Account, and the ceiling box opened empty. Here, in one place for every
question: while a flow that asks is under way and no question is ready on top, or while a question just
pushed is not yet mounted and focused, keys are held; once the question is ready they are replayed to it in
the order typed, up to a key that may answer it (Enter, Esc, y, n): the rest wait to see it close and the
next question come (``4.10⏎yy``: the ceiling, then the bid's yes, then the apply's yes). Held keys never
wait long: past ``HOLD_MAX`` seconds (a flow waiting on something slow, a sign-in approved elsewhere) they
are replayed where they would have gone, and keys are not held again until another question or flow comes.
``HOLD_MAX`` is long enough for a question built from reads made for it (the balance, the limit price, the
ladder: seconds on a busy machine), since the human who typed ``a4.10⏎yy`` meant those keys for it; a flow that
then waits on something slow with no question to come soon (objects to go, after the yes) says so
(``UI.waiting``) and keys go through at once. A question already pushed is always waited for until it is ready
(mounted, its field focused): a key handed to a question still mounting is lost, so a key replayed just as a
question is pushed is held again for it.

A form opened by a key's binding (Lease's b, Recipes' Enter on Something else) is there before the keys typed
after that key come back unused from the screen below, which they were handed to first: such a key (it left
under one screen and comes back under a question) is held and replayed to the form, in order, as for a
question. Within a form, Tab moves on at once (``widgets/field.py``), so what is typed after it lands in the
next field.

``KeyHold`` is held by the App, whose ``on_event`` gives it every event first (``held``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from textual import events
from textual.screen import ModalScreen
from textual.worker import WorkerState

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

# Worker groups of the flows that ask questions (ncui/flows/: apply and the limit price, VM, Slurm, lifecycle;
# Workloads' stop, screens/kubepane.py).
QUESTION_FLOWS = frozenset({"apply", "vm", "slurm-flow", "lifecycle", "wl-stop"})  # flows that start with a question
HOLD_MAX = 10.0  # seconds a typed key may wait for the question of a flow under way
ANSWERS = frozenset({"enter", "escape", "y", "n"})  # keys that may close a question
ANSWER_WAIT = 0.5  # seconds to see a question close after such a key (a refused ceiling stays open)
_RUNNING = (WorkerState.PENDING, WorkerState.RUNNING)


class KeyHold:
    """The keys typed ahead of a question, held for it (see the module's docstring). ``held(event)`` first in the
    App's ``on_event``: True when the key was held (the App passes it on no further)."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self._held: list[events.Key] = []
        self._held_since = 0.0
        self._hold_poll: Timer | None = None
        self._no_hold: tuple[Any, ...] | None = None  # the state in which held keys were last given up on
        self._answered: tuple[Any, float] | None = None  # (the question a replayed key may answer, until when)
        self._waiting: set[int] = set()  # the asking flows' workers (ids) waiting on something slow, not asking
        self._in_flight = 0  # keys replayed (posted) and not yet back from the App's queue
        self._rehold = False  # one of them was held again (a question pushed, not ready): hold the rest too
        self._reinsert = 0  # where in the held keys the next one held again goes (before those still held)

    def waiting(self) -> None:
        """The flow under way (the worker calling) waits on something slow, no question soon (``UI.waiting``):
        keys are not held for it until it asks again."""
        worker = _current_worker()
        if worker is not None:
            running = {id(w) for w in self.app.workers if w.state in _RUNNING}  # (ids of ended ones let go)
            self._waiting = (self._waiting & running) | {id(worker)}

    def asked(self) -> None:
        """The flow under way (the worker calling) asks a question: it is waited for again."""
        worker = _current_worker()
        if worker is not None:
            self._waiting.discard(id(worker))

    def _flows(self) -> list[Any]:
        return [
            w
            for w in self.app.workers
            if w.group in QUESTION_FLOWS and w.state in _RUNNING and id(w) not in self._waiting
        ]

    def _hold_state(self) -> tuple[Any, ...]:
        """What a question may be coming from: the screen on top and the asking flows under way."""
        return (id(self.app.screen), tuple(sorted(id(w) for w in self._flows())))

    def _question_coming(self) -> bool:
        top = self.app.screen
        if isinstance(top, ModalScreen):
            return not question_ready(top)
        return bool(self._flows())

    def _mounting(self) -> bool:
        """A question is on top and not yet ready for keys (a key handed to it now would be lost)."""
        top = self.app.screen
        return isinstance(top, ModalScreen) and not question_ready(top)

    def held(self, event: events.Event) -> bool:
        """Hold ``event`` when it is a key typed ahead of a question (True: held, to be replayed)."""
        # A key comes here twice: from the terminal (then the app forwards it to the focused widget), and back
        # (forwarded) when that widget did not take it, for the bindings. The terminal hands over a burst of
        # keys at once, all forwarded before the first one's binding (a's: the apply) runs: a key after it is
        # held on its way back, before the binding it would trigger on the screen below.
        if not isinstance(event, events.Key):
            return False
        if not event.is_forwarded:
            event._ncui_under = self.app.screen  # type: ignore[attr-defined]  # the screen it is handed to
        replayed = getattr(event, "_ncui_replayed", False)
        if replayed and not event.is_forwarded and self._in_flight:
            self._in_flight -= 1  # one of the keys replayed is back from the queue
            if self._rehold or self._mounting():  # a question was pushed meanwhile, not ready: hold it again
                self._rehold = self._in_flight > 0  # (the rest of the batch too, to keep the order typed)
                self._hold(event, at=self._reinsert)
                self._reinsert += 1
                return True
            self._rehold = False
            return False
        if (
            (not replayed and (self._held or self._question_coming())) or self._opened_since(event)
        ) and self._hold_state() != self._no_hold:
            self._hold(event, at=len(self._held))
            return True
        return False

    def _hold(self, event: events.Key, at: int) -> None:
        if not self._held:
            self._held_since = time.monotonic()
        if self._hold_poll is None:
            self._hold_poll = self.app.set_interval(0.03, self._check_held)
        self._held.insert(at, event)
        event.stop()

    def _opened_since(self, event: events.Key) -> bool:
        """A key back unused from the screen it was handed to, under a question (a form) opened since: the
        question's (a form pushed by the binding of a key typed just before it)."""
        under = getattr(event, "_ncui_under", None)
        screen = self.app.screen
        return event.is_forwarded and under is not None and under is not screen and isinstance(screen, ModalScreen)

    def _check_held(self) -> None:
        now = time.monotonic()
        if self._answered is not None:  # a key that may answer the question went to it: let it close first
            screen, until = self._answered
            if self.app.screen is screen and now < until:
                return
            self._answered = None
            self._held_since = now
        if self._question_coming():
            if now - self._held_since > HOLD_MAX:
                self._no_hold = self._hold_state()  # nothing ready in time: type through until something changes
                self._replay_held(everything=True)
            return
        self._replay_held()

    def _replay_held(self, everything: bool = False) -> None:
        """Give the held keys to the app again, in order: up to and including one that may answer the question
        on top (Enter, Esc, y, n), whose next keys wait to see whether it closed and what comes next."""
        held = self._held
        self._reinsert = 0
        while held:
            old = held.pop(0)
            key = events.Key(old.key, old.character)
            key._ncui_replayed = True  # type: ignore[attr-defined]  # (held again only for a question mounting)
            self._in_flight += 1
            self.app.post_message(key)
            if not everything and old.key in ANSWERS and isinstance(self.app.screen, ModalScreen):
                self._answered = (self.app.screen, time.monotonic() + ANSWER_WAIT)
                return
        if self._hold_poll is not None:
            self._hold_poll.stop()
            self._hold_poll = None


def _current_worker() -> Any:
    from textual.worker import NoActiveWorker, get_current_worker

    try:
        return get_current_worker()
    except NoActiveWorker:
        return None


def question_ready(screen: ModalScreen[Any]) -> bool:
    """A question is ready for keys once it is mounted and has focused its field or button (or has none)."""
    return screen.is_mounted and (screen.focused is not None or not screen.focus_chain)
