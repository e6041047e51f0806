"""ncui running on the login node itself: ``LocalRunner`` runs the same command lines as ``SshRunner``, here.

``r = LocalRunner()``; ``await r.run("squeue --me")`` → ``Result``; ``async for lines in r.follow("tail -F f")``;
``await r.copy_from("~/first-job/nanogpt.out", Path("."))``; ``await r.close()``. Each command is one
``/bin/sh -c`` argument (what sshd does with a command), started in the home folder (where an ssh session
starts), in its own process group: leaving ``follow`` early, a timeout or ``close()`` ends the command and
whatever it started. Same ``Result``, same errors (``CommandFailed``, ``RemoteError``, ``CopyFailed``) and the
same sentences as over ssh, with ``where`` naming this machine.

``on_login_node()`` says whether ncui runs on a Slurm login node (``sbatch`` on PATH and a Slurm
configuration here); ``NCUI_LOGIN_NODE=1``/``0`` (or ``force``, a command-line flag) overrides it.
No Textual here.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..backoff import within
from ..lines import LineSplitter
from ..textsafe import clean
from .runner import _READ, MAX_OUTPUT, CopyFailed, Progress, RemoteError, Result, _failed, _short, _text, drain_bounded

if TYPE_CHECKING:
    from ..history import Recorder

__all__ = ["LOGIN_NODE_ENV", "LocalRunner", "on_login_node", "slurm_config"]

LOGIN_NODE_ENV = "NCUI_LOGIN_NODE"  # "1": ncui is on the login node; "0": it is not (whatever it looks like)
SLURM_CONFS = ("/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/run/slurm/conf/slurm.conf")


def slurm_config(env: Mapping[str, str] | None = None) -> str | None:
    """Where this machine's Slurm configuration is (``SLURM_CONF``, the usual paths, a configless cache)."""
    env = os.environ if env is None else env
    for path in (env.get("SLURM_CONF", ""), *SLURM_CONFS):
        if path and os.path.isfile(path):
            return path
    return None


def on_login_node(force: bool | None = None, env: Mapping[str, str] | None = None) -> bool:
    """True when ncui should run Slurm's commands here rather than over ssh: ``force`` when given, else
    ``NCUI_LOGIN_NODE`` (1/0, yes/no, true/false) when set, else ``sbatch`` on PATH and a Slurm configuration."""
    if force is not None:
        return force
    env = os.environ if env is None else env
    said = env.get(LOGIN_NODE_ENV, "").strip().lower()
    if said in ("1", "yes", "true", "on"):
        return True
    if said in ("0", "no", "false", "off"):
        return False
    return shutil.which("sbatch", path=env.get("PATH")) is not None and slurm_config(env) is not None


