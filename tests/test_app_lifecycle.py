"""The recipes' lifecycle as the guide tells it, in the TUI against the box: Stop removes the whole recipe after one
question (what goes, what stays), one serving recipe at a time, Kimi K3's load test (no own requests meanwhile,
its summary at the end), a defective tune and tuning again, and a serve left on the previous model after a
re-tune (rollout restart)."""

from __future__ import annotations

from pathlib import Path

import httpx

from ncui import recipes as R
from ncui.lifecycle import load_test_running
from ncui.screens.chat import ChatScreen, Composer
from ncui.screens.modals import CeilingModal, ConfirmModal, ResultsModal, SignInModal

from .apphelp import app_for, loaded, notes, open_recipes, put_bid, screen_text, type_text, until

FILES = Path(__file__).resolve().parent.parent / "ncui" / "sim" / "catalog" / "files"


async def signed_in(pilot, app, sim) -> None:
    """s, and the human approves the link: the app's kubectl sign-in, its watches running."""
    await until(pilot, lambda: loaded(app, "whoami", "cluster", "catalog", "ladder", "bid"))
    await pilot.press("s")
    await until(pilot, lambda: isinstance(app.screen, SignInModal), what="the sign-in link")
    async with httpx.AsyncClient() as h:
        code = app.screen.link.split("code=", 1)[1]
        assert (await h.post(sim.api_url + "/device", data={"code": code})).status_code == 200
    await until(pilot, lambda: app.flows.connect.kube is not None, timeout=30, what="signed in")
    await until(pilot, lambda: loaded(app, "k8s_jobs", "k8s_pods", "k8s_deployments"), what="the watches")


async def bid(app, sim) -> None:
    """A limit price that clears now, set as another client would (the apply flow's own is tested elsewhere)."""
    await put_bid(sim, round(app.store.value("ladder").rungs[0].price_per_gpu_hour / 1e6 + 0.5, 2))


async def apply_files(app, *names: str) -> None:
    """What `kubectl apply -f` of the catalog's files does (another client, not ncui's apply flow)."""
    docs = [d for n in names for d in R.parse_manifests((FILES / n).read_text(), n)]
    assert [r.error for r in await app.flows.connect.kube.apply(docs)] == [None] * len(docs)


async def run_until(pilot, world, cond, what: str, step: float = 60, limit: int = 400) -> None:
    """Advance the box's clock a step at a time until ``cond()`` holds in the app."""
    for _ in range(limit):
        if cond():
            break
        world.advance(step)
        await pilot.pause(0.05)
    await until(pilot, cond, timeout=15, what=what)


async def confirm_apply(pilot, app) -> str:
    """Past the money check of an apply (the standing limit, prefilled, kept) to its question; its text."""
    is_apply = lambda: isinstance(app.screen, ConfirmModal) and "Apply" in screen_text(app)  # noqa: E731
    await until(pilot, lambda: isinstance(app.screen, CeilingModal) or is_apply(), timeout=40, what="the money check")
    if isinstance(app.screen, CeilingModal):
        await pilot.press("enter")  # the standing limit, as it stands: nothing new is set
    await until(pilot, is_apply, timeout=40, what="the apply question")
    return screen_text(app)


def commands(app) -> list[str]:
    """The kubectl lines this session recorded in the history (h, ncui history), oldest first."""
    return [e.command for e in app.history.session if e.kind == "kubectl"]


def jobs(app) -> dict:
    return app.store.value("k8s_jobs") or {}


def deps(app) -> dict:
    return app.store.value("k8s_deployments") or {}


