"""Helpers for driving the app with Textual's pilot against a simulator."""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from ncui.app import NCApp
from ncui.backend import Backend
from ncui.store import Store

from . import waits
from .conftest import endpoints_of
from .screentext import joined


def app_for(sim, *, frozen: bool = True) -> NCApp:
    store = Store(clock=(lambda: 1000.0)) if frozen else Store()
    return NCApp(
        Backend(endpoints_of(sim), SecretStr(sim.token), timeout=5, clock=sim.world.now), store=store, mode="test"
    )


async def until(pilot, cond, timeout: float = 15.0, what: str = "") -> None:
    """Let the app run until ``cond()`` holds and the screen on top has finished composing and mounting (a
    modal that has just been pushed is on the stack before its widgets are), with a deadline."""

    def said() -> str:
        held = "held, but the screen on top never finished mounting" if cond() else "never held"
        return f"{held}; on top: {_top(pilot.app)}"

    await waits.until(
        lambda: cond() and pilot.app.screen.is_mounted, timeout, what or repr(cond), 0.02, sleep=pilot.pause, say=said
    )


def _top(app) -> str:
    """The screen on top for a failure message: its class and, for a modal (an error dialog, a question), what it
    says, so a timeout names the error the app showed rather than only that one was there."""
    from textual.screen import ModalScreen

    screen = app.screen
    if not isinstance(screen, ModalScreen):
        return repr(screen)
    try:
        said = screen_text(app)
    except Exception as e:  # a half-built screen: say so rather than hide the timeout behind another error
        said = f"(its text could not be read: {e!r})"
    return f"{screen!r} saying: {said[:600]!r}"


def footer_keys(app) -> list[str]:
    """The footer's keys a person reads whole, left to right, as "q Quit" (a key cut at the edge, or hidden
    under the command palette's key, is not read)."""
    from textual.widgets._footer import FooterKey

    keys = list(app.screen.query(FooterKey))
    edge = min([k.region.x for k in keys if k.has_class("-command-palette")] or [app.size.width])
    return [
        f"{k.key_display} {k.description}"
        for k in keys
        if not k.has_class("-command-palette") and k.region.width and k.region.right <= edge
    ]


def notes(app) -> str:
    """The notifications (toasts) up now, one per line."""
    return "\n".join(n.message for n in list(app._notifications))


def screen_text(app) -> str:
    """Everything on screen as text, as a person reads it (tests/screentext.py): each widget's lines, however its
    text or the app wraps them, joined; a rich renderable's borders out; whitespace collapsed. What phrases match."""
    return joined(screen_lines(app))


def screen_lines(app) -> str:
    """Everything on screen as plain text, one widget's text after another, with their line breaks (where a test
    looks at a line: the header's first row)."""
    from textual.widgets import DataTable, Static

    parts = []
    for w in app.screen.query("*"):
        if not w.display:
            continue
        if isinstance(w, Static):
            r = w.content
            if isinstance(r, str):
                parts.append(r)
            elif hasattr(r, "plain"):
                parts.append(r.plain)
            else:  # a rich renderable (Group, Syntax): print it as a terminal would
                import io

                from rich.console import Console

                console = Console(
                    width=max(40, w.size.width or 120), file=io.StringIO(), record=True, color_system=None
                )
                console.print(r)
                parts.append(console.export_text())
        elif isinstance(w, DataTable):
            for i in range(w.row_count):
                parts.append(" ".join(getattr(c, "plain", str(c)) for c in w.get_row_at(i)))
    return "\n".join(parts)


def loaded(app, *names: str) -> bool:
    return all(app.store.get(n).loaded for n in names)


async def through_sign_in(pilot, app, sim, then, timeout: float = 30.0) -> None:
    """Wait for ``then`` (a screen class); approve the sign-in link on the way, as a human would."""
    import httpx

    from ncui.screens.modals import SignInModal

    await until(pilot, lambda: isinstance(app.screen, (SignInModal, then)), timeout, what=f"sign-in or {then}")
    if isinstance(app.screen, SignInModal):
        code = app.screen.link.split("code=", 1)[1]
        async with httpx.AsyncClient() as h:
            assert (await h.post(sim.api_url + "/device", data={"code": code})).status_code == 200
        await until(pilot, lambda: isinstance(app.screen, then), timeout, what=str(then))
    # and mounted: a test that ends while the screen still composes tears it down half-built
    await until(pilot, lambda: app.screen.is_mounted, timeout, what=f"{then} mounted")


