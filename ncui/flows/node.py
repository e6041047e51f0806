"""Nodes over ssh (``NodeFlow``, the App's ``self.nodes``): the session pool the node view and the VM release share
(``remote/sessions.py``), a connect with its first-use host-key question, and the copy-off (the release's, and a
research node's results) with its progress (``remote/copyoff.py``). No Textual here.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text

from .base import Context, Flow
from .ui import Confirm, Question, Results

if TYPE_CHECKING:
    from ..api import models as m
    from ..remote.research import Login
    from ..remote.runner import SshRunner
    from ..remote.sessions import NodeRow, NodeSessions
    from ..store import Store

# a research node's results: the guide's two scp lines
RESULTS = ("~/first-job/nanoGPT/out-shakespeare-char", "~/first-job/nanogpt.out")
TYPED = "research_typed"  # the store slice of the research node typed in (a Login), this session
METER = "The meter runs until the node is released through Marshall; the run ending does not release it."


# ---- the questions --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CopyOffForm(Question["tuple[str, str] | None"]):
    """Which folder (or items) of the node(s) to copy off, and where to: (remote, local), or None (skip)."""

    nodes: tuple[str, ...]
    remote: str = "~/first-job"
    local: str = ""
    intro: str = ""


class CopyBoard:
    """A copy's progress as the question shows it: bytes so far (``progress``), then what was copied (``finish``).
    The flow writes it; the question's modal reads it (``watch``)."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []  # every (bytes done, bytes in all) told
        self.end: Text | None = None
        self._on_progress: Callable[[int, int], None] | None = None
        self._on_finish: Callable[[Text], None] | None = None

    def watch(self, on_progress: Callable[[int, int], None], on_finish: Callable[[Text], None]) -> None:
        self._on_progress, self._on_finish = on_progress, on_finish
        if self.seen:
            on_progress(*self.seen[-1])
        if self.end is not None:
            on_finish(self.end)

    def progress(self, done: int, total: int) -> None:
        self.seen.append((done, total))
        if self._on_progress is not None:
            self._on_progress(done, total)

    def finish(self, text: Text) -> None:
        self.end = text
        if self._on_finish is not None:
            self._on_finish(text)


@dataclass(frozen=True)
class CopyProgress(Question[None]):
    """A copy off a node: bytes so far, then where it went (or why not); answered (Enter) once it is done."""

    title: str
    board: CopyBoard = field(compare=False)


@dataclass(frozen=True)
class AddNode(Question["Login | None"]):
    """A research node's login typed in as ``user@ip`` (port 22; the box's own ports allowed)."""

    box_ports: Collection[int] = ()


# ---- the words ------------------------------------------------------------------------------------------


def connect_failure(node: NodeRow, e: Exception) -> tuple[str, Text]:
    """A failed connection as a title and a body: the runner's sentence, and what the human can do."""
    from ..remote.runner import AuthFailed, HostKeyChanged, HostKeyUnknown

    t = Text(str(e))  # the runner's messages are cleaned where they are made
    if isinstance(e, HostKeyChanged):
        t.append("\n\nNothing was sent to the node.", style="bold")
        return f"Refused: the host key of {node.id} changed", t
    if isinstance(e, AuthFailed) and node.research:
        t.append(
            "\n\nThe workspace's key is on the node from its assignment; your own keys get in when they were "
            "registered with the organization before the node was assigned."
        )
        return f"{node.id} refused your keys", t
    if isinstance(e, AuthFailed):
        t.append(
            "\n\nRegister one of these keys with the cluster: k on Lease (5). Keys install on nodes granted after "
            "they are registered, never on a running node: a node granted before your key was registered needs a "
            "new grant (release it and declare again) to get it."
        )
        return f"{node.id} refused your keys", t
    if isinstance(e, HostKeyUnknown):
        return f"Not connected to {node.id}", t
    return f"Cannot connect to {node.id}", t


# ---- the flow -------------------------------------------------------------------------------------------


def vm_rows(store: Store) -> list[NodeRow] | None:
    """The VM cluster's live allocations as nodes (None while the capacity is unread)."""
    from datetime import timezone

    from ..remote.sessions import NodeRow
    from ..textsafe import clean

    cap = store.value("vm_capacity")
    if cap is None:
        return None
    user = clean(cap.environment.ssh_user)
    out = []
    for a in cap.allocations:
        if a.state in ("released", "reclaimed"):
            continue
        since = a.granted_at.astimezone(timezone.utc).strftime("%H:%M") if a.granted_at else ""
        out.append(
            NodeRow(
                clean(a.id),
                clean(a.state),
                a.gpus,
                clean(a.gpu_model),
                clean(a.public_ip) if a.public_ip else None,
                a.ssh_port,
                user,
                since,
            )
        )
    return out


