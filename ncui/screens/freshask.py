"""The money questions' two steps on screen (``FreshQuestions``, a base of the flows mixed into NCApp): the figures
a question judges read for it, and the yes re-checked against them. The rule itself, with no UI, is
``ncui/flows/fresh.py``; the flows that ask (apply, limit price, declare, re-tune, restart) inherit this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from .modals import ConfirmModal, ResultsModal, RetryModal

if TYPE_CHECKING:
    from textual.app import App

    from ..flows.fresh import Snapshot
    from ..pollers import Pollers
    from ..store import Store

    # for the type checker the mixin is the App it is mixed into, so that its methods see App's; at run time
    # it is a plain class
    _AppBase = App[None]
else:
    _AppBase = object

MAX_ROUNDS = 3  # questions asked again because a figure changed meanwhile, before ncui gives up and says so


class FreshQuestions(_AppBase):
    """Mixed into NCApp through the flows that ask money questions."""

    if TYPE_CHECKING:  # NCApp's
        store: Store
        pollers: Pollers | None

    async def fresh_figures(self, names: tuple[str, ...], declined: str) -> Snapshot | None:
        """Read the figures a money question judges, for it. While one is not fresh, say which (as read how long
        ago, and why not since) and offer r to read again: nothing is judged "covered" on an old figure. None
        (``declined`` said) when the human gives up."""
        from ..flows import fresh

        ref = self.store.meta.get("cluster")
        while True:
            snap = await fresh.read(self.store, self.pollers, names)
            bad = snap.not_fresh()
            if not bad:
                return snap
            said = "\n".join(fresh.sentence(f, ref.name if ref is not None else "") for f in bad)
            if not await self.push_screen_wait(RetryModal("The figures could not be confirmed", said)):
                self.notify(declined)
                return None

    async def confirm_fresh(
        self,
        snap: Snapshot,
        names: tuple[str, ...],
        title: str,
        body: Any,
        still: Any,
        *,
        yes: str,
        no: str,
        declined: str,
    ) -> Snapshot | None:
        """Ask ``title`` with ``body(snap)``; at the yes read ``names`` again: ``still(snap, new)`` gives what
        changed meanwhile in words and, when the change makes the answer wrong, why (then nothing is sent: said
        in a modal). A change is said in a new question before anything is sent. The snapshot the yes was given
        on, or None (said) when the human said no, a figure could not be read again, or it was refused."""
        heading, lead = title, ""
        for _ in range(MAX_ROUNDS):
            if not await self.push_screen_wait(ConfirmModal(heading, lead + body(snap), yes=yes, no=no)):
                self.notify(declined)
                return None
            new = await self.fresh_figures(names, declined)
            if new is None:
                return None
            said, wrong = still(snap, new)
            if wrong is not None:
                moved = f"While you were asked, {'; '.join(said)}.\n\n" if said else ""
                await self.push_screen_wait(ResultsModal(declined.rstrip("."), Text(f"{moved}{wrong}")))
                return None
            if not said:
                return new
            snap = new
            heading = f"Something changed while you were asked: {title[0].lower()}{title[1:]}"
            lead = f"While you were asked, {'; '.join(said)}.\n\n"
        await self.push_screen_wait(
            ResultsModal(
                declined.rstrip("."),
                Text(f"The figures changed {MAX_ROUNDS} times while you were asked; look at Lease, then try again."),
            )
        )
        return None
