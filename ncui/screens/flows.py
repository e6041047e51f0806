"""The app's multi-step flows: sign in to the cluster, the money check before apply, apply, stop.

Everything that spends money goes through ``apply_flow``: the balance must cover two hours at the
human's ceiling, the ceiling is asked for (never assumed), compared with the ladder, and set only after
a confirmation that states the hourly cost and the standing-bid consequence. Idle nodes already held are
used before any bid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from rich.text import Text
from textual import work

from ..api.errors import NCError
from ..money import fmt_price, fmt_usd
from .modals import CeilingModal, ConfirmModal, CustomJobModal, ResultsModal

if TYPE_CHECKING:  # recipes (and yaml) are imported when a flow first runs, not before the first frame
    from .. import recipes as R
    from ..app import NCApp


def idle_gpu_nodes(store) -> int:
    """Ready GPU nodes with no running or pending pod on them (from the cluster's watch, when known)."""
    nodes, pods = store.value("k8s_nodes"), store.value("k8s_pods")
    if nodes is None or pods is None:
        return 0
    busy = {p.get("spec", {}).get("nodeName") for p in pods.values()
            if (p.get("status") or {}).get("phase") in ("Pending", "Running")}
    idle = 0
    for name, n in nodes.items():
        cap = (n.get("status") or {}).get("capacity") or {}
        gpu = any(k.endswith(".com/gpu") and str(v) not in ("0", "") for k, v in cap.items())
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in (n.get("status") or {}).get("conditions") or [])
        if gpu and ready and name not in busy:
            idle += 1
    return idle


