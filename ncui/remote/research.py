"""A public-research node (the guide's "Public Research node"): the login a human types, what ssh would offer it
and which host key pins it, and whether the balance covers one full lease. No Textual here.

Only Marshall's workspace requests and releases the node (``public_research_request`` / ``_release``: no API,
no MCP tool), and its status (``public_research_status``: ``public_ip``, ``ssh_user``) lives inside the
workspace; nothing defines a file where the workspace leaves it, so ncui reads none: the node comes from the
box's stand-in status (the demo) or is typed in as ``user@ip``. Port 22 is the only way in (the guide); the box
serves its node on a port of its own, which ``parse_login`` allows when told.

``ssh_setup(host, user, port, ssh_config)`` asks OpenSSH's own ``ssh -G`` what it would use for the node: its
identities (the workspace's key, the human's keys) and the known_hosts files that pin its host key (the box's
``NC_SSH_CONFIG`` names both for ``research-node``; a Marshall workspace pins the key in ``~/.ssh/known_hosts``).
``pinned_keys`` reads those pins, so a node pinned there connects without the first-use question, and one that
presents another key is refused.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from ..textsafe import clean
from .node import BadInput
from .slurm import _output

__all__ = [
    "Login",
    "SshSetup",
    "box_ssh_config",
    "config_ports",
    "lease_cover",
    "parse_login",
    "pinned_keys",
    "ssh_setup",
]

RESEARCH_PORT = 22  # the guide: "Port 22 is the only way in"
_USER = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")  # a POSIX login name, never an option
_HOSTNAME = re.compile(
    r"(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*"
)
_DEFAULT_IDS = ("id_ed25519_sk", "id_ecdsa_sk", "id_ed448", "id_ed25519", "id_ecdsa", "id_rsa", "id_dsa")
EXAMPLE = "ubuntu@203.0.113.7"


@dataclass(frozen=True)
class Login:
    user: str
    host: str
    port: int = RESEARCH_PORT

    def __str__(self) -> str:
        return f"{self.user}@{self.host}" + ("" if self.port == RESEARCH_PORT else f" (port {self.port})")


def parse_login(text: str, *, box_ports: Collection[int] = ()) -> Login:
    """``user@ip`` as the guide's ``ssh <ssh_user>@<public_ip>`` names it (also ``ssh user@ip``, and ``user@ip:PORT``
    or ``-p PORT`` when the port is 22 or one of ``box_ports``, the box's own). ``BadInput`` says what is wrong."""
    words = text.strip().split()
    if words[:1] == ["ssh"]:
        words = words[1:]
    port: int | None = None
    if len(words) == 3 and words[0] == "-p":
        port_text, words = words[1], words[2:]
        if not port_text.isdigit():
            raise BadInput(f"{clean(port_text)!r} is not a port number.")
        port = int(port_text)
    if len(words) != 1 or "@" not in words[0]:
        raise BadInput(
            f"Type the node's login as user@ip (the ssh_user and public_ip of Marshall's status), e.g. {EXAMPLE}."
        )
    user, _, host = words[0].rpartition("@")
    if host.startswith("[") and "]" in host:  # [v6]:port
        host, _, rest = host[1:].partition("]")
        if rest.startswith(":") and rest[1:].isdigit():
            port = port if port is not None else int(rest[1:])
        elif rest:
            raise BadInput(f"{clean(words[0])!r} is not user@ip.")
    elif host.count(":") == 1:
        host, _, port_text = host.partition(":")
        if not port_text.isdigit():
            raise BadInput(f"{clean(port_text)!r} is not a port number.")
        port = port if port is not None else int(port_text)
    if not _USER.fullmatch(user):
        raise BadInput(f"{clean(user)!r} is not a login name (letters, digits, '_', '.', '-'; not starting with '-').")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOSTNAME.fullmatch(host):
            raise BadInput(f"{clean(host)!r} is not an IP address or a host name.") from None
    port = RESEARCH_PORT if port is None else port
    if port != RESEARCH_PORT and port not in box_ports:
        raise BadInput(f"Port 22 is the only way in to a research node: port {port} is refused.")
    return Login(user, host, port)


@dataclass(frozen=True)
class SshSetup:
    """What OpenSSH would use for a node: the identity files that exist, and the known_hosts files."""

    identities: tuple[Path, ...]
    known_hosts: tuple[Path, ...]


async def ssh_setup(host: str, user: str, port: int, ssh_config: Path | None = None) -> SshSetup:
    """``ssh -G`` for the node (``host`` may be a Host name of ``ssh_config``): its IdentityFile and
    UserKnownHostsFile/GlobalKnownHostsFile, then the default identities of ``~/.ssh`` (the human's keys
    registered with the organization get in too). Only files that exist; without ``ssh``, the defaults."""
    idents: list[str] = []
    known: list[str] = []
    if not host.startswith("-") and not user.startswith("-"):
        cfg = ["-F", str(ssh_config)] if ssh_config is not None else []
        text = await _output("ssh", "-G", *cfg, "-l", user, "-p", str(port), host) or ""
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "identityfile":
                idents.append(value)
            elif key in ("userknownhostsfile", "globalknownhostsfile"):
                known += value.split()
    if not ssh_config:  # ssh expands ~ by the password database; asyncssh and a changed HOME by $HOME
        known += ["~/.ssh/known_hosts", "~/.ssh/known_hosts2"]
    idents += [f"~/.ssh/{name}" for name in _DEFAULT_IDS]

    def existing(paths: list[str]) -> tuple[Path, ...]:
        out: list[Path] = []
        for p in paths:
            path = Path(os.path.expanduser(p))
            if path not in out and path.is_file():
                out.append(path)
        return tuple(out)

    return SshSetup(existing(idents), existing(known))


def pinned_keys(files: tuple[Path, ...], host: str, port: int) -> list[asyncssh.SSHKey]:
    """The host keys ``files`` (OpenSSH known_hosts) pin for ``host`` on ``port``; unreadable files are skipped."""
    try:
        addr = host if ipaddress.ip_address(host) else ""
    except ValueError:
        addr = ""
    out: list[asyncssh.SSHKey] = []
    for path in files:
        try:
            known = asyncssh.import_known_hosts(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, asyncssh.KeyImportError):
            continue
        out += known.match(host, addr, port)[0]
    return out


def lease_cover(price_per_gpu_hour: int, gpus: int, lease_seconds: int, balance: int) -> tuple[int, int]:
    """One full lease (price × GPUs × its length, in micro-credits, rounded up) and what the balance lacks (0
    when it covers it): the guide's "a node request needs a balance for one full lease"."""
    need = -(-price_per_gpu_hour * gpus * lease_seconds // 3600)
    return need, max(0, need - balance)


def config_ports(ssh_config: Path | None) -> set[int]:
    """The ports an ssh_config names (``Port N``): the box's ``NC_SSH_CONFIG`` serves its hosts on ports of its own."""
    try:
        text = ssh_config.read_text(encoding="utf-8") if ssh_config is not None else ""
    except OSError:
        return set()
    return {int(m) for m in re.findall(r"(?im)^\s*Port\s+(\d{1,5})\s*$", text)}


def box_ssh_config(backend: object) -> Path | None:
    """The box's ssh_config (``NC_SSH_CONFIG``): the demo's own box's, or the one a human exported."""
    sim = getattr(backend, "sim", None)
    if sim is not None and getattr(sim, "ssh", None) is not None:
        return Path(sim.ssh.config_path)
    env = os.environ.get("NC_SSH_CONFIG")
    return Path(env) if env and Path(env).is_file() else None