async def test_stop_removes_the_whole_recipe_and_one_serving_recipe_at_a_time(sim):
    """Points 3 and 4: Inkling serves; applying Kimi K3 asks to stop it first (no: nothing applied; yes: all of
    Inkling goes, its checkpoint said to stay); then x on a Kimi pod lists the router, the worker, both services
    and the staging Job, and deletes them all."""
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await signed_in(pilot, app, sim)
        await bid(app, sim)
        await apply_files(app, "inkling-weights-to-shared-nvidia.yaml", "inkling-serve-nvidia.yaml")
        await until(pilot, lambda: "inkling" in deps(app), what="Inkling's deployment")
        await open_recipes(pilot, app)
        await pilot.press("down")  # Serve Kimi K3
        await until(pilot, lambda: "kimi-k3-serve-nvidia.yaml" in screen_text(app), what="Kimi's preview")
        for answer in ("n", "y"):
            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the stop question")
            text = screen_text(app)
            assert "Stop Serve Inkling first?" in text and "one serving recipe at a time" in text.lower()
            for ref in ("deployment/inkling", "service/inkling", "job/inkling-weights"):
                assert ref in text
            assert "staged checkpoint" in text and "stay" in text
            await pilot.press(answer)
            if answer == "n":  # kept: nothing stopped, nothing applied
                await until(pilot, lambda: "was not applied" in notes(app), what="said")
                assert "inkling" in deps(app) and "infera-router" not in deps(app)
        await confirm_apply(pilot, app)
        kube = app.flows.connect.kube
        assert await kube.get("deployments", "inkling") is None and await kube.get("services", "inkling") is None
        assert await kube.get("jobs", "inkling-weights") is None
        await pilot.press("y")
        await until(pilot, lambda: app.query_one("#views").current == "workloads", timeout=30, what="Workloads")
        await until(pilot, lambda: {"infera-router", "kimi-k3-worker"} <= set(deps(app)), what="Kimi applied")
        await until(pilot, lambda: app.query_one("#kube-pane").pod is not None, what="a pod selected")

        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the stop question")
        text = screen_text(app)
        assert "Stop Serve Kimi K3?" in text
        for ref in (
            "deployment/infera-router",
            "deployment/kimi-k3-worker",
            "service/infera",
            "service/kimi-k3-worker",
            "job/kimi-k3-weights",
        ):
            assert ref in text
        assert "staged weights stay on the shared volume" in text
        assert "delete -f" in text and "kimi-k3-serve-nvidia.yaml" in text and "delete job kimi-k3-weights" in text
        await pilot.press("y")
        await until(pilot, lambda: "Stopped Serve Kimi K3" in notes(app), timeout=40, what="stopped")
        for kind, name in (
            ("deployments", "infera-router"),
            ("deployments", "kimi-k3-worker"),
            ("services", "infera"),
            ("services", "kimi-k3-worker"),
            ("jobs", "kimi-k3-weights"),
        ):
            assert await kube.get(kind, name) is None, (kind, name)
        assert await kube.get("services", "kubernetes") is not None  # nothing that is not the recipe's
        # The history holds each Stop as the commands its question showed, naming the files that were applied.
        files = f"{sim.access_url}/first-job/"
        for line in (
            f"kubectl --context halcyon delete -f {files}inkling-serve-nvidia.yaml",
            "kubectl --context halcyon delete job inkling-weights",
            f"kubectl --context halcyon delete -f {files}kimi-k3-serve-nvidia.yaml",
            "kubectl --context halcyon delete job kimi-k3-weights",
        ):
            assert commands(app).count(line) == 1, (line, commands(app))
        assert not any(" delete deployment " in c or " delete service " in c for c in commands(app))
        stop = next(e for e in app.history.session if " delete -f " in e.command and "kimi-k3" in e.command)
        assert stop.ok
        assert stop.what.startswith("stop Serve Kimi K3: delete ") and "service/infera" in stop.what


