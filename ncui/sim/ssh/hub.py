"""The box's ssh endpoints: one asyncssh server per simulated host, all on one asyncio loop in its own thread.

Three kinds of host, one server: **VM nodes** (``SshHub`` listens to the World: a grant makes the node's host
key, kept for the node's life, and remembers the keys installed then; when the allocation becomes ``active``
by the clock the node listens on its ``public_ip`` and a free port; a release or a reclaim ends its sessions,
closes the listener, connection refused afterwards, and deletes its scratch folder), **a Slurm cluster's
login node** (listens for the box's life on 127.11.0.N under the cluster's name; user certificates signed by
the cluster's CA only, see ``sign``) and **a public-research node** (listens from its assignment until its
release, on ``ResearchState.public_ip``; the workspace key and the organization's keys installed then).

``folder/ssh_config`` (what ``ncui sim`` prints as ``NC_SSH_CONFIG``) has a ``Host`` block per listening host
and pins the host keys in ``folder/known_hosts``; both are rewritten as hosts come and go. ``folder/id_ed25519``
stands in for the human's own key where the service expects one (the key ``slurm-login`` certifies, the
Marshall workspace's key on a research node): the ssh_config names it for those hosts.

Locking: the World calls ``_on_event`` with its lock held, so that only records and wakes the loop. The loop
takes the World's lock for short reads; nobody waits on the loop while holding the World's lock (the HTTP
handlers call ``settle()`` outside it), so the two never wait on each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import posixpath
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import cast

import asyncssh

from ..world import AllocationState, OrgState, SimError, World, fingerprint
from .node import NodeSpec, Shell, SimNode, Term
from .slurm import LoginNode, LoginShell

TICK_EVERY = 0.25  # real seconds between looks at the clock (activations, reclaims, files the runs write)
NODE_UID = 1000  # the node's user's uid and gid (what SFTP reports as the owner of the node's files)
CERT_HOURS = 24  # what slurm-login gives: a certificate valid 24 h (of the box's clock)
log = logging.getLogger(__name__)


@dataclass
class _Node:
    spec: NodeSpec
    host_key: asyncssh.SSHKey
    alias: str = ""  # its Host name in the ssh_config (the allocation id, the cluster's name, research-node)
    # Its state at a time, asked with the World's lock held: "active" listens, "released"/"reclaimed"/None ends it.
    state: Callable[[datetime], str | None] = lambda _now: None
    make: Callable[[NodeSpec, Path], SimNode] | None = None  # its SimNode (default: a GPU node)
    shell: type[Shell] = Shell
    keys: Callable[[], frozenset[str]] | None = None  # the keys installed when it starts listening (else spec's)
    on_port: Callable[[int], None] | None = None  # tell the World the port it listens on
    ca: str | None = None  # a login node: user certificates of this cluster's CA only, no plain keys
    identity: bool = False  # the ssh_config names the box's stand-in key for it (and the certificate for a ca)
    docker: bool = True
    sim: SimNode | None = None
    server: asyncssh.SSHAcceptor | None = None
    port: int | None = None
    conns: set[asyncssh.SSHServerConnection] = field(default_factory=set)
    gone: bool = False  # released or reclaimed


@dataclass
class _Cert:
    principal: str  # unique to this certificate: what lets the box expire it on its own clock
    user: str
    valid_before: datetime  # box time


class SshHub:
    def __init__(self, world: World, folder: Path) -> None:
        self.world, self.folder = world, folder
        self.config_path = folder / "ssh_config"
        self.known_hosts_path = folder / "known_hosts"
        self._nodes: dict[str, _Node] = {}
        self._lock = threading.Lock()  # _nodes, between the World's threads and the loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._wake: asyncio.Event | None = None
        self._reconciling: asyncio.Lock | None = None
        self._written = ""
        self._stopping = False
        self._docker_missing = False  # hosts that start from now on have no docker (a sim control)
        self._cas: dict[str, asyncssh.SSHKey] = {}  # cluster name -> its CA's key
        self._certs: dict[str, list[_Cert]] = {}  # cluster name -> the certificates it issued
        self._serial = 0
        self.key_path = folder / "id_ed25519"
        self.cert_path = folder / "id_ed25519-cert.pub"
        folder.mkdir(parents=True, exist_ok=True)
        with world.lock:  # allocations granted before the hub existed; the login and research nodes
            for org in world.orgs.values():
                for vm in org.vm.values():
                    for a in vm.allocations:
                        if a.state not in ("released", "reclaimed"):
                            self._granted(a)
                self._static_hosts(org)
            world.listeners.append(self._on_event)
        if any(n.identity for n in self._nodes.values()):
            key = asyncssh.generate_private_key("ssh-ed25519", comment="you@ncui-sim")
            key.write_private_key(self.key_path)
            self.key_path.chmod(0o600)
            key.write_public_key(self.key_path.with_suffix(".pub"))
        self._write_config([])

    # ---- the World's side (its lock held) ----------------------------------------------------

    def _on_event(self, event: str, payload: object) -> None:
        if event == "vm-granted" and isinstance(payload, AllocationState):
            self._granted(payload)
        elif event in ("vm-released", "vm-reclaimed") and isinstance(payload, AllocationState):
            with self._lock:
                n = self._nodes.get(payload.id)
                if n is not None:
                    n.gone = True
            self._poke()

    def _granted(self, a: AllocationState) -> None:
        org = next(o for o in self.world.orgs.values() for vm in o.vm.values() if a in vm.allocations)
        vm = next(vm for vm in org.vm.values() if a in vm.allocations)
        spec = NodeSpec(
            a.id,
            a.public_ip,
            vm.ssh_user,
            a.gpus,
            a.gpu_model,
            vm.spec.gpu_vendor,
            self.world.seed,
            frozenset(a.keys),
        )
        with self._lock:
            state = a.state_at
            n = _Node(spec, asyncssh.generate_private_key("ssh-ed25519"), a.id, state, docker=not self._docker_missing)
            n.on_port = lambda p: setattr(a, "ssh_port", p)
            self._nodes[a.id] = n

    def _static_hosts(self, org: OrgState) -> None:
        """The organization's Slurm login nodes and its research node (the World's lock held)."""
        user = org.spec.email.split("@")[0]
        slurm = [c for c in org.spec.clusters if c.kind == "slurm"]
        for i, c in enumerate(slurm, start=1):
            spec = NodeSpec(f"{c.name}-login1", f"127.11.0.{i}", user, 0, c.gpu_model, c.gpu_vendor, self.world.seed,
                            frozenset())  # fmt: skip
            self._cas[c.name] = asyncssh.generate_private_key("ssh-ed25519", comment=f"{c.name} user CA")
            self._certs[c.name] = []

            def login(spec: NodeSpec, root: Path, cluster: str = c.name) -> SimNode:
                return LoginNode(spec, root, self.world.now, cluster)

            self._nodes[f"slurm:{c.name}"] = _Node(
                spec, asyncssh.generate_private_key("ssh-ed25519"), c.name, lambda _now: "active", login, LoginShell,
                ca=c.name, identity=True,
            )  # fmt: skip
        r = org.research
        if r is not None:
            spec = NodeSpec(r.host, r.public_ip, r.ssh_user, r.gpus, r.gpu_model, r.gpu_vendor, self.world.seed,
                            frozenset())  # fmt: skip

            def keys(org: OrgState = org) -> frozenset[str]:
                box = self.key_path.with_suffix(".pub")
                mine = {fingerprint(box.read_text())} if box.is_file() else set()
                return frozenset(mine | {k.fingerprint for k in org.ssh_keys})

            def port(p: int, r=r) -> None:
                r.ssh_port = p

            state = {"assigned": "active", "queued": "pending"}
            self._nodes[f"research:{org.spec.key}"] = _Node(
                spec, asyncssh.generate_private_key("ssh-ed25519"), "research-node",
                lambda now, r=r: state.get(r.state_at(now), "released"), keys=keys, on_port=port, identity=True,
            )  # fmt: skip

    # ---- slurm-login (the human's side), docker missing ---------------------------------------

    def sign(self, cluster: str | None = None, public_key: str | None = None) -> dict:
        """What ``slurm-login`` does for the human: sign a public key (default: the box's stand-in key, then the
        certificate is written where the ssh_config's CertificateFile points) into a user certificate of the
        cluster's CA for the cluster's user, valid 24 h. Its dates are real time, as ``ssh-keygen -L`` shows
        them; the login node also expires it after 24 h of the box's clock (a test or a fast demo shows the
        expiry). SimError when there is no such cluster or the key is not an OpenSSH public key."""
        name = cluster or next(iter(self._cas), None)
        if name is None or name not in self._cas:
            raise SimError(404, "not-found", f"No Slurm cluster named {name} in this box." if name else
                           "This scenario has no Slurm cluster.")  # fmt: skip
        user = self._nodes[f"slurm:{name}"].spec.user
        text = public_key or self.key_path.with_suffix(".pub").read_text()
        fingerprint(text)  # SimError(422) when it is not a public key line
        key = asyncssh.import_public_key(text)
        now_box, now = self.world.now(), time.time()
        with self._lock:
            self._serial += 1
            serial = self._serial
            principal = f"{name}-login-{serial}"
            self._certs[name].append(_Cert(principal, user, now_box + timedelta(hours=CERT_HOURS)))
        cert = self._cas[name].generate_user_certificate(
            key, f"{user}@{name} (slurm-login, National Compute in a box)", principals=[user, principal],
            serial=serial, valid_after=int(now) - 300, valid_before=int(now) + CERT_HOURS * 3600,
        )  # fmt: skip
        data = cert.export_certificate().decode()
        out = {"cluster": name, "user": user, "certificate": data, "valid_hours": CERT_HOURS,
               "valid_before": (now_box + timedelta(hours=CERT_HOURS)).isoformat()}  # fmt: skip
        if public_key is None:
            tmp = self.cert_path.with_name(self.cert_path.name + ".tmp")
            tmp.write_text(data)
            os.replace(tmp, self.cert_path)
            out["certificate_file"] = str(self.cert_path)
        return out

    def sign_out(self) -> None:
        """Forget the stand-in key's certificate (the missing case): the file goes."""
        self.cert_path.unlink(missing_ok=True)

    def _principals(self, cluster: str, user: str) -> list[str]:
        now = self.world.now()
        with self._lock:
            return [c.principal for c in self._certs.get(cluster, []) if c.user == user and now < c.valid_before]

    def set_docker(self, missing: bool, alias: str | None = None) -> int:
        """Make docker missing (or back) on one host by its Host name, or on every host now and from now on.
        How many hosts changed."""
        with self._lock:
            if alias is None:
                self._docker_missing = missing
            nodes = [n for n in self._nodes.values() if (alias is None and n.ca is None) or n.alias == alias]
            for n in nodes:
                n.docker = not missing
                if n.sim is not None:
                    n.sim.docker = not missing
        return len(nodes)

    def host(self, alias: str) -> tuple[str, int] | None:
        """(ip, port) of a listening host by its Host name."""
        with self._lock:
            n = next((n for n in self._nodes.values() if n.alias == alias), None)
            return None if n is None or n.port is None or n.gone else (n.spec.ip, n.port)

    def _poke(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(wake.set)

    # ---- what the HTTP side asks -------------------------------------------------------------

    def endpoint(self, alloc_id: str) -> tuple[str, int] | None:
        """(ip, port) while the node listens, else None."""
        with self._lock:
            n = self._nodes.get(alloc_id)
            return None if n is None or n.port is None or n.gone else (n.spec.ip, n.port)

    def settle(self, timeout: float = 10.0) -> None:
        """Bring the nodes in line with the World now: start those due, end those released. Never call it
        with the World's lock held."""
        loop = self._loop
        if loop is None or loop.is_closed() or threading.current_thread() is self._thread:
            return
        fut = asyncio.run_coroutine_threadsafe(self._reconcile(), loop)
        try:
            fut.result(timeout)
        except Exception as e:  # the node stays "provisioning"; the next read tries again
            log.warning("ssh nodes did not settle: %s", e)

    def drop_sessions(self, timeout: float = 10.0) -> int:
        """Cut every ssh connection to every node (a fault: the nodes stay up and listening); how many were cut."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return 0

        async def cut() -> int:
            conns = [c for n in list(self._nodes.values()) for c in list(n.conns)]
            for c in conns:
                c.abort()
            return len(conns)

        return asyncio.run_coroutine_threadsafe(cut(), loop).result(timeout)

    def scratch(self, alloc_id: str) -> Path | None:
        with self._lock:
            n = self._nodes.get(alloc_id)
            return None if n is None or n.sim is None else n.sim.root

    # ---- running -----------------------------------------------------------------------------

    def start(self) -> None:
        """Run the loop and its thread, in worlds with ssh hosts (no thread, nothing to tick elsewhere)."""
        if self._thread is not None or not (self._nodes or any(o.vm for o in self.world.orgs.values())):
            return
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._wake, self._reconciling = asyncio.Event(), asyncio.Lock()
            self._loop = loop
            ready.set()
            try:
                loop.run_until_complete(self._main())
            finally:
                loop.run_until_complete(self._close_all())
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name="ncui-sim-ssh", daemon=True)
        self._thread.start()
        ready.wait(10)

    def stop(self, timeout: float = 10.0) -> None:
        with self.world.lock:
            if self._on_event in self.world.listeners:
                self.world.listeners.remove(self._on_event)
        if self._thread is not None:
            self._stopping = True
            self._poke()
            self._thread.join(timeout)
            self._thread = None
        shutil.rmtree(self.folder, ignore_errors=True)

    async def _main(self) -> None:
        assert self._wake is not None
        while not self._stopping:
            try:
                await self._reconcile()
            except Exception:  # a node that cannot start now is tried again at the next tick
                log.exception("ssh nodes")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), TICK_EVERY)
            self._wake.clear()

    async def _reconcile(self) -> None:
        assert self._reconciling is not None
        async with self._reconciling:
            with self._lock:
                nodes = list(self._nodes.items())
            with self.world.lock:
                now = self.world.sync()
                states = {key: n.state(now) for key, n in nodes}
                for n in nodes:
                    if n[1].keys is not None and n[1].server is None and states[n[0]] == "active":
                        n[1].spec.fingerprints = n[1].keys()  # installed as it starts (assignment)
            changed = False
            for aid, n in nodes:
                state = states.get(aid)
                if n.gone or state in (None, "released", "reclaimed"):
                    await self._end(n)
                    with self._lock:
                        self._nodes.pop(aid, None)
                    changed = True
                elif state == "active" and n.server is None and not self._stopping:
                    await self._listen(n)
                    changed = True
                elif n.sim is not None:
                    n.sim.sync()
            if changed:
                with self._lock:
                    live = [n for n in self._nodes.values() if n.port is not None and not n.gone]
                self._write_config(live)

    async def _listen(self, n: _Node) -> None:
        root = Path(tempfile.mkdtemp(prefix=f"ncui-sim-{n.spec.name}-"))
        n.sim = n.make(n.spec, root) if n.make is not None else SimNode(n.spec, root, self.world.now)
        if n.ca is None:
            n.sim.docker = n.docker
        n.server = await asyncssh.create_server(
            lambda: _NodeServer(n, self),
            host=n.spec.ip,
            port=0,
            server_host_keys=[n.host_key],
            process_factory=lambda p: _process(n, p),
            sftp_factory=lambda chan: _NodeSFTP(chan, n),
            allow_scp=True,
            encoding="utf-8",
            errors="replace",
            keepalive_interval=0,
        )
        n.port = n.server.sockets[0].getsockname()[1]
        if n.on_port is not None:  # the allocation reports the port its node listens on (ours; 22 on the service)
            with self.world.lock:
                n.on_port(n.port)

    async def _end(self, n: _Node) -> None:
        server, n.server, n.gone = n.server, None, True
        if server is not None:
            server.close()
        for conn in list(n.conns):
            conn.close()
        for conn in list(n.conns):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 5)
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        if n.sim is not None:
            n.sim.destroy()
        n.port = None

    async def _close_all(self) -> None:
        with self._lock:
            nodes = list(self._nodes.values())
            self._nodes.clear()
        for n in nodes:
            await self._end(n)

    # ---- the ssh_config -----------------------------------------------------------------------

    def _write_config(self, live: list[_Node]) -> None:
        kh = "".join(
            f"[{n.spec.ip}]:{n.port} {n.host_key.export_public_key('openssh').decode().strip()} {n.alias}\n"
            for n in live
        )
        cfg = "# National Compute in a box: one Host block per simulated ssh host, rewritten as hosts come and go\n"
        for n in sorted(live, key=lambda n: n.alias):
            # also under its address, so that the guide's `ssh <ssh_user>@<public_ip>` (and scp) reach it as written
            cfg += f"\nHost {n.alias} {n.spec.ip}\n    HostName {n.spec.ip}\n"
            cfg += f"    Port {n.port}\n    User {n.spec.user}\n"
            if n.identity:
                cfg += f"    IdentityFile {self.key_path}\n    IdentitiesOnly yes\n"
            if n.ca is not None:  # what slurm-login refreshes (POST /_sim/slurm/login writes it)
                cfg += f"    CertificateFile {self.cert_path}\n"
            cfg += f"    UserKnownHostsFile {self.known_hosts_path}\n    StrictHostKeyChecking yes\n"
        if cfg + kh == self._written:
            return
        for path, text in ((self.known_hosts_path, kh), (self.config_path, cfg)):
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
        self._written = cfg + kh


# ---- one node's ssh server ----------------------------------------------------------------------


class _NodeServer(asyncssh.SSHServer):
    """Public keys only: the node's user, with a key installed at grant; on a login node, only the user's
    certificates of the cluster's CA that the box's clock still finds valid."""

    def __init__(self, n: _Node, hub: SshHub) -> None:
        self.n, self.hub = n, hub
        self.conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self.conn = conn
        self.n.conns.add(conn)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.conn is not None:
            self.n.conns.discard(self.conn)

    def begin_auth(self, username: str) -> bool:
        if self.n.ca is not None and self.conn is not None:
            # Certificates are checked against real time by asyncssh; the box's clock expires them here: only the
            # principals of this user's certificates still valid now are trusted (each certificate has its own).
            valid = self.hub._principals(self.n.ca, username) if username == self.n.spec.user else []
            ca = self.hub._cas[self.n.ca].export_public_key("openssh").decode().strip()
            self.conn.set_authorized_keys(
                asyncssh.import_authorized_keys(
                    f'cert-authority,principals="{",".join(valid)}" {ca}\n' if valid else ""
                )
            )
        return True

    def password_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        if self.n.ca is not None:
            return False
        return username == self.n.spec.user and key.get_fingerprint("sha256") in self.n.spec.fingerprints


class _NodeSFTP(asyncssh.SFTPServer):
    """SFTP (and so scp) on the node's scratch folder: its ``/``, relative paths from the home folder."""

    def __init__(self, chan: asyncssh.SSHServerChannel, n: _Node) -> None:
        assert n.sim is not None
        self.node = n.sim
        n.sim.sync()
        super().__init__(chan, chroot=str(n.sim.root).encode())

    def map_path(self, path: bytes) -> bytes:
        home = str(self.node.home).encode()
        if path == b"~" or path.startswith(b"~/"):
            path = home + path[1:]
        elif not path.startswith(b"/"):
            path = posixpath.join(home, path)
        return super().map_path(path)

    # The node's files are its user's (uid 1000, as a cloud image's first user), not those of whoever runs the box.
    def _owned(self, st: object) -> asyncssh.SFTPAttrs:
        attrs = st if isinstance(st, asyncssh.SFTPAttrs) else asyncssh.SFTPAttrs.from_local(cast(os.stat_result, st))
        attrs.uid = attrs.gid = NODE_UID
        return attrs

    def stat(self, path: bytes) -> asyncssh.SFTPAttrs:
        return self._owned(super().stat(path))

    def lstat(self, path: bytes) -> asyncssh.SFTPAttrs:
        return self._owned(super().lstat(path))

    def fstat(self, file_obj: object) -> asyncssh.SFTPAttrs:
        return self._owned(super().fstat(file_obj))

    async def scandir(self, path: bytes) -> AsyncIterator[asyncssh.SFTPName]:
        async for name in super().scandir(path):
            self._owned(name.attrs)
            yield name

    def format_user(self, uid: int | None) -> str:  # what sftp's ls -l shows
        return self.node.spec.user if uid == NODE_UID else super().format_user(uid)

    def format_group(self, gid: int | None) -> str:
        return self.node.spec.user if gid == NODE_UID else super().format_group(gid)

    def exit(self) -> None:  # OpenSSH's scp takes a session without an exit status for a failure
        with contextlib.suppress(Exception):
            self.channel.exit(0)

    def symlink(self, oldpath: bytes, newpath: bytes) -> None:  # a link could point out of the scratch folder
        raise asyncssh.SFTPOpUnsupported("links are not available on this simulated node")

    def link(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPOpUnsupported("links are not available on this simulated node")


# ---- rsync: the real rsync --server, confined to the node's disk as SFTP is ---------------------------------

RRSYNC = Path("/usr/bin/rrsync")  # rsync's own "restricted rsync" (in Debian's rsync package)
_RSYNC_VALUED = {"--partial-dir", "--temp-dir", "--backup-dir", "--compare-dest", "--copy-dest", "--link-dest"}
_RSYNC_WORD = re.compile(r"(?:[^\s\\]+|\\.[^\s\\]*)+")  # rsync's words, backslash escapes kept (as rrsync reads them)


def _is_rsync(command: str | None) -> bool:
    return command is not None and command.split()[:2] == ["rsync", "--server"]


def _process(n: _Node, process: asyncssh.SSHServerProcess):
    """What a session runs: rsync's server side, or the node's own shell."""
    if _is_rsync(process.command):
        # rsync's protocol is binary: this session's channel carries bytes (asyncssh does the same for its scp)
        process.channel.set_encoding(None)
        process._encoding = None
        return _rsync(n, process)
    return _session(n, process)


def rsync_command(node: SimNode, command: str) -> str:
    """The ``rsync --server …`` line a client sent, its paths made paths from the node's ``/``: relative ones from
    the home folder, ``~`` expanded (what the node's shell would do). ValueError (a message) for a path that
    climbs out of ``/``, or one to send that is not there. rrsync then maps ``/`` to the node's disk and checks
    the rest (options, links)."""
    words = _RSYNC_WORD.findall(command)
    dot = next((i for i, w in enumerate(words) if w == "." and words[i - 1] not in _RSYNC_VALUED), None)
    if dot is None:
        return command  # (rrsync refuses what it cannot read, -s's paths sent over the wire included)
    paths = [re.sub(r"\\(.)", r"\1", w) for w in words[dot + 1 :]] or ["."]
    out = words[: dot + 1]
    for path in paths:
        if path == "~" or path.startswith("~/"):
            path = str(node.home) + path[1:]
        parts: list[str] = []
        for part in PurePosixPath(node.home, path).parts[1:]:
            if part == "..":
                if not parts:
                    raise ValueError(f"rsync: {path}: outside this node's disk (its / is the node's own)\n")
                parts.pop()
            elif part != ".":
                parts.append(part)
        contents = path in (".", "") or path.endswith(("/", "/."))  # rsync's "the folder's contents"
        node_path = "/" + "/".join(parts) + ("/" if contents and parts else "")
        sending = "--sender" in words[:dot] and not any(c in path for c in "*?[{")
        if sending and not os.path.lexists(node.local(node_path)):  # (rrsync would say "race detected")
            raise ValueError(f'rsync: [sender] link_stat "{node_path}" failed: No such file or directory (2)\n')
        out.append(re.sub(r"([\s\\])", r"\\\1", node_path))
    return " ".join(out)


async def _rsync(n: _Node, process: asyncssh.SSHServerProcess) -> None:
    """``rsync --server``: the real rsync, run by rrsync confined to the node's disk (its ``/``; links munged,
    ``..`` refused), its streams piped to the session as bytes; its exit status is the session's."""
    sim = n.sim
    if sim is None:
        process.exit(255)
        return
    err = process.stderr
    if not RRSYNC.is_file() or shutil.which("rsync") is None:
        err.write(b"rsync: not available on this simulated node: the box runs rsync --server with rsync's rrsync, "
                  b"and this machine has no rsync (apt-get install rsync)\n")  # fmt: skip
        process.exit(127)
        return
    try:
        command = rsync_command(sim, process.command or "")
    except ValueError as e:
        err.write(str(e).encode())
        process.exit(1)
        return
    home = str(sim.local(sim.home))
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "SSH_ORIGINAL_COMMAND": command}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(RRSYNC), "-munge", "-no-lock", str(sim.root), cwd=sim.root, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    async def into() -> None:
        with contextlib.suppress(Exception):
            while data := await process.stdin.read(65536):
                proc.stdin.write(data)
                await proc.stdin.drain()
        with contextlib.suppress(Exception):
            proc.stdin.close()

    async def out_of(src: asyncio.StreamReader, dst: asyncssh.SSHWriter) -> None:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()

    feed = asyncio.ensure_future(into())
    try:
        await asyncio.gather(out_of(proc.stdout, process.stdout), out_of(proc.stderr, err))
        status = await proc.wait()
        process.exit(status)
    except (asyncssh.Error, ConnectionError, BrokenPipeError):
        pass
    finally:
        feed.cancel()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def _session(n: _Node, process: asyncssh.SSHServerProcess) -> None:
    """One session: an exec request runs its command line; a shell reads lines (a prompt with a pty)."""
    sim = n.sim
    if sim is None:
        process.exit(255)
        return
    shell = n.shell(sim)
    pty = process.get_terminal_type() is not None  # a terminal shows both streams as one, as sshd's pty does
    term = Term(
        out=lambda s: _write(process.stdout, s), err=lambda s: _write((process.stdout if pty else process.stderr), s)
    )

    async def drain() -> None:
        with contextlib.suppress(Exception):
            await process.stdout.drain()
        if process.is_closing():
            term.stopped.set()

    term.drain = drain
    status = 0
    try:
        if process.subsystem is not None:
            term.err(f"subsystem {process.subsystem}: not available on this simulated node (sftp is)\n")
            status = 1
        elif process.command is not None:
            status = await _run(shell, process.command, term, process, interactive=False)
        else:
            if pty:
                term.out(shell.welcome())
            while shell.exited is None:
                if pty:
                    cwd = str(shell.cwd).replace(str(sim.home), "~", 1)
                    term.out(f"{n.spec.user}@{n.spec.name}:{cwd}$ ")
                try:
                    line = await process.stdin.readline()
                except (asyncssh.BreakReceived, asyncssh.SignalReceived):
                    with contextlib.suppress(Exception):
                        process.channel.clear_input()  # type: ignore[attr-defined]  # the line editor's channel
                    term.out("^C\n")
                    continue
                except asyncssh.TerminalSizeChanged:
                    continue
                if not line:
                    break
                term.stopped.clear()
                status = await _run(shell, line, term, process, interactive=pty)
            if shell.exited is not None:
                status = shell.exited
    except (asyncssh.DisconnectError, asyncssh.ConnectionLost, BrokenPipeError, ConnectionError):
        return
    with contextlib.suppress(Exception):
        process.exit(status)


async def _run(shell: Shell, line: str, term: Term, process: asyncssh.SSHServerProcess, *, interactive: bool) -> int:
    """Run one command line; meanwhile Ctrl-C (a pty's break or a signal) or a closed channel stops it."""

    async def watch() -> None:
        while not process.is_closing():
            try:
                data = await process.stdin.read(1024)
            except (asyncssh.BreakReceived, asyncssh.SignalReceived):
                term.stopped.set()
                return
            except asyncssh.TerminalSizeChanged:
                continue
            except Exception:
                break
            if not data:  # stdin ended (ssh -n, a pipe, Ctrl-D): only a close stops the command
                await process.channel.wait_closed()
                break
        term.stopped.set()

    watcher = asyncio.ensure_future(watch())
    try:
        return await shell.run(line, term)
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await watcher


def _write(stream: asyncssh.SSHWriter[str], text: str) -> None:
    with contextlib.suppress(BrokenPipeError, ConnectionError, asyncssh.Error):
        stream.write(text)
