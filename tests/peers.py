"""The real peers the tests run (kubectl, OpenSSH, Slurm, tmux, curl, rsync…): ``need_peer`` and ``lacks_peer``,
the one way a test skips for a peer this machine lacks, and ``@pytest.mark.peers("ssh", "scp")`` (conftest.py
calls ``need_peer`` for each before the test's fixtures start).

On a developer's machine a missing peer skips the test, naming it and the package that brings it (``-rs`` prints
the skips). In CI (``.ci/run`` exports ``NCUI_REQUIRE_PEERS=1`` and installs every one of them) a missing peer
fails the test instead: a failed apt install must not read as green.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

REQUIRE = "NCUI_REQUIRE_PEERS"

# Where a peer is not looked up on PATH: the daemons and helpers at their Debian paths
PATHS = {
    "sshd": "/usr/sbin/sshd",
    "sftp-server": "/usr/lib/openssh/sftp-server",
    "munged": "/usr/sbin/munged",
    "mungekey": "/usr/sbin/mungekey",
    "slurmctld": "/usr/sbin/slurmctld",
    "slurmd": "/usr/sbin/slurmd",
    "kubectl": "/usr/bin/kubectl",
}

# The Debian package that brings each peer (what .ci/run installs)
PACKAGES = {
    "kubectl": "kubernetes-client",
    **dict.fromkeys(("ssh", "scp", "sftp", "ssh-agent", "ssh-keygen"), "openssh-client"),
    **dict.fromkeys(("sshd", "sftp-server"), "openssh-server"),
    **dict.fromkeys(("slurmctld", "slurmd"), "slurm-wlm"),
    **dict.fromkeys(("sbatch", "squeue", "scancel", "scontrol", "sinfo"), "slurm-client"),
    **dict.fromkeys(("munged", "mungekey"), "munge"),
    "setsid": "util-linux",
    "tmux": "tmux",
    "curl": "curl",
    "rsync": "rsync",
}

__all__ = ["PACKAGES", "PATHS", "REQUIRE", "lacks_peer", "need_peer", "required"]


def required() -> bool:
    """Whether every real peer must be here (CI): then a missing one fails the test rather than skipping it."""
    return os.environ.get(REQUIRE, "") not in ("", "0")


def lacks_peer(name: str, why: str) -> NoReturn:
    """This machine cannot give the test its real peer ``name`` (``why``): skip it, or fail it in CI."""
    said = f"real peer {name} missing: {why}"
    if required():
        pytest.fail(f"{said} ({REQUIRE}=1: CI installs every real peer, see .ci/run)", pytrace=False)
    pytest.skip(said)


def need_peer(name: str, path: str | Path | None = None) -> str:
    """The real peer ``name``'s program: at ``path`` (or its Debian path in ``PATHS``), else found on PATH.
    Missing, the test skips naming it and its package (``lacks_peer``; under ``NCUI_REQUIRE_PEERS=1`` it fails)."""
    where = path if path is not None else PATHS.get(name)
    if where is not None:
        found = str(where) if os.access(where, os.X_OK) else None
    else:
        found = shutil.which(name)
    if found is None:
        lacks_peer(name, f"no {where or name} here (apt-get install -y {PACKAGES.get(name, name)})")
    return found
