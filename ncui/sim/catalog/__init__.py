"""The recipe catalog the box serves (``<access prefix>/first-job/``): ``catalog.json`` and the files it names, read
from the package. The ssh hosts read the same files (a node's starter, the Slurm login's sbatch). Beside them,
``setup.sh`` (served at ``<access prefix>/setup.sh``) with the box's own addresses filled in."""

from __future__ import annotations

import json
import shlex
from importlib import resources


def _root():
    return resources.files("ncui.sim.catalog")


def recipes() -> list:
    """The recipes ``catalog.json`` lists, as written (the app checks them against the contract's model)."""
    raw = json.loads((_root() / "catalog.json").read_text(encoding="utf-8"))
    return raw["recipes"] if isinstance(raw, dict) else raw


def file_bytes(filename: str) -> bytes | None:
    """A recipe file of the catalog (``files/``) by its bare name; None for anything else."""
    if "/" in filename or "\\" in filename or filename.startswith("."):
        return None
    f = _root() / "files" / filename
    try:
        return f.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def setup_script(api: str, ssh_config: str) -> bytes:
    """The setup script as the box serves it: its API origin and its ssh_config (``NC_SSH_CONFIG``) filled in."""
    text = (_root() / "setup.sh").read_text(encoding="utf-8")
    return text.replace("@API@", shlex.quote(api)).replace("@SSH_CONFIG@", shlex.quote(ssh_config)).encode()
