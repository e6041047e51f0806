"""Workloads never shows a failed read as a fact: the watch's errors mark the rows stale, a cluster that
restarted behind the same address is listed anew, and AGE counts by the clock between watch events."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from pydantic import SecretStr
from textual.widgets import DataTable

from ncui.app import NCApp
from ncui.backend import Backend
from ncui.sim.server import SimServer
from ncui.store import Store

from .apphelp import app_for, loaded, screen_text, until
from .conftest import endpoints_of, make_world
from .kc_support import busybox_job
from .kube_support import columns


@pytest.mark.parametrize("moved", [False, True], ids=["same-address", "moved"])
async def test_workloads_marks_a_lost_cluster_stale_and_lists_the_restarted_one(kube_factory, monkeypatch, moved):
    # The box stops while Workloads shows a job; a new box (a new world: no such job, resourceVersions from
    # the start, new uids) starts behind the same API address. Either its cluster API is behind the same
    # address and certificate too (a restarted service), or it moved: a new port and a new certificate, as
    # `ncui sim --port N` started again; then ncui reads the kubeconfig again and connects anew.
    k = kube_factory("k8s-market")
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    old = k.sim
    app = app_for(old)
    new = None
    pods = lambda: app.store.value("k8s_pods") or {}  # noqa: E731
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: loaded(app, "whoami", "cluster"))
            await pilot.press("4")
            await until(
                pilot,
                lambda: app.flows.connect.kube is not None and loaded(app, "k8s_pods"),
                timeout=30,
                what="watching",
            )
            first = app.flows.connect.kube
            res = await first.apply([busybox_job("before", "echo old")])
            assert [r.error for r in res] == [None]
            await until(pilot, lambda: any(n.startswith("before") for n in pods()), what="the old pod")
            await until(pilot, lambda: "job/before" in screen_text(app), what="the old job on screen")

            old.stop()
            await until(pilot, lambda: "⚠ Stale" in screen_text(app), timeout=30, what="the rows marked stale")
            text = screen_text(app)
            assert "cannot reach the cluster" in text
            assert "job/before" in text and any(n.startswith("before") for n in pods())  # the last rows stay

            same = {} if moved else {"tls_port": old.tls_port, "tls_pair": old.tls_pair}
            new = SimServer(make_world("k8s-market"), port=old.port, **same)
            assert moved == (new.tls_port != old.tls_port)
            new.app.state.kube.auth.sessions.update(old.app.state.kube.auth.sessions)  # it keeps the sign-ins
            new.start()
            if moved:
                await until(
                    pilot, lambda: app.flows.connect.kube not in (first, None), timeout=40, what="a client for the move"
                )
                assert any("moved" in n.message for n in list(app._notifications))
            await until(pilot, lambda: "job/before" not in screen_text(app), timeout=30, what="the new cluster")
            res = await app.flows.connect.kube.apply([busybox_job("after", "echo new")])
            assert [r.error for r in res] == [None]
            await until(pilot, lambda: any(n.startswith("after") for n in pods()), timeout=30, what="the new pod")
            await until(  # (Workloads redraws a burst of watch events at once, within WATCH_REDRAW)
                pilot,
                lambda: "⚠ Stale" not in screen_text(app) and "job/after" in screen_text(app),
                what="fresh again",
            )
            assert not any(n.startswith("before") for n in pods()) and "job/after" in screen_text(app)
            await pilot.press("q")
    finally:
        if new is not None:
            new.stop()


async def test_age_counts_by_the_services_clock_between_watch_events(kube_factory, monkeypatch):
    # `ncui --api` against a box whose clock is a day ahead of this machine's (as a sped-up `ncui sim` soon is):
    # AGE counts by the service's time, read off its answers' Date header, never by the wall clock (which
    # read every pod `<invalid>`, created in its future).
    k = kube_factory("k8s-market", start=datetime.now(timezone.utc) + timedelta(days=1))
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    app = NCApp(Backend(endpoints_of(k.sim), SecretStr(k.sim.token), timeout=5), store=Store(), mode="test")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("4")
        await until(
            pilot, lambda: app.flows.connect.kube is not None and loaded(app, "k8s_pods"), timeout=30, what="watching"
        )
        res = await app.flows.connect.kube.apply([busybox_job("quiet", "true")])
        assert [r.error for r in res] == [None]
        table = app.query_one("#pods", DataTable)

        def row() -> list:
            return [getattr(c, "plain", str(c)) for c in table.get_row_at(0)] if table.row_count else []

        for _ in range(40):  # its short run ends; after that nothing about the pod changes
            if "Completed" in row():
                break
            k.world.advance(15)
            await pilot.pause(0.05)
        await until(pilot, lambda: "Completed" in row(), what="the pod completed")
        name = next(iter(app.store.value("k8s_pods")))
        printed = columns(k.kubectl("get", "pods").stdout)[name]["AGE"]  # the real kubectl, at the box's frozen now
        app.pollers.refresh("balance")
        await until(pilot, lambda: row()[4] == printed, what=f"AGE as kubectl prints it ({printed})")
        before, version = row()[4], app.store.get("k8s_pods").version
        assert table.columns["AGE"].get_render_width(table) - 2 >= 5 >= len(before)  # whole at 80 columns
        k.world.advance(3 * 3600)  # the box's clock moves on; no watch event
        app.pollers.refresh("balance")  # (the next answer of any poll: every 10 s at most)
        await until(pilot, lambda: row()[4].startswith("3h"), what=f"AGE past {before} by the box's clock")
        assert not before.startswith("3h")
        assert app.store.get("k8s_pods").version == version  # no watch event redrew the row
