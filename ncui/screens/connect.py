"""Connect and start as the guide does (``ConnectMixin``, mixed into NCApp).

- **The kubeconfig where kubectl finds it.** Each time ncui fetches a cluster's kubeconfig it writes it to
  ``~/.kube/<cluster>.yaml`` (mode 600), as the guide's manual Connect step does; once connected it asks, once
  per cluster (the answer kept in ncui's state dir), whether to merge a ``<cluster>`` context into
  ``~/.kube/config`` as the setup script does, so that the human's own ``kubectl --context <cluster>`` works
  beside ncui (``kube/kubeconfig.py`` writes both). The question waits until no other question or flow is on
  screen. In the demo the files go to a stand-in folder that goes with the box, never the human's ~/.kube.
- **The hand-off.** ``ncui --recipe NAME [--cluster NAME]`` opens with that cluster active and that recipe
  chosen on Recipes (the guide: when the hand-off names a recipe, that is the answer; do not ask); a name that
  is not there is said with the names that are.
- **The sign-in command is the human's to allow.** The kubeconfig names the command that signs in
  (``kube/plugins.py``): the two known plugins run without a question; any other is shown with its arguments
  and asked about before its first run (the answer remembered per cluster and command); the human's kuberc
  policy refuses even those. A refused command runs nothing, and its kubeconfig is not saved or merged.
- **The demo's sign-in.** In the demo only, the sign-in modal offers ``a``: the box does the human's browser
  step (its Approve button). Outside the demo no such key exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import SystemCommand

from .. import history
from ..textsafe import clean
from .modals import ConfirmModal

if TYPE_CHECKING:
    from textual.app import App

    from ..api import models as m
    from ..backend import Backend
    from ..kube.kubeconfig import KubeHome
    from ..store import Slice, Store

    _AppBase = App[None]
else:
    _AppBase = object

BUSY_GROUPS = ("apply", "signin", "wl-stop", "wl-prompt", "vm", "withdraw")  # flows a question must not cut into


@dataclass(frozen=True)
class Handoff:
    """What the hand-off named: ``--cluster`` and ``--recipe`` (either may be None)."""

    cluster: str | None = None
    recipe: str | None = None


@dataclass(frozen=True)
class KubeFiles:
    """The ``kube_files`` slice: where the active cluster's kubeconfig went and whether config has it."""

    cluster: str
    file: str = ""  # ~/.kube/<cluster>.yaml as a person writes it ("" when it could not be written)
    config: str = ""  # ~/.kube/config, likewise
    context: str = ""  # "in config" | "declined" | "asking" | "" (not decided yet)
    error: str = ""


def kube_files_text(kf: KubeFiles) -> Text:
    """Account's lines under "kubectl": the files the human's own kubectl can use."""
    t = Text()
    if kf.error:
        t.append(f"⚠ {kf.error}", style="yellow")
        return t
    if not kf.file:
        return t
    t.append(kf.file if len(kf.file) <= 36 else "…" + kf.file[-35:])  # (the demo's stand-in folder is long)
    if kf.context == "in config":
        t.append(f"\n--context {kf.cluster} works in any shell", style="green")
    elif kf.context == "declined":
        t.append("\nnot in config: export KUBECONFIG=↑", style="dim")  # (the guide's manual path)
    return t