async def open_recipes(pilot, app) -> None:
    """Show the Recipes screen once what the money check reads is in (on a market cluster, the ladder and
    the standing bid too), and wait for the preview."""
    await until(pilot, lambda: loaded(app, "whoami", "cluster", "catalog", "balance", "summary"))
    if app.store.value("cluster").market:
        await until(pilot, lambda: loaded(app, "ladder", "bid"))
    await pilot.press("3")
    await until(
        pilot,
        lambda: "What will be applied" in screen_text(app) or "not offered" in screen_text(app),
        what="the preview",
    )


async def open_something_else(pilot, app) -> None:
    """Recipes → Something else → its form (the fifth recipe)."""
    from ncui.screens.modals import CustomJobModal

    await open_recipes(pilot, app)
    for _ in range(4):
        await pilot.press("down")
    await until(pilot, lambda: "Press Enter for the form" in screen_text(app))
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, CustomJobModal))


async def type_text(pilot, text: str) -> None:
    """Type into the focused input, key by key."""
    names = {".": "full_stop", "-": "minus", " ": "space"}
    for ch in text:
        await pilot.press(names.get(ch, ch))


async def put_bid(sim, dollars: float) -> None:
    """Another client (the console, kubectl, curl) sets the standing limit."""
    async with httpx.AsyncClient() as h:
        r = await h.put(
            sim.api_url + "/api/k8s/bid",
            json={"max_price_per_gpu_hour": dollars},
            headers={"Authorization": f"Bearer {sim.token}"},
        )
        assert r.status_code == 200


async def to_apply_question(pilot, app, sim) -> str:
    """Recipes → a on Train, as a person does it, up to the apply question: the sign-in approved, a ceiling 50
    cents over the price to win one node, yes to the limit price; returns the ceiling typed."""
    from ncui.screens.modals import CeilingModal, ConfirmModal

    await open_recipes(pilot, app)
    ceiling = f"{app.store.value('ladder').rungs[0].price_per_gpu_hour / 1e6 + 0.5:.2f}"
    await pilot.press("a")
    await through_sign_in(pilot, app, sim, CeilingModal)
    await type_text(pilot, ceiling)
    await until(pilot, lambda: "clears now" in screen_text(app))
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the bid confirmation")
    await pilot.press("y")
    await until(pilot, lambda: isinstance(app.screen, ConfirmModal) and "Apply" in screen_text(app))
    return ceiling


async def to_recipe_question(pilot, app, sim, downs: int) -> None:
    """Recipes, the recipe ``downs`` below Train, a (Something else: its form filled in and sent); a ceiling 50
    cents over the price to win when asked, yes to it; up to the apply question."""
    from ncui.screens.modals import CeilingModal, ConfirmModal

    if downs == 4:
        await open_something_else(pilot, app)
        form = app.screen
        form.query_one("#image").value = "ghcr.io/me/trainer:1.2"
        form.query_one("#command").value = "python train.py"
        form.query_one("#nodes").value = "1"
        form._submit()
    else:
        await open_recipes(pilot, app)
        for _ in range(downs):
            await pilot.press("down")
        await pilot.pause()
        await pilot.press("a")

    def asked() -> bool:
        return isinstance(app.screen, CeilingModal) or (
            isinstance(app.screen, ConfirmModal) and "Apply" in screen_text(app)
        )

    await through_sign_in(pilot, app, sim, (CeilingModal, ConfirmModal))
    await until(pilot, asked, timeout=30, what="the ceiling or the apply question")
    if isinstance(app.screen, CeilingModal):
        ceiling = f"{app.store.value('ladder').rungs[0].price_per_gpu_hour / 1e6 + 0.5:.2f}"
        await type_text(pilot, ceiling)
        await until(pilot, lambda: "clears now" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the bid confirmation")
        await pilot.press("y")
        await until(
            pilot,
            lambda: isinstance(app.screen, ConfirmModal) and "Apply" in screen_text(app),
            timeout=30,
            what="the apply question",
        )


async def apply_train(pilot, app, sim) -> str:
    """``to_apply_question``, then yes to the apply; returns the ceiling typed, once Workloads shows."""
    ceiling = await to_apply_question(pilot, app, sim)
    await pilot.press("y")
    await until(pilot, lambda: app.query_one("#views").current == "workloads", timeout=30, what="Workloads")
    return ceiling
