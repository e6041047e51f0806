"""Snapshots of each screen at 80×24 and 120×40: seeded simulator, frozen virtual clock, frozen store clock.

Review an SVG before accepting it (pytest --snapshot-update, then open tests/__snapshots__/…).
"""

from __future__ import annotations

import pytest

from ncui.widgets.logpane import wrap_lines

from .apphelp import app_for, loaded, screen_text, until

SIZES = [(80, 24), (120, 40)]
SCREENS = {
    "account": (
        "1",
        ("whoami", "summary", "balance", "transactions", "cluster", "ladder", "bid"),
        ("Credits purchased", "First job", "ada@halcyon.example"),
    ),
    "market": (
        "2",
        ("whoami", "cluster", "ladder", "ticks", "bid", "spend"),
        ("Price to win", "Your limit none", "Held no nodes"),
    ),
    # the header says "limit …" until the limit is read
    "recipes": ("3", ("whoami", "cluster", "catalog", "bid"), ("What will be applied", "kind: Job")),
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
        if screen == "account":  # (its tables are mounted after the first frame: their columns fit once laid out)
            await until(pilot, lambda: _columns_fit(app.query_one("#transactions")), what="the columns fitted")
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=ready)


def _columns_fit(table) -> bool:
    from ncui.screens.base import fitted_columns

    want = getattr(table, "_ncui_columns", None)
    return table.size.width > 0 and want is not None and want == fitted_columns(table, tuple(want))


def test_help(snap_compare, sim):
    app = app_for(sim)

    async def ready(pilot):
        await until(pilot, lambda: loaded(app, "whoami", "balance", "cluster", "bid"))
        await pilot.press("2", "question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_workloads(snap_compare, kube_factory, monkeypatch, size):
    """A Train job running, its loss lines followed: seeded box, frozen clock, a signed-in kubectl."""
    k = kube_factory("k8s-market")
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    k.set_bid(5.0)
    k.kubectl("apply", "-f", k.file("nanogpt-job-nvidia.yaml"))
    k.advance_until(lambda: any(s.startswith("Running") for s in k.pod_statuses().values()), what="running")
    k.world.advance(10 * 60)  # ten minutes of training
    app = app_for(k.sim)

    async def ready(pilot):
        await until(pilot, lambda: loaded(app, "whoami", "cluster", "bid", "ladder"))
        await pilot.press("4")
        await until(pilot, lambda: app.store.value("k8s_pods"), what="the pod watch")
        wl = app.query_one("#kube-pane")
        await until(
            pilot,
            lambda: len(wl._losses.points) > 10 and wl.follower is not None and wl.follower.state == "following",
            what="loss lines",
        )
        pane = app.query_one("#log")
        log = pane.lines_log

        def all_in() -> bool:  # every line the follower got, wrapped at the pane's width (memos, long lines)
            texts = wl.follower.texts()
            width = log.scrollable_content_region.width
            return bool(texts) and list(log.lines) == wrap_lines([t or " " for t in texts], width)

        await until(pilot, all_in, what="every line the follower got on screen")
        chart = app.query_one("#loss-chart")
        await until(pilot, lambda: not chart.pending, what="the loss chart drawn with the last points")
        header = app.query_one("StatusHeader")
        await until(pilot, lambda: "meters 1 busy" in header.render().plain, what="the header's meters")
        # the limit set before this session is pointed out at start (tests/test_trust_money); a toast is no
        # part of the screen drawn here
        await until(pilot, lambda: len(app._notifications) > 0, what="the start-up notice")
        app.clear_notifications()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_lease(snap_compare, sim, size):
    """Lease on the market cluster: a limit price standing (set before this session) and a spending limit
    remembered from an earlier run."""
    import httpx

    from ncui import limits as L

    httpx.put(
        sim.api_url + "/api/k8s/bid",
        json={"max_price_per_gpu_hour": 4.5},
        headers={"Authorization": f"Bearer {sim.token}"},
    ).raise_for_status()
    org_id = httpx.get(sim.api_url + "/api/whoami", headers={"Authorization": f"Bearer {sim.token}"}).json()["org_id"]
    L.save(L.key_for(sim.api_url, org_id), L.Limit(50_000_000, sim.world.now()))
    app = app_for(sim)

    async def ready(pilot):
        await until(
            pilot, lambda: loaded(app, "whoami", "cluster", "bid", "ladder", "spend", "balance", "transactions")
        )
        await pilot.press("5")
        await until(pilot, lambda: "wins" in screen_text(app) and "Spending limit $50.00" in screen_text(app))
        await until(pilot, lambda: len(app._notifications) > 0, what="the start-up notice")
        app.clear_notifications()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_lease_vm(snap_compare, sim_factory, size):
    """Lease on a VM cluster: a key registered, capacity declared, its node granted and provisioning (a node that
    is up shows its login on a free port, which no snapshot could hold still)."""
    import httpx

    from ncui.sim.world import JOIN_MIN

    sim = sim_factory("vm")
    auth = {"Authorization": f"Bearer {sim.token}"}
    org_id = httpx.get(sim.api_url + "/api/whoami", headers=auth).json()["org_id"]
    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl ada@laptop"
    httpx.post(
        sim.api_url + f"/api/vm/orgs/{org_id}/ssh-keys", json={"name": "laptop", "public_key": key}, headers=auth
    ).raise_for_status()
    sim.world.advance(60)
    version = httpx.get(sim.api_url + "/api/vm/capacity", headers=auth).json()["version"]
    httpx.put(
        sim.api_url + "/api/vm/capacity",
        json={"max_gpus": 8, "max_price_per_gpu_hour": 4.5, "expected_version": version},
        headers=auth,
    ).raise_for_status()
    sim.world.advance(min(180, JOIN_MIN - 60))  # granted, not yet up
    app = app_for(sim)

    async def ready(pilot):
        await until(pilot, lambda: loaded(app, "whoami", "vm_capacity", "balance", "transactions", "ssh_keys"))
        await pilot.press("5")
        await until(
            pilot,
            lambda: (
                "Declared 8 GPUs at up to $4.50/GPU-h" in screen_text(app)
                and "provisioning" in screen_text(app)
                and "laptop SHA256:" in screen_text(app)
            ),
        )
        await until(pilot, lambda: len(app._notifications) > 0, what="the start-up notice")
        app.clear_notifications()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()

    assert snap_compare(app, terminal_size=size, run_before=ready)


def test_chat(snap_compare, kube_factory, monkeypatch):
    """Talking to Inkling at 80×24 after one streamed answer: the thinking apart, the answer, the figures under it.
    The answer's timing is measured in real time: frozen here (first token 0.42 s, 150 tok/s), as the clocks are."""
    from ncui.screens.chat import ChatScreen, Composer

    from .apphelp import type_text

    k = kube_factory("k8s-market")
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    k.set_bid(5.0)
    k.kubectl("apply", "-f", k.file("inkling-weights-to-shared-nvidia.yaml"))
    k.kubectl("apply", "-f", k.file("inkling-serve-nvidia.yaml"))
    k.advance_until(
        lambda: any(
            n.startswith("inkling-") and not n.startswith("inkling-weights") and s.endswith(" 1/1")
            for n, s in k.pod_statuses().items()
        ),
        what="Inkling READY 1/1",
    )
    app = app_for(k.sim)

    async def ready(pilot):
        await until(pilot, lambda: loaded(app, "whoami", "cluster", "bid", "ladder"))
        await pilot.press("4")
        wl = app.query_one("#kube-pane")
        await until(pilot, lambda: wl._service() == "inkling", timeout=30, what="Inkling READY 1/1")
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, ChatScreen), what="the chat")
        chat = app.screen
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await until(pilot, lambda: chat.turns and chat.answer is None, timeout=60, what="the answer, streamed")
        a = chat.shown[-1][1]
        a.started, a.first_token = 0.0, 0.42
        a.ended = a.first_token + (a.tokens - 1) / 150
        chat.action_thinking()  # (twice: every turn drawn again, with the frozen timing)
        chat.action_thinking()
        # the composer's cursor is no part of the screen drawn here: under load it was caught hidden even with its
        # blink off and its focus kept (CI's red at stop 11), so the composer is drawn unfocused, without it
        composer = chat.query_one(Composer)
        composer.blur()
        await until(pilot, lambda: not composer.has_focus, what="the composer unfocused")
        # the limit set before this session is pointed out at start; a toast is no part of the screen drawn here
        await until(pilot, lambda: len(app._notifications) > 0, what="the start-up notice")
        app.clear_notifications()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)


