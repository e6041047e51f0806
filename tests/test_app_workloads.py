"""The first job end to end in the TUI, against the box: ceiling → bid → apply → node granted → pods →
loss lines in the log pane and chart → stop; and a Serve recipe to a completion."""

from __future__ import annotations

from ncui.screens.modals import CeilingModal, ConfirmModal, ResultsModal

from .apphelp import app_for, open_recipes, screen_lines, screen_text, through_sign_in, type_text, until
from .kc_support import busybox_job


async def test_train_flow_end_to_end(sim):
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        price = app.store.value("ladder").rungs[0].price_per_gpu_hour
        ceiling = f"{price / 1e6 + 0.5:.2f}"
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        await type_text(pilot, ceiling)
        await until(pilot, lambda: "clears now" in screen_text(app))
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the bid confirmation")
        text = screen_text(app)
        assert f"Set a limit price of ${ceiling}/GPU-h on halcyon?" in text and "keeps pulling nodes" in text
        assert world.main_org.k8s["halcyon"].bid == 0  # nothing bid before the yes
        await pilot.press("y")
        await until(pilot, lambda: world.main_org.k8s["halcyon"].bid == int(round(float(ceiling) * 1e6)))
        await until(
            pilot,
            lambda: isinstance(app.screen, ConfirmModal) and "Apply" in screen_text(app),
            what="the apply confirmation",
        )
        await pilot.press("y")
        await until(pilot, lambda: app.query_one("#views").current == "workloads", timeout=30, what="Workloads")
        await until(pilot, lambda: "nanogpt" in (app.store.value("k8s_jobs") or {}), timeout=30)

        # The market grants the node; it joins; the pod runs and logs loss lines.
        def loss_lines() -> bool:
            return any("iter" in line and "loss" in line for line in app.query_one("#log").lines_log.lines)

        for _ in range(60):
            if loss_lines():
                break
            world.advance(60)
            await pilot.pause(0.2)
        await until(pilot, loss_lines, timeout=10, what="loss lines in the log pane")
        wl = app.query_one("#kube-pane")
        await until(pilot, lambda: len(wl._losses.points) >= 2, what="the loss chart")
        assert wl._losses.points[0][1] > wl._losses.points[-1][1]  # the loss falls
        assert "Running" in screen_text(app) or "Completed" in screen_text(app)
        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        text = screen_text(app)  # the whole recipe: its one Job, and what stays
        assert "Stop Train nanoGPT?" in text and "job/nanogpt" in text and "delete job nanogpt" in text
        await pilot.press("y")
        await until(
            pilot, lambda: "nanogpt" not in (app.store.value("k8s_jobs") or {}), timeout=30, what="the job gone"
        )
        assert "limit $" in app.query_one("StatusHeader").render().plain  # the standing limit stays visible


async def test_serve_flow_to_a_completion(sim):
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_recipes(pilot, app)
        await pilot.press("down", "down")  # Serve Inkling
        await until(pilot, lambda: "inkling-serve-nvidia.yaml" in screen_text(app))
        await pilot.press("a")
        await through_sign_in(pilot, app, sim, CeilingModal)
        price = app.store.value("ladder").rungs[0].price_per_gpu_hour
        await type_text(pilot, f"{price / 1e6 + 0.5:.2f}")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal))
        await pilot.press("y")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal) and "Apply" in screen_text(app))
        await pilot.press("y")
        await until(pilot, lambda: app.query_one("#views").current == "workloads", timeout=30)
        wl = app.query_one("#kube-pane")
        for _ in range(120):
            if wl._service():
                break
            world.advance(60)
            await pilot.pause(0.1)
        assert wl._service() == "inkling"
        # neither the engine's log nor the staging job's has loss lines: each takes the whole width, no chart
        from textual.widgets import DataTable

        table = app.query_one("#pods", DataTable)
        table.focus()
        names = sorted(app.store.value("k8s_pods") or {})
        for want_job in (False, True):
            target = next(i for i, n in enumerate(names) if n.startswith("inkling-weights") == want_job)
            while table.cursor_row != target:
                await pilot.press("down" if table.cursor_row < target else "up")
            await until(pilot, lambda target=target: wl.pod == names[target], what="the pod selected")
            await until(pilot, lambda: wl.follower is not None and wl.follower.total > 0, what="its log")
            assert not app.query_one("#loss-chart").display
        await _chat_with_inkling(pilot, app, sim)


async def _chat_with_inkling(pilot, app, sim) -> None:
    """m at READY 1/1: the chat. The answer streams in parts, the thinking apart from it, time to first token
    and tokens/s under it; the request shown is the one the box received; a dropped stream says so."""
    import json

    import httpx

    from ncui.screens.chat import ChatScreen

    async def engine(body: dict) -> None:
        async with httpx.AsyncClient() as h:
            r = await h.post(
                f"{sim.api_url}/_sim/k8s/chat", json=body, headers={"Authorization": f"Bearer {sim.token}"}
            )
            assert r.status_code == 200

    kube = sim.app.state.kube
    await engine({"rate": 20})  # some 30 tokens of thinking in about 1.5 s: slow enough to be seen in parts
    await pilot.press("m")
    await until(pilot, lambda: isinstance(app.screen, ChatScreen), what="the chat")
    chat = app.screen
    await type_text(pilot, "hi")
    await pilot.press("enter")
    await until(pilot, lambda: "thinking" in screen_text(app) and chat.answer is not None, what="thinking streams")
    text = screen_text(app)
    assert "Inkling: …" in text and "finish:" not in text  # in parts: thinking so far, no answer yet
    await until(pilot, lambda: chat.answer is None, timeout=30, what="the answer ends")
    text = screen_text(app)
    assert "Inkling: Hi! I'm Inkling." in text and "finish: stop" in text
    assert "first token" in text and "tok/s" in text and "… tok/s" not in text
    turn = chat.turns[-1]
    assert turn.reasoning and turn.reasoning not in turn.answer  # the thinking apart from the answer
    await pilot.press("ctrl+r")  # the exact request: what the box received
    await until(pilot, lambda: isinstance(app.screen, ResultsModal), what="the request")
    shown = screen_lines(app)  # (the request's JSON, as its lines show it)
    body = json.loads(shown[shown.index("{") : shown.index("\n}") + 2])
    assert kube.chat_requests[-1] == ("inkling", body) and body["max_tokens"] == 1024 and body["stream"] is True
    shown = screen_text(app)
    assert "kubectl --context halcyon port-forward svc/inkling 8000:8000 &" in shown
    await pilot.press("escape")
    await until(pilot, lambda: app.screen is chat)
    await engine({"drop_after": 5})
    await type_text(pilot, "more")
    await pilot.press("enter")
    await until(pilot, lambda: chat.answer is None and "dropped" in screen_text(app), timeout=30, what="the drop")
    assert "what arrived is kept" in screen_text(app) and len(chat.turns) == 1  # not sent back as history
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, ChatScreen), what="back to Workloads")


