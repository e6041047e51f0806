"""ncui's ssh: one connection per node, host keys checked against ncui's own known_hosts, typed errors.

``r = SshRunner("127.10.0.3", 2222, "ubuntu", known_hosts=known_hosts_path(), confirm_host_key=ask)``;
``await r.run("nvidia-smi -L")`` → ``Result``; ``async for lines in r.follow("tail -F log")``;
``await r.copy_from("first-job/nanogpt.out", Path("."), progress=cb)``; ``await r.close()``.

Host keys (like OpenSSH's ``StrictHostKeyChecking ask``, in ncui's own file): a node never seen is asked
about once — its key is fetched, ``confirm_host_key(host, port, "SHA256:…")`` shows the fingerprint to the
human, and a yes writes an OpenSSH known_hosts line (``[host]:port`` for a port other than 22) before the
connection is made with that key pinned. A no refuses (``HostKeyUnknown``) and remembers nothing. A node
whose key differs from the remembered one is refused (``HostKeyChanged``), never connected to.

Authentication is asyncssh's default: the human's ``~/.ssh`` keys, certificates, agent and ssh config,
unless ``client_keys`` names the keys. Failures are ``RemoteError`` subclasses whose ``str()`` is a
sentence for a human; an auth failure names the keys tried by fingerprint, never by their material.
The connection is made on first use, reused by every call, and made again after it dropped; a command
cut by a drop raises ``Disconnected`` (never re-run by itself: ``docker run`` twice is two containers).
Output from the node is returned as it came (the caller cleans it for the screen with ``textsafe``);
what this module puts in its own messages is cleaned here. No Textual here.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import stat
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import asyncssh

from ..backoff import within
from ..history import Recorder, join
from ..lines import LineSplitter
from ..textsafe import clean

__all__ = [
    "AuthFailed",
    "CommandFailed",
    "ConfirmHostKey",
    "CopyFailed",
    "Disconnected",
    "HostKeyChanged",
    "HostKeyUnknown",
    "Progress",
    "Refused",
    "RemoteError",
    "Result",
    "Runner",
    "SshRunner",
    "Unreachable",
    "host_pattern",
    "known_hosts_line",
    "run_noted",
]

ConfirmHostKey = Callable[[str, int, str], Awaitable[bool]]  # (host, port, "SHA256:…") → the human's yes
Progress = Callable[[int, int], None]  # (bytes done, bytes in all)
MAX_OUTPUT = 1 << 20  # run(): at most this many bytes of stdout (and of stderr) are kept
_READ = 1 << 16


# ---- errors -----------------------------------------------------------------------------------------


class RemoteError(Exception):
    """Something over ssh failed; ``str(e)`` is a sentence for a human (never a key, never a traceback)."""


class Unreachable(RemoteError):
    """No route to the node, its name does not resolve, or it did not answer in time."""


class Refused(RemoteError):
    """The node answered with "connection refused": nothing listens on the port (gone, or not up yet)."""


class AuthFailed(RemoteError):
    """The node refused every key offered. ``tried``: "SHA256:… (where it came from)" for each key."""

    def __init__(self, message: str, tried: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.tried = list(tried)


class HostKeyUnknown(RemoteError):
    """The node's host key was not accepted (the human said no, or nobody could be asked)."""

    def __init__(self, message: str, fingerprint: str = "") -> None:
        super().__init__(message)
        self.fingerprint = fingerprint


class HostKeyChanged(RemoteError):
    """The node presents a host key other than the one remembered: refused, never connected to."""

    def __init__(self, message: str, remembered: Sequence[str], presented: str) -> None:
        super().__init__(message)
        self.remembered, self.presented = list(remembered), presented


class Disconnected(RemoteError):
    """The connection dropped (or could not be used) while a command ran."""


class CommandFailed(RemoteError):
    """A command ended with a status other than 0 (``check=True``, or a followed command)."""

    def __init__(self, message: str, exit_status: int, stderr: str = "") -> None:
        super().__init__(message)
        self.exit_status, self.stderr = exit_status, stderr


class CopyFailed(RemoteError):
    """A file could not be copied off the node (missing there, or not writable here)."""


@dataclass(frozen=True)
class Result:
    """What a command left: its exit status (-1: killed by a signal), its output (at most ``MAX_OUTPUT``
    bytes of each stream, decoded as UTF-8 with replacement; ``truncated`` when more was dropped)."""

    exit_status: int
    stdout: str
    stderr: str
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


