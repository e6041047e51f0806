"""Connect and sign in as the guide does (``ConnectFlow``, the App's ``self.connect``). No Textual here.

- **The active cluster.** Who you are (``whoami``) names the clusters; the active one is the hand-off's
  (``--cluster``), else the last session's, else the first Kubernetes one (``select_cluster``: the store's cluster
  slices cleared and read again, the watches stopped).
- **The cluster's client.** ``kube_client`` reads the cluster's kubeconfig from National Compute, runs its
  sign-in (``sign_in``: the link shown until it is approved) and watches the cluster's objects into the store
  (pods, jobs, deployments, nodes) and whether it still accepts the sign-in (a new link said where the human is).
  A cluster that cannot be reached has its kubeconfig read again (its endpoint may have moved).
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
- **The demo's sign-in.** In the demo only, the sign-in question offers ``a``: the box does the human's browser
  step (its Approve button). Outside the demo no such key exists.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from .. import history
from ..api.errors import NCError
from ..notify import Moment
from ..textsafe import clean
from .base import Context, Flow
from .ui import Confirm, Question
from .wait import until

if TYPE_CHECKING:
    from ..api import models as m
    from ..api.client import NCClient
    from ..backoff import RetryLoop
    from ..kube.client import KubeClient
    from ..kube.gate import SignInGate
    from ..kube.kubeconfig import KubeHome
    from ..kube.session import SigninResult
    from ..store import Slice

BUSY_GROUPS = ("apply", "signin", "wl-stop", "wl-prompt", "vm", "withdraw")  # flows a question must not cut into
SIGNED_IN = "sign in: kubectl prints the link, you approve it in a browser, then it signs in silently"
CLUSTER_SLICES = ("cluster", "bid", "ladder", "spend", "ticks", "vm_capacity", "ssh_keys")
WATCHED = ("k8s_pods", "k8s_jobs", "k8s_deployments", "k8s_nodes")  # what the cluster's watches write
# The cluster's watches write the store at most every 50 ms: a big cluster's hundred changes a second are a few
# writes (the subscribers, the header, the lifecycle watch: each once per write), not a hundred (bench/pods.py).
WATCH_COALESCE = 0.05
ENDPOINT_RECHECK_S = 15.0  # a cluster that cannot be reached: its kubeconfig read again at most this often


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


# ---- the sign-in link: a question that changes while it is shown --------------------------------------------


class LinkBoard:
    """What the sign-in question shows while it is up: the link (a fresh one when the code expired) and, once
    signed in, that it may close. The flow writes it; the question's modal reads it (``watch``)."""

    def __init__(self, link: str) -> None:
        self.link = link
        self.closed: bool | None = None  # set once the flow closes it (True: signed in)
        self._on_link: Callable[[str], None] | None = None
        self._on_close: Callable[[bool], None] | None = None

    def watch(self, on_link: Callable[[str], None], on_close: Callable[[bool], None]) -> None:
        """The modal, once shown: told of a new link and of the close (at once when it came first)."""
        self._on_link, self._on_close = on_link, on_close
        if self.closed is not None:
            on_close(self.closed)

    def new_link(self, link: str) -> None:
        self.link = link
        if self._on_link is not None:
            self._on_link(link)

    def close(self, signed_in: bool) -> None:
        self.closed = signed_in
        if self._on_close is not None:
            self._on_close(signed_in)


@dataclass(frozen=True)
class SignInLink(Question[bool]):
    """The sign-in link, to approve in a browser; closes by itself once approved (``board.close``). ``reason``:
    why a sign-in that held needs approving again ("" for a first sign-in); ``approve``: the demo's stand-in for
    the browser step (the box approves the link), None outside it. The answer: True once signed in, False when
    the human closed it (the sign-in goes on in the background)."""

    cluster: str
    board: LinkBoard = field(compare=False)
    reason: str = ""
    approve: Callable[[str], Awaitable[None]] | None = field(default=None, compare=False)


# ---- the flow --------------------------------------------------------------------------------------------