class ConnectMixin(_AppBase):
    """Mixed into NCApp."""

    _plugin_lock: asyncio.Lock | None = None

    if TYPE_CHECKING:  # NCApp's
        store: Store
        backend: Backend | None
        handoff: Handoff | None
        _unsubs: list[Callable[[], None]]

        def select_cluster(self, ref: m.ClusterRef | None) -> None: ...

        async def action_show(self, name: str) -> None: ...

        def start_worker(
            self, work: Callable[[], Any], *, name: str, group: str = "default", exclusive: bool = False
        ) -> Any: ...

    # ---- the demo's sign-in ------------------------------------------------------------------------

    def box_approver(self) -> Callable[[str], Awaitable[None]] | None:
        """The demo's stand-in for the human's browser step (the box approves the link); None outside it."""
        backend = self.backend
        return backend.approve_in_box if backend is not None and backend.sim is not None else None

    # ---- the kubeconfig's sign-in command -------------------------------------------------------------

    async def plugin_cleared(self, cluster: str, text: str, *, ask_again: bool = False) -> bool:
        """May ncui run the sign-in command ``text`` (the cluster's kubeconfig) names? The known plugins: yes; the
        human's kuberc may refuse; any other command is asked about once (``ask_again``: a remembered no too).
        A refusal is said (a toast, and the sign-in's state) and nothing of the kubeconfig is kept."""
        from ..kube import plugins
        from ..kube.session import exec_spec

        try:
            spec = exec_spec(text)
        except ValueError:
            return True  # no plugin at all: nothing runs (the sign-in says the kubeconfig has none)
        backend = self.backend
        api = backend.endpoints.api if backend is not None and backend.endpoints is not None else ""
        if self._plugin_lock is None:
            self._plugin_lock = asyncio.Lock()
        async with self._plugin_lock:  # (one question at a time: two connects at once ask once)
            verdict = plugins.judge(spec, api, cluster, ask_again=ask_again)
            if verdict.action == "run":
                return True
            if verdict.action == "ask":
                yes = await self._ask_plugin(cluster, spec)
                try:
                    plugins.remember(api, cluster, spec, yes)
                except OSError as e:
                    self.notify(
                        f"The answer could not be remembered ({e.strerror or e}): ncui asks again next time.",
                        severity="warning",
                        timeout=8,
                    )
                if yes:
                    old = self.store.value("kube_files")
                    if isinstance(old, KubeFiles) and old.cluster == cluster and "refused" in old.error:
                        self._kube_files(cluster, error="")  # (a no said before: not so any more)
                    return True
                verdict = plugins.Verdict(
                    "refuse",
                    f"You said no, so ncui did not run {cluster}'s sign-in command: {plugins.shown(spec)}",
                    short="you said no to its sign-in command (s asks again)",
                )
        said = f"Not signed in to {cluster}: its kubeconfig was not saved and no context was added. {verdict.reason}"
        self.store.fail("kube_signin", verdict.short or "its sign-in command was refused")
        self._kube_files(cluster, file="", error="kubeconfig not saved: its sign-in command was refused")
        self.notify(said, severity="error", timeout=20)
        return False

    async def _ask_plugin(self, cluster: str, spec: Any) -> bool:
        from ..kube import plugins
        from ..kube.kubeconfig import shown

        env = f" with its own environment ({', '.join(clean(k) for k, _ in spec.env)})" if spec.env else ""
        body = (
            f"The kubeconfig National Compute sent for {cluster} signs in by running this command on your "
            f"machine, as you, with your files{env}:\n\n"
            f"  {plugins.shown(spec)}\n\n"
            + (
                "⚠ It holds control characters or escape sequences; they are not shown.\n\n"
                if plugins.had_controls(spec)
                else ""
            )
            + "It is neither National Compute's nc-signin nor ncui's own sign-in, the two ncui runs without "
            "asking. Run it only if you know what it is and expected it.\n\n"
            f"Do not run it: nothing runs, and ncui neither saves {cluster}'s kubeconfig nor signs in.\n"
            f"Asked once for {cluster} and this command (kept in {shown(plugins.answers_path())})."
        )
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def answered(ok: bool | None) -> None:
            if not done.done():
                done.set_result(bool(ok))

        modal = ConfirmModal(f"Run {cluster}'s sign-in command?", body, yes="Run it", no="Do not run it")
        await self.push_screen(modal, callback=answered)
        return await done

    # ---- ~/.kube/<cluster>.yaml and the <cluster> context --------------------------------------------

    def _kube_home(self) -> tuple[KubeHome, str] | None:
        backend = self.backend
        if backend is None or backend.kube_home is None or backend.endpoints is None:
            return None
        return backend.kube_home, backend.endpoints.api

    def _kube_files(self, cluster: str, **kw: str) -> None:
        from dataclasses import replace

        from ..kube.kubeconfig import shown

        old = self.store.value("kube_files")
        home = self._kube_home()
        if not isinstance(old, KubeFiles) or old.cluster != cluster:
            old = KubeFiles(cluster, config=shown(home[0].config) if home else "")
        new = replace(old, **kw)
        self.store.set("kube_files", new)
        # the history's kubectl lines: KUBECONFIG=~/.kube/<cluster>.yaml first while config has no such context
        history.kubeconfig_for(cluster, new.file if new.context != "in config" else "")

    def kube_saved(self, cluster: str, text: str) -> None:
        """The portal's kubeconfig was fetched: write it to ``~/.kube/<cluster>.yaml`` (mode 600)."""
        from ..kube.kubeconfig import KubeconfigError, shown

        home = self._kube_home()
        if home is None:
            return
        try:
            path = home[0].save(cluster, text)
        except KubeconfigError as e:
            self._kube_files(cluster, file="", error=f"kubeconfig not saved: {e}")
            self.notify(f"Could not save the kubeconfig for your own kubectl: {e}", severity="warning", timeout=10)
            return
        self._kube_files(cluster, file=shown(path), error="")

    def kube_connected(self, cluster: str, text: str) -> None:
        """Connected to ``cluster``: keep its context in config current when the human said yes; ask once
        when they were never asked."""
        home = self._kube_home()
        if home is None:
            return
        answer = home[0].answer(home[1], cluster)
        if answer is True:
            self._merge_context(cluster, text, announce=False)
        elif answer is False:
            self._kube_files(cluster, context="declined")
        elif not any(w.group == "kube-context" and not w.is_finished for w in self.workers):  # (asked once)
            self._kube_files(cluster, context="asking")
            self.start_worker(
                partial(self._ask_context, cluster, text, True), name="kube-context", group="kube-context"
            )

    def _merge_context(self, cluster: str, text: str, announce: bool = True) -> bool:
        from ..kube.kubeconfig import KubeconfigError

        home = self._kube_home()
        if home is None:
            return False
        try:
            verdict = home[0].merge(cluster, text)
        except KubeconfigError as e:
            self._kube_files(cluster, context="", error=f"context not added: {e}")
            self.notify(f"The {cluster} context was not added: {e}. Nothing was changed.", severity="error", timeout=12)
            return False
        self._kube_files(cluster, context="in config", error="")
        if announce or verdict == "updated":
            what = {"added": "added to", "updated": "updated in", "unchanged": "already in"}[verdict]
            self.notify(
                f"The {cluster} context is {what} {self.store.value('kube_files').config}: "
                f"kubectl --context {cluster} get pods works in any shell.",
                timeout=10,
            )
        return True

    async def _when_calm(self) -> None:
        """Until nothing else asks or runs a flow (a question of its own never cuts into another)."""
        while len(self.screen_stack) > 1 or any(w.group in BUSY_GROUPS and not w.is_finished for w in self.workers):
            await asyncio.sleep(0.3)

    async def _ask_context(self, cluster: str, text: str, first: bool) -> None:
        from ..kube.kubeconfig import KubeconfigError

        home = self._kube_home()
        if home is None:
            return
        if first:
            await self._when_calm()
        ref = self.store.meta.get("cluster")
        if ref is None or ref.name != cluster:  # another cluster now: its own connect asks for it
            return
        kf = self.store.value("kube_files")
        file = kf.file if isinstance(kf, KubeFiles) and kf.file else f"~/.kube/{cluster}.yaml"
        config = kf.config if isinstance(kf, KubeFiles) else "~/.kube/config"
        demo = self.backend is not None and self.backend.sim is not None
        body = (
            f"ncui saved {cluster}'s kubeconfig to {file} (mode 600), as the guide's Connect step does.\n\n"
            f"Also add a {cluster} context to {config}, as the setup script does, so that your own "
            f"`kubectl --context {cluster} get pods` works in any shell? Your other contexts stay as they are.\n\n"
            + ("In the demo a folder that goes with the box stands in for ~/.kube.\n" if demo else "")
            + (
                f"Asked once for {cluster} (Ctrl-P → kubectl context asks again)."
                if first
                else "Your answer replaces the one remembered."
            )
        )
        yes = await self.push_screen_wait(
            ConfirmModal(f"Let your own kubectl use {cluster}?", body, yes="Add the context", no="Leave it")
        )
        try:
            home[0].remember(home[1], cluster, bool(yes))
        except KubeconfigError as e:
            self.notify(str(e), severity="warning", timeout=8)
        if yes:
            self._merge_context(cluster, text)
        else:
            self._kube_files(cluster, context="declined")
            self.notify(f"{config} is left as it is. KUBECONFIG={file} kubectl --context {cluster} … works.", timeout=8)

    async def _ask_context_again(self) -> None:
        from ..kube.client import KubeClient

        ref = self.store.meta.get("cluster")
        kube: KubeClient | None = getattr(self, "_kube", None)
        if ref is None or ref.kind != "kubernetes" or kube is None or getattr(self, "_kube_for", None) != ref.name:
            self.notify("Connect to a Kubernetes cluster first (s signs in).", timeout=6)
            return
        if kube.kubeconfig is not None:
            await self._ask_context(ref.name, kube.kubeconfig, False)

    def connect_commands(self) -> Iterable[SystemCommand]:
        ref = self.store.meta.get("cluster")
        if ref is not None and ref.kind == "kubernetes" and self._kube_home() is not None:
            yield SystemCommand(
                "kubectl context",
                f"Add (or leave out) a {ref.name} context in ~/.kube/config for your own kubectl",
                lambda: self.start_worker(self._ask_context_again, name="kube-context", group="kube-context"),
            )

    # ---- the hand-off: --cluster, --recipe -------------------------------------------------------------

    def handoff_cluster(self, who: m.Whoami) -> m.ClusterRef | None:
        """The cluster ``--cluster`` names (said so when there is none by that name), else None."""
        want = self.handoff.cluster if self.handoff is not None else None
        if not want:
            return None
        found = next((c for c in who.clusters if c.name == want), None) or next(
            (c for c in who.clusters if c.name.lower() == want.lower()), None
        )
        if found is None:
            have = ", ".join(f"{clean(c.name)} ({c.kind})" for c in who.clusters) or "none"
            self.notify(
                f"No cluster named {clean(want)} in {clean(who.org_name)}. Its clusters: {have}.",
                severity="error",
                timeout=20,
            )
            self.handoff = Handoff(None, self.handoff.recipe if self.handoff else None)
        return found

    def handoff_watch(self) -> None:
        """Once who you are and the catalog are read: make the recipe a hand-off named the chosen one."""
        if self.handoff is None or not self.handoff.recipe:
            return
        self._unsubs.append(self.store.subscribe(("whoami", "catalog"), self._handoff_check, interested=False))

    def _handoff_check(self, _s: Slice | None = None) -> None:
        from .. import recipes as R

        who, catalog, ref = self.store.value("whoami"), self.store.value("catalog"), self.store.meta.get("cluster")
        if self.handoff is None or not self.handoff.recipe or who is None or catalog is None:
            return
        if ref is None and who.clusters:  # the active cluster is chosen first (whoami's own subscriber)
            return
        want, named_cluster = self.handoff.recipe, self.handoff.cluster
        self.handoff = None  # once: later catalog reads change nothing the human chose since
        recipe = R.find(catalog, want, ref.kind if ref is not None else "public_research")
        if recipe is None:
            kinds = {c.kind for c in who.clusters} or {"public_research"}
            have = ", ".join(
                f"{clean(r.name)} ({clean(r.title)})"
                for r in catalog
                if r.cluster_kind in kinds or (ref is not None and r.cluster_kind == ref.kind)
            )
            self.notify(
                f"No recipe named {clean(want)} in the catalog. For your clusters there are: {have or 'none'}.",
                severity="error",
                timeout=25,
            )
            return
        if ref is not None and recipe.cluster_kind != ref.kind:
            other = next((c for c in who.clusters if c.kind == recipe.cluster_kind), None)
            if named_cluster or other is None:
                where = f"{ref.name} is a {ref.kind} cluster" if named_cluster else "no cluster here runs it"
                self.notify(
                    f"{clean(recipe.title)} is a {recipe.cluster_kind} recipe and {where}: it is not chosen.",
                    severity="error",
                    timeout=20,
                )
                return
            self.select_cluster(other)
        self.call_later(self._handoff_show, recipe.name)

    async def _handoff_show(self, name: str) -> None:
        from .recipes import RecipesView

        await self.action_show("recipes")
        for view in self.query(RecipesView):
            view.choose(name, handed_off=True)