class Runner(Protocol):
    """What runs commands on a node: ``SshRunner`` (and a runner on the login node itself)."""

    where: str
    history: Recorder | None  # where ``run_noted`` records (the backend's History; None: nowhere)

    def shell_line(self, cmd: str = "") -> str:
        """The line a person types to run ``cmd`` there (to connect, without one): the history's."""
        ...

    async def run(self, cmd: str, *, check: bool = False, timeout: float | None = None) -> Result: ...

    def follow(self, cmd: str, *, merge_stderr: bool = False) -> AsyncGenerator[list[str], None]: ...

    async def copy_from(
        self, remote: str, local: Path, *, progress: Progress | None = None, recurse: bool = False
    ) -> None: ...

    async def close(self) -> None: ...


async def run_noted(runner: Runner, cmd: str, what: str, *, timeout: float | None) -> Result:
    """``runner.run(cmd, check=True)`` for a command that changes something on the node (a run started or
    stopped, a job submitted or cancelled): recorded in the history as the line a person would type, ok or
    not (``RemoteError`` raised as it came)."""
    ok = False
    try:
        res = await runner.run(cmd, check=True, timeout=timeout)
        ok = True
        return res
    finally:
        if runner.history is not None:
            line = runner.shell_line(cmd)
            runner.history.note("shell" if line == cmd else "ssh", line, what, ok)


# ---- known_hosts ------------------------------------------------------------------------------------


def host_pattern(host: str, port: int) -> str:
    """How OpenSSH names a host in known_hosts: ``host`` on port 22, ``[host]:port`` on any other."""
    return host if port == 22 else f"[{host}]:{port}"


def known_hosts_line(host: str, port: int, key: asyncssh.SSHKey) -> str:
    """One OpenSSH known_hosts line for a host key (``[127.10.0.3]:2222 ssh-ed25519 AAAA…``)."""
    kind, data = key.export_public_key("openssh").decode("ascii").split()[:2]
    return f"{host_pattern(host, port)} {kind} {data}\n"


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _fingerprint(public_data: bytes) -> str:
    try:
        from asyncssh.public_key import decode_ssh_public_key

        return decode_ssh_public_key(public_data).get_fingerprint("sha256")
    except (asyncssh.KeyImportError, ValueError):
        return "an unreadable key"


def _why(exc: BaseException) -> str:
    return clean(str(getattr(exc, "reason", "") or exc or type(exc).__name__))


# ---- the runner -------------------------------------------------------------------------------------


class _Client(asyncssh.SSHClient):
    def __init__(self, runner: SshRunner) -> None:
        self.runner = runner

    def connection_lost(self, exc: Exception | None) -> None:
        self.runner._lost(self)


class _Reader(Protocol):
    async def read(self, n: int = -1, /) -> bytes: ...


async def drain_bounded(streams: Sequence[tuple[_Reader | None, bytearray]], max_output: int) -> bool:
    """Read each stream to its end into its buffer, keeping at most ``max_output`` bytes of each (the rest
    is read and dropped, so the command is never blocked on a full pipe). True when anything was cut."""
    cut = False

    async def drain(reader: _Reader | None, buf: bytearray) -> None:
        nonlocal cut
        if reader is None:
            return
        while data := await reader.read(_READ):
            room = max_output - len(buf)
            if len(data) > room:
                cut = True
            buf += data[: max(room, 0)]

    await asyncio.gather(*(drain(r, b) for r, b in streams))
    return cut