async def test_log_pane_survives_dropped_streams_and_strips_escape_codes(sim):
    """In the TUI: a pod's log whose stream the cluster cuts twice reaches the pane whole, each line once,
    the line under the pane saying it resumes; then a log line carrying terminal escapes shows clean."""
    import httpx
    from textual.widgets import DataTable

    from ncui.screens.modals import SignInModal

    from .apphelp import loaded

    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: loaded(app, "whoami", "cluster"))
        await pilot.press("s")  # sign kubectl in, as a person does
        await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in link")
        async with httpx.AsyncClient() as h:
            code = app.screen.link.split("code=", 1)[1]
            assert (await h.post(sim.api_url + "/device", data={"code": code})).status_code == 200
        await until(pilot, lambda: app.flows.connect.kube is not None, timeout=30, what="signed in")
        kube = app.flows.connect.kube
        res = await kube.apply([busybox_job("flood", "run", {"NCUI_SIM_LOG_FLOOD": "5000"})])
        assert [r.error for r in res] == [None]
        await pilot.press("4")
        pods = lambda: app.store.value("k8s_pods") or {}  # noqa: E731
        for _ in range(30):
            if any(
                p["metadata"]["name"].startswith("flood") and (p.get("status") or {}).get("phase") == "Running"
                for p in pods().values()
            ):
                break
            world.advance(10)
            await pilot.pause(0.05)
        wl = app.query_one("#kube-pane")
        pane = app.query_one("#log")
        # the pod was selected when it appeared: its first follower has its stream (before any cut is set)
        await until(
            pilot,
            lambda: wl.follower is not None and wl.follower.total >= 5000,
            timeout=30,
            what="the first follower's stream",
        )
        statuses: list[str] = []
        set_status = pane.set_status
        pane.set_status = lambda text: (statuses.append(text), set_status(text))  # what the line under it said
        async with httpx.AsyncClient() as h:  # the cluster cuts the next two log streams after 1,234 lines
            r = await h.post(
                sim.api_url + "/_sim/k8s/logcut",
                json={"after": 1234, "count": 2},
                headers={"Authorization": f"Bearer {sim.token}"},
            )
            assert r.status_code == 200
        flood = next(n for n in pods() if n.startswith("flood"))
        first = wl.follower
        wl.follow_log()  # (re)open the selected pod's log: the only pod, so the flood's
        assert wl.pod == flood
        await until(pilot, lambda: wl.follower not in (None, first), what="a new follower (the pane cleared)")
        await until(
            pilot,
            lambda: (
                wl.follower.total >= 5000 and len(pane.lines_log.lines) >= 5000 and not pane.lines_log.paint_pending
            ),
            timeout=30,
            what="all 5,000 lines on the pane",
        )
        expected = [f"iter {k}: loss {1 + (k % 997) / 331:.4f}, time {380 + k % 37}.12ms" for k in range(5000)]
        assert list(pane.lines_log.lines) == expected  # none lost, none repeated, in order
        assert wl.follower.streams >= 3 and wl.follower.total == 5000
        assert any("resuming" in s for s in statuses), statuses
        assert statuses[-1] == ""  # lines flow again: the line under the pane is gone
        assert "resuming" not in screen_text(app)

        # A line with colour codes, a title sequence, a bell and a carriage return, in its own pod.
        nasty = "x\r[red: \x1b[31mred\x1b[0m title: \x1b]0;title\x07 end]\x07"
        res = await kube.apply([busybox_job("nasty", nasty)])
        assert [r.error for r in res] == [None]
        for _ in range(30):
            if any(n.startswith("nasty") for n in pods()):
                break
            world.advance(10)
            await pilot.pause(0.05)
        table = app.query_one("#pods", DataTable)
        table.focus()
        await until(pilot, lambda: table.row_count == 2, what="both pods in the table")
        target = sorted(pods()).index(next(n for n in pods() if n.startswith("nasty")))
        while table.cursor_row != target:
            await pilot.press("down" if table.cursor_row < target else "up")
        for _ in range(30):
            if any(line.startswith("[red") for line in pane.lines_log.lines):
                break
            world.advance(10)
            await pilot.pause(0.1)
        await until(pilot, lambda: any(line.startswith("[red") for line in pane.lines_log.lines), what="the line")
        line = next(x for x in pane.lines_log.lines if x.startswith("[red"))
        assert line == "[red: red title:  end]"
        assert not any(c in "".join(pane.lines_log.lines) for c in "\x1b\x07\r\x9b")
