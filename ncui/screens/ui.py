"""The flows' UI on screen (``flows.ui.UI``): questions as modals, toasts, workers, views.

A flow under ``ncui/flows/`` asks ``await ui.ask(Confirm(...))``; ``ScreenUI`` shows the question's modal
(``screens/questions.py``: each kind of question → its modal, imported at the first question) and waits for the
human's answer.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from ..flows.ui import Question, Severity

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import ModalScreen
    from textual.worker import Worker

    from .keyhold import KeyHold

T = TypeVar("T")


def modal(question: Question[Any]) -> ModalScreen[Any]:
    from .questions import modal as build  # (every flow's module with it: never before the first frame)

    return build(question)


class ScreenUI:
    """``flows.ui.UI`` for the App: questions as modals, toasts, workers, views."""

    def __init__(self, app: App[Any], keyhold: KeyHold) -> None:
        self.app = app
        self.keyhold = keyhold

    async def ask(self, question: Question[T]) -> T:
        self._asked()
        answer: T = await self.app.push_screen_wait(modal(question))
        return answer

    def ask_then(self, question: Question[T], then: Callable[[T], object] | None = None) -> None:
        done: Callable[[Any], None] | None = None if then is None else (lambda answer: None if then(answer) else None)
        self._asked()
        self.app.push_screen(modal(question), done)

    def _asked(self) -> None:
        self.keyhold.asked()  # (keys typed ahead are held for the question again: screens/keyhold.py)

    def waiting(self) -> None:
        self.keyhold.waiting()

    def notify(
        self, message: str, *, title: str = "", severity: Severity = "information", timeout: float | None = None
    ) -> None:
        self.app.notify(message, title=title, severity=severity, timeout=timeout)  # (NCApp.notify sanitises: one belt)

    def start(
        self,
        work: Callable[[], Coroutine[Any, Any, object]],
        *,
        name: str,
        group: str = "default",
        exclusive: bool = False,
    ) -> Worker[object]:
        # (the worker gets the function, never a coroutine: one cancelled before it starts (a quit, a second s) is
        # not left unawaited; exit_on_error=False: a failure is said on screen (NCApp.on_worker_state_changed),
        # never the end of the app; the annotated local gives mypy the result type of Textual's WorkType union)
        worker: Worker[object] = self.app.run_worker(
            work, name=name, group=group, exclusive=exclusive, exit_on_error=False
        )
        return worker

    def show(self, view: str) -> None:
        self.app.call_later(self.app.run_action, f"show({view!r})")

    def busy(self, *groups: str) -> bool:
        return any(w.group in groups and not w.is_finished for w in self.app.workers)

    def asking(self) -> bool:
        return len(self.app.screen_stack) > 1

    def bell(self) -> None:
        self.app.bell()
