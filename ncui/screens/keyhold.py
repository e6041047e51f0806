"""Keys typed ahead of a question reach it.

A flow that asks (apply: the ceiling, the bid, the apply; declare; sbatch …) first reads the cluster and the
market, and a question is a screen that takes a moment to mount and focus its field. Keys typed in between
(``a`` then ``4.10⏎yy`` at once, as tmux's send-keys or a fast typist does) went to the screen below: ``4``
switched to Workloads, ``1`` to Account, and the ceiling box opened empty. Here, in one place for every
question: while a flow that asks is under way and no question is ready on top, or while a question just
pushed is not yet mounted and focused, keys are held; once the question is ready they are replayed to it in
the order typed. Held keys never wait long: past ``HOLD_MAX`` seconds (a flow waiting on something slow, a
sign-in approved elsewhere) they are replayed where they would have gone, and keys are not held again until
another question or flow comes.
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

    _Base = App[None]
else:
    _Base = object

# Worker groups of the flows that ask questions (screens/flows.py, the VM flows, the Slurm flows).
QUESTION_FLOWS = frozenset({"apply", "vm", "slurm-flow"})
HOLD_MAX = 2.0  # seconds a typed key may wait for its question
_RUNNING = (WorkerState.PENDING, WorkerState.RUNNING)


class KeyHoldMixin(_Base):
    _held: list[events.Key]
    _held_since = 0.0
    _hold_poll: Timer | None = None
    _no_hold: tuple[Any, ...] | None = None  # the state in which held keys were last given up on

    def _hold_state(self) -> tuple[Any, ...]:
        """What a question may be coming from: the screen on top and the asking flows under way."""
        flows = tuple(sorted(id(w) for w in self.workers if w.group in QUESTION_FLOWS and w.state in _RUNNING))
        return (id(self.screen), flows)

    def _question_coming(self) -> bool:
        top = self.screen
        if isinstance(top, ModalScreen):
            return not question_ready(top)
        return any(w.group in QUESTION_FLOWS and w.state in _RUNNING for w in self.workers)

    async def on_event(self, event: events.Event) -> None:
        if (
            isinstance(event, events.Key)
            and not event.is_forwarded
            and not getattr(event, "_ncui_replayed", False)
            and (getattr(self, "_held", None) or self._question_coming())
            and self._hold_state() != self._no_hold
        ):
            if not getattr(self, "_held", None):
                self._held = []
                self._held_since = time.monotonic()
                self._hold_poll = self.set_interval(0.03, self._check_held)
            self._held.append(event)
            event.stop()
            return
        await super().on_event(event)

    def _check_held(self) -> None:
        waited = time.monotonic() - self._held_since
        if not self._question_coming():
            self._replay_held()
        elif waited > HOLD_MAX:
            self._no_hold = self._hold_state()  # nothing ready in time: type through until something changes
            self._replay_held()

    def _replay_held(self) -> None:
        held, self._held = getattr(self, "_held", []), []
        if self._hold_poll is not None:
            self._hold_poll.stop()
            self._hold_poll = None
        for old in held:
            key = events.Key(old.key, old.character)
            key._ncui_replayed = True  # type: ignore[attr-defined]  # (held once: never again)
            self.post_message(key)


def question_ready(screen: ModalScreen[Any]) -> bool:
    """A question is ready for keys once it is mounted and has focused its field or button (or has none)."""
    return screen.is_mounted and (screen.focused is not None or not screen.focus_chain)