async def test_kimi_load_test_holds_own_requests_and_shows_its_summary(sim):
    """Point 5: at READY 1/1 Workloads offers L; the load test runs on the box's clock; m sends nothing while
    it runs and says why; its summary is shown when it ends."""
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await signed_in(pilot, app, sim)
        await bid(app, sim)
        await apply_files(app, "kimi-k3-weights-to-shared.yaml", "kimi-k3-serve-nvidia.yaml")
        await pilot.press("4")
        wl = app.query_one("#kube-pane")
        await run_until(pilot, world, lambda: wl._service() == "infera", "Kimi K3 READY 1/1", step=120)
        await until(pilot, lambda: "L runs the optional load test" in screen_text(app), what="the offer")
        await until(pilot, lambda: "Kimi K3 is up (READY 1/1)" in notes(app), what="said once it is up")
        await pilot.press("L")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the question")
        text = screen_text(app)
        assert "Run Kimi K3's load test?" in text and "about 17 minutes" in text and "kimi-k3-loadtest.yaml" in text
        assert "kimi-k3-loadtest" not in jobs(app)  # nothing before the yes
        await pilot.press("y")
        await until(pilot, lambda: "kimi-k3-loadtest" in jobs(app), what="the load test Job")
        assert f"kubectl --context halcyon apply -f {sim.access_url}/first-job/kimi-k3-loadtest.yaml" in commands(app)
        world.advance(300)
        await until(pilot, lambda: "Kimi K3's load test is running since" in screen_text(app), what="said running")
        app.clear_notifications()
        await pilot.press("m")  # the human's own request: held, and why
        await until(pilot, lambda: "running for 5m of about 17 min" in notes(app), what="the request held, and why")
        assert "sends none of your own requests" in notes(app)
        assert app.screen is app.screen_stack[0]  # no prompt was opened
        await run_until(pilot, world, lambda: isinstance(app.screen, ResultsModal), "the summary", step=60, limit=40)
        text = screen_text(app)
        assert "load test is done" in text and "Requests: 3000" in text and "ms mean" in text and "tok/s out" in text
        await pilot.press("escape")
        await until(pilot, lambda: "load test done: 3000 requests" in screen_text(app), what="the summary's figures")

        # Own requests go again; then a load test started while the chat is open (the human's own kubectl, in
        # another shell): the chat sends nothing, says why, and keeps what was typed.
        asked = sim.app.state.kube.chat_requests
        await pilot.press("m")
        await until(pilot, lambda: isinstance(app.screen, ChatScreen), what="the chat")
        chat = app.screen
        await type_text(pilot, "hi")
        await pilot.press("enter")
        await until(pilot, lambda: chat.turns, timeout=30, what="an answer")
        sent = len(asked)
        await app.flows.connect.kube.delete("jobs", "kimi-k3-loadtest")
        await until(pilot, lambda: "kimi-k3-loadtest" not in jobs(app), timeout=30, what="the old run gone")
        await apply_files(app, "kimi-k3-loadtest.yaml")
        await until(pilot, lambda: load_test_running(jobs(app)), timeout=30, what="a new load test running")
        app.clear_notifications()
        await type_text(pilot, "and now")
        await pilot.press("enter")
        await until(pilot, lambda: "sends none of your own requests" in notes(app), what="the send held, and why")
        assert len(asked) == sent and len(chat.turns) == 1 and chat.query_one(Composer).text == "and now"


