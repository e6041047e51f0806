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
    from ..api.client import NCClient
    from ..remote.research import Login
    from ..remote.runner import SshRunner
    from ..remote.sessions import NodeRow, NodeRun, NodeSessions
    from ..store import Store

STARTER_NAME = "nanogpt"  # the container the starter runs (nanogpt-node.sh), stopped with docker rm -f nanogpt
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
class RunImage(Question["tuple[str, str, str] | None"]):
    """Your own image and command, run detached on the node: (image, command, name), or None."""

    node: str
    image: str = ""
    name: str = "my-job"


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


def starter_refusal(node: NodeRow, e: Exception) -> Text:
    """The starter stopped by itself (docker missing from the node, no GPU): its own words, plainly, then what
    that means. Nothing was started; the node is billed as before."""
    from ..remote.runner import CommandFailed
    from ..textsafe import clean

    said = clean(e.stderr, multiline=True).strip() if isinstance(e, CommandFailed) else ""
    said = "\n".join(x.removeprefix("nanogpt-node: ") for x in said.splitlines() if x.strip()) or str(e)
    t = Text(f"{node.id} says:\n\n", style="bold")
    t.append(said + "\n\n", style="")
    t.append(
        "Nothing was started and nothing is running there. The node stays "
        f"{'assigned' if node.research else 'granted'} and billed until it is released {node.release_hint}.",
        style="",
    )
    return t


def _vendor(gpu_model: str | None) -> str:
    return "amd" if (gpu_model or "").upper().startswith(("MI", "AMD")) else "nvidia"


# ---- the flow -------------------------------------------------------------------------------------------


def vm_rows(store: Store) -> list[NodeRow] | None:
    """The VM cluster's live allocations as nodes (None while the capacity is unread)."""
    from datetime import timezone

    from ..remote.sessions import NodeRow
    from ..textsafe import clean

    cap = store.value("vm_capacity")
    if cap is None:
        return None
    user = clean(cap.environment.ssh_user or "")
    gone = cap.environment.unknown("ssh_user")  # (not sent: no node is reached as a guessed user; said why)
    out = []
    for a in cap.allocations:
        if a.state in ("released", "reclaimed"):
            continue
        since = a.granted_at.astimezone(timezone.utc).strftime("%H:%M") if a.granted_at else ""
        out.append(
            NodeRow(
                clean(a.id),
                clean(a.state_said),
                a.gpus,
                clean(a.gpu_model),
                clean(a.public_ip) if a.public_ip and not gone else None,
                a.ssh_port,
                user,
                since,
                note=f"its ssh login is unknown: {gone}" if gone else "",
            )
        )
    return out