class ConnectFlow(Flow):
    """Sign-in, the kube client and its watches, the kubeconfig files and context, the hand-off, the active
    cluster. Given: what the session remembers (``remembered``/``remember``: the last active cluster), what a
    new active cluster tells the Slurm flow (``slurm_cluster``), how Recipes is made to choose a recipe
    (``choose_recipe``: the hand-off's) and how the views hear that the cluster's client was made anew
    (``kube_moved``: its endpoint moved), and the National Compute client (``nc``: None, said on screen, before
    ncui has connected)."""

    def __init__(
        self,
        ctx: Context,
        *,
        handoff: Handoff | None = None,
        nc: Callable[[], NCClient | None],
        remembered: Callable[[], dict[str, Any]],
        remember: Callable[..., None],
        slurm_cluster: Callable[[m.ClusterRef | None], None],
        choose_recipe: Callable[[str], object],
        kube_moved: Callable[[], None],
    ) -> None:
        super().__init__(ctx)
        self.handoff = handoff
        self._nc = nc
        self._remembered, self._remember = remembered, remember
        self._slurm_cluster = slurm_cluster
        self._choose_recipe, self._kube_moved = choose_recipe, kube_moved
        self.kube: KubeClient | None = None  # the active cluster's, once signed in
        self.kube_for: str | None = None  # the cluster ``kube`` is for (None: make one anew)
        self._watchers: list[RetryLoop] = []
        self._endpoint_checked = 0.0  # when the cluster's kubeconfig was last read again (time.monotonic())
        self._plugin_lock: asyncio.Lock | None = None
        self._unsubs: list[Callable[[], None]] = []

    # ---- start and end ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Follow who you are (the active cluster) and the cluster (the market slices); the hand-off's recipe
        once the catalog is read (after the cluster's own subscriber: it chooses the cluster first)."""
        store = self.store
        self._unsubs.append(store.subscribe("whoami", self._on_whoami, interested=False))
        self._unsubs.append(store.subscribe("cluster", self._on_cluster, interested=False))
        if self.handoff is not None and self.handoff.recipe:
            self._unsubs.append(store.subscribe(("whoami", "catalog"), self._handoff_check, interested=False))

    async def close(self) -> None:
        for u in self._unsubs:
            u()
        self._unsubs.clear()
        self.stop_watchers()
        if self.kube is not None:
            await self.kube.aclose()

    # ---- the active cluster ----------------------------------------------------------------------------

    def _on_whoami(self, s: Slice) -> None:
        who = s.value
        if who is None:
            return
        pollers = self.ctx.pollers
        if who.org_kind == "public_research" and pollers is not None:  # its node's status (enabled by whoami)
            pollers.refresh("research")
        active = self.store.meta.get("cluster")
        names = [c.name for c in who.clusters]
        if active is None or active.name not in names:
            last = self._remembered().get("active_cluster")  # the cluster of the last session, resumed
            first = (
                self.handoff_cluster(who)  # --cluster / --recipe first, then the last session's
                or next((c for c in who.clusters if c.name == last), None)
                or next((c for c in who.clusters if c.kind == "kubernetes"), None)
                or (who.clusters[0] if who.clusters else None)
            )
            self.select_cluster(first)

    def _on_cluster(self, s: Slice) -> None:
        # The market slices are enabled only once the cluster is known to be a market cluster.
        if self.ctx.pollers is not None and s.value is not None:
            self.ctx.pollers.refresh("bid", "ladder", "spend", "ticks")

    def select_cluster(self, ref: m.ClusterRef | None) -> None:
        old = self.store.meta.get("cluster")
        self.store.meta["cluster"] = ref
        if ref is not None:
            self._remember(active_cluster=ref.name)
        if old is not None and ref is not None and old.name == ref.name:
            return
        self.store.clear(*CLUSTER_SLICES, *WATCHED, "kube_signin")
        self.stop_watchers()
        self.kube_for = None
        if self.ctx.pollers is not None:
            self.ctx.pollers.refresh(*CLUSTER_SLICES)
        self._slurm_cluster(ref)  # a Slurm cluster's sign-in check and queue (the Slurm flow)
        if ref is not None and old is not None:
            self.notify(f"Active cluster: {ref.name} ({ref.kind_said})")

    # ---- the cluster's client --------------------------------------------------------------------------

    async def kube_client(self) -> KubeClient | None:
        """A signed-in client for the active cluster (runs the sign-in when needed); None on failure."""
        from ..kube.client import KubeClient, KubeError, NotSignedIn

        ref = self.store.meta.get("cluster")
        if ref is None or ref.kind != "kubernetes":
            return None
        if self.kube is not None and self.kube_for == ref.name:
            if not self.kube.gate.is_open:  # its sign-in expired: the link is up (s shows it again)
                self.notify(
                    f"The sign-in to {ref.name} expired: approve the new link (s shows it), then try again.",
                    severity="warning",
                    timeout=10,
                )
                return None
            return self.kube
        nc = self._nc()
        if nc is None:
            return None
        try:
            text = await nc.kubeconfig(ref.name)
        except NCError as e:
            self.notify(f"Cannot reach {ref.name}'s Kubernetes API: {e}", severity="error", timeout=10)
            return None
        if not await self.plugin_cleared(ref.name, text):  # a sign-in command the human refused: nothing kept
            return None
        try:
            kube = KubeClient.from_kubeconfig(text, history=self.history)
            self.kube_saved(ref.name, text)  # ~/.kube/<cluster>.yaml, for the human's own kubectl
        except (ValueError, KubeError) as e:
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
        if self.kube is not None:
            await self.kube.aclose()
        self.kube, self.kube_for = kube, ref.name
        self.store.set("kube_signin", "signed in")
        self.start_watchers(kube)
        self.kube_connected(ref.name, text)  # its context in ~/.kube/config: asked once
        return kube

    async def kube_signed_in(self, name: str | None = None) -> KubeClient | None:
        """The client for cluster ``name`` (the active one) when it needs no sign-in question: the one connected,
        or a connect with the sign-in kept from before (silently, as kubectl would); None otherwise."""
        ref = self.store.meta.get("cluster")
        name = name or (ref.name if ref is not None else None)
        if self.kube_for == name and self.kube is not None:
            return self.kube if self.kube.gate.is_open else None
        from ..kube import signin

        if name and self.backend is not None and self.backend.endpoints is not None:  # signed in before: connect
            if signin.cred_path(self.backend.endpoints.api, name).exists():
                return await self.kube_client()
        return None

    def connected_to(self, name: str | None) -> bool:
        """A client is made for cluster ``name`` (signed in, or waiting for its sign-in again)."""
        return self.kube is not None and name is not None and self.kube_for == name

    # ---- kubectl sign-in -------------------------------------------------------------------------------

    def sign_in(self) -> None:
        """s: sign in to the active cluster (its sign-in checked again when connected), then connect."""
        self.ui.start(self._signin_then_connect, name="signin", group="signin", exclusive=True)

    async def _signin_then_connect(self) -> None:
        ref = self.store.meta.get("cluster")
        kube = self.kube if ref is not None and self.kube_for == ref.name else None  # its sign-in, checked again
        if await self.sign_in_flow(announce=True, kube=kube):
            await self.kube_client()

    def box_approver(self) -> Callable[[str], Awaitable[None]] | None:
        """The demo's stand-in for the human's browser step (the box approves the link); None outside it."""
        backend = self.backend
        return backend.approve_in_box if backend is not None and backend.sim is not None else None

    async def sign_in_flow(
        self, announce: bool = False, link: str | None = None, kube: KubeClient | None = None
    ) -> bool:
        """Run the kubeconfig's sign-in plugin as kubectl would (through ``kube``, a KubeClient, when given:
        its gate opens on approval); show its link until it is approved. When ``kube`` is the client in use,
        the watches and the log follower wait on this sign-in: closing the link's window leaves it to the
        SignInKeeper to notice the approval."""
        from ..backoff import wait_event
        from ..kube.session import exec_spec, run_plugin

        ref = self.store.meta.get("cluster")
        nc = self.backend.nc if self.backend is not None else None
        if ref is None or ref.kind != "kubernetes" or nc is None:
            self.notify("kubectl sign-in is for a Kubernetes cluster.")
            return False
        # The client in use: its gate (the watches and the log wait on it). None: a sign-in of its own.
        gate = kube.gate if kube is not None and kube is self.kube else None
        in_use = gate is not None
        if not (gate is not None and not gate.is_open):  # (an expired sign-in stays "expired" until approved)
            self.store.set("kube_signin", "checking")
        attempt: Callable[[], Awaitable[SigninResult]]
        if kube is not None:
            attempt = kube.check_sign_in
        else:
            try:
                text = await nc.kubeconfig(ref.name)
                spec = exec_spec(text)
            except (NCError, ValueError) as e:
                self.store.fail("kube_signin", f"Cannot sign in: {e}")
                self.notify(f"Cannot sign in: {e}", severity="error", timeout=8)
                return False
            if not await self.plugin_cleared(ref.name, text, ask_again=announce):  # (s: a remembered no asked again)
                return False
            attempt = lambda: run_plugin(spec)  # noqa: E731
        result = await attempt()
        if result.signed_in:
            self.store.set("kube_signin", "signed in")
            if announce:
                self.notify(f"kubectl is signed in to {ref.name}.")
            return True
        if not result.link and link:  # the plugin prints a link once per caller: we were told it already
            result = replace(result, link=link)
        if not result.link:
            why = result.message or "the sign-in plugin gave no link"
            self.store.fail("kube_signin", why)
            self.notify(f"Sign-in failed: {why[:200]}", severity="error", timeout=10)
            return False
        self.store.set("kube_signin", "expired" if in_use else "waiting for approval")
        closed = asyncio.Event()
        board = LinkBoard(result.link)
        question = SignInLink(
            ref.name, board, reason=gate.reason if gate is not None else "", approve=self.box_approver()
        )
        self.ui.ask_then(question, lambda _ok: closed.set())
        self.moment(
            Moment(
                "signin",
                "Sign-in link waiting",
                f"{ref.name}: approve the kubectl sign-in link in your browser"
                + (" (the watches and the log wait on it)." if in_use else "."),
                "warning",
            ),
            in_app=False,  # (the link's own window says it in the app)
        )
        link = result.link
        while not closed.is_set():
            if await wait_event(closed, 2.0):
                break
            if in_use and (kube is not self.kube or self.kube_for != ref.name):  # another cluster now
                board.close(False)
                return False
            result = await attempt()
            if result.signed_in:
                self.store.set("kube_signin", "signed in")
                if self.history is not None:
                    self.history.note("kubectl", history.kubectl_command(ref.name, "get", "nodes"), SIGNED_IN, True)
                if not closed.is_set():
                    board.close(True)
                self.notify(
                    f"Signed in to {ref.name}: kubectl signs in silently from now on."
                    + (" The watches and the log resume where they stopped." if in_use else "")
                )
                return True
            if result.link and result.link != link:
                link = result.link
                board.new_link(link)
        if in_use:
            self.notify(
                "The sign-in link stays valid: approve it and ncui resumes by itself (s shows it again).", timeout=8
            )
            return False
        self.store.set("kube_signin", "not signed in")
        self.notify("Sign-in goes on in the background: approve the link, then press s again.", timeout=8)
        return False

    # ---- the cluster's watches ---------------------------------------------------------------------

    def start_watchers(self, kube: KubeClient) -> None:
        """Watch the cluster's objects into the store (pods, jobs, deployments, nodes), and whether the
        cluster still accepts the sign-in."""
        from ..kube.gate import SignInKeeper
        from ..kube.watch import ResourceWatcher

        self.stop_watchers()
        for slice_name in WATCHED:
            kind = slice_name.removeprefix("k8s_")
            w = ResourceWatcher(
                kube,
                kind,
                on_snapshot=partial(self._watched, slice_name),
                on_error=partial(self._watch_failed, kube, slice_name),
                coalesce=WATCH_COALESCE,
            )
            self._watchers.append(w)
            self.ui.start(w.run, name=f"watch-{kind}", group="watch")
        keeper = SignInKeeper(kube, on_change=lambda gate: self._on_signin_gate(kube, gate))
        self._watchers.append(keeper)
        self.ui.start(keeper.run, name="signin-keeper", group="watch")  # (no coroutine made before it
        # runs: quitting first leaves none un-awaited)

    def stop_watchers(self) -> None:
        for w in self._watchers:
            w.stop()
        self._watchers.clear()

    def _watched(self, slice_name: str, snapshot: Mapping[str, dict[str, Any]]) -> None:
        self.store.set(slice_name, snapshot)

    def _on_signin_gate(self, kube: KubeClient, gate: SignInGate) -> None:
        """The cluster stopped accepting the sign-in (or its link changed, or it accepts it again): say so
        where the human is, with the new link (one sign-in flow at a time)."""
        if kube is not self.kube:
            return
        if gate.is_open:
            self.store.set("kube_signin", "signed in")
            return
        self.store.set("kube_signin", "expired")
        if not self.ui.busy("signin"):
            self.ui.start(
                partial(self.sign_in_flow, link=gate.link, kube=kube), name="signin", group="signin", exclusive=True
            )

    def _watch_failed(self, kube: KubeClient, slice_name: str, message: str) -> None:
        self.store.fail(slice_name, message)
        # The cluster cannot be reached: its endpoint may have moved (a restarted cluster, a new certificate).
        # Read its kubeconfig again, at most every 15 s, and connect to the new one when it changed.
        if (
            kube is self.kube
            and message.startswith("cannot reach")
            and time.monotonic() - self._endpoint_checked > ENDPOINT_RECHECK_S
        ):
            self._endpoint_checked = time.monotonic()
            self.ui.start(partial(self._recheck_endpoint, kube), name="endpoint", group="endpoint", exclusive=True)

    async def _recheck_endpoint(self, kube: KubeClient) -> None:
        ref = self.store.meta.get("cluster")
        if ref is None or kube is not self.kube or self.backend is None or self.backend.nc is None:
            return
        try:
            text = await self.backend.nc.kubeconfig(ref.name)
        except NCError:
            return  # the service is down too: the header says so; the next failure asks again
        if kube.kubeconfig is None or text == kube.kubeconfig or kube is not self.kube:
            return
        self.notify(f"{ref.name}'s Kubernetes API moved (a new address or certificate): connecting again.", timeout=8)
        self.kube_for = None  # the next kube_client() builds a client from the new kubeconfig
        if await self.kube_client() is not None:
            self._kube_moved()

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
                yes = bool(await self._answer(plugin_question(cluster, spec)))
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

    async def _answer(self, question: Confirm) -> bool | None:
        """``question`` asked from wherever this runs (a worker or not): its answer once given."""
        done: asyncio.Future[bool | None] = asyncio.get_running_loop().create_future()

        def answered(answer: bool | None) -> None:
            if not done.done():
                done.set_result(answer)

        self.ui.ask_then(question, answered)
        return await done

    # ---- ~/.kube/<cluster>.yaml and the <cluster> context --------------------------------------------

    def _kube_home(self) -> tuple[KubeHome, str] | None:
        backend = self.backend
        if backend is None or backend.kube_home is None or backend.endpoints is None:
            return None
        return backend.kube_home, backend.endpoints.api

    def _kube_files(self, cluster: str, **kw: str) -> None:
        from ..kube.kubeconfig import shown

        old = self.store.value("kube_files")
        home = self._kube_home()
        if not isinstance(old, KubeFiles) or old.cluster != cluster:
            old = KubeFiles(cluster, config=shown(home[0].config) if home else "")
        new = replace(old, **kw)
        self.store.set("kube_files", new)
        # the history's kubectl lines: KUBECONFIG=~/.kube/<cluster>.yaml first while config has no such context
        if self.history is not None:
            self.history.kubeconfig_for(cluster, new.file if new.context != "in config" else "")

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
        elif not self.ui.busy("kube-context"):  # (asked once)
            self._kube_files(cluster, context="asking")
            self.ui.start(partial(self._ask_context, cluster, text, True), name="kube-context", group="kube-context")

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
        await until(lambda: not self.ui.asking() and not self.ui.busy(*BUSY_GROUPS), float("inf"), every=0.3)

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
        yes = await self.ui.ask(
            Confirm(f"Let your own kubectl use {cluster}?", body, yes="Add the context", no="Leave it")
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
        ref = self.store.meta.get("cluster")
        kube = self.kube
        if ref is None or ref.kind != "kubernetes" or kube is None or self.kube_for != ref.name:
            self.notify("Connect to a Kubernetes cluster first (s signs in).", timeout=6)
            return
        if kube.kubeconfig is not None:
            await self._ask_context(ref.name, kube.kubeconfig, False)

    def commands(self) -> Iterator[tuple[str, str, Callable[[], object]]]:
        """The palette's entries of this flow: (title, help, what it does)."""
        ref = self.store.meta.get("cluster")
        if ref is not None and ref.kind == "kubernetes" and self._kube_home() is not None:
            yield (
                "kubectl context",
                f"Add (or leave out) a {ref.name} context in ~/.kube/config for your own kubectl",
                lambda: self.ui.start(self._ask_context_again, name="kube-context", group="kube-context"),
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
            have = ", ".join(f"{clean(c.name)} ({clean(c.kind_said)})" for c in who.clusters) or "none"
            self.notify(
                f"No cluster named {clean(want)} in {clean(who.org_said)}. Its clusters: {have}.",
                severity="error",
                timeout=20,
            )
            self.handoff = Handoff(None, self.handoff.recipe if self.handoff else None)
        return found

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
                kind = ref.kind or f"kind-unknown ({ref.unknown('kind')})"
                where = f"{ref.name} is a {kind} cluster" if named_cluster else "no cluster here runs it"
                self.notify(
                    f"{clean(recipe.title)} is a {recipe.cluster_kind} recipe and {where}: it is not chosen.",
                    severity="error",
                    timeout=20,
                )
                return
            self.select_cluster(other)
        self._choose_recipe(recipe.name)


def plugin_question(cluster: str, spec: Any) -> Confirm:
    """Run a sign-in command ncui does not know? (Its words, its arguments, where the answer is kept.)"""
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
    return Confirm(f"Run {cluster}'s sign-in command?", body, yes="Run it", no="Do not run it")
