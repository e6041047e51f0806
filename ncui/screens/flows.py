"""The app's multi-step flows: sign in to the cluster, the money check before apply, apply, stop.

Everything that spends money goes through ``apply_flow``: the balance must cover two hours at the
human's ceiling, the ceiling is asked for (never assumed), compared with the ladder, and set only after
a confirmation that states the hourly cost and the standing-bid consequence. Idle nodes already held are
used before any bid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work

from .. import history
from ..api.errors import NCError
from ..money import fmt_price, fmt_usd
from .freshask import FreshQuestions
from .modals import CeilingModal, ConfirmModal, CustomJobModal, ResultsModal

if TYPE_CHECKING:  # recipes (and yaml) are imported when a flow first runs, not before the first frame
    from .. import recipes as R
    from ..api import models as m
    from ..api.client import NCClient
    from ..backend import Backend
    from ..flows.connect import ConnectFlow
    from ..flows.fresh import Snapshot
    from ..kube.client import KubeClient
    from ..pollers import Pollers
    from ..store import Store


def _gpus_asked(pod_spec: dict[str, Any]) -> int:
    """GPUs a pod spec asks for (limits, else requests), over its containers."""
    total = 0
    for c in (pod_spec or {}).get("containers") or []:
        res = c.get("resources") or {}
        for k, v in {**(res.get("requests") or {}), **(res.get("limits") or {})}.items():
            if k.endswith(".com/gpu"):
                try:
                    total += int(str(v))
                except ValueError:
                    pass
    return total


def idle_gpu_nodes(store: Store) -> int | None:
    """GPU nodes held now that would host a new job with no new bid: Ready, schedulable, nothing that is not
    finished on them, less the nodes that jobs and pods already waiting for a GPU will take. None when the
    cluster's watch has not answered or is failing (then nothing is assumed idle)."""
    slices = [store.get(n) for n in ("k8s_nodes", "k8s_pods", "k8s_jobs")]
    if any(not s.loaded or (s.error and (s.error_at or 0) >= (s.fetched_at or 0)) for s in slices):
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
        and _gpus_asked(p.get("spec") or {})
    )
    for j in jobs.values():
        conds = (j.get("status") or {}).get("conditions") or []
        if (j.get("spec") or {}).get("suspend") and any(
            c.get("type") == "Suspended" and c.get("status") == "True" for c in conds
        ):
            g = _gpus_asked(((j.get("spec") or {}).get("template") or {}).get("spec") or {})
            if g:
                par = int((j.get("spec") or {}).get("parallelism") or 1)
                waiting += max(1, -(-g * par // gpn)) if gpn else par
    return max(0, free - waiting)


def market_price(store: Store, gpu_model: str) -> int | None:
    """What winners of this GPU class are assessed now (the newest tick), or None when unknown."""
    ticks = [t for t in (store.value("ticks") or ()) if t.gpu_model == gpu_model]
    return ticks[-1].price_per_gpu_hour if ticks else None


class FlowsMixin(FreshQuestions):
    """Mixed into NCApp."""

    if TYPE_CHECKING:  # NCApp's, which the flows use
        store: Store
        backend: Backend | None
        pollers: Pollers | None
        connect: ConnectFlow

        async def before_apply(self, plan: R.Plan) -> R.Plan | None: ...

    def _client(self) -> NCClient | None:
        """The National Compute client; None (said on screen) before ncui has connected. (A flow starts from
        data the pollers read, and they run only once connected: this is the check, not an expected path.)"""
        nc = self.backend.nc if self.backend is not None else None
        if nc is None:
            self.notify("Not connected to National Compute yet: nothing was changed.", severity="error", timeout=8)
        return nc

    # ---- Something else -------------------------------------------------------------------------

    def open_custom_job(self) -> None:
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
                self.start_apply(plan)

        self.push_screen(CustomJobModal(build), done)

    # ---- apply ----------------------------------------------------------------------------------

    def start_apply(self, plan: R.Plan) -> None:
        self.apply_flow(plan)

    @work(group="apply", exclusive=True, exit_on_error=False)
    async def apply_flow(self, plan: R.Plan) -> None:
        from .. import recipes as R
        from ..flows import fresh

        st = self.store
        cluster, ref = st.value("cluster"), st.meta.get("cluster")
        if cluster is None or ref is None:
            self.notify("Still loading the cluster and the balance; try again in a moment.")
            return
        ready = await self.before_apply(plan)  # (lifecycle) a failed Job run again; another serve recipe stopped
        if ready is None:
            return
        plan = ready
        nodes_needed = max(1, -(-plan.gpus // cluster.gpus_per_node)) if plan.gpus else 0
        preface = ""
        set_here: tuple[int, int] | None = None  # (the limit before, the limit set for this apply)
        # The figures this question judges, read for it (ncui/flows/fresh.py): never a balance from minutes ago.
        names = ("balance", "bid", "ladder") if cluster.market and plan.gpus else ("balance",)
        if cluster.market and plan.gpus and await self.connect.kube_client() is None:
            return
        snap = await self.fresh_figures(names, "Nothing was bid or applied.")
        if snap is None:
            return
        summary = st.value("summary")
        balance = snap.value("balance").balance_ucredits
        purchases = bool(summary and summary.purchases)
        cover: tuple[int | None, str] | None = None  # the price the two-hour check is made at, and what it is
        idle: int | None = None

        if cluster.market and plan.gpus:
            # Idle nodes already held host the job with no new bid: look at the cluster first.
            await self._settle("k8s_nodes", "k8s_pods", "k8s_jobs")
            standing = snap.value("bid").max_price_per_gpu_hour
            idle = idle_gpu_nodes(st)
            if idle is not None and idle >= nodes_needed:
                price, what = (
                    (standing, "your standing limit price")
                    if standing
                    else (market_price(st, cluster.gpu_model), "the market's current price (no limit price stands)")
                )
                check = await self._cover(plan, price, what, balance, purchases)
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
                ceiling = await self._ask_ceiling(need, plan.gpus, snap, nodes_needed, purchases, standing)
                if ceiling is None:
                    self.notify("Nothing was bid or applied.")
                    return
                if ceiling != standing:
                    new_bid = await self.set_limit_price(
                        ref.name, ceiling, plan.gpus, "Nothing was bid or applied.", snap=snap, nodes=nodes_needed
                    )
                    if new_bid is None:
                        return
                    set_here = (standing, ceiling)
                    snap = fresh.snapshot(st, self.pollers, names)  # what stands now is the limit just set
                cover = (ceiling, "")
                preface = f"Limit price {fmt_price(ceiling)} stands on {ref.name}.\n{{check}}"
        elif plan.gpus:
            price = market_price(st, cluster.gpu_model)
            what = f"the market's current price for {cluster.gpu_model} (a fixed cluster has no limit price)"
            if await self._cover(plan, price, what, balance, purchases) is None:
                return
            cover = (price, what)
            preface = f"{ref.name} is a fixed cluster: no limit price.\n{{check}}"

        docs = plan.all_docs()
        objects = ", ".join(f"{d['kind']}/{d['metadata']['name']}" for d in docs)

        def body(now: Snapshot) -> str:
            check = ""
            if cover is not None and cover[0] is not None:
                m = R.money_check(plan.gpus, cover[0], now.value("balance").balance_ucredits, purchases)
                check = f"At {cover[1]}: {m.sentence}" if cover[1] else m.sentence
            return (
                (preface.replace("{check}", check) + "\n\n" if preface else "")
                + "".join(f"First delete {kind[:-1]}/{name} ({why}).\n" for kind, name, why in plan.replace)
                + f"Create on {ref.name}, in order: {objects}.\n"
                + (plan.summary + "\n" if plan.summary else "")
                + "Stop it later with: "
                + "; ".join(map(history.with_kubeconfig, plan.stop))
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

        yes = await self.confirm_fresh(
            snap, names, f"Apply {plan.title}?", body, still, yes="Apply", no="Cancel", declined="Nothing was applied."
        )
        if not yes:
            await self._offer_back(ref.name, set_here)
            return
        kube = await self.connect.kube_client()
        if kube is None:
            await self._offer_back(ref.name, set_here)
            return
        if plan.replace and not await self._replace(kube, plan):
            await self._offer_back(ref.name, set_here)
            return
        results = await kube.apply(docs)
        history.applied(ref.name, plan, results)  # kubectl --context <cluster> apply -f <file>, one per file
        lines = Text()
        failed = False
        for r in results:
            if r.error:
                failed = True
                lines.append(f"✗ {r.kind}/{r.name}: {r.error}\n", style="bold red")
                topup = R.admission_topup(r.error, purchases)  # the box's two-hour check: the exact top-up
                if topup:
                    lines.append(topup + "\n", style="bold")
            else:
                lines.append(f"✓ {r.kind.lower()}/{r.name} {r.action}\n", style="green")
        if len(results) < len(docs) and not failed:
            failed = True
        if failed:
            lines.append("\nNothing after the refusal was applied.", style="bold")
            await self.push_screen_wait(ResultsModal(f"{plan.title}: refused", lines))
            if not any(r.error is None for r in results):  # nothing was created: nothing will use the limit
                await self._offer_back(ref.name, set_here)
            return
        self.store.meta["last_plan"] = plan
        self._remember_apply(plan, cluster)
        self.applied_select(plan.all_docs())
        self.notify(f"{plan.title} applied: " + ", ".join(f"{r.kind.lower()}/{r.name}" for r in results))
        await self.run_action("show('workloads')")

    def _remember_apply(self, plan: R.Plan, cluster: m.K8sCluster) -> None:
        """What was applied, for the report and the next session (ncui/memory.py): the object that holds the GPUs
        (a serve recipe's engine, not its weights Job), the recipe, its stop commands."""
        from .. import recipes as R

        docs = [d for d in plan.all_docs() if d.get("kind") in ("Job", "Deployment")]
        main = next((d for d in docs if R.gpus_of([d], cluster.gpu_vendor)), docs[0] if docs else None)
        if main is None:
            return
        obj = [main["kind"], main["metadata"]["name"]]
        remember = getattr(self, "remember_job", None)  # (NCApp's)
        if remember is not None:
            remember({"object": obj, "recipe": plan.recipe, "title": plan.title, "stop": list(plan.stop)}, new=True)

    async def _replace(self, kube: KubeClient, plan: R.Plan) -> bool:
        """Delete what ``plan`` replaces and wait (bounded) until it is gone; False (said) when it is not."""
        import asyncio
        import time

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
                await self.push_screen_wait(
                    ResultsModal(
                        f"{plan.title}: nothing was applied",
                        Text(f"job/{name}'s log could not be saved to {path}, so it was not deleted: {e}"),
                    )
                )
                return False
        self.store.meta.setdefault("kept_logs", {}).update(kept)  # Workloads says where, once the pod is gone
        try:
            for kind, name, _ in plan.replace:
                await kube.delete(kind, name)
            deadline = time.monotonic() + 30
            for kind, name, _ in plan.replace:
                while await kube.get(kind, name) is not None:
                    if time.monotonic() > deadline:
                        raise KubeError(None, "Timeout", f"{kind[:-1]}/{name} is still being deleted")
                    await asyncio.sleep(0.2)
        except KubeError as e:
            await self.push_screen_wait(ResultsModal(f"{plan.title}: nothing was applied", Text(str(e))))
            return False
        for saved in sorted(set(kept.values())):
            self.notify(f"The previous run's log is saved to {saved}.", timeout=15)
        return True

    async def _cover(self, plan: R.Plan, price: int | None, what: str, balance: int, purchases: bool) -> str | None:
        """The guide's two-hour check at ``price``: its sentence when covered; None (after saying why) when not,
        or when no price is known to check with."""
        from .. import recipes as R

        if price is None:
            await self.push_screen_wait(
                ResultsModal(
                    "Nothing was applied",
                    Text(
                        f"ncui cannot check that the balance covers two hours of {plan.gpus} GPUs: {what} is "
                        "unknown (no market tick read yet). Try again in a moment."
                    ),
                )
            )
            return None
        check = R.money_check(plan.gpus, price, balance, purchases)
        sentence = f"At {what}: {check.sentence}"
        if not check.ok:
            await self.push_screen_wait(ResultsModal("Not enough balance", sentence))
            return None
        return sentence

    async def _offer_back(self, cluster: str, set_here: tuple[int, int] | None) -> None:
        """A limit price set for an apply that did not happen is not left standing behind a toast: keep it, or
        put back what stood before (withdraw it when nothing did). The safe answer is the default."""
        if set_here is None:
            return
        before, now = set_here
        back = f"put back your earlier limit of {fmt_price(before)}" if before else "withdraw it"
        yes = await self.push_screen_wait(
            ConfirmModal(
                "Keep the limit price you just set?",
                f"You set {fmt_price(now)} on {cluster} for this apply, and nothing was applied. Kept, it goes on "
                f"pulling nodes for any GPU job applied to {cluster} later.\n\nKeep it, or {back}?",
                yes="Put it back" if before else "Withdraw it",
                no="Keep it",
                default="yes",
            )
        )
        if not yes:
            self.notify(f"Limit price {fmt_price(now)} still stands on {cluster} (Lease, 5).", timeout=8)
            return
        nc = self._client()
        if nc is None:
            return
        try:
            self.store.set("bid", await nc.set_bid(before, cluster))
        except NCError as e:
            await self.push_screen_wait(
                ResultsModal(
                    "The limit price was not changed", Text(f"{fmt_price(now)} still stands on {cluster}: {e}")
                )
            )
            return
        self.notify(f"Limit price on {cluster}: " + (fmt_price(before) if before else "withdrawn") + ".")
        if self.pollers is not None:
            self.pollers.refresh("bid", "spend", "ladder")

    async def _settle(self, *names: str, timeout: float = 5.0) -> bool:
        """Wait (bounded) until the watched slices have their first snapshot."""
        import asyncio
        import time

        deadline = time.monotonic() + timeout
        while not all(self.store.get(n).loaded for n in names):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    async def set_limit_price(
        self,
        cluster: str,
        ceiling: int,
        gpus: int,
        declined: str,
        *,
        snap: Snapshot | None = None,
        nodes: int = 1,
    ) -> m.Bid | None:
        """The one place a limit price is set: the question states the figure (exactly the one sent, for
        ``gpus`` GPUs an hour) and the ladder's verdict for it (for ``nodes`` nodes), then ``PUT /api/k8s/bid``
        after the human's yes, once the figures read again at that yes (``snap``'s: the balance, the standing
        limit, the ladder) still say the same. The new bid, or None when they said no (``declined`` is said) or
        it was refused (said in a modal)."""
        from .. import recipes as R
        from ..flows import fresh

        info, summary = self.store.value("cluster"), self.store.value("summary")
        assessed = market_price(self.store, info.gpu_model) if info is not None else None
        purchases = bool(summary and summary.purchases)
        names = ("balance", "bid", "ladder")
        if snap is None:
            snap = await self.fresh_figures(names, declined)
            if snap is None:
                return None

        def verdict(ladder: m.Ladder) -> R.CeilingVerdict:
            return R.judge_ceiling(ceiling, ladder, nodes)

        def body(now: Snapshot) -> str:
            return R.bid_confirmation(cluster, ceiling, gpus, assessed, verdict(now.value("ladder")))

        def judged(ladder: m.Ladder) -> tuple[str, str]:
            v = verdict(ladder)
            return v.level, v.message

        def still(before: Snapshot, now: Snapshot) -> tuple[list[str], str | None]:
            said = fresh.changes(before, now, cluster, verdict=judged)
            v = verdict(now.value("ladder"))
            if not v.ok:
                return said, v.message
            cover = R.money_check(gpus, ceiling, now.value("balance").balance_ucredits, purchases)
            return said, None if cover.ok else f"{fmt_price(ceiling)} is no longer covered: {cover.sentence}"

        if (
            await self.confirm_fresh(
                snap, names, "Set the limit price?", body, still, yes="Set it", no="Cancel", declined=declined
            )
            is None
        ):
            return None
        nc = self._client()
        if nc is None:
            return None
        try:
            new_bid = await nc.set_bid(ceiling, cluster)
        except NCError as e:
            await self.push_screen_wait(ResultsModal("The limit price was not set", str(e)))
            return None
        self.store.set("bid", new_bid)
        remember = getattr(self, "remember", None)  # (NCApp's: the ceiling, for the next session)
        if remember is not None:
            now = self.backend.now().isoformat() if self.backend is not None else None
            remember(ceiling={"cluster": cluster, "price_per_gpu_hour_ucredits": ceiling, "at": now})
        if self.pollers is not None:
            self.pollers.refresh("bid", "spend", "ladder")
        return new_bid

    @work(group="apply", exclusive=True, exit_on_error=False)
    async def change_limit_flow(self) -> None:
        """Lease: set or change the standing limit price on the active market cluster: the same ceiling
        question as an apply (judged for one node against the ladder and two hours of balance), then the same
        confirmation and PUT (``set_limit_price``)."""
        st = self.store
        info, ref = st.value("cluster"), st.meta.get("cluster")
        if info is None or ref is None or not info.market or info.name != ref.name:
            self.notify("A limit price is set on a market Kubernetes cluster only.")
            return
        snap = await self.fresh_figures(("balance", "bid", "ladder"), "The limit price was not changed.")
        if snap is None:
            return
        summary = st.value("summary")
        standing = snap.value("bid").max_price_per_gpu_hour
        gpus = info.gpus_per_node
        need = f"A limit price on {ref.name} pulls nodes for any GPU job applied there; one node is {gpus} GPUs" + (
            f" (it stands at {fmt_price(standing)} now)." if standing else "."
        )
        ceiling = await self._ask_ceiling(need, gpus, snap, 1, bool(summary and summary.purchases), standing)
        if ceiling is None:
            self.notify("The limit price was not changed.")
            return
        if ceiling == standing:
            self.notify(f"{fmt_price(ceiling)} already stands on {ref.name}: nothing was sent.")
            return
        if (
            await self.set_limit_price(ref.name, ceiling, gpus, "The limit price was not changed.", snap=snap)
            is not None
        ):
            self.notify(f"Limit price {fmt_price(ceiling)} stands on {ref.name}.")

    async def _ask_ceiling(
        self,
        need: str,
        gpus: int,
        snap: Snapshot,
        nodes_needed: int,
        purchases: bool,
        standing: int,
    ) -> int | None:
        """The ceiling question: ``need`` says what it is for, judged live for ``nodes_needed`` nodes against
        the ladder and for two hours of ``gpus`` against the balance, both as read for it (``snap``)."""
        from .. import recipes as R

        ladder, balance = snap.value("ladder"), snap.value("balance").balance_ucredits

        rungs = " · ".join(
            f"{r.nodes} node{'s' if r.nodes > 1 else ''} {fmt_price(r.price_per_gpu_hour)}" for r in ladder.rungs[:3]
        )
        context = (
            f"{need} "
            f"What is the most you will pay per GPU hour?\n"
            f"Price to win now: {rungs} · floor {fmt_price(ladder.floor_price_per_gpu_hour)}.\n"
            f"Balance {fmt_usd(balance)}."
        )

        def judge(value: int) -> tuple[bool, list[tuple[str, str]]]:
            v = R.judge_ceiling(value, ladder, nodes_needed)
            lines = [
                (
                    "bold red" if v.level == "refuse" else "yellow" if v.level == "warn" else "green",
                    ("✗ " if v.level == "refuse" else "! " if v.level == "warn" else "✓ ") + v.message,
                )
            ]
            if value <= 0:  # (no "$0.00 … covered" beside "must be more than $0")
                return False, lines
            m = R.money_check(gpus, value, balance, purchases)
            lines.append(("green" if m.ok else "bold red", ("✓ " if m.ok else "✗ ") + m.sentence))
            return v.ok and m.ok, lines

        return await self.push_screen_wait(CeilingModal("Your ceiling", context, judge, standing))

    # ---- the cluster's API ----------------------------------------------------------------------

    def applied_select(self, docs: list[dict[str, Any]]) -> None:
        """Workloads selects the pod of what an apply just made (its Jobs and Deployments, in order) until the
        human moves the cursor: counted in ``meta["applied_seq"]``, the workloads in ``meta["applied_want"]``."""
        want = [(d["kind"], d["metadata"]["name"]) for d in docs if d.get("kind") in ("Job", "Deployment")]
        self.store.meta["applied_want"] = want
        self.store.meta["applied_seq"] = self.store.meta.get("applied_seq", 0) + 1