async def test_defective_tune_tune_again_and_restart_on_the_new_model(sim_factory):
    """Points 2, 6 and 3: the default demo's tune passes, so this scenario asks for one defective tune: the job
    fails, the serve leg keeps waiting and Workloads says the guide's way on; T deletes the Job and tunes again (a
    new outcome: it passes, the serve comes up). A re-tune while it serves leaves it on the previous model: said,
    and R restarts it after a yes. Then x stops Post-train whole (launcher's RBAC included), the model staying."""
    sim = sim_factory("k8s-bad-tune")
    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(120, 40)) as pilot:
        await signed_in(pilot, app, sim)
        await bid(app, sim)
        await apply_files(app, "finance-analyst-tune-nvidia.yaml", "finance-analyst-serve-nvidia.yaml")
        await pilot.press("4")

        def tune(status: str):
            from ncui.kube.status import job_status

            return lambda: (
                "finance-analyst-tune" in jobs(app) and job_status(jobs(app)["finance-analyst-tune"]) == status
            )

        await run_until(pilot, world, tune("Failed"), "the tune fails", step=120)
        await until(pilot, lambda: "graded its model DEFECTIVE" in screen_text(app), what="the way on")
        text = screen_text(app)
        assert "serve leg keeps waiting" in text and "T does both" in text and "new attempt" in text
        assert "graded its model defective" in notes(app)
        world.advance(600)
        assert deps(app)["finance-analyst"]["spec"]["replicas"] == 0  # the serve leg waits

        await open_recipes(pilot, app)  # Post-train applied again from Recipes: the failed Job would run nothing
        await pilot.press("down", "down", "down")
        await until(pilot, lambda: "finance-analyst-serve-nvidia.yaml" in screen_text(app), what="Post-train")
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the failed Job's question")
        assert "job/finance-analyst-tune is on halcyon: Failed at" in screen_text(app)
        await pilot.press("y")
        text = await confirm_apply(pilot, app)
        assert "First delete job/finance-analyst-tune (Failed at" in text
        await pilot.press("n")
        await until(pilot, lambda: "Nothing was applied" in notes(app), what="cancelled")
        await pilot.press("4")
        await pilot.press("T")
        text = await confirm_apply(pilot, app)
        assert "First delete job/finance-analyst-tune (Failed" in text and "Job/finance-analyst-tune" in text
        assert f"delete -f {sim.access_url}/first-job/finance-analyst-serve-nvidia.yaml" in text  # the file applied
        first_uid = jobs(app)["finance-analyst-tune"]["metadata"]["uid"]
        await pilot.press("y")
        await until(
            pilot,
            lambda: jobs(app).get("finance-analyst-tune", {}).get("metadata", {}).get("uid") not in (None, first_uid),
            timeout=40,
            what="a new tune Job",
        )
        wl = app.query_one("#kube-pane")
        await run_until(pilot, world, lambda: wl._service() == "finance-analyst", "the tuned model served", step=120)
        assert "DEFECTIVE" not in screen_text(app) and "PREVIOUS" not in screen_text(app)
        serving = next(
            n
            for n, p in app.store.value("k8s_pods").items()
            if p["metadata"]["labels"].get("app.kubernetes.io/name") == "finance-analyst"
        )

        await pilot.press("T")  # a re-tune while the first tuned model serves
        text = await confirm_apply(pilot, app)
        assert "keeps serving the current model" in text
        await pilot.press("y")
        await run_until(pilot, world, lambda: "serves the PREVIOUS model" in screen_text(app), "said stale", step=120)
        assert "R restarts it" in screen_text(app) and "still serves the previous model" in notes(app)
        await pilot.press("R")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the restart question")
        text = screen_text(app)
        assert "rollout restart deploy/finance-analyst" in text and "PREVIOUS model" in text
        # the balance moves while the human reads it (issue 21): re-read at the yes, said before anything is sent
        async with httpx.AsyncClient() as h:
            r = await h.post(
                sim.api_url + "/_sim/billing/topup", json={"usd": 10}, headers={"Authorization": f"Bearer {sim.token}"}
            )
            assert r.status_code == 200, r.text
        await pilot.press("y")
        changed = "Something changed while you were asked: restart deploy/finance-analyst"
        await until(pilot, lambda: changed in screen_text(app), 30, what=changed)
        assert "the balance is now" in screen_text(app)
        assert "rollout restart" not in " ".join(commands(app))
        await pilot.press("y")
        await run_until(
            pilot,
            world,
            lambda: serving not in (app.store.value("k8s_pods") or {}) and wl._service() == "finance-analyst",
            "a new serve pod, ready",
        )
        assert "PREVIOUS" not in screen_text(app)
        assert "kubectl --context halcyon rollout restart deploy/finance-analyst" in commands(app)

        await pilot.press("x")
        await until(pilot, lambda: isinstance(app.screen, ConfirmModal), timeout=30, what="the stop question")
        text = screen_text(app)
        for ref in (
            "deployment/finance-analyst",
            "deployment/finance-analyst-launcher",
            "job/finance-analyst-tune",
            "service/finance-analyst",
            "rolebinding/finance-analyst-launcher",
            "role/finance-analyst-launcher",
            "serviceaccount/finance-analyst-launcher",
        ):
            assert ref in text
        assert "tuned model and the document folder stay" in text
        await pilot.press("y")
        await until(pilot, lambda: "Stopped Post-train" in notes(app) or "Stopped Post" in notes(app), timeout=40)
        kube = app.flows.connect.kube
        for kind in ("deployments", "services", "serviceaccounts", "roles", "rolebindings", "jobs"):
            items, _ = await kube.list(kind, label_selector="first-job.nationalcompute.com/recipe=finance-analyst")
            assert items == [], kind
        # The guide's two stop lines, each once; the launcher's RBAC goes with the file, not as lines of its own.
        stops = [c for c in commands(app) if " delete " in c][-2:]
        assert stops == [
            f"kubectl --context halcyon delete -f {sim.access_url}/first-job/finance-analyst-serve-nvidia.yaml",
            "kubectl --context halcyon delete job finance-analyst-tune",
        ]
        assert not any(" delete role" in c or " delete serviceaccount " in c for c in commands(app))


