"""The recipe catalog the box serves (``<access prefix>/first-job/``): ``catalog.json`` (checked once) and the files
it names, read from the package. The ssh hosts read the same files (a node's starter, the Slurm login's sbatch)."""

from __future__ import annotations

import json
from importlib import resources

from ...api import models as m

_CACHE: dict[str, bytes] = {}


def _root():
    return resources.files("ncui.sim.catalog")


def index_json() -> bytes:
    """The catalog's index (``catalog.json``), each recipe checked against the contract's model, as served."""
    if "index" not in _CACHE:
        raw = json.loads((_root() / "catalog.json").read_text(encoding="utf-8"))
        recipes = raw["recipes"] if isinstance(raw, dict) else raw
        checked = [m.Recipe.model_validate(r).model_dump(mode="json") for r in recipes]
        _CACHE["index"] = json.dumps(checked, indent=1).encode()
    return _CACHE["index"]


def file_bytes(filename: str) -> bytes | None:
    """A recipe file of the catalog (``files/``) by its bare name; None for anything else."""
    if "/" in filename or "\\" in filename or filename.startswith("."):
        return None
    f = _root() / "files" / filename
    try:
        return f.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
