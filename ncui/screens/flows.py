"""TRANSITIONAL (issue 22): what is left of FlowsMixin once the apply and the limit price became flow objects
(``ncui/flows/apply.py`` ApplyFlow, ``ncui/flows/lease.py`` LeaseFlow): the National Compute client check the
other mixins still call (``_client``), and the kube client, which moves to ConnectFlow (``ncui/flows/connect.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..api.errors import NCError

if TYPE_CHECKING:
    from textual.app import App

    from ..api.client import NCClient
    from ..backend import Backend
    from ..flows.lease import LeaseFlow
    from ..kube.client import KubeClient
    from ..store import Store

    _AppBase = App[None]
else:
    _AppBase = object


class FlowsMixin(_AppBase):
    """Mixed into NCApp (TRANSITIONAL: goes with the last mixins)."""

    if TYPE_CHECKING:  # NCApp's, which these use
        store: Store
        backend: Backend | None
        lease: LeaseFlow
        _kube: KubeClient | None
        _kube_for: str | None

        async def sign_in_flow(
            self, announce: bool = False, link: str | None = None, kube: KubeClient | None = None
        ) -> bool: ...

        def start_watchers(self, kube: KubeClient) -> None: ...

        def kube_saved(self, cluster: str, text: str) -> None: ...  # screens/connect.py

        def kube_connected(self, cluster: str, text: str) -> None: ...

        async def plugin_cleared(self, cluster: str, text: str, *, ask_again: bool = False) -> bool: ...

    def _client(self) -> NCClient | None:
        """TRANSITIONAL: ``Flow.client`` (ncui/flows/base.py), for the mixins that still call it."""
        return self.lease.client()

    async def kube_client(self) -> KubeClient | None:
        """A signed-in client for the active cluster (runs the sign-in when needed); None on failure."""
        from ..kube.client import KubeClient, KubeError, NotSignedIn

        ref = self.store.meta.get("cluster")
        if ref is None or ref.kind != "kubernetes":
            return None
        if self._kube is not None and self._kube_for == ref.name:
            if not self._kube.gate.is_open:  # its sign-in expired: the link is up (s shows it again)
                self.notify(
                    f"The sign-in to {ref.name} expired: approve the new link (s shows it), then try again.",
                    severity="warning",
                    timeout=10,
                )
                return None
            return self._kube
        nc = self._client()
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
            kube = KubeClient.from_kubeconfig(text, history=self.backend.history if self.backend else None)
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
        if self._kube is not None:
            await self._kube.aclose()
        self._kube, self._kube_for = kube, ref.name
        self.store.set("kube_signin", "signed in")
        self.start_watchers(kube)
        self.kube_connected(ref.name, text)  # its context in ~/.kube/config: asked once
        return kube
