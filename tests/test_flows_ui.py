"""A money question's two steps, driven with no terminal (ncui/flows/fresh.py through flows.base.Flow and a scripted
UI): the question is asked on the figures read for it, a figure that moved while the human read is said in a new
question before anything is sent, and a no sends nothing."""

from __future__ import annotations

from ncui.flows import fresh
from ncui.flows.base import Context, Flow
from ncui.flows.ui import Confirm, Results
from ncui.store import Store

from .scripted_ui import ScriptedUI

NAMES = ("balance",)


def still(old, new) -> tuple[list[str], str | None]:
    a, b = old.value("balance"), new.value("balance")
    if a == b:
        return [], None
    if b < 5:
        return [f"the balance went from {a} to {b}"], "The balance no longer covers it."
    return [f"the balance went from {a} to {b}"], None


def flow(store: Store, ui: ScriptedUI) -> Flow:
    return Flow(Context(None, store, ui))


async def _ask(store: Store, ui: ScriptedUI):
    f = flow(store, ui)
    snap = await fresh.figures(f.ctx, NAMES, "Nothing was sent.")
    assert snap is not None
    return await fresh.confirm(
        f.ctx,
        snap,
        NAMES,
        "Spend it?",
        lambda s: f"You have {s.value('balance')}.",
        still,
        yes="Spend",
        no="Keep",
        declined="Nothing was sent.",
    )


async def test_the_yes_on_unchanged_figures_is_the_answer():
    store = Store()
    store.set("balance", 10)
    ui = ScriptedUI(True)
    got = await _ask(store, ui)
    assert got is not None and got.value("balance") == 10
    assert [type(q) for q in ui.asked] == [Confirm] and ui.asked[0].body == "You have 10."


async def test_a_figure_that_moved_while_asked_is_said_in_a_new_question_before_the_yes_counts():
    store = Store()
    store.set("balance", 10)

    def yes_while_it_moves(q: Confirm) -> bool:
        store.set("balance", 8)  # the world moves while the human reads
        return True

    ui = ScriptedUI(yes_while_it_moves, True)
    got = await _ask(store, ui)
    assert got is not None and got.value("balance") == 8
    second = ui.asked[1]
    assert isinstance(second, Confirm) and second.title.startswith("Something changed while you were asked")
    assert "the balance went from 10 to 8" in str(second.body) and "You have 8." in str(second.body)


async def test_a_change_that_makes_the_answer_wrong_sends_nothing_and_says_why():
    store = Store()
    store.set("balance", 10)

    def yes_while_it_drops(q: Confirm) -> bool:
        store.set("balance", 2)
        return True

    ui = ScriptedUI(yes_while_it_drops, None)
    assert await _ask(store, ui) is None
    assert isinstance(ui.asked[1], Results) and "no longer covers" in str(ui.asked[1].body)


async def test_a_no_sends_nothing():
    store = Store()
    store.set("balance", 10)
    ui = ScriptedUI(False)
    assert await _ask(store, ui) is None
    assert ui.told == [("information", "Nothing was sent.")]