# The apply question with its quote, at 80×24, in every scenario where ncui asks one (issue 25): the quote whole on
# screen as the question opens. (test_quote checks the same by its text; these are reviewed as a person sees them.)
QUESTIONS = {
    "train": ("k8s-market", 0),
    "serve-kimi": ("k8s-market", 1),
    "post-train": ("k8s-market", 3),
    "something-else": ("k8s-market", 4),
    "train-idle-node": ("k8s-packing", 0),
    "train-fixed": ("k8s-fixed-amd", 0),
}


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_apply_question(snap_compare, sim_factory, question):
    from .apphelp import to_recipe_question

    scenario, downs = QUESTIONS[question]
    sim = sim_factory(scenario)
    app = app_for(sim)

    async def ready(pilot):
        import re

        from textual.widgets import Static

        await to_recipe_question(pilot, app, sim, downs)
        # A serve's stop command names the catalog's URL, on the box's free port: the one thing of the question no
        # snapshot could hold still, written as one fixed port (the words and the layout are the question's own).
        for w in app.screen.query(Static):
            text = str(w.render())
            if re.search(r"127\.0\.0\.1:\d+", text):
                w.update(re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:40000", text))
        app.clear_notifications()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)


def test_vm_declaration_question(snap_compare, sim_factory):
    from ncui.screens.modals import CeilingModal, ConfirmModal
    from ncui.screens.vmflows import GpusModal

    from .apphelp import type_text

    sim = sim_factory("vm")
    app = app_for(sim)

    async def ready(pilot):
        await until(pilot, lambda: loaded(app, "whoami", "vm_capacity", "balance", "summary", "ssh_keys"))
        await pilot.press("5", "d")
        await until(pilot, lambda: isinstance(app.screen, GpusModal), what="the GPUs question")
        await type_text(pilot, "8")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, CeilingModal), what="the ceiling")
        await type_text(pilot, "4.20")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), what="the declaration's question")
        app.clear_notifications()
        await pilot.pause()
        await pilot.wait_for_scheduled_animations()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=ready)
