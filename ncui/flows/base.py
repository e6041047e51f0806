"""What every flow is given, and how a flow asks the human: no Textual here.

A flow (apply, lease, lifecycle, connect and sign-in, Slurm, node, VM) is an object under ``ncui/flows/`` built
by the App with what it needs, explicitly: a ``Context`` (the backend, the store, this service's history, the
pollers once connected, and a ``UI``) and the other flows it calls, as constructor arguments. A flow never
reaches into the App.

A flow asks through ``UI.ask(question)`` (``flows/ui.py``); it waits (bounded) with ``flows/wait.py``; a money
question's figures are read for it and re-checked at the yes (``flows/fresh.py``: ``fresh.figures`` and
``fresh.confirm``, given the flow's context). A test drives a flow's money logic with a scripted UI, no terminal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .ui import UI, Severity

if TYPE_CHECKING:
    from ..api.client import NCClient
    from ..backend import Backend
    from ..history import History
    from ..notify import Moment, Notifier
    from ..pollers import Pollers
    from ..store import Store


# ---- what a flow is given -----------------------------------------------------------------------------------


@dataclass(eq=False)
class Context:
    """The session a flow works in. ``history`` and ``pollers`` are set once ncui has connected (``None``
    before); the App owns this object and every flow holds the same one."""

    backend: Backend | None
    store: Store
    ui: UI
    history: History | None = None
    pollers: Pollers | None = None
    moments: Notifier | None = None  # the App's (ncui/notify): set after the first frame
    extra: dict[str, Any] = field(default_factory=dict)


class Flow:
    """A flow's common ground: its context and what every flow says and reads through it.
    Subclasses take the other flows they call as constructor arguments."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    @property
    def store(self) -> Store:
        return self.ctx.store

    @property
    def backend(self) -> Backend | None:
        return self.ctx.backend

    @property
    def ui(self) -> UI:
        return self.ctx.ui

    @property
    def history(self) -> History | None:
        return self.ctx.history

    def with_kubeconfig(self, text: str) -> str:
        """Every ``kubectl --context C`` in ``text`` as it works when typed (``History.with_kubeconfigs``: with
        ``KUBECONFIG=<C's file>`` while ~/.kube/config has no context for C)."""
        return self.ctx.history.with_kubeconfigs(text) if self.ctx.history is not None else text

    def notify(
        self, message: str, *, title: str = "", severity: Severity = "information", timeout: float | None = None
    ) -> None:
        self.ctx.ui.notify(message, title=title, severity=severity, timeout=timeout)

    def moment(self, m: Moment, *, in_app: bool = True) -> None:
        """A moment the human waits for (ncui/notify): said in the app (unless the caller shows it its own way:
        ``in_app=False``), and on the desktop when it should be."""
        if self.ctx.moments is not None:
            self.ctx.moments.moment(m, in_app=in_app)
        elif in_app:
            self.notify(m.body, title=m.title, severity=m.severity, timeout=15)

    def client(self) -> NCClient | None:
        """The National Compute client; None (said on screen) before ncui has connected. (A flow starts from
        data the pollers read, and they run only once connected: this is the check, not an expected path.)"""
        nc = self.ctx.backend.nc if self.ctx.backend is not None else None
        if nc is None:
            self.notify("Not connected to National Compute yet: nothing was changed.", severity="error", timeout=8)
        return nc
