"""Sign-in expiry handled in place, in the TUI against the box: after an idle day or a 401 the new link shows
where the human is, with why, Account says the sign-in expired, and once the link is approved the pods watch
and the log follow resume by themselves, every log line exactly once."""

from __future__ import annotations

import httpx

from ncui.screens.modals import SignInModal

from .apphelp import app_for, loaded, screen_text, until
from .kc_support import busybox_job
from .kube_support import KubeEnv
from .test_kc_signin_gate import box_log, create_elsewhere


async def _approve(sim, link: str) -> None:
    async with httpx.AsyncClient() as h:
        assert (await h.post(sim.api_url + "/device", data={"code": link.split("code=", 1)[1]})).status_code == 200


async def _signed_in(pilot, app, sim) -> str:
    """Sign kubectl in as a person does (s, approve the link); the link approved."""
    await until(pilot, lambda: loaded(app, "whoami", "cluster"))
    await pilot.press("s")
    await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in link")
    link = app.screen.link
    await _approve(sim, link)
    await until(
        pilot,
        lambda: app.flows.connect.kube is not None and app.store.value("k8s_pods") is not None,
        timeout=30,
        what="signed in and watching",
    )
    return link


async def _sim(sim, path: str, body: dict) -> None:
    async with httpx.AsyncClient() as h:
        r = await h.post(sim.api_url + path, json=body, headers={"Authorization": f"Bearer {sim.token}"})
        assert r.status_code == 200, r.text


async def test_an_idle_day_shows_the_new_link_in_place_and_approving_it_resumes(sim):
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        first = await _signed_in(pilot, app, sim)
        await until(pilot, lambda: "signed in ✓" in screen_text(app), what="Account: signed in")
        await _sim(sim, "/_sim/advance", {"seconds": 90000})  # an idle day: the plugin starts a new device code
        await until(pilot, lambda: isinstance(app.screen, SignInModal), timeout=30, what="the new link, unasked")
        link = app.screen.link
        assert link != first and "/device?code=" in link
        text = screen_text(app)
        assert "Sign in to halcyon again" in text and "no longer accepts the sign-in" in text
        assert app.store.value("kube_signin") == "expired"
        await pilot.press("escape")  # closed unapproved: Account tells the truth, never "signed in ✓"
        await until(pilot, lambda: not isinstance(app.screen, SignInModal))
        text = screen_text(app)
        assert "sign-in expired: approve the new link" in text and "signed in ✓" not in text
        assert (
            await app.flows.connect.kube_client() is None
        )  # a flow that needs the cluster (apply) is told, not failed silently
        await pilot.press("s")  # s shows the same link again
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the link again")
        assert app.screen.link == link
        await _approve(sim, link)
        await until(pilot, lambda: not isinstance(app.screen, SignInModal), timeout=30, what="the modal closing")
        await until(
            pilot, lambda: app.store.value("kube_signin") == "signed in" and app.flows.connect.kube.gate.is_open
        )
        assert "signed in ✓" in screen_text(app)
        res = await app.flows.connect.kube.apply([busybox_job("after", "echo hi")])  # the pods watch goes on
        assert [r.error for r in res] == [None]
        await until(
            pilot,
            lambda: any(n.startswith("after") for n in app.store.value("k8s_pods") or {}),
            timeout=20,
            what="the new pod in the watch",
        )


async def test_a_401_pauses_the_watch_and_the_log_until_approved_then_every_line_once(sim, tmp_path):
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await _signed_in(pilot, app, sim)
        kube = app.flows.connect.kube
        router = [d for d in (await _recipe(sim)) if d["metadata"]["name"] == "infera-router"]
        assert [r.error for r in await kube.apply(router)] == [None]
        await pilot.press("4")
        wl = app.query_one("#kube-pane")
        pane = app.query_one("#log")
        for _ in range(30):  # the router runs on the CPU worker
            if wl.follower is not None and wl.follower.state == "following":
                break
            world.advance(30)
            await pilot.pause(0.05)
        pod = wl.pod
        assert pod and pod.startswith("infera-router")
        k = KubeEnv(sim, "halcyon", tmp_path)  # the box's side, for the helpers (no sign-in of its own)
        for _ in range(4):  # a health line every 10 virtual minutes
            world.advance(600)
            await until(pilot, lambda: wl.follower.total == len(box_log(k, pod, "router")), what="caught up")

        await _sim(sim, "/_sim/k8s/revoke", {})  # the cluster answers 401 from now on; open streams end
        await until(pilot, lambda: isinstance(app.screen, SignInModal), timeout=30, what="the new link")
        assert "answered 401" in screen_text(app) and app.store.value("kube_signin") == "expired"
        await until(pilot, lambda: wl.follower.state == "not signed in", timeout=20, what="the log paused")
        assert "log: paused until the sign-in is approved" in str(pane.query_one("#logpane-status").content)

        # the service answers; the cluster's watch does not (its slices fail once the watcher meets the 401)
        def header() -> str:
            return app.query_one("StatusHeader").render().plain

        await until(pilot, lambda: "● stale" in header() and ": workloads" in header(), what="the header's light")
        assert "● live" not in header()
        create_elsewhere(k, busybox_job("zz-during", "echo hi"))  # (sorted after the router: it stays selected)
        link = app.screen.link
        world.advance(600 * 3)  # three more lines while ncui waits; the link's 15 minutes pass
        assert not any(n.startswith("zz-during") for n in app.store.value("k8s_pods"))
        await until(
            pilot,
            lambda: isinstance(app.screen, SignInModal) and app.screen.link != link,
            timeout=30,
            what="a fresh link in place of the expired one",
        )

        await _approve(sim, app.screen.link)
        await until(pilot, lambda: not isinstance(app.screen, SignInModal), timeout=30, what="the modal closing")
        await until(
            pilot,
            lambda: any(n.startswith("zz-during") for n in app.store.value("k8s_pods") or {}),
            timeout=20,
            what="the pods watch listing again",
        )
        world.advance(600 * 2)  # and lines after the outage
        await until(
            pilot,
            lambda: len(pane.lines_log.lines) >= len(box_log(k, pod, "router")) and not pane.lines_log.paint_pending,
            timeout=20,
            what="the log resumed",
        )  # (the pane's own lines: the follower's count runs ahead of the batch on its way to the pane)
        assert wl.pod == pod and wl.follower.streams >= 2
        assert list(pane.lines_log.lines) == box_log(k, pod, "router")  # none lost, none repeated, in order
        assert "paused" not in screen_text(app) and app.store.value("kube_signin") == "signed in"


async def _recipe(sim) -> list[dict]:
    import yaml

    async with httpx.AsyncClient() as h:
        r = await h.get(f"{sim.access_url}/first-job/kimi-k3-serve-nvidia.yaml")
    r.raise_for_status()
    return [d for d in yaml.safe_load_all(r.text) if d]
