"""Workloads with many pods and a busy watch (bench/pods.py's fixes): a burst of watch events is one redraw, a
changed pod changes only its cells, and a row changed out of sight shows its new values when it scrolls in; the
watch writes the store once or a few times for the burst (WATCH_COALESCE), not once an event; AGE does not tick
beneath a question; a held arrow follows one pod's log (FOLLOW_SETTLE)."""

from __future__ import annotations

import asyncio
import gc

from textual.widgets import DataTable

from ncui.kube import status as S
from ncui.screens.base import fitted_columns
from ncui.screens.kubepane import KubePane
from ncui.screens.modals import ConfirmModal

from .apphelp import app_for, loaded, until
from .kc_support import advance_until, busybox_job


async def test_many_pods_burst_and_offscreen_rows(kube_factory, monkeypatch):
    k = kube_factory("k8s-market")
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    app = app_for(k.sim)
    c = k.sim.app.state.kube.clusters[k.cluster]
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("4")
        await until(
            pilot, lambda: app.flows.connect.kube is not None and loaded(app, "k8s_pods"), timeout=30, what="watching"
        )
        job = busybox_job("many", "sleep 600")
        job["spec"].update(completions=40, parallelism=40)
        assert [r.error for r in await app.flows.connect.kube.apply([job])] == [None]
        await advance_until(k, lambda: sum(s.startswith("Running") for s in k.pod_statuses().values()) == 40, step=30)
        table = app.query_one("#pods", DataTable)
        wl = app.query_one("#kube-pane", KubePane)
        await until(pilot, lambda: table.row_count == 40 and "Running" in str(table.get_row_at(39)), what="40 rows")
        assert gc.get_freeze_count() > 0  # what the first pods' table found is out of the full collections' walk
        await until(
            pilot,
            lambda: (
                table.show_vertical_scrollbar
                and table._ncui_columns == fitted_columns(table, wl.POD_COLUMNS, flex=0, flex_min=12)
                and wl._name_width == dict(table._ncui_columns)["NAME"]
            ),
            what="the rows drawn for the table's final width",
        )
        table.move_cursor(row=0, animate=False)  # the first pod selected (it was whichever ran first), in sight
        await until(pilot, lambda: wl.pod == wl._rows[0][0] and table.scroll_y == 0, what="the top row selected")
        calls = []
        real = wl.refresh_view
        wl.refresh_view = lambda: (calls.append(1), real())[1]
        runs = sorted((r for r in c.runs.values() if r.owner == "many"), key=lambda r: r.name)
        versions, updates = app.store.get("k8s_pods").version, table._update_count
        with k.world.lock:  # a burst: every pod changes at once (40 watch events)
            for r in runs:
                r.restarts += 1
                c.kubelet.render_put(r, c.t)
        last = runs[-1].name
        pods = lambda: app.store.value("k8s_pods") or {}  # noqa: E731
        await until(
            pilot,
            lambda: all(r.name in pods() and str(S.pod_restarts(pods()[r.name])) == "1" for r in runs),
            what="the burst delivered",
        )
        assert app.store.get("k8s_pods").version - versions < 20  # the watch coalesced it: not a store write an event
        await until(pilot, lambda: str(table.get_cell(runs[0].name, "RESTARTS")) == "1", what="the top row redrawn")
        await until(pilot, lambda: str(table.get_cell(last, "RESTARTS")) == "1", what="the last row's data")
        assert len(calls) < 10, calls  # redraws for the burst, not one per event
        assert int(table.scroll_y) == 0  # the last row is out of sight, its data changed
        # no change touched the update count every cached render is keyed on (PatchTable): the rows in sight
        # that did not change are not rendered again, whatever draws the next frame
        assert table._update_count == updates, (table._update_count, updates)
        await pilot.pause()
        line = table.render_line(1).text  # the top row, in sight: drawn anew with its new count, not its cached line
        assert runs[0].name[-5:] in line and " 1 " in line, line
        table.move_cursor(row=39, animate=False)  # scroll to the last row: its new count drawn, not a cached line
        await until(pilot, lambda: table.cursor_row == 39 and table.scroll_y > 0, what="scrolled to the end")
        await pilot.pause()
        line = table.render_line(table.size.height - 1).text
        assert last in line and " 1 " in line, line
        # AGE ticks only while Workloads is on top: beneath a question a tick would draw the whole screen again
        name = wl._rows[int(table.scroll_y)][0]  # the top row in sight
        age = str(table.get_cell(name, "AGE"))
        app.push_screen(ConfirmModal("Stop it?", "A question over Workloads."))
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the question")
        await asyncio.to_thread(k.world.advance, 600)  # ten minutes on: every AGE would change
        wl._tick_ages()
        assert str(table.get_cell(name, "AGE")) == age
        app.pop_screen()
        await until(pilot, lambda: app.screen is wl.screen, what="the question gone")
        wl._tick_ages()
        assert str(table.get_cell(name, "AGE")) != age
        await pilot.press("q")


async def test_held_arrow_follows_only_the_pod_it_rests_on(kube_factory, monkeypatch):
    """↓ pressed three times quickly: the selection moves at once each time (the explanation follows it), and one
    log follow starts, of the pod the selection rests on, whose lines the pane then shows (FOLLOW_SETTLE)."""
    import ncui.screens.kubepane as K

    k = kube_factory("k8s-market")
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    monkeypatch.setattr(K, "FOLLOW_SETTLE", 1.0)  # roomy: three presses land within it on a loaded machine
    followed: list[str] = []
    real = K.log_follower
    monkeypatch.setattr(
        K, "log_follower", lambda kube, pod, *a, **kw: (followed.append(pod), real(kube, pod, *a, **kw))[1]
    )
    app = app_for(k.sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("4")
        await until(
            pilot, lambda: app.flows.connect.kube is not None and loaded(app, "k8s_pods"), timeout=30, what="watching"
        )
        jobs = [busybox_job(f"pick-{w}", f"echo {w}-marker") for w in ("alpha", "bravo", "charlie", "delta")]
        assert [r.error for r in await app.flows.connect.kube.apply(jobs)] == [None] * 4
        await advance_until(k, lambda: sum(s.startswith("Running") for s in k.pod_statuses().values()) == 4, step=30)
        await asyncio.to_thread(k.world.advance, 5)  # each pod has printed its command line
        table = app.query_one("#pods", DataTable)
        wl = app.query_one("#kube-pane", KubePane)
        await until(pilot, lambda: table.row_count == 4 and wl.follower is not None, what="4 rows, one followed")
        table.focus()
        table.move_cursor(row=0, animate=False)
        await until(pilot, lambda: wl.pod == wl._rows[0][0] and wl.follower is not None, what="the top pod")
        log = lambda: "\n".join(app.query_one("#log").lines_log.lines)  # noqa: E731  (the pane's lines)
        await until(pilot, lambda: "alpha-marker" in log(), what="the first pod's log")
        followed.clear()
        await pilot.press("down", "down", "down")
        last = wl._rows[3][0]
        assert table.cursor_row == 3 and wl.pod == last  # the table moved at once, three rows
        assert last.startswith("pick-delta") and "alpha-marker" not in log()  # the old pod's lines went at once
        await until(pilot, lambda: followed == [last], what="one follow, of the pod the selection rests on")
        await until(pilot, lambda: "delta-marker" in log(), what="that pod's lines in the pane")
        assert followed == [last]
        assert not any(f"{w}-marker" in log() for w in ("alpha", "bravo", "charlie"))
        await pilot.press("q")
