"""The recipes' lifecycle (``ncui/lifecycle.py`` decides what stands; this asks, then acts): Stop a whole recipe
after one question, one serving recipe at a time, Kimi K3's load test and its summary, tune again after a
defective tune, and restart the serve on a newly tuned model. Keys on Workloads: x, L, T, R. No Textual here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text

from .. import lifecycle as L
from ..api.errors import NCError
from ..lifecycle import stays, stop_list
from ..notify import Moment
from ..textsafe import clean
from . import fresh
from .base import Context, Flow
from .ui import Confirm, Results
from .wait import settle, until

if TYPE_CHECKING:
    from .. import recipes as R
    from ..api import models as m
    from ..api.client import NCClient
    from ..kube.client import KubeClient
    from ..store import Slice, Store
    from .fresh import Snapshot


GONE_TIMEOUT = 30.0  # seconds Stop waits for the deleted jobs and deployments to leave the watch (kubectl waits too)


class LifecycleFlow(Flow):
    """Stop, one serving recipe, tune again, restart, the load test (``self.lifecycle`` on the App).

    What it calls, given: ``kube_client()`` (the active cluster's client, signing in when needed; None, said,
    otherwise), ``kube_in_use()`` (the client connected now and the cluster it is for, without connecting),
    ``start_apply(plan)`` (the apply flow, with its money question), ``applied_select(docs)`` (Workloads follows
    what was applied), ``cover(...)`` (the apply's cover check: the sentence, or None when refused, said) and
    ``market_price(store, gpu_model)``."""

    def __init__(
        self,
        ctx: Context,
        *,
        kube_client: Callable[[], Awaitable[KubeClient | None]],
        kube_in_use: Callable[[], tuple[KubeClient | None, str | None]],
        start_apply: Callable[[R.Plan], None],
        applied_select: Callable[[list[dict[str, Any]]], None],
        cover: Callable[[R.Plan, int | None, str, int, bool], Awaitable[str | None]],
        market_price: Callable[[Store, str], int | None],
    ) -> None:
        super().__init__(ctx)
        self.kube_client = kube_client
        self.kube_in_use = kube_in_use
        self.start_apply = start_apply
        self.applied_select = applied_select
        self.cover = cover
        self.market_price = market_price
        self._seen: tuple[str | None, dict[str, Any]] | None = None  # (the cluster, what stood) at the last change

    # ---- what changed on its own: say it where the human is ----------------------------------------

    def watch(self) -> Callable[[], None]:
        """Watch the recipes' objects for what the human should hear about at once: a defective tune, a serve pod
        left on the previous model, Kimi K3 up, the load test's end (its summary). Returns the unsubscribe."""
        self._seen = None
        return self.store.subscribe(("k8s_jobs", "k8s_pods", "k8s_deployments"), self._on_change, interested=False)

    def _state(self) -> dict[str, Any]:
        from ..kube.status import job_status

        jobs, pods = self.store.value("k8s_jobs") or {}, self.store.value("k8s_pods") or {}
        deps = self.store.value("k8s_deployments") or {}

        def job(name: str) -> tuple[str, str] | None:
            j = jobs.get(name)
            return None if j is None else ((j.get("metadata") or {}).get("uid", ""), job_status(j))

        stale = L.stale_serve(pods, jobs)
        return {
            "tune": job(L.TUNE_JOB),
            "loadtest": job(L.LOADTEST_JOB),
            "stale": stale[0] if stale else None,
            "kimi": L.serve_ready(deps, "infera"),
        }

    def _on_change(self, _slice: Slice) -> None:
        if not all(self.store.get(n).loaded for n in ("k8s_jobs", "k8s_pods", "k8s_deployments")):
            return
        now = self._state()
        seen, kube_for = self._seen, self.kube_in_use()[1]
        self._seen = (kube_for, now)
        if seen is None or seen[0] != kube_for:  # the first look at a cluster: what stands is on Workloads
            return
        was = seen[1]
        tune, loadtest = now["tune"], now["loadtest"]
        if tune and tune[1] == "Failed" and tune != was["tune"]:
            self.notify(
                "Post-train: the tune graded its model defective and did not bless it; the serve leg keeps waiting. "
                "T on Workloads deletes the Job and tunes again (asked first).",
                severity="warning",
                timeout=15,
            )
        if now["stale"] and now["stale"] != was["stale"]:
            self.notify(
                f"The new tune finished, but deploy/{L.TUNE_SERVE} still serves the previous model. "
                "R on Workloads restarts it on the new one (asked first).",
                severity="warning",
                timeout=15,
            )
        if now["kimi"] and not was["kimi"] and not (loadtest and loadtest[1] not in ("Complete", "Failed")):
            self.moment(
                Moment(
                    "ready",
                    "Kimi K3 READY 1/1",
                    f"Kimi K3 is up (READY 1/1): m on Workloads sends a request; L runs the optional load test "
                    f"(about {L.LOADTEST_MINUTES} minutes).",
                )
            )
        if (
            loadtest
            and loadtest[1] in ("Complete", "Failed")
            and was["loadtest"]
            and was["loadtest"][0] == loadtest[0]
            and was["loadtest"][1] not in ("Complete", "Failed")
        ):
            self.ui.start(partial(self._load_test_ended, loadtest[1]), name="loadtest", group="loadtest")

    async def _load_test_ended(self, status: str) -> None:
        """Read the load test's log and show its summary (or why it failed)."""
        kube, ref = self.kube_in_use()[0], self.store.meta.get("cluster")
        pods = self.store.value("k8s_pods") or {}
        pod = next(
            (
                n
                for n, p in sorted(pods.items())
                if any(
                    o.get("kind") == "Job" and o.get("name") == L.LOADTEST_JOB
                    for o in (p.get("metadata") or {}).get("ownerReferences") or []
                )
            ),
            None,
        )
        lines: list[str] = []
        if kube is not None and pod is not None:
            from ..kube.client import KubeError

            try:
                async for batch in kube.pod_log_batches(pod, follow=False, timestamps=False):
                    lines.extend(batch)
            except KubeError as e:
                lines.append(f"(its log could not be read: {e})")
        summary = L.load_test_summary(lines) if status == "Complete" else None
        again = f"kubectl --context {ref.name if ref else '<cluster>'} logs job/{L.LOADTEST_JOB} shows the whole log."
        if summary:
            self.store.meta["loadtest_summary"] = summary
            body = Text(clean(L.summary_text(summary), multiline=True) + "\n\n")
            body.append("Your own requests can go again (m). " + again, style="dim")
            self.ui.ask_then(Results("Kimi K3's load test is done", body))
            return
        tail = "\n".join(clean(x) for x in lines[-6:]) or "(no log)"
        body = Text(f"The load test ended {status.lower()} without a result. The end of its log:\n\n{tail}\n\n")
        body.append(again, style="dim")
        self.ui.ask_then(Results("Kimi K3's load test ended without a result", body))

    # ---- stop: everything a recipe created, after one question -------------------------------------

    async def _read_step(
        self, recipe: m.Recipe, stem: str, *, ready: bool = True
    ) -> tuple[NCClient, m.K8sCluster, R.PlanStep] | None:
        """``recipe``'s file ``stem`` read from the catalog for the active cluster, with the client and the cluster
        it was read for; None (said) while they are still loading (or not ``ready``), or when it cannot be read."""
        from .. import recipes as R

        info = self.store.value("cluster")
        step = next((s for s in recipe.steps if s.stem == stem), None)
        nc = self.client()
        if info is None or not ready or step is None or nc is None:
            self.notify("The catalog and the cluster are still loading; try again in a moment.")
            return None
        try:
            return nc, info, await R.fetch_step(nc, step, info)
        except (NCError, ValueError) as e:
            self.notify(f"Could not read {step.file}: {e}", severity="error", timeout=10)
            return None

    def recipe(self, name: str) -> m.Recipe:
        """The catalog's recipe ``name``."""
        from ..api import models as m

        found = next((r for r in self.store.value("catalog") or () if r.name == name), None)
        # A recipe label the catalog does not know (an older catalog): its label alone finds its objects.
        return found or m.Recipe(
            name=name, title=name, cluster_kind="kubernetes", category="", description="", default_file=""
        )

    def stop(self, recipe: str) -> None:
        """x on Workloads: Stop ``recipe`` (asked first)."""
        self.ui.start(partial(self.stop_recipe, recipe), name="stop", group="lifecycle", exclusive=True)

    async def stop_recipe(self, name: str, *, lead: str = "", title: str = "") -> bool:
        """Ask once, listing every object of recipe ``name`` on the cluster and what stays, then delete them all
        (as the guide's ``kubectl delete -f <file>`` and ``delete job …``) and wait until they are gone. True when
        nothing of it is left."""
        from ..kube.client import KubeError

        recipe, ref = self.recipe(name), self.store.meta.get("cluster")
        kube = await self.kube_client()
        if kube is None or ref is None:
            return False
        try:
            objs, cmds = await self.stop_plan(kube, recipe)
        except KubeError as e:
            self.notify(f"Could not list what {recipe.title} created: {e}. Nothing was stopped.", severity="error")
            return False
        if not objs:
            self.notify(f"Nothing of {recipe.title} is on {ref.name} any more.")
            return True
        body = (  # (one list in a paragraph: the question and its buttons fit at 80x24)
            lead
            + f"Delete from {ref.name}: "
            + stop_list(objs)
            + f".\n\n{stays(name)} The standing limit price is not changed (Lease, 5, withdraws it).\n\nAs kubectl: "
            + "; ".join(map(self.with_kubeconfig, cmds))
        )
        yes = await self.ui.ask(Confirm(title or f"Stop {recipe.title}?", body, yes="Stop it", no="Keep"))
        if not yes:
            self.notify("Nothing was stopped.")
            return False
        return await self.stop_objects(kube, recipe, objs, cmds)

    async def stop_plan(self, kube: KubeClient, recipe: m.Recipe) -> tuple[list[L.Obj], list[str]]:
        """What Stop deletes of ``recipe`` on the active cluster now, and the kubectl commands that stand for it.
        Raises KubeError when the cluster cannot be listed."""
        from .. import recipes as R

        info, ref = self.store.value("cluster"), self.store.meta.get("cluster")
        objs = await L.recipe_objects(kube, recipe)
        nc = self.client()
        cmds = list(R.stop_commands(recipe, info, nc.endpoints.catalog_url if nc else None)) if info else []
        extra = [o.name for o in objs if o.plural == "jobs" and not any(o.name in c for c in cmds)]
        if extra and ref is not None:
            cmds.append(f"kubectl --context {ref.name} delete job {' '.join(extra)}")
        return objs, cmds

    async def stop_objects(self, kube: KubeClient, recipe: m.Recipe, objs: list[L.Obj], cmds: list[str]) -> bool:
        """Delete ``objs`` (``stop_plan``'s, after the human's yes), record it, and wait until they are gone."""
        from ..kube.client import KubeError

        failed: list[str] = []
        tried: list[str] = []
        refused: list[str] = []
        try:
            for o in objs:
                tried.append(o.ref)
                try:  # (recorded below as the commands the question showed; each delete alone without them)
                    await kube.delete(o.plural, o.name, noted=not cmds)
                except KubeError as e:
                    failed.append(f"{o.ref}: {e}")
                    refused.append(o.ref)
        finally:
            if self.history is not None:
                self.history.stopped(recipe.title, cmds, tried, refused)
        if failed:
            await self.ui.ask(Results(f"{recipe.title}: not everything was stopped", Text("\n".join(failed))))
            return False
        if not await self._gone(objs):
            self.notify(f"{recipe.title}: deleted; the cluster is still removing some of it.", timeout=8)
            return True
        self.notify(f"Stopped {recipe.title}: deleted " + ", ".join(o.ref for o in objs) + ".", timeout=8)
        return True

    async def _gone(self, objs: Iterable[L.Obj], timeout: float = GONE_TIMEOUT) -> bool:
        """Wait (bounded) until the watch no longer shows the deleted jobs and deployments."""
        watched = [(f"k8s_{o.plural}", o.name) for o in objs if o.plural in ("jobs", "deployments")]
        self.ui.waiting()  # (no question soon: keys typed now go to the screen)
        return await until(lambda: not any(name in (self.store.value(s) or {}) for s, name in watched), timeout, 0.1)

    # ---- one serving recipe at a time --------------------------------------------------------------

    async def before_apply(self, plan: R.Plan) -> R.Plan | None:
        """What an apply does first, from where the recipes stand: a Job of the plan that failed is deleted and
        run again (applied unchanged it would run nothing: the guide's "delete the Job and tune again"), and another
        serve recipe serving now is stopped first, after the human's yes. The plan to apply, or None (nothing)."""
        import dataclasses

        from .. import recipes as R
        from ..kube.status import job_status

        ref = self.store.meta.get("cluster")
        kube, kube_for = self.kube_in_use()
        connected = ref is not None and kube is not None and kube_for == ref.name
        if not connected and plan.recipe not in L.SERVING:
            return (
                plan  # (not signed in yet: no job of it can have run in this session's sight; the sign-in comes later)
            )
        kc = await self.kube_client()
        if kc is None:
            return None
        await settle(self.store, "k8s_jobs", "k8s_deployments", timeout=5.0)  # (at the deadline: as they stand)
        jobs, again = self.store.value("k8s_jobs") or {}, [n for _, n, _ in plan.replace]
        info = self.store.value("cluster")
        standing = [
            d["metadata"]["name"]
            for d in plan.all_docs()
            if d.get("kind") == "Job" and d["metadata"]["name"] in jobs and d["metadata"]["name"] not in again
        ]
        # A Job that holds GPUs and is already there (done, failed or running): applied unchanged it would start
        # no run ("unchanged"), so the human is asked before any money question whether to delete it and run it
        # again. One on the CPU worker (a weights staging) that failed simply runs again, said in the apply
        # question; one that completed or runs is left as it is (unless its template changed: below).
        gpu = {
            d["metadata"]["name"]
            for d in plan.all_docs()
            if d.get("kind") == "Job" and info is not None and R.gpus_of([d], info.gpu_vendor)
        }
        # A Job's pod template (and selector, completions) cannot change once it exists: applied over one whose
        # template differs, the cluster refuses it (422 field is immutable). Asked the cluster (a dry run): such a
        # Job, GPU or not, is asked about too; deleted and created again after a yes, or kept.
        refused = await self._immutable(kc, plan, standing) if standing else {}
        asked = [n for n in standing if n in gpu or n in refused]
        if asked:
            again_too = await self._run_again(plan, asked, jobs, refused)
            if again_too is None:
                return None
            plan = dataclasses.replace(plan, replace=plan.replace + again_too)
        failed = tuple(
            ("jobs", name, "Failed: applied unchanged it would run nothing, so it runs again")
            for name in standing
            if name not in asked and job_status(jobs[name]) == "Failed"
        )
        if failed:
            plan = dataclasses.replace(plan, replace=plan.replace + failed)
        return plan if await self.one_serving_recipe(plan) else None

    async def _immutable(self, kube: KubeClient, plan: R.Plan, names: list[str]) -> dict[str, tuple[str, ...]]:
        """The Jobs of ``plan`` among ``names`` (already on the cluster) that the cluster would refuse applied over
        what stands, by the fields it says cannot change: a dry run of the apply (``kubectl apply
        --dry-run=server``), nothing stored."""
        from ..kube.client import KubeError

        out: dict[str, tuple[str, ...]] = {}
        for d in plan.all_docs():
            name = d["metadata"]["name"]
            if d.get("kind") != "Job" or name not in names:
                continue
            try:
                (result,) = await kube.apply([d], dry_run=True)
            except KubeError:
                continue  # (unknown: the apply itself will say)
            if result.immutable:
                out[name] = result.immutable
        return out

    async def _run_again(
        self,
        plan: R.Plan,
        names: list[str],
        jobs: dict[str, dict[str, Any]],
        refused: dict[str, tuple[str, ...]] | None = None,
    ) -> tuple[tuple[str, str, str], ...] | None:
        """Ask, before any money question, about Jobs of ``plan`` already on the cluster (those on a GPU, and those
        the cluster would refuse applied again, ``refused``: the fields it says cannot change): their state and
        when they got there (by the service's clock), what an apply as it is would do (start no run, or be refused:
        a Job's pod template cannot change), and "Delete it and run again" (its log kept: saved before the delete,
        and shown on Workloads until the new pod's lines come) or "Cancel" (the safe answer, highlighted: nothing
        is bid, deleted or applied). What the apply replaces, or None (said) when the human cancels."""
        from ..kube.kubeconfig import shown as home_shown

        refused = refused or {}

        ref = self.store.meta.get("cluster")
        cluster = ref.name if ref is not None else "the cluster"
        now = self.backend.now() if self.backend is not None else datetime.now(timezone.utc)
        pods = self.store.value("k8s_pods") or {}
        said, logs, replace = [], [], []
        running = [n for n in names if not L.job_ended(jobs[n])]
        for name in names:
            job = jobs[name]
            said.append(L.job_standing(name, job, cluster, now))
            status, at = L.job_moment(job)
            path = L.kept_log_path(cluster, name, job)
            shown = home_shown(path)  # (~/…: at 80 columns the whole name fits on one line)
            if L.job_pods(pods, name):
                logs.append(f"job/{name}'s log is saved to {shown} first")
                kept = f"its log saved to {shown}"
            else:
                kept = "it has no pod, so no log"
            word = {"Complete": "Completed", "Failed": "Failed"}.get(status, status)
            replace.append(("jobs", name, f"{word}{f' at {at:%H:%M}' if at else ''}; {kept}"))
        one = len(names) == 1
        it = "it" if one else "them"
        changed = [n for n in names if n in refused]
        same = [n for n in names if n not in refused]

        def jobs_of(ns: list[str]) -> str:
            return ", ".join(f"job/{n}" for n in ns)

        if changed:
            fields = sorted({f for n in changed for f in refused[n]})
            answer = (
                f"{'The cluster would refuse it' if one else 'The cluster would refuse ' + jobs_of(changed)}: "
                f"{plan.title}'s Job differs from the one that ran, and a Job's "
                + " and ".join(f.removeprefix("spec.") for f in fields)
                + " cannot change once it is created (kubectl: '"
                + ", ".join(f"{f}: field is immutable" for f in fields)
                + "'). It runs as the recipe says only as a new Job."
                + (f" Applied again, {jobs_of(same)} would answer 'unchanged'." if same else "")
            )
        else:
            answer = (
                "Applied again as "
                + ("it is" if one else "they are")
                + ", kubectl would answer 'unchanged': "
                + (
                    "no new run starts and nothing new is spent."
                    if not running
                    else "no new run starts; what runs goes on running."
                )
            )
        body = (
            " ".join(said)
            + "\n\n"
            + answer
            + f"\n\nDelete {it} and run again: "
            + (
                "the run in progress stops now and its progress is lost (only what it wrote to /mnt/shared stays); "
                if running
                else ""
            )
            + (("; ".join(logs) + ", and Workloads shows it until the new run's pod comes. ") if logs else "")
            + "Then the money question comes, as for any run; nothing is deleted before its yes.\n\n"
            + "As kubectl: "
            + "; ".join(self.with_kubeconfig(f"kubectl --context {cluster} delete job {n}") for n in names)
            + f", then apply {plan.title} again."
        )
        title = (
            f"job/{names[0]} {'is running' if running else 'already ran'} on {cluster}"
            if one
            else f"{len(names)} of {plan.title}'s Jobs are already on {cluster}"
        )
        yes = await self.ui.ask(
            Confirm(title, body, yes="Delete it and run again" if one else "Delete them and run again", no="Cancel")
        )
        if not yes:
            self.notify(
                f"{', '.join(f'job/{n}' for n in names)} kept as {'it is' if one else 'they are'}: nothing was bid, "
                "deleted or applied.",
                timeout=8,
            )
            return None
        return tuple(replace)

    async def one_serving_recipe(self, plan: R.Plan) -> bool:
        """Before a serve recipe is applied: another one serving now is stopped first, after the human's yes (the
        guide: run one serving recipe at a time). False when they keep it (then nothing is applied)."""
        if plan.recipe not in L.SERVING:
            return True
        ref = self.store.meta.get("cluster")
        for other in L.serving_now(self.store.value("k8s_deployments") or {}, self.store.value("catalog") or ()):
            if other == plan.recipe:
                continue
            title = self.recipe(other).title
            lead = (
                f"Run one serving recipe at a time: {title} serves on {ref.name if ref else 'the cluster'} now. "
                f"{plan.title} is applied only once it is stopped (its own question comes next).\n\n"
            )
            if not await self.stop_recipe(other, lead=lead, title=f"Stop {title} first?"):
                self.notify(f"{title} keeps serving; {plan.title} was not applied.", timeout=8)
                return False
        return True

    # ---- Post-train: tune again, restart the serve on the new model ---------------------------------

    def tune_again(self) -> None:
        """T on Workloads."""
        self.ui.start(self.tune_again_flow, name="tune-again", group="lifecycle", exclusive=True)

    async def tune_again_flow(self) -> None:
        """Delete the finance-analyst tune Job and apply the tune again (the guide's way on after a defective tune,
        and a re-tune): through the apply flow, so the money check and its question come first."""
        from .. import recipes as R
        from ..kube.status import job_status

        old = (self.store.value("k8s_jobs") or {}).get(L.TUNE_JOB)
        recipe = self.recipe("finance-analyst")
        if old is None:
            self.notify("T tunes again once Post-train's tune Job has run: apply Post-train on Recipes (3).", timeout=8)
            return
        read = await self._read_step(recipe, L.TUNE_JOB)
        if read is None:
            return
        nc, info, tune = read
        deps = self.store.value("k8s_deployments") or {}
        serving = int(((deps.get(L.TUNE_SERVE) or {}).get("spec") or {}).get("replicas") or 0) > 0
        summary = (
            f"deploy/{L.TUNE_SERVE} keeps serving the current model meanwhile: once the new one lands, restart it "
            "(R on Workloads; the guide's rollout restart)."
            if serving
            else f"deploy/{L.TUNE_SERVE} waits for the new tune; its launcher scales it up once the tune passes."
        )
        self.start_apply(
            R.Plan(
                recipe.name,
                "Post-train: tune again",
                (tune,),
                gpus=R.gpus_of(tune.docs, info.gpu_vendor),
                stop=R.stop_commands(recipe, info, nc.endpoints.catalog_url),
                summary=summary,
                replace=(("jobs", L.TUNE_JOB, f"{job_status(old)}; its log stays on the volume at {L.TUNE_LOG}"),),
            )
        )

    def restart_serve(self) -> None:
        """R on Workloads."""
        self.ui.start(self.restart_serve_flow, name="restart", group="lifecycle", exclusive=True)

    async def restart_serve_flow(self) -> None:
        """The guide's ``kubectl rollout restart deploy/finance-analyst`` once a new model landed, asked first."""
        from .. import recipes as R
        from ..kube.client import KubeError

        st = self.store
        deps, ref, info = st.value("k8s_deployments") or {}, st.meta.get("cluster"), st.value("cluster")
        if L.TUNE_SERVE not in deps or ref is None or info is None:
            self.notify(f"R restarts deploy/{L.TUNE_SERVE} (Post-train's serve); it is not on the cluster.", timeout=6)
            return
        if info.market is None:  # (not sent: whether a bid funds the pod is never guessed)
            self.notify(f"Nothing was restarted: {info.unknown('market')}.", severity="error", timeout=10)
            return
        # The new pod is admitted like any GPU workload (two hours of its GPUs covered): checked and said first.
        names = ("balance", "bid") if info.market else ("balance",)
        snap = await fresh.figures(self.ctx, names, "Nothing was restarted.")
        if snap is None:  # (the figures this question judges, read for it: ncui/flows/fresh.py)
            return
        summary = st.value("summary")
        purchases = bool(summary and summary.purchases)
        gpus = R.gpus_of(
            [{**deps[L.TUNE_SERVE], "spec": {**deps[L.TUNE_SERVE]["spec"], "replicas": 1}}], info.gpu_vendor
        )
        plan = R.Plan(L.TUNE_SERVE, f"deploy/{L.TUNE_SERVE}", (), gpus=gpus)

        def priced(now: Snapshot) -> tuple[int | None, str]:
            bid = now.value("bid") if info.market else None
            standing = bid.max_price_per_gpu_hour if bid is not None else 0
            if standing:
                return standing, "your standing limit price"
            return self.market_price(st, info.gpu_model), "the market's current price"

        cover = await self.cover(plan, *priced(snap), snap.value("balance").balance_ucredits, purchases)
        if cover is None:
            return
        stale = L.stale_serve(self.store.value("k8s_pods") or {}, self.store.value("k8s_jobs") or {})
        why = (
            f"Its pod started {stale[1]:%H:%M}, before the new tune finished at {stale[2]:%H:%M}: it serves the "
            "PREVIOUS model (a serve pod keeps the weights it loaded at startup).\n\n"
            if stale
            else ""
        )

        def body(now: Snapshot) -> str:
            price, what = priced(now)
            check = R.money_check(gpus, price, now.value("balance").balance_ucredits, purchases) if price else None
            return (
                why + "A new pod replaces it and loads the model on the shared volume now (a few minutes, no answers "
                "meanwhile); it takes a GPU node as the old one did.\n"
                + (f"At {what}: {check.sentence}" if check is not None else cover)
                + "\n\nAs kubectl: "
                + self.with_kubeconfig(f"kubectl --context {ref.name} rollout restart deploy/{L.TUNE_SERVE}")
            )

        def still(before: Snapshot, now: Snapshot) -> tuple[list[str], str | None]:

            said = fresh.changes(before, now, ref.name)
            price, _ = priced(now)
            if price is None:
                return said, None
            m = R.money_check(gpus, price, now.value("balance").balance_ucredits, purchases)
            return said, None if m.ok else m.sentence

        title = f"Restart deploy/{L.TUNE_SERVE} on the new model?"
        asked = await fresh.confirm(
            self.ctx, snap, names, title, body, still, yes="Restart", no="Keep", declined="Nothing was restarted."
        )
        if asked is None:
            return
        kube = await self.kube_client()
        if kube is None:
            return
        now = self.backend.now() if self.backend is not None else datetime.now(timezone.utc)
        try:
            await kube.rollout_restart(L.TUNE_SERVE, now.strftime("%Y-%m-%dT%H:%M:%SZ"))
        except KubeError as e:
            self.notify(f"Could not restart deploy/{L.TUNE_SERVE}: {e}", severity="error", timeout=10)
            return
        self.notify(f"deployment.apps/{L.TUNE_SERVE} restarted: its new pod loads the new model.", timeout=8)

    # ---- Kimi K3's load test -----------------------------------------------------------------------

    def load_test(self) -> None:
        """L on Workloads."""
        self.ui.start(self.load_test_flow, name="load-test", group="lifecycle", exclusive=True)

    async def load_test_flow(self) -> None:
        """Kimi K3's optional load test (the guide's step 4), offered at READY 1/1 and asked first."""
        from .. import recipes as R
        from ..kube.client import KubeError

        st = self.store
        deps, jobs, ref = st.value("k8s_deployments") or {}, st.value("k8s_jobs") or {}, st.meta.get("cluster")
        if not L.serve_ready(deps, "infera"):
            self.notify("The load test runs against Kimi K3 once its router and worker read READY 1/1.", timeout=6)
            return
        why = L.load_test_guard(st)
        if why:
            self.notify(why, timeout=8)
            return
        read = await self._read_step(self.recipe("kimi-k3"), L.LOADTEST_JOB, ready=ref is not None)
        if read is None or ref is None:
            return
        _, info, test = read
        if R.gpus_of(test.docs, info.gpu_vendor):  # (the catalog's runs on the CPU worker: this never spends)
            self.notify(f"{test.file} asks for GPUs: ncui runs it only through Recipes (3).", severity="error")
            return
        old = jobs.get(L.LOADTEST_JOB)
        yes = await self.ui.ask(
            Confirm(
                "Run Kimi K3's load test?",
                f"3,000 chat requests at 3 a second against svc/infera from inside {ref.name}: about "
                f"{L.LOADTEST_MINUTES} minutes, on the CPU worker (no GPU node, nothing bid).\n"
                "While it runs ncui sends none of your own requests (the guide: do not send your own requests "
                "during the run). Its summary shows when it ends.\n"
                + (f"The previous run's job/{L.LOADTEST_JOB} is deleted first.\n" if old else "")
                + "\nAs kubectl: "
                + self.with_kubeconfig(f"kubectl --context {ref.name} apply -f {test.url or test.file}")
                + "; "
                + self.with_kubeconfig(f"kubectl --context {ref.name} logs -f job/{L.LOADTEST_JOB}"),
                yes="Run it",
                no="Not now",
            )
        )
        if not yes:
            self.notify("No load test was started.")
            return
        kube = await self.kube_client()
        if kube is None:
            return
        try:
            if old is not None:
                await kube.delete("jobs", L.LOADTEST_JOB)
                if not await self._gone([L.Obj("jobs", L.LOADTEST_JOB)]):
                    self.notify("The previous load test is still being removed; press L again in a moment.")
                    return
            results = await kube.apply(list(test.docs))
            if self.history is not None:
                self.history.applied_step(ref.name, "Kimi K3's load test", test, results)
        except KubeError as e:
            self.notify(f"The load test was not started: {e}", severity="error", timeout=10)
            return
        bad = [r for r in results if r.error]
        if bad:
            await self.ui.ask(
                Results(
                    "The load test was not started", Text("\n".join(f"✗ {r.kind}/{r.name}: {r.error}" for r in bad))
                )
            )
            return
        st.meta.pop("loadtest_summary", None)
        self.applied_select(list(test.docs))  # Workloads follows the test's log
        self.notify(f"Load test started: job/{L.LOADTEST_JOB}, about {L.LOADTEST_MINUTES} minutes.", timeout=8)
