"""The apply: the money check, the ceiling and the limit price, then the create in order. No Textual here.

Everything that spends money goes through ``ApplyFlow.run``: the balance must cover two hours at the human's
ceiling, the ceiling is asked for (never assumed), compared with the ladder, and set only after a confirmation
that states the hourly cost and the standing-bid consequence (``LeaseFlow.set_limit_price``). Idle nodes already
held are used before any bid.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from ..kube.kinds import spec_gpus
from ..money import fmt_price
from . import fresh
from .base import Context, Flow
from .ui import Question, Results
from .wait import settle, until

if TYPE_CHECKING:  # recipes (and yaml) are imported when a flow first runs, not before the first frame
    from .. import quote as Q
    from .. import recipes as R
    from ..api import models as m
    from ..kube.client import KubeClient
    from ..store import Store
    from .fresh import Snapshot
    from .lease import LeaseFlow

# (image, command, nodes, name, tolerant, gpus per pod) → (the plan or None, why not).
Build = Callable[[str, str, str, str, bool, str], "tuple[R.Plan | None, str]"]

REPLACE_TIMEOUT = 30.0  # seconds an apply waits for what it replaces to be gone from the cluster's API


@dataclass(frozen=True)
class CustomJob(Question["R.Plan | None"]):
    """Something else: an image, a command, nodes, a name; ``build`` judges it as typed (the plan, or why not)."""

    build: Build


def idle_gpu_nodes(store: Store) -> int | None:
    """GPU nodes held now that would host a new job with no new bid: Ready, schedulable, nothing that is not
    finished on them, less the nodes that jobs and pods already waiting for a GPU will take. None when the
    cluster's watch has not answered or is failing (then nothing is assumed idle)."""
    slices = [store.get(n) for n in ("k8s_nodes", "k8s_pods", "k8s_jobs")]
    if any(not s.loaded or s.failing for s in slices):
        return None
    nodes, pods, jobs = (s.value for s in slices)
    busy = {
        (p.get("spec") or {}).get("nodeName")
        for p in pods.values()
        if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    }
    free, gpn = 0, 0
    for name, n in nodes.items():
        status, spec = n.get("status") or {}, n.get("spec") or {}
        gpus = max(
            (
                int(str(v))
                for k, v in (status.get("capacity") or {}).items()
                if k.endswith(".com/gpu") and str(v).isdigit()
            ),
            default=0,
        )
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
        tainted = any(
            t.get("key") in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unschedulable")
            for t in spec.get("taints") or []
        )
        if gpus and ready and not tainted and not spec.get("unschedulable") and name not in busy:
            free += 1
            gpn = gpn or gpus
    # Demand already waiting for a GPU node: pods not yet on a node, and jobs the cluster suspended until one
    # is granted (their pods do not exist yet: `kubectl get pods` is empty while they wait).
    waiting = sum(
        1
        for p in pods.values()
        if not (p.get("spec") or {}).get("nodeName")
        and (p.get("status") or {}).get("phase") == "Pending"
        and spec_gpus(p.get("spec") or {})
    )
    for j in jobs.values():
        conds = (j.get("status") or {}).get("conditions") or []
        if (j.get("spec") or {}).get("suspend") and any(
            c.get("type") == "Suspended" and c.get("status") == "True" for c in conds
        ):
            g = spec_gpus(((j.get("spec") or {}).get("template") or {}).get("spec") or {})
            if g:
                par = int((j.get("spec") or {}).get("parallelism") or 1)
                waiting += max(1, -(-g * par // gpn)) if gpn else par
    return max(0, free - waiting)


def market_price(store: Store, gpu_model: str) -> int | None:
    """What winners of this GPU class are assessed now (the newest tick), or None when unknown."""
    ticks = [t for t in (store.value("ticks") or ()) if t.gpu_model == gpu_model]
    return ticks[-1].price_per_gpu_hour if ticks else None


def market_price_why(store: Store) -> str:
    """Why ``market_price`` is None for the active cluster's class: the newest tick came without its price (its
    reason), or no tick was read yet."""
    info = store.value("cluster")
    ticks = [t for t in (store.value("ticks") or ()) if info is not None and t.gpu_model == info.gpu_model]
    return (ticks[-1].unknown("price_per_gpu_hour") if ticks else "") or "no market tick read yet"


class ApplyFlow(Flow):
    """Apply a plan: what comes first (``before_apply``), the money check, the ceiling and the limit price
    (``lease``), then the create in order through ``kube_client()``; what was applied is remembered
    (``remember_job``) and Workloads selects it."""

    def __init__(
        self,
        ctx: Context,
        *,
        lease: LeaseFlow,
        kube_client: Callable[[], Awaitable[KubeClient | None]],
        before_apply: Callable[[R.Plan], Awaitable[R.Plan | None]],
        remember_job: Callable[..., None],
        durations: Callable[[str], list[float]] = lambda recipe: [],
    ) -> None:
        super().__init__(ctx)
        self.lease = lease
        self._kube_client = kube_client
        self._before_apply = before_apply
        self._remember_job = remember_job
        self._durations = durations  # this human's earlier runs of a recipe, minutes (memory.durations)

    # ---- Something else -------------------------------------------------------------------------

    def open_custom_job(self) -> None:
        """Recipes, e: a job of the human's own (image, command, nodes), then the same apply."""
        from .. import recipes as R

        cluster = self.store.value("cluster")
        if cluster is None:
            self.notify("The cluster is still loading.")
            return

        def build(
            image: str, command: str, nodes_text: str, name: str, tolerant: bool, gpus_text: str = ""
        ) -> tuple[R.Plan | None, str]:
            try:
                nodes = R.parse_count(nodes_text, "nodes")
                gpus = R.parse_count(gpus_text, "GPUs per pod") if str(gpus_text).strip() else None
                plan = R.custom_plan(
                    R.CustomJob(image, command, nodes, name, gpus_per_pod=gpus, reclaim_tolerant=tolerant), cluster
                )
            except ValueError as e:
                return None, str(e)
            return plan, ""

        def done(plan: R.Plan | None) -> None:
            if plan is not None:
                self.start(plan)

        self.ui.ask_then(CustomJob(build), done)

    # ---- apply ----------------------------------------------------------------------------------

    def start(self, plan: R.Plan) -> None:
        """Apply ``plan`` in the background (one apply or limit-price change at a time)."""
        self.ui.start(partial(self.run, plan), name="apply_flow", group="apply", exclusive=True)

    async def run(self, plan: R.Plan) -> None:
        from .. import recipes as R

        st = self.store
        cluster, ref = st.value("cluster"), st.meta.get("cluster")
        if cluster is None or ref is None:
            self.notify("Still loading the cluster and the balance; try again in a moment.")
            return
        if cluster.market is None:  # (not sent: whether to bid is never guessed)
            await self.ui.ask(
                Results(
                    f"{plan.title}: nothing was applied",
                    f"{cluster.unknown('market')}: ncui applies nothing "
                    "without knowing whether the cluster's market grants its nodes.",
                )  # fmt: skip
            )
            return
        ready = await self._before_apply(plan)  # (lifecycle) a failed Job run again; another serve recipe stopped
        if ready is None:
            return
        plan = ready
        nodes_needed = max(1, -(-plan.gpus // cluster.gpus_per_node)) if plan.gpus else 0
        preface = ""
        set_here: tuple[int, int] | None = None  # (the limit before, the limit set for this apply)
        # The figures this question judges, read for it (ncui/flows/fresh.py): never a balance from minutes ago.
        names = ("balance", "bid", "ladder") if cluster.market and plan.gpus else ("balance",)
        if cluster.market and plan.gpus and await self._kube_client() is None:
            return
        snap = await fresh.figures(self.ctx, names, "Nothing was bid or applied.")
        if snap is None:
            return
        summary = st.value("summary")
        balance = snap.value("balance").balance_ucredits
        purchases = bool(summary and summary.purchases)
        cover: tuple[int | None, str] | None = None  # the price the two-hour check is made at, and what it is
        idle: int | None = None

        if cluster.market and plan.gpus:
            # Idle nodes already held host the job with no new bid: look at the cluster first.
            await settle(st, "k8s_nodes", "k8s_pods", "k8s_jobs")
            standing = snap.value("bid").max_price_per_gpu_hour
            idle = idle_gpu_nodes(st)
            if idle is not None and idle >= nodes_needed:
                price, what = (
                    (standing, "your standing limit price")
                    if standing
                    else (market_price(st, cluster.gpu_model), "the market's current price (no limit price stands)")
                )
                check = await self.cover(plan, price, what, balance, purchases)
                if check is None:
                    return
                cover = (price, what)
                preface = (
                    f"{idle} idle GPU node{'s' if idle != 1 else ''} already held will host this job: no "
                    f"new bid is needed.\n{{check}}"
                )
            else:
                idle = None  # (the job waits for a node the limit price wins: nothing idle is promised)
                need = f"{plan.title} needs {plan.gpus} GPUs ({nodes_needed} node{'s' if nodes_needed > 1 else ''})."
                ceiling = await self.lease.ask_ceiling(need, plan.gpus, snap, nodes_needed, purchases, standing)
                if ceiling is None:
                    self.notify("Nothing was bid or applied.")
                    return
                if ceiling != standing:
                    new_bid = await self.lease.set_limit_price(
                        ref.name, ceiling, plan.gpus, "Nothing was bid or applied.", snap=snap, nodes=nodes_needed
                    )
                    if new_bid is None:
                        return
                    set_here = (standing, ceiling)
                    snap = fresh.snapshot(st, self.ctx.pollers, names)  # what stands now is the limit just set
                cover = (ceiling, "")
                preface = f"Limit price {fmt_price(ceiling)} stands on {ref.name}.\n{{check}}"
        elif plan.gpus:
            price = market_price(st, cluster.gpu_model)
            what = f"the market's current price for {cluster.gpu_model} (a fixed cluster has no limit price)"
            if await self.cover(plan, price, what, balance, purchases) is None:
                return
            cover = (price, what)
            preface = f"{ref.name} is a fixed cluster: no limit price.\n{{check}}"

        docs = plan.all_docs()
        objects = ", ".join(f"{d['kind']}/{d['metadata']['name']}" for d in docs)

        quoted: list[Q.Quote] = []  # the quote the question showed last (remembered with the run)

        def body(now: Snapshot) -> str:
            check = ""
            if cover is not None and cover[0] is not None:
                m = R.money_check(plan.gpus, cover[0], now.value("balance").balance_ucredits, purchases)
                check = f"At {cover[1]}: {m.sentence}" if cover[1] else m.sentence
            q = self.quote(plan, cluster, now, cover[0] if cover else None, idle, nodes_needed)
            quoted[:] = [q] if q is not None else []
            return (
                (preface.replace("{check}", check) + "\n" if preface else "")
                + ("\n".join(q.lines()) + "\n" if q is not None else "")
                + ("\n" if preface or q is not None else "")
                + "".join(f"First delete {kind[:-1]}/{name} ({why}).\n" for kind, name, why in plan.replace)
                + f"Create on {ref.name}, in order: {objects}.\n"
                + (plan.summary + "\n" if plan.summary else "")
                + "Stop it later with: "
                + "; ".join(map(self.with_kubeconfig, plan.stop))
            )

        def still(before: Snapshot, now: Snapshot) -> tuple[list[str], str | None]:
            said = fresh.changes(before, now, ref.name)
            if idle is not None and (left := idle_gpu_nodes(st)) is not None and left < nodes_needed:
                said.append(
                    f"{left or 'no'} idle GPU node{'s' if left != 1 else ''} {'is' if left == 1 else 'are'} free "
                    f"now ({idle} when you were asked): the job may wait for a node"
                )
            if cover is None or cover[0] is None:
                return said, None
            m = R.money_check(plan.gpus, cover[0], now.value("balance").balance_ucredits, purchases)
            return said, None if m.ok else m.sentence

        yes = await fresh.confirm(
            self.ctx,
            snap,
            names,
            f"Apply {plan.title}?",
            body,
            still,
            yes="Apply",
            no="Cancel",
            declined="Nothing was applied.",
        )
        if not yes:
            await self.lease.offer_back(ref.name, set_here)
            return
        kube = await self._kube_client()
        if kube is None:
            await self.lease.offer_back(ref.name, set_here)
            return
        if plan.replace and not await self._replace(kube, plan):
            await self.lease.offer_back(ref.name, set_here)
            return
        results = await kube.apply(docs)
        if self.history is not None:
            self.history.applied(ref.name, plan, results)  # kubectl --context <cluster> apply -f <file>, one a file
        if await self._refused(plan, docs, results, purchases, ref.name, set_here):
            return
        st.meta["last_plan"] = plan
        self._remember_apply(plan, cluster, quoted[0] if quoted else None)
        self.applied_select(plan.all_docs())
        self.notify(f"{plan.title} applied: " + ", ".join(f"{r.kind.lower()}/{r.name}" for r in results))
        self.ui.show("workloads")

    async def _refused(
        self,
        plan: R.Plan,
        docs: list[dict[str, Any]],
        results: list[Any],
        purchases: bool,
        cluster: str,
        set_here: tuple[int, int] | None,
    ) -> bool:
        """True when the cluster refused an object: said in full (each object, the exact top-up when the box's
        two-hour check refused), and the limit price set for it offered back when nothing was created."""
        from rich.text import Text

        from .. import recipes as R

        lines = Text()
        failed = len(results) < len(docs)
        for r in results:
            if r.error:
                failed = True
                lines.append(f"✗ {r.kind}/{r.name}: {r.error}\n", style="bold red")
                topup = R.admission_topup(r.error, purchases)  # the box's two-hour check: the exact top-up
                if topup:
                    lines.append(topup + "\n", style="bold")
                if r.immutable:  # a Job that stands with another template: only a new one runs this
                    what = " and ".join(f.removeprefix("spec.") for f in r.immutable)
                    cmd = self.with_kubeconfig(f"kubectl --context {cluster} delete {r.kind.lower()} {r.name}")
                    lines.append(
                        f"A {r.kind}'s {what} cannot change once it is created: delete {r.kind.lower()}/{r.name} "
                        f"first ({cmd}), then apply {plan.title} again.\n",
                        style="bold",
                    )
            else:
                lines.append(f"✓ {r.kind.lower()}/{r.name} {r.action}\n", style="green")
        if not failed:
            return False
        lines.append("\nNothing after the refusal was applied.", style="bold")
        await self.ui.ask(Results(f"{plan.title}: refused", lines))
        if not any(r.error is None for r in results):  # nothing was created: nothing will use the limit
            await self.lease.offer_back(cluster, set_here)
        return True

    def quote(
        self,
        plan: R.Plan,
        cluster: m.K8sCluster,
        now: Snapshot,
        ceiling: int | None,
        idle: int | None,
        nodes: int,
    ) -> Q.Quote | None:
        """What ``plan`` will cost (ncui/quote.py), from the figures read for this question (``now``: its ladder),
        the price the question checks the balance at (``ceiling``: the limit price, or on a fixed cluster the
        class's market price) and the idle held nodes that host it; None for a plan that asks for no GPU."""
        from .. import quote as Q

        if not plan.gpus:
            return None
        recipe = next((r for r in self.store.value("catalog") or () if r.name == plan.recipe), None)
        win = ceiling  # a fixed cluster: the class's market price (no ladder, no ceiling)
        if cluster.market:
            ladder = now.value("ladder") if any(f.name == "ladder" for f in now.figures) else None
            win = Q.win_price(ladder, nodes)
        held = nodes if idle is not None else 0
        return Q.for_plan(plan, recipe, cluster, nodes, win, ceiling, self._durations(plan.recipe), idle=held)

    def _remember_apply(self, plan: R.Plan, cluster: m.K8sCluster, quote: Q.Quote | None = None) -> None:
        """What was applied, for the report and the next session (ncui/memory.py): the object that holds the GPUs
        (a serve recipe's engine, not its weights Job), the recipe, its stop commands, the quote it was given."""
        from .. import recipes as R

        docs = [d for d in plan.all_docs() if d.get("kind") in ("Job", "Deployment")]
        main = next((d for d in docs if R.gpus_of([d], cluster.gpu_vendor)), docs[0] if docs else None)
        if main is None:
            return
        obj = [main["kind"], main["metadata"]["name"]]
        fields = {"object": obj, "recipe": plan.recipe, "title": plan.title, "stop": list(plan.stop)}
        self._remember_job(fields | ({"quote": quote.to_dict()} if quote is not None else {}), new=True)

    async def _replace(self, kube: KubeClient, plan: R.Plan) -> bool:
        """Delete what ``plan`` replaces and wait (bounded) until it is gone; False (said) when it is not."""
        from rich.text import Text

        from .. import lifecycle as L
        from ..kube.client import KubeError
        from ..kube.kubeconfig import shown

        ref = self.store.meta.get("cluster")
        jobs, pods = self.store.value("k8s_jobs") or {}, self.store.value("k8s_pods") or {}
        kept: dict[str, str] = {}
        for kind, name, _ in plan.replace:  # a Job's log goes with it: kept first (the question said where)
            if kind != "jobs" or name not in jobs or ref is None:
                continue
            path = L.kept_log_path(ref.name, name, jobs[name])
            try:
                if await L.keep_job_log(kube, name, pods, path):
                    kept.update({pod: shown(path) for pod in L.job_pods(pods, name)})
            except (KubeError, OSError) as e:
                await self.ui.ask(
                    Results(
                        f"{plan.title}: nothing was applied",
                        Text(f"job/{name}'s log could not be saved to {path}, so it was not deleted: {e}"),
                    )
                )
                return False
        self.store.meta.setdefault("kept_logs", {}).update(kept)  # Workloads says where, once the pod is gone
        self.ui.waiting()  # (deleting what this replaces: no question soon, keys typed now go to the screen)
        try:
            for kind, name, _ in plan.replace:
                await kube.delete(kind, name)
            for kind, name, _ in plan.replace:

                async def gone(kind: str = kind, name: str = name) -> bool:
                    return await kube.get(kind, name) is None

                if not await until(gone, REPLACE_TIMEOUT, every=0.2):
                    raise KubeError(None, "Timeout", f"{kind[:-1]}/{name} is still being deleted")
        except KubeError as e:
            await self.ui.ask(Results(f"{plan.title}: nothing was applied", Text(str(e))))
            return False
        for saved in sorted(set(kept.values())):
            self.notify(f"The previous run's log is saved to {saved}.", timeout=15)
        return True

    async def cover(self, plan: R.Plan, price: int | None, what: str, balance: int, purchases: bool) -> str | None:
        """The guide's two-hour check at ``price``: its sentence when covered; None (after saying why) when not,
        or when no price is known to check with."""
        from rich.text import Text

        from .. import recipes as R

        if price is None:
            await self.ui.ask(
                Results(
                    "Nothing was applied",
                    Text(
                        f"ncui cannot check that the balance covers two hours of {plan.gpus} GPUs: {what} is "
                        f"unknown ({market_price_why(self.store)}). Try again in a moment."
                    ),
                )
            )
            return None
        check = R.money_check(plan.gpus, price, balance, purchases)
        sentence = f"At {what}: {check.sentence}"
        if not check.ok:
            await self.ui.ask(Results("Not enough balance", sentence))
            return None
        return sentence

    def applied_select(self, docs: list[dict[str, Any]]) -> None:
        """Workloads selects the pod of what an apply just made (its Jobs and Deployments, in order) until the
        human moves the cursor: counted in ``meta["applied_seq"]``, the workloads in ``meta["applied_want"]``."""
        want = [(d["kind"], d["metadata"]["name"]) for d in docs if d.get("kind") in ("Job", "Deployment")]
        self.store.meta["applied_want"] = want
        self.store.meta["applied_seq"] = self.store.meta.get("applied_seq", 0) + 1


__all__ = ["ApplyFlow", "CustomJob", "idle_gpu_nodes", "market_price"]
