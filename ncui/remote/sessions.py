"""The app's ssh connections to nodes (``NodeSessions``: one ``SshRunner`` per node, ncui's own known_hosts, the
human's keys and agent), what they are to (``NodeRow``) and what ncui started there (``NodeRun``). No Textual
here: the first-use host-key question is the caller's (``ask_host_key``), as are the toasts (``notify``) and the
background closes (``background``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..textsafe import clean

if TYPE_CHECKING:
    from ..history import Recorder
    from .node import _RemoteFollower
    from .research import SshSetup
    from .runner import SshRunner

__all__ = ["NodeRow", "NodeRun", "NodeSessions", "host_key_question"]


@dataclass(frozen=True)
class NodeRow:
    """A node ncui can reach over ssh: ``id`` names it (an allocation id), ``host``/``port``/``user`` log in."""

    id: str
    state: str
    gpus: int = 0
    gpu_model: str = ""
    host: str | None = None
    port: int = 22
    user: str = ""
    since: str = ""  # when it was granted ("09:14"), or ""
    kind: str = "vm"  # "vm" (a VM cluster's allocation) or "research" (a public-research node)
    alias: str = ""  # its Host name in the box's ssh_config (research-node), where ssh -G finds its key and pin
    note: str = ""  # why it cannot be reached yet (a research node's queue position), or where it came from

    @property
    def research(self) -> bool:
        return self.kind == "research"

    @property
    def release_hint(self) -> str:
        """How the node stops being billed: Lease's release on a VM cluster; only Marshall for a research node."""
        if self.research:
            return "through Marshall's workspace (public_research_release); ncui never releases it"
        return "on Lease (5, then R)"

    @property
    def reachable(self) -> bool:
        return self.state == "active" and bool(self.host)

    @property
    def login(self) -> str:
        """The command a person types: ``ssh [-p PORT] user@host``."""
        if not self.host:
            return ""
        return f"ssh{'' if self.port == 22 else f' -p {self.port}'} {self.user}@{self.host}"


@dataclass
class NodeRun:
    """What ncui started on a node: the starter (its log is ``~/first-job/nanogpt.out``) or a container."""

    name: str  # the container's name (docker rm -f NAME stops it)
    starter: bool
    image: str = ""
    command: str = ""
    stopping: bool = False  # x was answered yes and docker rm -f is on its way: its end is no run's end

    def label(self) -> str:
        return self.name


def host_key_question(node: NodeRow, fingerprint: str, known_hosts: Path) -> str:
    """The first-use question: the fingerprint, what a yes does, and that the safe answer is no."""
    return (
        f"ncui has never connected to {node.id} ({node.user}@{node.host}, port {node.port}). It presents this "
        f"host key:\n\n  {fingerprint}\n\n"
        "Trust it only if that is the node you asked for (a node National Compute just granted you is). A yes "
        f"remembers it in {known_hosts}, and ncui then refuses this address if its key ever changes. "
        "A no connects nothing and remembers nothing."
    )


class NodeSessions:
    """The app's ssh connections, one ``SshRunner`` per node, made on first use; the host key of a node never
    seen is asked about (``ask_host_key(node, fingerprint, known_hosts)``: the safe answer is no). ``close()`` when
    the app ends."""

    def __init__(
        self,
        known_hosts: Path,
        ask_host_key: Callable[[NodeRow, str, Path], Awaitable[bool]],
        notify: Callable[[str], None],
        background: Callable[[Callable[[], Coroutine[Any, Any, object]]], object],
        history: Recorder | None = None,
    ) -> None:
        self.known_hosts = known_hosts
        self.history = history  # what the connections run, recorded as its commands (h)
        self._ask_host_key, self._notify, self._background = ask_host_key, notify, background
        self.runners: dict[str, tuple[NodeRow, SshRunner]] = {}
        self.runs: dict[str, NodeRun] = {}  # node id -> what ncui started there
        self.followers: dict[str, _RemoteFollower] = {}  # node id -> the follower of its log

    def runner(self, node: NodeRow, setup: SshSetup | None = None) -> SshRunner:
        """The node's runner. ``setup`` (a research node): the identities ssh would offer it, and the known_hosts
        files that pin its host key: a pinned key is trusted without the question, another key is refused."""
        from .runner import HostKeyChanged, SshRunner

        held = self.runners.get(node.id)
        if held is not None and (held[0].host, held[0].port, held[0].user) == (node.host, node.port, node.user):
            return held[1]
        if held is not None:
            self._background(held[1].close)
        known = self.known_hosts

        async def ask(host: str, port: int, fingerprint: str) -> bool:
            if setup is not None:
                from .research import pinned_keys

                pins = pinned_keys(setup.known_hosts, host, port)
                fps = sorted({k.get_fingerprint("sha256") for k in pins})
                if fingerprint in fps:
                    self._notify(f"{node.id}: its host key {fingerprint} is pinned where ssh keeps it; trusted.")
                    return True
                if fps:
                    files = ", ".join(str(p) for p in setup.known_hosts)
                    raise HostKeyChanged(
                        f"{node.user}@{node.host} presents the host key {clean(fingerprint)}, but {files} pins "
                        f"{', '.join(fps)} for it. ncui refused to connect: it could be another machine answering at "
                        "this address.",
                        fps,
                        fingerprint,
                    )
            return bool(await self._ask_host_key(node, clean(fingerprint), known))

        keys = list(setup.identities) if setup is not None and setup.identities else None
        r = SshRunner(
            node.host or "",
            node.port,
            node.user,
            known_hosts=known,
            confirm_host_key=ask,
            client_keys=keys,
            history=self.history,
        )
        self.runners[node.id] = (node, r)
        return r

    def connected(self, node_id: str) -> bool:
        held = self.runners.get(node_id)
        return held is not None and held[1].connected

    async def forget(self, node_id: str) -> None:
        """The node is gone (released, reclaimed): close its connection, forget what ran there."""
        held = self.runners.pop(node_id, None)
        self.runs.pop(node_id, None)
        follower = self.followers.pop(node_id, None)
        if follower is not None:
            follower.stop()
        if held is not None:
            await held[1].close()

    async def close(self) -> None:
        for node_id in list(self.runners):
            await self.forget(node_id)
