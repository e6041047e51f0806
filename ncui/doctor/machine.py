"""This machine's checks: the token, kubectl against the cluster's version, ssh, the clock, the terminal, and where
ncui keeps its state. Each function is given what it looks at (the environment, a size, the times) and returns
``Check``s, so a test can name any case; ``run.py`` reads the real ones."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

from . import FAIL, OK, WARN, Check

TOKEN_FIX = "save your token to ~/.config/nationalcompute/token (then chmod 600 it), or set NC_TOKEN"
CLOCK_SKEW = 120.0  # seconds: the box's clock starts on a whole minute; above this sign-in and AGE go wrong
KUBECTL_SKEW = 1  # minor versions either way (Kubernetes' supported skew for kubectl)
MIN_COLS, MIN_ROWS = 80, 24
KUBECTL_FIX = "install kubectl within one minor version of the cluster's: https://kubernetes.io/docs/tasks/tools/"


def token_check(env: Mapping[str, str] | None = None) -> tuple[Check, bool]:
    """The token: present, readable only by you; inside a Marshall workspace, that no file is read. Also whether
    there is one to use."""
    from ..config import WORKSPACE_NOTE, in_workspace, load_token, token_path

    src = load_token(env)
    workspace = in_workspace(env)
    if src.token is not None:
        if src.origin == "NC_TOKEN":
            why = "from NC_TOKEN" + (f" ({WORKSPACE_NOTE} No token file is read.)" if workspace else "")
            return Check("token", OK, why), True
        if src.warning:
            return Check("token", WARN, src.warning, f"chmod 600 {src.origin}"), True
        return Check("token", OK, f"{src.origin} (mode 600)"), True
    if workspace:
        from ..config import WORKSPACE_NO_CREDENTIAL

        return Check("token", FAIL, WORKSPACE_NO_CREDENTIAL, "start ncui from the workspace's own shell"), False
    why = src.warning or f"no token: neither NC_TOKEN nor {token_path()}"
    return Check("token", FAIL, why, TOKEN_FIX), False


def _minor(text: object) -> int | None:
    m = re.match(r"\d+", str(text or ""))
    return int(m.group()) if m else None


def kubectl_client_version(kubectl: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, timeout=15, check=False
        ).stdout
        v = json.loads(out).get("clientVersion") or {}
    except (OSError, ValueError, subprocess.TimeoutExpired, AttributeError):
        return None
    major, minor = _minor(v.get("major")), _minor(v.get("minor"))
    return (major, minor) if major is not None and minor is not None else None


def kubectl_check(
    kubectl: str | None, client: tuple[int, int] | None, server: dict | str | None, cluster: str | None
) -> Check:
    """``kubectl`` on PATH and within the supported skew of ``cluster``'s version (``server``: its /version, or
    why it could not be read; None: no Kubernetes cluster to compare with)."""
    if kubectl is None:
        status = FAIL if cluster else WARN
        why = "kubectl is not on PATH" + (
            f": ncui and the guide run it for {cluster}" if cluster else " (no Kubernetes cluster needs it now)"
        )
        return Check("kubectl", status, why, KUBECTL_FIX)
    if client is None:
        return Check("kubectl", WARN, f"{kubectl} did not say its version (kubectl version --client)", KUBECTL_FIX)
    mine = f"{client[0]}.{client[1]}"
    if server is None:
        return Check("kubectl", OK, f"{kubectl} {mine} (no Kubernetes cluster to compare with)")
    if isinstance(server, str):
        return Check("kubectl", WARN, f"{kubectl} {mine}; {cluster}'s version could not be read: {server}")
    major, minor = _minor(server.get("major")), _minor(server.get("minor"))
    if major is None or minor is None:
        return Check("kubectl", WARN, f"{kubectl} {mine}; {cluster} gives no version")
    theirs = f"{major}.{minor}"
    if major != client[0] or abs(minor - client[1]) > KUBECTL_SKEW:
        return Check(
            "kubectl",
            WARN,
            f"kubectl {mine} is outside the supported skew of {cluster}'s Kubernetes {theirs} (one minor version "
            "either way): some commands may fail or act oddly",
            KUBECTL_FIX,
        )
    return Check("kubectl", OK, f"{kubectl} {mine}, {cluster} runs {theirs} (within one minor version)")


def ssh_checks(which=shutil.which) -> list[Check]:
    out = []
    for tool, use in (("ssh", "ncui's shells on nodes and Slurm logins"), ("ssh-keygen", "making a key to register")):
        path = which(tool)
        if path:
            out.append(Check(tool, OK, path))
        else:
            out.append(
                Check(
                    tool,
                    FAIL,
                    f"{tool} is not on PATH ({use})",
                    "install the OpenSSH client (apt install openssh-client)",
                )
            )
    return out


def keys_check(keys: list, registered: set[str] | None, vm_cluster: str | None) -> Check:
    """Your ssh public keys (files and agent: ``remote.keys.local_keys``); on a VM cluster, registered or not
    (``registered``: the organization's fingerprints, None when they could not be read)."""
    if not keys:
        return Check(
            "ssh keys",
            WARN,
            "no ssh key in ~/.ssh or the agent: VM nodes, Slurm logins and the research node need one",
            'make one: ssh-keygen -t ed25519 -f ~/.ssh/id_ed25519 -N ""',
        )
    names = ", ".join(sorted({k.source for k in keys}))
    if vm_cluster and registered is not None:
        if not any(k.fingerprint in registered for k in keys):
            return Check(
                "ssh keys",
                WARN,
                f"{names}: none is registered with the organization, so {vm_cluster}'s nodes will not let you in",
                "register one: in ncui, k on the lease screen (Key), or POST /api/vm/orgs/<org_id>/ssh-keys",
            )
        return Check("ssh keys", OK, f"{names}; registered for {vm_cluster}")
    return Check("ssh keys", OK, names)


def clock_check(date_header: str | None, local: datetime) -> Check:
    if not date_header:
        return Check("clock", WARN, "the service sent no Date header: the clock is not checked")
    try:
        theirs = parsedate_to_datetime(date_header)
    except (TypeError, ValueError, IndexError):
        return Check("clock", WARN, "the service's Date header cannot be read: the clock is not checked")
    skew = (local - theirs).total_seconds()
    if abs(skew) > CLOCK_SKEW:
        way = "ahead of" if skew > 0 else "behind"
        return Check(
            "clock",
            FAIL,
            f"this machine's clock is {_span(abs(skew))} {way} the service's: sign-in codes expire early or late and "
            "AGE reads wrong",
            "set the clock by the network: sudo timedatectl set-ntp true (or sudo chronyc makestep)",
        )
    return Check("clock", OK, f"within {_span(max(abs(skew), 1))} of the service's")


def _span(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def terminal_checks(env: Mapping[str, str], size: tuple[int, int] | None) -> list[Check]:
    """The terminal ncui would draw in: its size, colours, TERM and NO_COLOR, and whether tmux or screen hold it."""
    out = []
    if size is None or size == (0, 0):
        out.append(
            Check(
                "terminal size", OK, "not checked: the output is not a terminal (run ncui doctor where ncui will run)"
            )
        )
    else:
        cols, rows = size
        if cols < MIN_COLS or rows < MIN_ROWS:
            out.append(
                Check(
                    "terminal size",
                    WARN,
                    f"{cols}×{rows}: ncui needs at least {MIN_COLS}×{MIN_ROWS}; smaller, screens are cut",
                    f"make the window at least {MIN_COLS} columns by {MIN_ROWS} rows (or leave tmux's split pane)",
                )
            )
        else:
            out.append(Check("terminal size", OK, f"{cols}×{rows}"))
    term = env.get("TERM", "")
    if not term or term == "dumb":
        out.append(
            Check(
                "terminal type",
                WARN,
                f"TERM is {term or 'unset'}: ncui cannot draw its screens",
                "run ncui in a terminal emulator (TERM=xterm-256color or similar)",
            )
        )
    else:
        colour = env.get("COLORTERM", "") or ("256 colours" if "256" in term else "basic colours")
        out.append(Check("terminal type", OK, f"TERM={term}, {colour}"))
    if "NO_COLOR" in env:
        out.append(Check("colour", OK, "NO_COLOR is set: ncui draws without colour (states are said in words)"))
    where = "tmux" if env.get("TMUX") else "screen" if env.get("STY") else ""
    if where:
        out.append(Check("multiplexer", OK, f"inside {where}: ncui keeps running if the connection drops"))
    else:
        out.append(
            Check(
                "multiplexer",
                OK,
                "not inside tmux or screen (on a remote machine, start one: a dropped connection "
                "then leaves ncui running)",
            )
        )
    return out


def state_check() -> Check:
    from ..config import state_dir
    from ..history import history_path
    from ..logfile import log_path, shown

    d = state_dir()
    probe = d if d.exists() else next((p for p in d.parents if p.exists()), Path("/"))
    writable = os.access(probe, os.W_OK)
    why = f"state in {shown(d)}, log {shown(log_path())}, history {shown(history_path())}"
    if not writable:
        return Check(
            "state",
            FAIL,
            why + f": {shown(probe)} is not writable",
            f"make {shown(probe)} writable, or set XDG_STATE_HOME to a folder you own",
        )
    return Check("state", OK, why)