class LocalRunner:
    """This machine as a ``Runner``. ``env``: variables added to the commands' environment; ``cwd``: where
    commands start (the home folder by default, as over ssh); ``history``: where ``run_noted`` records."""

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        shell: str = "/bin/sh",
        history: Recorder | None = None,
    ):
        self.history = history
        self.env = {**os.environ, **(env or {})}
        self.home = Path(self.env.get("HOME") or os.path.expanduser("~"))
        self.cwd = cwd or self.home
        self.shell = shell
        self.where = f"this machine ({clean(socket.gethostname()) or 'localhost'})"
        self._procs: set[asyncio.subprocess.Process] = set()
        self._closed = False

    async def __aenter__(self) -> LocalRunner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def shell_line(self, cmd: str = "") -> str:
        """On the login node a command is typed as it is."""
        return cmd

    async def connect(self) -> None:
        """Nothing to connect (``SshRunner`` has the same call)."""

    async def close(self) -> None:
        """End every command still running (the runner can no longer be used)."""
        self._closed = True
        for proc in list(self._procs):
            await self._end(proc)

    async def _start(self, cmd: str, stderr: int) -> asyncio.subprocess.Process:
        if self._closed:
            raise RemoteError(f"The runner for {self.where} was closed.")
        try:
            proc = await asyncio.create_subprocess_exec(
                self.shell,
                "-c",
                cmd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,  # its own process group: ended whole
            )
        except OSError as e:
            raise RemoteError(f"Cannot run {_short(cmd)} on {self.where}: {clean(e.strerror or str(e))}.") from None
        self._procs.add(proc)
        return proc

    async def _end(self, proc: asyncio.subprocess.Process) -> None:
        """Stop the command and what it started (TERM, then KILL after 3 s) and reap it."""
        self._procs.discard(proc)
        if proc.returncode is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except (ProcessLookupError, PermissionError):
                    break
                try:
                    await within(proc.wait(), 3)
                    break
                except (asyncio.TimeoutError, TimeoutError):
                    continue
        await proc.wait()

    async def run(
        self, cmd: str, *, check: bool = False, timeout: float | None = None, max_output: int = MAX_OUTPUT
    ) -> Result:
        """As ``SshRunner.run``: the status and (bounded) output; ``check`` raises ``CommandFailed``, a
        ``timeout`` ends the command and raises ``RemoteError``."""
        proc = await self._start(cmd, asyncio.subprocess.PIPE)
        out, err = bytearray(), bytearray()
        try:
            cut = await within(drain_bounded(((proc.stdout, out), (proc.stderr, err)), max_output), timeout)
            await proc.wait()
        except (asyncio.TimeoutError, TimeoutError):
            raise RemoteError(f"{_short(cmd)} did not finish on {self.where} within {timeout:g} s.") from None
        finally:
            await self._end(proc)
        status = proc.returncode if proc.returncode is not None and proc.returncode >= 0 else -1
        res = Result(status, _text(out), _text(err), cut)
        if check and res.exit_status != 0:
            raise _failed(cmd, self.where, res.exit_status, res.stderr)
        return res

    async def follow(self, cmd: str, *, merge_stderr: bool = False) -> AsyncGenerator[list[str], None]:
        """As ``SshRunner.follow``: batches of lines as they come; leaving the loop ends the command; a status
        other than 0 at the end raises ``CommandFailed``."""
        proc = await self._start(cmd, asyncio.subprocess.STDOUT if merge_stderr else asyncio.subprocess.PIPE)
        err = bytearray()
        errs: asyncio.Task[None] | None = None
        if not merge_stderr and proc.stderr is not None:
            stderr = proc.stderr

            async def drain_err() -> None:
                while data := await stderr.read(_READ):
                    err.extend(data[: max(0, 8192 - len(err))])

            errs = asyncio.ensure_future(drain_err())
        split = LineSplitter()
        assert proc.stdout is not None
        try:
            while data := await proc.stdout.read(_READ):
                if lines := split.feed(data):
                    yield lines
            if tail := split.end():
                yield tail
            status = await proc.wait()
            if status != 0:
                if errs is not None:
                    await asyncio.wait({errs}, timeout=1)
                raise _failed(cmd, self.where, status if status >= 0 else -1, _text(err))
        finally:
            if errs is not None:
                errs.cancel()
            await self._end(proc)

    async def copy_from(
        self, remote: str, local: Path, *, progress: Progress | None = None, recurse: bool = False
    ) -> None:
        """As ``SshRunner.copy_from``, from this machine's files (``~/`` and a relative path: the home folder)."""
        src = self.home / remote[2:] if remote.startswith("~/") else self.cwd / remote
        shown = clean(remote)
        if not src.exists():
            raise CopyFailed(f"There is no {shown} on {self.where}.")
        if src.is_dir() and not recurse:
            raise CopyFailed(f"{shown} on {self.where} is a folder: copy it with its contents.")
        dst = local / src.name if local.is_dir() else local
        loop = asyncio.get_running_loop()

        def copy() -> int:  # in a thread; progress is reported on the loop's thread
            files = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
            total = sum(p.stat().st_size for p in files)
            done = 0
            for f in files:
                target = dst if f == src else dst / f.relative_to(src)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(f, target)
                done += f.stat().st_size
                if progress is not None:
                    loop.call_soon_threadsafe(progress, done, total)
            return total

        try:
            total = await asyncio.to_thread(copy)
        except PermissionError as e:
            raise CopyFailed(f"Cannot copy {shown} to {local}: {clean(e.strerror or str(e))}.") from None
        except OSError as e:
            raise CopyFailed(f"Cannot write {local}: {clean(e.strerror or str(e))}.") from None
        if progress is not None:
            progress(total, total)