class NodeFlow(Flow):
    """The nodes' ssh sessions, a connect, the copy-off."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._sessions: NodeSessions | None = None

    @property
    def sessions(self) -> NodeSessions:
        """The ssh connections to the nodes (the node view and the release's copy-off share them)."""
        if self._sessions is None:
            from ..config import known_hosts_path
            from ..remote.sessions import NodeSessions

            backend = self.backend
            self._sessions = NodeSessions(
                backend.known_hosts_file() if backend is not None else known_hosts_path(),
                self._ask_host_key,
                lambda said: self.notify(said),
                lambda close: self.ui.start(close, name="node-close", group="node-close"),
            )
        return self._sessions

    async def close(self) -> None:
        if self._sessions is not None:
            await self._sessions.close()

    async def _ask_host_key(self, node: NodeRow, fingerprint: str, known_hosts: Path) -> bool:
        from ..remote.sessions import host_key_question

        return await self.ui.ask(
            Confirm(
                "A node's host key, the first time",
                host_key_question(node, fingerprint, known_hosts),
                yes="Trust and connect",
                no="Do not connect",
            )
        )

    def ssh_config(self) -> Path | None:
        from ..remote.research import box_ssh_config

        return box_ssh_config(self.backend)

    async def connected(self, r: NodeRow, failed: Callable[[], object] | None = None) -> SshRunner | None:
        """The node's runner, connected (the host key asked about the first time); None when it failed (said,
        after ``failed()``)."""
        from ..remote.runner import RemoteError

        setup = None
        if r.research and not self.sessions.connected(r.id):
            from ..remote.research import ssh_setup

            config = self.ssh_config() if r.alias else None
            setup = await ssh_setup(r.alias if config is not None else r.host or "", r.user, r.port, config)
        runner = self.sessions.runner(r, setup)
        try:
            await runner.connect()
        except RemoteError as e:
            if failed is not None:
                failed()  # (a refused or dropped connection is no longer "connected" where it is shown)
            title, body = connect_failure(r, e)
            await self.ui.ask(Results(title, body))
            return None
        return runner

    async def add_node(self) -> Login | None:
        """A research node typed in as ``user@ip`` (the box's own ports allowed): kept for this session."""
        from ..remote.research import config_ports

        login = await self.ui.ask(AddNode(config_ports(self.ssh_config())))
        if login is not None:
            self.store.set(TYPED, login)
        return login

    # ---- the copy-off ---------------------------------------------------------------------------------

    async def copy_off(self, runner: SshRunner, node: NodeRow, remotes: list[str], dest: Path) -> int:
        """Copy ``remotes`` (files or folders) off one node into ``dest`` over SFTP, with one progress question
        for them all (bytes so far of every item started), then what was copied and what was not; returns the
        bytes copied once the human pressed Enter. The VM release and the research node's copy-off share it."""
        import asyncio

        from ..remote.copyoff import copy_off

        what = remotes[0] if len(remotes) == 1 else " and ".join(remotes)
        board = CopyBoard()
        closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.ui.ask_then(
            CopyProgress(f"Copying {what} off {node.id} into {dest}", board),
            lambda _none: None if closed.done() else closed.set_result(None),
        )
        got = await copy_off(runner, remotes, dest, progress=board.progress)
        end = Text()
        if got.done:
            where = str(got.done[0]) if len(got.done) == 1 else f"{dest}: " + ", ".join(p.name for p in got.done)
            end.append(f"Copied {got.copied:,} bytes into {where}.", style="green")
        for remote, e in got.failed:
            end.append("\n" if end else "")
            if remote is None:
                strerror = e.strerror if isinstance(e, OSError) else None
                end.append(f"Not copied: cannot make {dest}: {strerror or e}.", style="bold red")
            else:
                end.append_text(Text.assemble((f"{remote}: not copied. ", "bold red"), connect_failure(node, e)[1]))
        end.append("\n\nEnter goes on.")
        board.finish(end)
        await closed
        return got.copied

    async def vm_copy_off(self, cap: m.VmCapacity) -> None:
        """Before a release: offer to copy a folder off each active node (SFTP), with its progress in bytes."""
        nodes = [r for r in (vm_rows(self.store) or []) if r.reachable]
        live = {a.id for a in cap.allocations if a.state == "active"}
        nodes = [r for r in nodes if r.id in live]
        if not nodes:
            return
        got = await self.ui.ask(CopyOffForm(tuple(r.id for r in nodes)))
        if got is None:
            return
        remote, local = got
        for r in nodes:
            dest = Path(os.path.expanduser(local.replace("{node}", r.id)))
            await self.copy_off(self.sessions.runner(r), r, [remote], dest)

    async def results_copy_off(self, r: NodeRow) -> None:
        """A research node's results: the copy-off form (the guide's two items), then the copy with its progress,
        then the meter's reminder."""
        got = await self.ui.ask(
            CopyOffForm(
                (r.id,),
                " ".join(RESULTS),
                intro=f"The node's disk dies with the lease. Copy the checkpoint and the log off {r.id} (SFTP), or "
                "skip. "
                "Several items: separate them with spaces. They land inside the destination.",
            )
        )
        if got is None:
            return
        runner = await self.connected(r)
        if runner is None:
            return
        remote, local = got
        try:
            items = shlex.split(remote)
        except ValueError:
            items = remote.split()
        dest = Path(os.path.expanduser(local.replace("{node}", r.id)))
        copied = await self.copy_off(runner, r, items, dest)
        if copied:
            self.notify(f"{METER} ncui never releases it.", timeout=10)
