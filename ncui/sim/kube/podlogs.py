"""A pod's container logs on the virtual clock: what ``kubectl logs`` reads of a ``PodRun``. Pure functions."""

from __future__ import annotations

from datetime import datetime, timedelta

from . import profiles
from .state import PodRun


def log_lines(r: PodRun, container: str, until: datetime) -> list[tuple[datetime, str]]:
    """The container's log up to ``until``: its plan's lines, its periodic lines while it runs, what was added
    (an engine's requests, the launcher's scaling), cut where it ended; (instant, text) in time order."""
    if r.plan is None or r.start is None:
        return []
    out = [(r.start + timedelta(seconds=off), text) for off, text in r.plan.logs.get(container, [])]
    per = r.plan.periodic.get(container)
    if per is not None and r.active:
        off0, fn = per
        k = 1
        while off0 + k * profiles.PERIODIC_EVERY < profiles.PERIODIC_MAX:
            at = r.start + timedelta(seconds=off0 + k * profiles.PERIODIC_EVERY)
            if at > until:
                break
            out.append((at, fn(k)))
            k += 1
    out += [(at, text) for at, c, text in r.extra_logs if c == container]
    if r.ended is not None:
        out = [x for x in out if x[0] <= r.ended]
        if r.disrupted and container in r.containers():
            out.append((r.ended, "Terminated: the node was reclaimed (SIGTERM, exit code 143)"))
    out.sort(key=lambda x: x[0])
    return [x for x in out if x[0] <= until]


def container_started(r: PodRun, container: str) -> bool:
    """Whether the container has started (its log can be read)."""
    if container in r.init_containers():
        i = r.init_containers().index(container)
        return f"init:{i}" in r.times
    return "running" in r.times


def container_done(r: PodRun, container: str, t: datetime) -> bool:
    """Whether the container has ended by ``t`` (a follow of its log then ends)."""
    if r.ended is not None and r.ended <= t:
        return True
    if container in r.init_containers():
        i = r.init_containers().index(container)
        nxt = f"init:{i + 1}" if i + 1 < len(r.init_containers()) else "running"
        return nxt in r.times
    return False