async def test_the_box_tune_passes_by_default_and_a_defective_one_is_asked_for(sim):
    """Point 2, the box's side: every tune passes by default; k8s-bad-tune makes its first attempt defective and the
    next pass (a new attempt, a new outcome); the sim control asks for the next N defective, or every one."""
    from ncui.sim.kube import Kube

    from .conftest import make_world

    for scenario, verdicts in (("k8s-market", [False, False, False]), ("k8s-bad-tune", [True, False, False])):
        cluster = Kube(make_world(scenario)).clusters["halcyon"]
        assert [cluster.kubelet.tune_defective() for _ in range(3)] == verdicts, scenario
    auth = {"Authorization": f"Bearer {sim.token}"}
    async with httpx.AsyncClient() as h:
        r = await h.post(sim.api_url + "/_sim/k8s/tune", json={"defective": True, "count": 2}, headers=auth)
        assert r.json() == {"defective": None, "count": 2}
        r = await h.post(sim.api_url + "/_sim/k8s/tune", json={"defective": True}, headers=auth)
        assert r.json() == {"defective": True, "count": 0}


async def test_workloads_footer_offers_L_while_kimi_serves_at_80_columns(sim):
    """At 80×24 Workloads' footer shows L Load test once Kimi K3 is READY 1/1 (not before), with ? Help and q Quit
    still read whole."""
    from .apphelp import footer_keys

    world = sim.world
    app = app_for(sim)
    async with app.run_test(size=(80, 24)) as pilot:
        await signed_in(pilot, app, sim)
        await bid(app, sim)
        await pilot.press("4")
        await until(pilot, lambda: "q Quit" in footer_keys(app), what="the footer")
        assert "L Load test" not in footer_keys(app)
        await apply_files(app, "kimi-k3-weights-to-shared.yaml", "kimi-k3-serve-nvidia.yaml")
        wl = app.query_one("#kube-pane")
        await run_until(pilot, world, lambda: wl._service() == "infera", "Kimi K3 READY 1/1", step=120)
        await until(pilot, lambda: "L Load test" in footer_keys(app), what=f"L in {footer_keys(app)}")
        assert {"? Help", "q Quit"} <= set(footer_keys(app)), footer_keys(app)


