"""How a flow asks the human, with no Textual: a ``Question`` is data (a title, the words, the buttons) whose answer
type is the question's, and ``UI`` is what a flow may do on screen. The screens show each kind of question as a
modal (``ncui/screens/ui.py``, the one adapter); a test drives a flow with a scripted UI (``tests/scripted_ui.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

if TYPE_CHECKING:
    from rich.text import Text

T = TypeVar("T")
Severity = Literal["information", "warning", "error"]


# ---- the questions ----------------------------------------------------------------------------------------


class Question(Generic[T]):
    """What the human is asked; ``UI.ask`` returns its answer, of type ``T``. Subclasses are frozen dataclasses;
    each kind has one modal on screen (``ncui/screens/ui.py``)."""


@dataclass(frozen=True)
class Confirm(Question[bool]):
    """A yes or a no (Esc and n are the no; ``default`` is the button Enter presses at first)."""

    title: str
    body: str | Text
    yes: str = "Yes"
    no: str = "No"
    default: str = "no"


@dataclass(frozen=True)
class Retry(Question[bool]):
    """Something could not be read: r reads it again (True), Esc gives up (False)."""

    title: str
    body: str


@dataclass(frozen=True)
class Results(Question[None]):
    """What happened, to be read and closed (Enter or Esc)."""

    title: str
    body: str | Text


@dataclass(frozen=True)
class Prompt(Question["str | None"]):
    """One line of text, or None when the human goes back."""

    title: str
    placeholder: str = "then Enter"


# ---- the UI a flow is given ---------------------------------------------------------------------------------


class UI(Protocol):
    """What a flow may do on screen. The App's is ``screens.ui.ScreenUI``; a test's is a scripted one."""

    async def ask(self, question: Question[T]) -> T:
        """Show ``question`` and wait for its answer (inside a worker: ``start``)."""
        ...

    def ask_then(self, question: Question[T], then: Callable[[T], object] | None = None) -> None:
        """Show ``question`` without waiting; ``then(answer)`` once it is answered (from a key handler)."""
        ...

    def notify(
        self, message: str, *, title: str = "", severity: Severity = "information", timeout: float | None = None
    ) -> None:
        """A toast, with a ``title`` when given (sanitised by the UI: server text may ride in it)."""
        ...

    def start(
        self,
        work: Callable[[], Coroutine[Any, Any, object]],
        *,
        name: str,
        group: str = "default",
        exclusive: bool = False,
    ) -> object:
        """Run ``work`` in the background; a failure is said on screen and logged, never the end of the app."""
        ...

    def show(self, view: str) -> None:
        """Switch to a view by its id (``account``, ``market``, ``recipes``, ``workloads``, ``lease``, ``report``)."""
        ...

    def busy(self, *groups: str) -> bool:
        """A piece of work ``start``-ed in one of ``groups`` is under way (not yet finished)."""
        ...

    def asking(self) -> bool:
        """A question (or any screen over the views) is on screen."""
        ...

    def bell(self) -> None: ...
