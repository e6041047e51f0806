"""Snapshots of each screen at 80×24 and 120×40: seeded simulator, frozen virtual clock, frozen store clock.

Review an SVG before accepting it (pytest --snapshot-update, then open tests/__snapshots__/…).
"""

from __future__ import annotations

import pytest

from .apphelp import app_for, loaded, screen_text, until

SIZES = [(80, 24), (120, 40)]
SCREENS = {
    "account": ("1", ("whoami", "summary", "balance", "transactions", "cluster", "ladder", "bid"),
                ("Credits purchased", "First job", "ada@halcyon.example")),
    "market": ("2", ("whoami", "cluster", "ladder", "ticks", "bid", "spend"),
               ("Price to win", "Your limit none", "Held  no nodes")),
    "recipes": ("3", ("whoami", "cluster", "catalog"), ("What will be applied", "kind: Job")),
}


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen(snap_compare, sim, screen, size):
    key, needs, shows = SCREENS[screen]
    app = app_for(sim)

    async def ready(pilot):
        await until(pilot, lambda: loaded(app, *needs))
        await pilot.press(key)
        await until(pilot, lambda: all(s in screen_text(app) for s in shows))
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=ready)


def test_help(snap_compare, sim):
    app = app_for(sim)

    async def ready(pilot):
        await until(pilot, lambda: loaded(app, "whoami", "balance"))
        await pilot.press("2", "question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)
