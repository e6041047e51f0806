"""Memory between sessions (``ncui/memory.py``) and reading the report (``ncui/report.py``), as one flow: what ncui
remembers of the organization (the active cluster, the ceiling, the last job on each cluster and its first loss
lines), and ``report.collect`` for the active cluster through this session's clients. No Textual here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import Context, Flow

if TYPE_CHECKING:
    from ..kube.client import KubeClient
    from ..remote.runner import Runner


class RecallFlow(Flow):
    """What ncui remembers between sessions, and the report read through this session's clients.

    ``kube_signed_in(name)``: the cluster's client when it needs no sign-in question; ``slurm_runner(name)``: the
    Slurm login node's runner when ``name`` is the active Slurm cluster; ``node_sessions()``: the nodes' ssh pool
    (a node Workloads is connected to is read through it); ``box_ssh_config()``: the box's ssh_config."""

    def __init__(
        self,
        ctx: Context,
        *,
        kube_signed_in: Callable[[str], Awaitable[KubeClient | None]],
        slurm_runner: Callable[[str], Awaitable[Runner | None]],
        node_sessions: Callable[[], Any],
        box_ssh_config: Callable[[], Path | None],
    ) -> None:
        super().__init__(ctx)
        self.kube_signed_in = kube_signed_in
        self.slurm_runner = slurm_runner
        self.node_sessions = node_sessions
        self.box_ssh_config = box_ssh_config
        self._losses_kept = 0  # first loss lines remembered for the remembered job (memory.FIRST_LINES at most)

    # ---- memory between sessions (ncui/memory.py) ---------------------------------------------------------

    def memory_key(self) -> str | None:
        """The service and organization ncui remembers things under (None before whoami is read)."""
        from ..memory import key_for

        who = self.store.value("whoami")
        backend = self.backend
        if who is None or backend is None or backend.endpoints is None:
            return None
        return key_for(backend.endpoints.api, who.org_id)

    def remembered(self) -> dict[str, Any]:
        from .. import memory

        key = self.memory_key()
        return memory.recall(key) if key is not None else {}

    def remember(self, **fields: Any) -> None:
        from .. import memory

        key = self.memory_key()
        if key is not None:
            memory.remember(key, **fields)
        self.state_notices()

    def remembered_job(self) -> dict[str, Any] | None:
        """The last job remembered on the active cluster (the research node's: cluster "")."""
        ref = self.store.meta.get("cluster")
        jobs = self.remembered().get("jobs") or {}
        job = jobs.get(ref.name if ref is not None else "")
        return job if isinstance(job, dict) else None

    def durations(self, recipe: str) -> list[float]:
        """How long this organization's earlier runs of ``recipe`` took, minutes (the quote's duration when the
        catalog says none)."""
        from .. import memory

        key = self.memory_key()
        return memory.durations(key, recipe) if key is not None else []

    def remember_job(self, fields: dict[str, Any], *, new: bool = False) -> None:
        """What ncui applied, submitted or started on the active cluster (``new``), or learned of it since."""
        from .. import memory

        key, ref = self.memory_key(), self.store.meta.get("cluster")
        if key is None:
            return
        if new:
            self._losses_kept = 0
            fields = {
                "applied_by": "ncui",
                "applied_at": memory.iso(self.backend.now() if self.backend else None),
            } | fields
        memory.remember_job(key, ref.name if ref is not None else "", fields, new=new)
        self.state_notices()

    def remember_loss_lines(self, owner: str, lines: list[str]) -> None:
        """A log pane saw loss lines of ``owner`` (a pod, a container, a Slurm job id): the first ones are kept
        for the remembered job, once; and the report is read once then (the node's arrival with them)."""
        from .. import memory
        from ..logfollow import parse_loss

        job = self.remembered_job()
        if job is None or self._losses_kept >= memory.FIRST_LINES:
            return
        obj = job.get("object") or ["", ""]
        pod = bool(obj[1]) and owner.startswith(f"{obj[1]}-")  # (a Kubernetes job's pod: its lines say whose)
        ours = owner == job.get("container") or owner == str(job.get("slurm_job")) or pod
        have = list(job.get("first_loss_lines") or ()) if not pod or job.get("first_loss_pod") in (None, owner) else []
        if not ours or len(have) >= memory.FIRST_LINES:
            self._losses_kept = memory.FIRST_LINES
            return
        found = have + [x for x in lines if parse_loss(x) is not None][: memory.FIRST_LINES - len(have)]
        self._losses_kept = len(found)
        self.remember_job({"first_loss_lines": found} | ({"first_loss_pod": owner} if pod else {}))
        if not have:  # the first loss line: the node is there; the report remembers its arrival
            self.ui.start(self.read_report, name="report", group="report")
            if found:
                from ..notify import Moment

                self.moment(Moment("loss", "First loss line", f"{owner}: {found[0]}"))

    def state_notices(self) -> None:
        """A state file set aside (corrupt, unreadable, another version): said once, as a warning."""
        from .. import statefile

        for said in statefile.notices():
            self.notify(said, title="State file set aside", severity="warning", timeout=20)

    # ---- the report (ncui/report.py) -----------------------------------------------------------------------

    async def read_report(self) -> dict[str, Any] | None:
        """``report.collect`` for the active cluster through this session's clients (its kubectl sign-in, its
        Slurm login node, the nodes' ssh pool); None before ncui has connected."""
        from ..report import collect, node_runner

        backend = self.backend
        nc = backend.nc if backend is not None else None
        ref = self.store.meta.get("cluster")
        if nc is None or backend is None:
            return None

        made: list[Any] = []  # runners opened for this read alone (a node Workloads is not connected to)

        async def node(node_id: str, host: str, port: int, user: str, alias: str) -> Any:
            sessions = self.node_sessions()
            if sessions.connected(node_id):
                return sessions.runners[node_id][1]
            runner = await node_runner(
                host,
                port,
                user,
                alias=alias,
                ssh_config=self.box_ssh_config() if alias else None,
                known_hosts=backend.known_hosts_file(),
                history=self.history,
            )
            made.append(runner)
            return runner

        try:
            report = await collect(
                nc,
                now=backend.now(),
                cluster=ref.name if ref else None,
                kube=self.kube_signed_in,
                slurm=self.slurm_runner,
                node=node,
                token_from=self.store.meta.get("token_from"),
                history=self.history,
            )
        finally:
            for runner in made:
                await runner.close()
        self.state_notices()
        return report
