"""The money questions' two steps on screen (``FreshQuestions``, a base of the flows mixed into NCApp): the figures
a question judges read for it, and the yes re-checked against them. The rule itself, with no UI, is
``ncui/flows/fresh.py``; the flows that ask (apply, limit price, declare, re-tune, restart) inherit this."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App

    from ..flows.base import Context
    from ..flows.fresh import Snapshot
    from ..pollers import Pollers
    from ..store import Store

    # for the type checker the mixin is the App it is mixed into, so that its methods see App's; at run time
    # it is a plain class
    _AppBase = App[None]
else:
    _AppBase = object


class FreshQuestions(_AppBase):
    """Mixed into NCApp through the flows that ask money questions."""

    if TYPE_CHECKING:  # NCApp's
        store: Store
        pollers: Pollers | None
        ctx: Context

    # (TRANSITIONAL, issue 22: the flows become objects with flows.base.Flow's two steps; this goes with the mixins)
    async def fresh_figures(self, names: tuple[str, ...], declined: str) -> Snapshot | None:
        from ..flows import fresh

        return await fresh.figures(self.ctx, names, declined)

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
        from ..flows import fresh

        return await fresh.confirm(self.ctx, snap, names, title, body, still, yes=yes, no=no, declined=declined)
