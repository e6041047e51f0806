"""Which runner reaches a Slurm cluster's login node: this machine when ncui runs on it, else ``ssh <cluster>``.

``r = await slurm_runner("plover", ssh_config=Path(os.environ["NC_SSH_CONFIG"]), known_hosts=known_hosts_path(),
confirm_host_key=ask)`` → a ``LocalRunner`` when ``on_login_node(login_node)`` (``NCUI_LOGIN_NODE``, or sbatch and
a Slurm configuration here), else an ``SshRunner`` to the cluster's name as the guide's ``ssh <cluster>`` would
reach it: ``resolve`` reads the human's ssh config with OpenSSH's own ``ssh -G`` (HostName, Port, User,
IdentityFile, CertificateFile; Include and Match included), so the certificate ``slurm-login`` refreshed is
offered. Host keys stay ncui's: its known_hosts, the first use asked (``runner.SshRunner``).
No Textual here.
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..textsafe import clean
from .local import LocalRunner, on_login_node
from .node import BadInput
from .runner import ConfirmHostKey, Runner, SshRunner
from .slurm import _output

if TYPE_CHECKING:
    from ..history import Recorder

__all__ = ["SshTarget", "resolve", "slurm_runner"]


@dataclass(frozen=True)
class SshTarget:
    """Where ``ssh <alias>`` goes: the address, port and user, and the keys and certificates it offers (those
    that exist here; none: asyncssh's defaults and the agent)."""

    alias: str
    host: str
    port: int = 22
    user: str = ""
    identities: tuple[str, ...] = field(default=())
    certificates: tuple[str, ...] = field(default=())


def _existing(paths: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    for p in paths:
        full = os.path.expanduser(p)
        if full not in out and os.path.isfile(full):
            out.append(full)
    return tuple(out)


async def resolve(alias: str, ssh_config: Path | None = None) -> SshTarget:
    """Read the ssh config for ``alias`` as OpenSSH does (``ssh -G [-F config] alias``). Without ``ssh`` here,
    the alias itself on port 22 as this user (asyncssh's defaults)."""
    if not alias or alias.startswith("-") or any(c.isspace() for c in alias):
        raise BadInput(f"{clean(alias)!r} cannot name an ssh host.")
    cfg = ["-F", str(ssh_config)] if ssh_config is not None else []
    text = await _output("ssh", "-G", *cfg, alias)
    if not text:
        return SshTarget(alias, alias, 22, getpass.getuser())
    one: dict[str, str] = {}
    many: dict[str, list[str]] = {"identityfile": [], "certificatefile": []}
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key in many:
            many[key].append(value)
        else:
            one.setdefault(key, value)
    port = one.get("port", "22")
    return SshTarget(
        alias,
        one.get("hostname") or alias,
        int(port) if port.isdigit() else 22,
        one.get("user") or getpass.getuser(),
        _existing(many["identityfile"]),
        _existing(many["certificatefile"]),
    )


async def slurm_runner(
    cluster: str,
    *,
    ssh_config: Path | None = None,
    known_hosts: Path,
    confirm_host_key: ConfirmHostKey | None = None,
    login_node: bool | None = None,
    env: Mapping[str, str] | None = None,
    history: Recorder | None = None,
) -> Runner:
    """The cluster's login node as a ``Runner``: here (``LocalRunner``) on the login node, else over ssh to the
    cluster's name read from ``ssh_config`` (the human's own when None). Nothing connects yet. ``history``: where
    the runner records (``run_noted``, its first connection)."""
    if on_login_node(login_node, env):
        return LocalRunner(history=history)
    t = await resolve(cluster, ssh_config)
    return SshRunner(
        t.host,
        t.port,
        t.user,
        known_hosts=known_hosts,
        client_keys=list(t.identities) or None,
        client_certs=t.certificates,
        confirm_host_key=confirm_host_key,
        history=history,
        config=[],  # ssh -G has applied the config already (its Host block names the alias, not the address)
        shown=(
            "ssh",
            *(["-F", str(ssh_config)] if ssh_config is not None else []),
            cluster,
        ),  # the guide's ssh <cluster>
    )