async def test_train_applied_again_over_its_finished_job_asks_first(sim, tmp_path, monkeypatch):
    """Issue 21: a on Train once its Job completed would apply `job.batch/nanogpt unchanged` and start nothing.
    Before any money question ncui says the Job is there (Completed at …, by the box's clock) and asks: Cancel keeps
    it and sends nothing; "Delete it and run again" saves its log, deletes it after the money question's yes, and a
    new pod runs."""
    from ncui.kube.status import job_status

    from .apphelp import apply_train

    monkeypatch.setenv("HOME", str(tmp_path))  # the saved log's path is said as ~/… (whole on one 80-column line)
    world = sim.world
    app = app_for(sim)
    pushed: list[str] = []
    push = app.push_screen

    def recording(screen, *a, **k):
        pushed.append(type(screen).__name__ if not isinstance(screen, str) else screen)
        return push(screen, *a, **k)

    app.push_screen = recording  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await apply_train(pilot, app, sim)
        await run_until(
            pilot, world, lambda: "nanogpt" in jobs(app) and job_status(jobs(app)["nanogpt"]) == "Complete", "done"
        )
        old = jobs(app)["nanogpt"]
        old_uid, done_at = old["metadata"]["uid"], old["status"]["completionTime"]
        old_pods = set(app.store.value("k8s_pods") or {})
        limit = world.main_org.k8s["halcyon"].bid

        await open_recipes(pilot, app)  # Train is the first recipe
        for answer in ("n", "y"):
            pushed.clear()
            await pilot.press("a")
            await until(
                pilot, lambda: isinstance(app.screen, (ConfirmModal, CeilingModal)), timeout=30, what="a question"
            )
            assert pushed == ["ConfirmModal"], pushed  # the Job's question, before any money question
            text = screen_text(app)
            assert "job/nanogpt already ran on halcyon" in text
            assert f"Completed at {done_at[11:16]}" in text and "ago by the service's clock" in text
            assert "'unchanged'" in text and "no new run starts" in text
            assert (app.screen.yes, app.screen.no) == ("Delete it and run again", "Cancel")
            assert app.screen.focused.id == "no"  # the safe answer, highlighted
            assert "Enter: Cancel" in text  # the safe answer, highlighted
            assert "~/state/ncui/logs/halcyon-nanogpt-" in text  # where its log is kept, as a person writes it
            await pilot.press(answer)
            if answer == "n":
                await until(pilot, lambda: "nothing was bid, deleted or applied" in notes(app), what="kept")
                assert pushed == ["ConfirmModal"], pushed  # no ceiling, no apply question
                assert jobs(app)["nanogpt"]["metadata"]["uid"] == old_uid
                assert world.main_org.k8s["halcyon"].bid == limit
        text = await confirm_apply(pilot, app)  # then the money question, as for any run
        assert pushed[0] == "ConfirmModal" and pushed[-1] == "ConfirmModal" and len(pushed) >= 2
        assert f"First delete job/nanogpt (Completed at {done_at[11:16]}; its log saved to" in text
        assert jobs(app)["nanogpt"]["metadata"]["uid"] == old_uid  # nothing deleted before the apply's yes
        await pilot.press("y")
        await until(
            pilot,
            lambda: jobs(app).get("nanogpt", {}).get("metadata", {}).get("uid") not in (None, old_uid),
            timeout=40,
            what="a new nanogpt Job",
        )
        assert "kubectl --context halcyon delete job nanogpt" in commands(app)
        assert "The previous run's log is saved to ~/state/ncui/logs/halcyon-nanogpt-" in notes(app)

        def new_pod_runs() -> bool:
            return any(
                n not in old_pods and p["status"].get("phase") == "Running"
                for n, p in (app.store.value("k8s_pods") or {}).items()
            )

        await run_until(pilot, world, new_pod_runs, "a new pod runs", step=30)
        saved = list((tmp_path / "state" / "ncui" / "logs").glob("halcyon-nanogpt-*.log"))
        assert len(saved) == 1, saved
        assert "iter 2000: loss" in saved[0].read_text()  # the old run's log, whole

        # The new run, running: a again says so (never a silent 'unchanged'); nothing destructive by default.
        app.clear_notifications()
        await open_recipes(pilot, app)
        pushed.clear()
        await pilot.press("a")
        await until(pilot, lambda: isinstance(app.screen, (ConfirmModal, CeilingModal)), timeout=30, what="a question")
        assert pushed == ["ConfirmModal"], pushed
        text = screen_text(app)
        assert "job/nanogpt is running on halcyon" in text and "and runs now (Running since" in text
        assert "progress is lost" in text and "Enter: Cancel" in text and app.screen.focused.id == "no"
        await pilot.press("enter")
        await until(pilot, lambda: "nothing was bid, deleted or applied" in notes(app), what="kept")
        assert new_pod_runs()