class SshRunner:
    """One node over ssh (see the module's docstring). ``where`` is ``user@host`` (``:port`` when not 22)."""

    def __init__(
        self,
        host: str,
        port: int,
        user: str,
        *,
        known_hosts: Path,
        client_keys: Sequence[str | Path] | None = None,
        client_certs: Sequence[str | Path] = (),
        confirm_host_key: ConfirmHostKey | None = None,
        connect_timeout: float = 15.0,
        keepalive_interval: float = 15.0,
        agent_path: str | None | tuple[()] = (),
        config: Sequence[str | Path] | tuple[()] = (),
        shown: Sequence[str] = (),
        history: Recorder | None = None,
    ) -> None:
        self.host, self.port, self.user = host, int(port), user
        self.history = history  # where its first connection, ``run_noted`` and copies are recorded (None: nowhere)
        # How a person reaches it: `ssh [-p PORT] user@host`, or what the caller says (`ssh plover`).
        self.shown = tuple(shown) or ("ssh", *(["-p", str(self.port)] if self.port != 22 else []), f"{user}@{host}")
        self.known_hosts = Path(known_hosts)
        self.client_keys = None if client_keys is None else [str(k) for k in client_keys]
        self.client_certs = [str(c) for c in client_certs]  # paired with the keys by asyncssh (CertificateFile)
        self.confirm_host_key = confirm_host_key
        self.connect_timeout, self.keepalive_interval = connect_timeout, keepalive_interval
        self.agent_path, self.config = agent_path, config
        self.where = f"{user}@{host}" + ("" if self.port == 22 else f":{self.port}")
        self.connects = 0  # connections made (1 + reconnections)
        self._conn: asyncssh.SSHClientConnection | None = None
        self._client: _Client | None = None
        self._lock: asyncio.Lock | None = None
        self._closed = False

    async def __aenter__(self) -> SshRunner:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- the connection -------------------------------------------------------------------------------

    def shell_line(self, cmd: str = "") -> str:
        return join([*self.shown, *([cmd] if cmd else [])])

    def _lost(self, client: _Client) -> None:
        if client is self._client:
            self._conn = self._client = None

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.is_closed()

    async def connect(self) -> None:
        """Connect now (host key asked about when new); ``run`` and the others connect by themselves."""
        await self._connection()

    async def _connection(self) -> asyncssh.SSHClientConnection:
        if self._closed:
            raise Disconnected(f"The connection to {self.where} was closed.")
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            conn = self._conn
            if conn is not None and not conn.is_closed():
                return conn
            self._conn = self._client = None
            conn = await self._open()
            self.connects += 1
            if self.connects == 1 and self.history is not None:  # the first connection (not each one after a drop)
                self.history.note("ssh", self.shell_line(), f"connect to {self.where}", True)
            return conn

    def _options(self, **kw: Any) -> dict[str, Any]:
        opts: dict[str, Any] = {"port": self.port}
        if self.config != ():
            opts["config"] = list(self.config)
        opts.update(kw)
        return opts

    def _trusted(self) -> tuple[asyncssh.SSHKnownHosts | None, list[asyncssh.SSHKey]]:
        """ncui's known_hosts and the keys it holds for this host and port ([] when none)."""
        try:
            text = self.known_hosts.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None, []
        except OSError as e:
            raise RemoteError(f"Cannot read ncui's known hosts file {self.known_hosts}: {e.strerror or e}.") from None
        try:
            known = asyncssh.import_known_hosts(text)
        except (ValueError, asyncssh.KeyImportError) as e:
            raise RemoteError(
                f"ncui's known hosts file {self.known_hosts} cannot be read as OpenSSH known_hosts ({_why(e)}); "
                "fix or remove the bad line."
            ) from None
        addr = self.host if _is_ip(self.host) else ""
        keys = list(known.match(self.host, addr, self.port)[0])
        return known, keys

    def _remember(self, key: asyncssh.SSHKey) -> None:
        path = self.known_hosts
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, stat.S_IRUSR | stat.S_IWUSR)
            with os.fdopen(fd, "a", encoding="ascii") as f:
                if f.tell() > 0:  # a file that does not end with a newline keeps its last line whole
                    with open(path, "rb") as r:
                        r.seek(-1, os.SEEK_END)
                        if r.read(1) != b"\n":
                            f.write("\n")
                f.write(known_hosts_line(self.host, self.port, key))
        except OSError as e:
            raise RemoteError(f"Cannot remember the host key of {self.where} in {path}: {e.strerror or e}.") from None

    async def _presented_key(self) -> asyncssh.SSHKey:
        """The host key the node presents (a connection that ends after the key exchange)."""
        try:
            key = await within(asyncssh.get_server_host_key(self.host, **self._options()), self.connect_timeout)
        except BaseException as e:
            raise self._connect_error(e) from None
        if key is None:
            raise HostKeyUnknown(f"{self.where} presented no host key, so ncui cannot check who it is.")
        return key

    async def _open(self) -> asyncssh.SSHClientConnection:
        known, trusted = self._trusted()
        if not trusted:
            key = await self._presented_key()
            fp = key.get_fingerprint("sha256")
            ask = self.confirm_host_key
            if ask is None or not await ask(self.host, self.port, fp):
                raise HostKeyUnknown(
                    f"The host key of {self.where} ({fp}) was not accepted, so ncui did not connect.", fp
                )
            self._remember(key)
            known, trusted = self._trusted()
        kw: dict[str, Any] = {
            "username": self.user,
            "known_hosts": known,
            "keepalive_interval": self.keepalive_interval,
            "client_factory": lambda: self._new_client(),
        }
        if self.client_keys is not None:
            kw["client_keys"] = self.client_keys
        if self.client_certs:
            kw["client_certs"] = self.client_certs
        if self.agent_path != ():
            kw["agent_path"] = self.agent_path
        try:
            conn = await within(
                asyncssh.connect(self.host, **self._options(connect_timeout=self.connect_timeout, **kw)),
                self.connect_timeout + 1,
            )
        except asyncssh.HostKeyNotVerifiable:
            raise await self._changed(trusted) from None
        except asyncssh.PermissionDenied:
            raise await self._auth_failed() from None
        except BaseException as e:
            raise self._connect_error(e) from None
        self._conn = conn
        return conn

    def _new_client(self) -> _Client:
        self._client = _Client(self)
        return self._client

    async def _changed(self, trusted: Sequence[asyncssh.SSHKey]) -> HostKeyChanged:
        old = sorted({k.get_fingerprint("sha256") for k in trusted})
        try:
            new = (await self._presented_key()).get_fingerprint("sha256")
        except RemoteError:
            new = "a different key"
        where = host_pattern(self.host, self.port)
        return HostKeyChanged(
            f"The host key of {self.where} has changed: ncui remembered {', '.join(old)} and the node now presents "
            f"{new}. ncui refused to connect: it could be another machine answering at this address. If the node "
            f"was rebuilt (a new grant on the same address), remove the line for {where} from {self.known_hosts} "
            f"(ssh-keygen -R '{where}' -f {self.known_hosts}) and connect again to be asked about the new key.",
            old,
            new,
        )

    async def _offered_keys(self) -> list[str]:
        """The keys asyncssh offered, by fingerprint and where each came from (never the key itself)."""
        out: list[str] = []
        try:
            if self.client_keys is not None:
                for path in self.client_keys:
                    for kp in asyncssh.load_keypairs(path, ignore_encrypted=True):
                        out.append(f"{_fingerprint(kp.key_public_data)} ({path})")
            else:
                from asyncssh.public_key import load_default_keypairs

                for kp in load_default_keypairs():
                    out.append(f"{_fingerprint(kp.key_public_data)} ({kp.get_comment() or 'a key in ~/.ssh'})")
                sock = self.agent_path if self.agent_path != () else os.environ.get("SSH_AUTH_SOCK")
                if sock:
                    async with asyncssh.connect_agent(sock) as agent:
                        for akp in await agent.get_keys():
                            out.append(f"{_fingerprint(akp.key_public_data)} (ssh agent)")
        except (OSError, asyncssh.Error, ValueError, asyncssh.KeyImportError):
            pass  # what could not be listed is not said; the failure itself still is
        return [clean(x) for x in out]

    async def _auth_failed(self) -> AuthFailed:
        tried = await self._offered_keys()
        keys = "; ".join(tried) if tried else "none (no key in ~/.ssh, none in an ssh agent)"
        return AuthFailed(
            f"{self.where} refused every key ncui offered. Keys tried: {keys}. Its public key must be authorised "
            "on the node (on National Compute: registered before the node was granted).",
            tried,
        )

    def _connect_error(self, e: BaseException) -> RemoteError:
        if isinstance(e, RemoteError):
            return e
        if isinstance(e, asyncio.CancelledError):
            raise e
        if isinstance(e, ConnectionRefusedError):
            return Refused(
                f"{self.host} port {self.port} refused the connection: nothing listens there (the node may be "
                "gone, or its ssh not up yet)."
            )
        if isinstance(e, (asyncio.TimeoutError, TimeoutError)):
            return Unreachable(f"{self.where} did not answer within {self.connect_timeout:g} s.")
        if isinstance(e, socket.gaierror):
            return Unreachable(f"The name {self.host} does not resolve: {_why(e)}.")
        if isinstance(e, OSError):
            return Unreachable(f"{self.where} cannot be reached: {clean(e.strerror or str(e))}.")
        if isinstance(e, asyncssh.KeyImportError):
            return RemoteError(f"A key for {self.where} cannot be used: {_why(e)} (an encrypted key: ssh-add it).")
        if isinstance(e, asyncssh.DisconnectError):
            return Disconnected(f"{self.where} closed the connection while connecting: {_why(e)}.")
        if isinstance(e, (asyncssh.Error, ValueError)):
            return RemoteError(f"Cannot connect to {self.where}: {_why(e)}.")
        if isinstance(e, Exception):
            return RemoteError(f"Cannot connect to {self.where}: {type(e).__name__}: {_why(e)}.")
        raise e

    def _dropped(self, e: BaseException | None = None) -> Disconnected:
        conn, self._conn, self._client = self._conn, None, None
        if conn is not None:
            conn.abort()
        why = f": {_why(e)}" if e is not None else ""
        return Disconnected(f"The connection to {self.where} dropped{why}.")

    async def close(self) -> None:
        """Close the connection (the runner can no longer be used)."""
        self._closed = True
        conn, self._conn, self._client = self._conn, None, None
        if conn is not None:
            conn.close()
            await conn.wait_closed()

    # ---- commands ---------------------------------------------------------------------------------------

    async def _process(self, cmd: str, stderr: Any = asyncssh.PIPE) -> asyncssh.SSHClientProcess[bytes]:
        conn = await self._connection()
        try:
            return await conn.create_process(cmd, encoding=None, stderr=stderr)
        except asyncssh.ChannelOpenError as e:
            if conn.is_closed():
                raise self._dropped(e) from None
            raise RemoteError(f"{self.where} refused to run a command: {_why(e)}.") from None
        except (asyncssh.DisconnectError, OSError) as e:
            raise self._dropped(e) from None

    async def run(
        self, cmd: str, *, check: bool = False, timeout: float | None = None, max_output: int = MAX_OUTPUT
    ) -> Result:
        """Run ``cmd`` (one shell command line) and wait for it. ``check``: a status other than 0 raises
        ``CommandFailed``; ``timeout``: the channel is closed after that many seconds (``RemoteError``)."""
        proc = await self._process(cmd)
        out, err = bytearray(), bytearray()
        try:
            cut = await within(drain_bounded(((proc.stdout, out), (proc.stderr, err)), max_output), timeout)
            await proc.wait_closed()
        except (asyncio.TimeoutError, TimeoutError):
            proc.close()
            raise RemoteError(f"{_short(cmd)} did not finish on {self.where} within {timeout:g} s.") from None
        except (asyncssh.DisconnectError, asyncssh.ConnectionLost, OSError) as e:
            raise self._dropped(e) from None
        finally:
            proc.close()
        status = proc.exit_status
        if status is None and proc.exit_signal is None:
            raise self._dropped()  # the channel closed with no status: the connection went
        res = Result(-1 if status is None else status, _text(out), _text(err), cut)
        if check and res.exit_status != 0:
            raise _failed(cmd, self.where, res.exit_status, res.stderr)
        return res

    async def follow(self, cmd: str, *, merge_stderr: bool = False) -> AsyncGenerator[list[str], None]:
        """Run ``cmd`` and yield its output as batches of lines (no newline) as it arrives: one batch per read,
        so a fast log comes in big batches. Leaving the loop closes the channel (which ends ``tail -F``).
        A status other than 0 at the end raises ``CommandFailed``; a dropped connection ``Disconnected``.
        ``merge_stderr``: the command's stderr is part of the lines (a container's log has both)."""
        proc = await self._process(cmd, asyncssh.STDOUT if merge_stderr else asyncssh.PIPE)
        err = bytearray()
        errs: asyncio.Task[None] | None = None
        if not merge_stderr:

            async def drain_err() -> None:
                while data := await proc.stderr.read(_READ):
                    err.extend(data[: max(0, 8192 - len(err))])

            errs = asyncio.ensure_future(drain_err())
        split = LineSplitter()
        try:
            while True:
                try:
                    data = await proc.stdout.read(_READ)
                except (asyncssh.DisconnectError, asyncssh.ConnectionLost, OSError) as e:
                    raise self._dropped(e) from None
                if not data:
                    break
                if lines := split.feed(data):
                    yield lines
            if tail := split.end():
                yield tail
            try:
                await proc.wait_closed()
            except (asyncssh.DisconnectError, OSError) as e:
                raise self._dropped(e) from None
            status = proc.exit_status
            if status is None and proc.exit_signal is None:
                raise self._dropped()
            if status != 0:
                if errs is not None:
                    await asyncio.wait({errs}, timeout=1)
                raise _failed(cmd, self.where, -1 if status is None else status, _text(err))
        finally:
            proc.close()
            if errs is not None:
                errs.cancel()

    # ---- files ------------------------------------------------------------------------------------------

    async def copy_from(
        self, remote: str, local: Path, *, progress: Progress | None = None, recurse: bool = False
    ) -> None:
        """Copy a file (``recurse``: a folder) off the node over SFTP into ``local`` (a path, or an existing
        folder to put it in). ``progress(bytes done, bytes in all)`` is called as blocks arrive, and once at
        the end. A path relative to the home folder may start with ``~/``."""
        if remote.startswith("~/"):
            remote = remote[2:]
        conn = await self._connection()
        shown = clean(remote)
        ok = False
        try:
            async with conn.start_sftp_client() as sftp:
                total = await _size(sftp, remote, recurse)
                files: dict[bytes | str, int] = {}

                def each(src: bytes, dst: bytes, done: int, size: int) -> None:
                    files[src] = done
                    if progress is not None:
                        progress(sum(files.values()), total)

                await sftp.get(remote, str(local), recurse=recurse, progress_handler=each)
                if progress is not None:
                    progress(total, total)
                ok = True
        except asyncssh.SFTPNoSuchFile:
            raise CopyFailed(f"There is no {shown} on {self.where}.") from None
        except asyncssh.SFTPPermissionDenied:
            raise CopyFailed(f"{self.where} does not let ncui read {shown}.") from None
        except asyncssh.SFTPError as e:
            if isinstance(e, asyncssh.SFTPFailure) and "directory" in str(e.reason).lower() and not recurse:
                raise CopyFailed(f"{shown} on {self.where} is a folder: copy it with its contents.") from None
            raise CopyFailed(f"Copying {shown} from {self.where} failed: {_why(e)}.") from None
        except (asyncssh.DisconnectError, asyncssh.ConnectionLost) as e:
            raise self._dropped(e) from None
        except asyncssh.ChannelOpenError as e:
            raise RemoteError(f"{self.where} offers no SFTP: {_why(e)}.") from None
        except OSError as e:  # the local side: no room, no permission, no folder
            raise CopyFailed(f"Cannot write {local}: {clean(e.strerror or str(e))}.") from None
        finally:  # in the history as the guide's scp line, copied or not
            if self.history is not None:
                self.history.note("scp", self.scp_line(remote, local, recurse), f"copy {remote} off {self.where}", ok)

    def scp_line(self, remote: str, local: Path, recurse: bool = False) -> str:
        """The copy as a person types it, the guide's ``scp [-r] user@host:path .``: how ssh reaches the node, with
        ``-P`` for ssh's ``-p`` (``scp -P 2222 -r ubuntu@203.0.113.7:first-job/nanogpt.out ./results``)."""
        _, *opts, host = self.shown
        opts = ["-P" if o == "-p" else o for o in opts]
        return join(["scp", *opts, *(["-r"] if recurse else []), f"{host}:{remote}", str(local)])


async def _size(sftp: asyncssh.SFTPClient, path: str, recurse: bool) -> int:
    """The bytes a copy of ``path`` moves (a folder's files, when ``recurse``)."""
    attrs = await sftp.stat(path)
    if attrs.permissions is not None and stat.S_ISDIR(attrs.permissions):
        if not recurse:
            return 0
        total = 0
        for entry in await sftp.readdir(path):
            name = entry.filename if isinstance(entry.filename, str) else entry.filename.decode()
            if name not in (".", ".."):
                total += await _size(sftp, f"{path}/{name}", True)
        return total
    return attrs.size or 0


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")


def _short(cmd: str, n: int = 60) -> str:
    """A command named in a message: one line, cleaned, at most ``n`` characters."""
    text = clean(cmd)
    return f"`{text if len(text) <= n else text[: n - 1] + '…'}`"


def _failed(cmd: str, where: str, status: int, stderr: str) -> CommandFailed:
    lines = [x for x in clean(stderr, multiline=True).splitlines() if x.strip()]
    said = f": {lines[-1].strip()}" if lines else ""
    how = f"exit status {status}" if status >= 0 else "a signal"
    return CommandFailed(f"{_short(cmd)} failed on {where} ({how}){said}.", status, stderr)
