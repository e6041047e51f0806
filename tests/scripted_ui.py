"""A flow's UI without a terminal (``ncui.flows.ui.UI``): it answers each question from a script and keeps what it
was asked and told, so a test drives a flow's money logic with no screen. The script is a list of answers, or of
functions of the question, plain or async (to read a figure it shows, or to change the world while the human
"reads")."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from ncui.flows.ui import Question, Severity


class ScriptedUI:
    def __init__(self, *answers: Any) -> None:
        self.script = list(answers)
        self.asked: list[Question[Any]] = []
        self.told: list[tuple[str, str]] = []  # (severity, message)
        self.shown: list[str] = []
        self.tasks: list[asyncio.Task[object]] = []
        self.groups: list[tuple[str, asyncio.Task[object]]] = []  # (group, task) of what was started

    async def ask(self, question: Question[Any]) -> Any:
        self.asked.append(question)
        if not self.script:
            raise AssertionError(f"asked {question!r} with no answer left in the script")
        answer = self.script.pop(0)
        got = answer(question) if callable(answer) else answer
        return await got if inspect.isawaitable(got) else got  # (an async answer: the world moves as it is read)

    def ask_then(self, question: Question[Any], then: Callable[[Any], object] | None = None) -> None:
        async def asked() -> None:
            answer = await self.ask(question)
            if then is not None:
                then(answer)

        self.tasks.append(asyncio.ensure_future(asked()))

    def notify(
        self, message: str, *, title: str = "", severity: Severity = "information", timeout: float | None = None
    ) -> None:
        self.told.append((severity, message))

    def start(
        self,
        work: Callable[[], Coroutine[Any, Any, object]],
        *,
        name: str,
        group: str = "default",
        exclusive: bool = False,
    ) -> object:
        task = asyncio.ensure_future(work())
        self.tasks.append(task)
        self.groups.append((group, task))
        return task

    def busy(self, *groups: str) -> bool:
        return any(g in groups and not t.done() for g, t in self.groups)

    def asking(self) -> bool:
        return False  # (a scripted question is answered at once)

    def show(self, view: str) -> None:
        self.shown.append(view)

    def bell(self) -> None:
        self.told.append(("bell", ""))