class FlowsMixin:
    """Mixed into NCApp."""

    # ---- Something else -------------------------------------------------------------------------

    def open_custom_job(self: "NCApp") -> None:
        from .. import recipes as R

        cluster = self.store.value("cluster")
        if cluster is None:
            self.notify("The cluster is still loading.")
            return

        def build(image, command, nodes_text, name, tolerant, gpus_text=""):
            try:
                nodes = int(str(nodes_text).strip())
            except ValueError:
                return None, f"nodes: {str(nodes_text)[:10]!r} is not a whole number"
            gpus = None
            if str(gpus_text).strip():
                try:
                    gpus = int(str(gpus_text).strip())
                except ValueError:
                    return None, f"GPUs per pod: {str(gpus_text)[:10]!r} is not a whole number"
            try:
                plan = R.custom_plan(R.CustomJob(image, command, nodes, name, gpus_per_pod=gpus,
                                                 reclaim_tolerant=tolerant), cluster)
            except ValueError as e:
                return None, str(e)
            return plan, ""

        def done(plan) -> None:
            if plan is not None:
                self.start_apply(plan)

        self.push_screen(CustomJobModal(build), done)

    # ---- apply ----------------------------------------------------------------------------------

    def start_apply(self: "NCApp", plan: "R.Plan") -> None:
        self.apply_flow(plan)

    @work(group="apply", exclusive=True, exit_on_error=False)
    async def apply_flow(self: "NCApp", plan: "R.Plan") -> None:
        from .. import recipes as R

        st = self.store
        cluster, ref = st.value("cluster"), st.meta.get("cluster")
        summary, bal = st.value("summary"), st.value("balance")
        if cluster is None or ref is None or (summary is None and bal is None):
            self.notify("Still loading the cluster and the balance; try again in a moment.")
            return
        balance = bal.balance_ucredits if bal else summary.balance_ucredits
        purchases = bool(summary and summary.purchases)
        nodes_needed = max(1, -(-plan.gpus // cluster.gpus_per_node)) if plan.gpus else 0
        preface = ""

        if cluster.market and plan.gpus:
            # Idle nodes already held host the job with no new bid: look at the cluster first.
            if await self.kube_client() is None:
                return
            await self._settle("k8s_nodes", "k8s_pods")
            ladder, bid = st.value("ladder"), st.value("bid")
            if ladder is None:
                self.notify("The price-to-win ladder is still loading.")
                return
            idle = idle_gpu_nodes(st)
            standing = bid.max_price_per_gpu_hour if bid else 0
            if idle >= nodes_needed:
                preface = (f"{idle} idle GPU node(s) already held will host this job: no new bid is needed.")
                if standing:
                    check = R.money_check(plan.gpus, standing, balance, purchases)
                    if not check.ok:
                        await self.push_screen_wait(ResultsModal("Not enough balance", check.sentence))
                        return
            else:
                ceiling = await self._ask_ceiling(plan, ladder, nodes_needed, balance, purchases, standing)
                if ceiling is None:
                    self.notify("Nothing was bid or applied.")
                    return
                if ceiling != standing:
                    ticks = [t for t in (st.value("ticks") or ()) if t.gpu_model == cluster.gpu_model]
                    assessed = ticks[-1].price_per_gpu_hour if ticks else None
                    yes = await self.push_screen_wait(ConfirmModal(
                        "Set the limit price?", R.bid_confirmation(ref.name, ceiling, plan.gpus, assessed),
                        yes="Set it", no="Cancel"))
                    if not yes:
                        self.notify("Nothing was bid or applied.")
                        return
                    try:
                        new_bid = await self.backend.nc.set_bid(ceiling, ref.name)
                    except NCError as e:
                        await self.push_screen_wait(ResultsModal("The limit price was not set", str(e)))
                        return
                    st.set("bid", new_bid)
                    if self.pollers is not None:
                        self.pollers.refresh("bid", "spend", "ladder")
                preface = f"Limit price {fmt_price(ceiling)} stands on {ref.name}."
        elif plan.gpus and not cluster.market:
            preface = f"{ref.name} is a fixed cluster: no limit price; the cluster checks the balance at submit."

        docs = plan.all_docs()
        objects = ", ".join(f"{d['kind']}/{d['metadata']['name']}" for d in docs)
        yes = await self.push_screen_wait(ConfirmModal(
            f"Apply {plan.title}?",
            (preface + "\n\n" if preface else "") +
            f"Create on {ref.name}, in order: {objects}.\nStop it later with: " + "; ".join(plan.stop),
            yes="Apply", no="Cancel"))
        if not yes:
            self.notify("Nothing was applied.")
            return
        kube = await self.kube_client()
        if kube is None:
            return
        results = await kube.apply(docs)
        lines = Text()
        failed = False
        for r in results:
            if r.error:
                failed = True
                lines.append(f"✗ {r.kind}/{r.name}: {r.error}\n", style="bold red")
            else:
                lines.append(f"✓ {r.kind.lower()}/{r.name} {r.action}\n", style="green")
        if len(results) < len(docs) and not failed:
            failed = True
        if failed:
            lines.append("\nNothing after the refusal was applied.", style="bold")
            await self.push_screen_wait(ResultsModal(f"{plan.title}: refused", lines))
            return
        self.store.meta["last_plan"] = plan
        self.notify(f"{plan.title} applied: " + ", ".join(f"{r.kind.lower()}/{r.name}" for r in results))
        await self.run_action("show('workloads')")

    async def _settle(self: "NCApp", *names: str, timeout: float = 5.0) -> bool:
        """Wait (bounded) until the watched slices have their first snapshot."""
        import asyncio
        import time

        deadline = time.monotonic() + timeout
        while not all(self.store.get(n).loaded for n in names):
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    async def _ask_ceiling(self: "NCApp", plan, ladder, nodes_needed, balance, purchases, standing) -> Optional[int]:
        from .. import recipes as R

        rungs = " · ".join(f"{r.nodes} node{'s' if r.nodes > 1 else ''} {fmt_price(r.price_per_gpu_hour)}"
                           for r in ladder.rungs[:3])
        context = (f"{plan.title} needs {plan.gpus} GPUs ({nodes_needed} node{'s' if nodes_needed > 1 else ''}). "
                   f"What is the most you will pay per GPU hour?\n"
                   f"Price to win now: {rungs} · floor {fmt_price(ladder.floor_price_per_gpu_hour)}.\n"
                   f"Balance {fmt_usd(balance)}.")

        def judge(value: int):
            v = R.judge_ceiling(value, ladder, nodes_needed)
            m = R.money_check(plan.gpus, value, balance, purchases)
            lines = [("bold red" if v.level == "refuse" else "yellow" if v.level == "warn" else "green",
                      ("✗ " if v.level == "refuse" else "! " if v.level == "warn" else "✓ ") + v.message),
                     ("green" if m.ok else "bold red", ("✓ " if m.ok else "✗ ") + m.sentence)]
            return v.ok and m.ok, lines

        prefill = f"{standing / 1e6:.2f}" if standing else ""

        return await self.push_screen_wait(CeilingModal("Your ceiling", context, judge, prefill))

    # ---- the cluster's API ----------------------------------------------------------------------

    async def kube_client(self: "NCApp"):
        """A signed-in client for the active cluster (runs the sign-in when needed); None on failure."""
        from ..kube.client import KubeClient, KubeError, NotSignedIn

        ref = self.store.meta.get("cluster")
        if ref is None or ref.kind != "kubernetes":
            return None
        if self._kube is not None and self._kube_for == ref.name:
            if not self._kube.gate.is_open:  # its sign-in expired: the link is up (s shows it again)
                self.notify(f"The sign-in to {ref.name} expired: approve the new link (s shows it), then try "
                            "again.", severity="warning", timeout=10)
                return None
            return self._kube
        try:
            text = await self.backend.nc.kubeconfig(ref.name)
            kube = KubeClient.from_kubeconfig(text)
        except (NCError, ValueError, KubeError) as e:
            self.notify(f"Cannot reach {ref.name}'s Kubernetes API: {e}", severity="error", timeout=10)
            return None
        for _ in range(2):
            try:
                await kube.list("nodes")
                break
            except NotSignedIn as e:
                if not await self.sign_in_flow(link=e.link, kube=kube):
                    await kube.aclose()
                    return None
            except KubeError as e:
                self.notify(f"{ref.name}: {e}", severity="error", timeout=10)
                await kube.aclose()
                return None
        if self._kube is not None:
            await self._kube.aclose()
        self._kube, self._kube_for = kube, ref.name
        self.store.set("kube_signin", "signed in")
        self.start_watchers(kube)
        return kube
