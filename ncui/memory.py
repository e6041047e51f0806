"""What ncui remembers between sessions, per service and organization (``limits.key_for``): the active cluster,
the ceiling the human gave, and per cluster the last job (recipe, objects, stop commands, when it was applied,
the node's arrival, the first loss lines, how it ended, the quote it was given), and per recipe how long its
earlier runs took (the quote's duration when the catalog says none). No Textual here.

Kept in ``$XDG_STATE_HOME/ncui/session.json`` through ``statefile`` (versioned, atomic, locked, mode 600; a
bad file is set aside and said). The spending limit lives beside it in ``limits.json`` (``limits.py``), the
command history in ``history.jsonl``. Never the token: names, prices (µcredits), times and log lines only,
each log line cleaned (``textsafe``) before it is stored. Writing is best effort: a folder that cannot be
written is logged, and ncui goes on (the report then reads the cluster alone).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from . import statefile
from .limits import key_for
from .textsafe import clean

log = logging.getLogger("ncui.memory")

FILE_VERSION = 1
FIRST_LINES = 3  # the first loss lines kept (and reported)
KEEP_ORGS = 20  # services × organizations remembered
RUNS_KEPT = 5  # earlier runs' durations kept per recipe (the quote's duration when the catalog has none)


def memory_path() -> Path:
    from .config import state_dir

    return state_dir() / "session.json"


def iso(t: datetime | None) -> str | None:
    return t.isoformat() if t is not None else None


def recall(key: str, path: Path | None = None) -> dict[str, Any]:
    """The organization's memory: ``{"active_cluster": …, "ceiling": {…}, "jobs": {cluster: {…}}}`` (keys
    absent when not known)."""
    return statefile.obj(statefile.obj(statefile.read(path or memory_path(), FILE_VERSION).get("orgs")).get(key))


def job(key: str, cluster: str, path: Path | None = None) -> dict[str, Any] | None:
    """The last job remembered on ``cluster`` (None when none)."""
    j = statefile.obj(recall(key, path).get("jobs")).get(cluster)
    return j if isinstance(j, dict) else None


def _change(key: str, fn: Callable[[dict[str, Any]], None], path: Path | None) -> None:
    def change(data: dict[str, Any]) -> dict[str, Any]:
        orgs = statefile.obj(data.get("orgs"))
        org = statefile.obj(orgs.get(key))
        fn(org)
        orgs.pop(key, None)
        orgs[key] = org  # the newest last: past KEEP_ORGS the oldest go (each demo's box is a new origin)
        return {"orgs": dict(list(orgs.items())[-KEEP_ORGS:])}

    try:
        statefile.update(path or memory_path(), FILE_VERSION, change)
    except OSError as e:  # best effort: the report reads the cluster anyway
        log.warning("cannot remember the session in %s: %s", (path or memory_path()).parent, e.strerror or e)


def remember(key: str, path: Path | None = None, **fields: Any) -> None:
    """Set top-level facts (``active_cluster="halcyon"``, ``ceiling={…}``)."""
    _change(key, lambda org: org.update(fields), path)


def remember_job(
    key: str, cluster: str, fields: dict[str, Any], *, new: bool = False, path: Path | None = None
) -> None:
    """Merge ``fields`` into the cluster's last job; ``new`` starts a new record (a new apply or submit). A
    few facts keep what was seen first: ``node``/``node_arrived_at`` once set, ``first_loss_lines`` unless the new
    list is longer (up to ``FIRST_LINES``) or is another pod's (``first_loss_pod``: whose log they are)."""

    def fn(org: dict[str, Any]) -> None:
        jobs = statefile.obj(org.get("jobs"))
        rec = {} if new else statefile.obj(jobs.get(cluster))
        if fields.get("first_loss_pod") not in (None, rec.get("first_loss_pod")):
            rec.pop("first_loss_lines", None)  # another pod's lines (the one a reclaim replaced): this pod's instead
        for k, v in fields.items():
            if k == "first_loss_lines":
                v = [clean(str(x)) for x in v][:FIRST_LINES]
                if len(rec.get(k) or ()) >= len(v):
                    continue  # the first lines seen stay
            elif k in ("node_arrived_at", "node") and rec.get(k):
                continue  # the first arrival seen stays
            rec[k] = v
        jobs[cluster] = rec
        org["jobs"] = jobs

    _change(key, fn, path)


def remember_duration(key: str, recipe: str, run: str, minutes: float, path: Path | None = None) -> None:
    """A run of ``recipe`` that ended well took ``minutes`` on its node (its start there to its end): kept per run
    (``run``: its uid, so a report read twice counts it once), the newest ``RUNS_KEPT`` per recipe. The quote's
    duration when the catalog has none (``quote.duration_for``)."""

    def fn(org: dict[str, Any]) -> None:
        runs = statefile.obj(org.get("runs"))
        mine = statefile.obj(runs.get(recipe))
        mine.pop(run, None)
        mine[run] = round(float(minutes), 1)
        runs[recipe] = dict(list(mine.items())[-RUNS_KEPT:])
        org["runs"] = runs

    _change(key, fn, path)


def durations(key: str, recipe: str, path: Path | None = None) -> list[float]:
    """This organization's earlier runs of ``recipe``, in minutes (oldest first; [] when none)."""
    runs = statefile.obj(statefile.obj(recall(key, path).get("runs")).get(recipe))
    return [float(v) for v in runs.values() if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0]


__all__ = [
    "FIRST_LINES",
    "RUNS_KEPT",
    "remember_duration",
    "durations",
    "key_for",
    "memory_path",
    "recall",
    "job",
    "remember",
    "remember_job",
    "iso",
]