class NodeFlow(Flow):
    """The nodes' ssh sessions, a connect, the starter, your own image, stopping a run, the copy-off. Given: the
    National Compute client (``nc``: the catalog's stock image) and what the session remembers of a job ncui
    started (``remember_job``: the next session's report knows what to stop)."""

    def __init__(
        self,
        ctx: Context,
        *,
        nc: Callable[[], NCClient | None],
        remember_job: Callable[..., None],
    ) -> None:
        super().__init__(ctx)
        self._nc, self._remember_job = nc, remember_job
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
                history=self.history,
            )
        self._sessions.history = self.history  # (the session's, once connected)
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

    # ---- runs: the starter, your own image, stop --------------------------------------------------------

    def _access(self) -> str:
        endpoints = self.backend.endpoints if self.backend is not None else None
        return str(endpoints.access) if endpoints is not None else ""

    async def _busy(self, r: NodeRow) -> bool:
        run = self.sessions.runs.get(r.id)
        if run is not None:
            await self.ui.ask(
                Results(
                    f"{run.name} runs on {r.id}",
                    Text(f"Stop it first (x: docker rm -f {run.name}), then start another run."),
                )
            )
            return True
        return False

    def _started(self, r: NodeRow, run: NodeRun, recipe: str | None) -> None:
        self.sessions.runs[r.id] = run
        self._remember_job({"container": run.name, "recipe": recipe, "node": r.id}, new=True)
        self.notify(f"Started {run.name} on {r.id}; following its log.", timeout=5)

    async def stock_image(self, gpu_model: str | None) -> str:
        """The stock PyTorch image, as the catalog's Train recipe names it (``image:`` of
        nanogpt-job[-vendor].yaml); '' when the catalog cannot be read."""
        import re

        from ..api.errors import NCError

        nc = self._nc()
        if nc is None:
            return ""
        try:
            f = await nc.recipe_file("nanogpt-job", _vendor(gpu_model))
        except NCError:
            return ""
        m = re.search(r"^\s*image:\s*['\"]?([^\s'\"]+)", f.text, re.M)
        return m.group(1) if m else ""

    async def run_starter(self, r: NodeRow, failed: Callable[[], object] | None = None) -> bool:
        """The guide's starter on ``r``, asked first: True once it started (recorded, remembered, said)."""
        from ..remote.node import BadInput, start_starter, starter_command
        from ..remote.runner import CommandFailed, RemoteError
        from ..remote.sessions import NodeRun

        try:
            line = starter_command(self._access())
        except BadInput as e:
            self.notify(str(e), severity="error", timeout=8)
            return False
        runner = await self.connected(r, failed)
        if runner is None or await self._busy(r):
            return False
        if not await self.ui.ask(
            Confirm(
                f"Run the starter on {r.id}?",
                f"On {runner.where}:\n\n  {line}\n\nThe guide's starter: it fetches nanoGPT under ~/first-job and runs "
                f"it detached in the stock PyTorch container named {STARTER_NAME}, on every GPU, time-boxed to about "
                "an hour; its log is ~/first-job/nanogpt.out. The node is billed as it is now, running or not"
                + (", until it is released through Marshall." if r.research else "."),
                yes="Run it",
                no="Cancel",
            )
        ):
            return False
        try:
            await start_starter(runner, self._access())
        except CommandFailed as e:  # the starter said why it stopped (docker missing, no GPU): its words, plainly
            await self.ui.ask(Results(f"The starter did not start on {r.id}", starter_refusal(r, e)))
            return False
        except RemoteError as e:
            await self.ui.ask(Results(f"The starter did not start on {r.id}", str(e)))
            return False
        self._started(r, NodeRun(STARTER_NAME, True), "nanogpt-node")
        return True

    async def run_own(self, r: NodeRow, failed: Callable[[], object] | None = None) -> bool:
        """The human's own image and command on ``r``, asked for then asked about: True once it started."""
        from ..remote.node import docker_run, docker_run_command
        from ..remote.runner import RemoteError
        from ..remote.sessions import NodeRun

        runner = await self.connected(r, failed)
        if runner is None or await self._busy(r):
            return False
        image = await self.stock_image(r.gpu_model)
        got = await self.ui.ask(RunImage(r.id, image))
        if got is None:
            return False
        image, command, name = got
        line = docker_run_command(image, command, name)
        if not await self.ui.ask(
            Confirm(
                f"Run your container on {r.id}?",
                f"Image: {image}\nCommand: {command or '(the image’s own)'}\n\nSent to {runner.where}, as one line "
                f"(every word quoted):\n\n  {line}\n\nIt runs detached on every GPU of the node; x stops it "
                f"(docker rm -f {name}). The node is billed as it is now, running or not.",
                yes="Run it",
                no="Cancel",
            )
        ):
            return False
        try:
            await docker_run(runner, image, command, name)
        except RemoteError as e:
            await self.ui.ask(Results(f"{name} did not start on {r.id}", str(e)))
            return False
        self._started(r, NodeRun(name, False, image, command), None)
        return True

    async def stop_run(
        self,
        r: NodeRow,
        run: NodeRun,
        failed: Callable[[], object] | None = None,
        still_runs: Callable[[], object] | None = None,
    ) -> bool:
        """``docker rm -f`` what runs on ``r``, asked first: True once stopped (said, forgotten); False when kept,
        not connected, or the stop failed (``still_runs()``, then said)."""
        from ..remote.node import stop, stop_command
        from ..remote.runner import RemoteError

        if not await self.ui.ask(
            Confirm(
                f"Stop {run.name} on {r.id}?",
                f"Sent: {stop_command(run.name)}\n\nThe container stops and is removed. Files it wrote on the node's "
                f"disk stay until the node is released. The node stays {'assigned' if r.research else 'granted'} and "
                f"billed until it is released {r.release_hint}.",
                yes="Stop it",
                no="Keep it",
            )
        ):
            return False
        runner = await self.connected(r, failed)
        if runner is None:
            return False
        run.stopping = True  # the run check must not take the stop for the run ending by itself
        try:
            await stop(runner, run.name)
        except RemoteError as e:
            run.stopping = False
            if still_runs is not None:
                still_runs()
            await self.ui.ask(Results(f"{run.name} was not stopped", str(e)))
            return False
        self.sessions.runs.pop(r.id, None)
        self.notify(f"Stopped {run.name} on {r.id}. The node is still billed until it is released {r.release_hint}.")
        return True

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
