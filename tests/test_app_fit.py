"""At 80×24: toasts under the header, wrapped at word boundaries, hiding no line of Lease or Report; a long
result (a chat request with its curl) scrolls with its keys line in sight; Slurm's setup command whole on
Account; History dated on the box's clock, as the Report is."""

from __future__ import annotations

import pytest
from rich.text import Text
from textual.widgets._toast import Toast, ToastRack

from ncui.screens.modals import ResultsModal

from .apphelp import app_for, loaded, until
from .peers import need_peer
from .screentext import joined
from .sshd_support import free_port

LONG = "finance-analyst-launcher-5f6d7c9b8-q2w4r"


def drawn(widget) -> list[str]:
    """The widget's lines as drawn on screen."""
    return [line.text.rstrip() for line in widget.render_lines(widget.region.reset_offset)]


def screen_rows(app) -> list[str]:
    """The screen's rows as a terminal shows them (every layer composited)."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize(("key", "first"), [("5", "Limit price"), ("6", "Cluster")])
async def test_a_toast_wraps_at_words_and_hides_no_line_of_lease_or_report(sim, key, first):
    app = app_for(sim)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster", "balance", "bid"))
        await pilot.press(key)

        def first_row() -> int | None:  # the screen's first line after its title (and the blank line under it)
            return next((i for i, r in enumerate(screen_rows(app)) if r.lstrip().startswith(first)), None)

        await until(pilot, lambda: first_row() is not None, what=first)
        top = first_row()
        app.notify(f"The tune passed: pod {LONG} scaled the engine of svc/finance-analyst up; it serves now.")

        def toasts() -> list[Toast]:
            return list(app.screen.get_child_by_type(ToastRack).query(Toast))

        await until(pilot, toasts, what="the toast")
        toast = toasts()[0]
        await until(pilot, lambda: toast.region.height > 0, what="the toast drawn")
        lines = [line.strip("▌ ") for line in drawn(toast)]
        assert any(LONG in line for line in lines), lines  # whole: it fits the toast's width
        assert toast.region.y >= 2 and toast.region.bottom <= top, (toast.region, top)  # the header in sight


async def test_a_long_result_scrolls_with_its_keys_in_sight(sim):
    body = Text("\n".join(f"line {i}: curl -s localhost:8000/v1/chat/completions" for i in range(60)))
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami"))
        app.push_screen(ResultsModal("The last request sent to Kimi K3", body))
        await until(pilot, lambda: isinstance(app.screen, ResultsModal))
        keys, scroll = app.screen.query_one("#results-keys"), app.screen.query_one("#results-body")
        await until(pilot, lambda: "scroll" in joined("\n".join(drawn(keys))), what="the keys line says it scrolls")
        assert drawn(keys)[0].strip() == "↑/↓ PgUp/PgDn scroll · Esc or Enter closes"
        assert 0 < keys.region.y < 24 and scroll.has_focus
        await pilot.press("end")
        await until(pilot, lambda: scroll.scroll_y == scroll.max_scroll_y > 0, what="scrolled to the end")
        await until(pilot, lambda: any("line 59:" in r for r in screen_rows(app)), what="the last line shown")
        assert any("Esc or Enter closes" in r for r in screen_rows(app))


async def test_slurms_setup_command_is_whole_on_account(sim_factory, tmp_path, monkeypatch):
    need_peer("ssh-keygen")
    sim = sim_factory("slurm")
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host plover\n  HostName 127.0.0.1\n  Port {free_port()}\n  IdentityFile {tmp_path}/id\n")
    monkeypatch.setenv("NC_SSH_CONFIG", str(cfg))
    monkeypatch.setenv("NCUI_LOGIN_NODE", "0")
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "slurm_signin"), what="the sign-in checked")
        command = f"curl -fsSL {sim.access_url}/setup.sh | sh -s -- plover"
        await until(pilot, lambda: any(command in line for line in screen_rows(app)), what=command)


async def test_history_is_dated_on_the_box_clock_as_the_report_is(sim):
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.history is not None, what="connected")
        entry = app.history.record("shell", "true", "a change", True)
        assert entry.at == sim.world.now().replace(microsecond=entry.at.microsecond)
        assert entry.comment().startswith(f"# {sim.world.now():%Y-%m-%d %H:%M}")
