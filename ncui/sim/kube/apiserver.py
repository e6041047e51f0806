"""The box's Kubernetes API server, as state: every simulated cluster of one World, their sign-in, the open
streams, and the knobs the ``/_sim/k8s`` controls turn. ``routes`` serves it over HTTP."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

from starlette.concurrency import run_in_threadpool

from ..world import World
from .auth import Auth
from .cluster import Cluster

TICK_EVERY = 0.1  # real seconds between a stream's syncs of the clock


class Kube:
    """All simulated clusters of one World, their sign-in, and the knobs the sim controls turn."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.auth = Auth(world.seed, world.clock.human_elapsed)
        # the sim's knobs: the finance-analyst tune's verdict (None: it passes), and how many of the next tunes
        # come out defective (the scenario's count, or the control's)
        self.defaults: dict[str, Any] = {"tune_defective": None, "tune_defects": world.scenario.tune_defects}
        self.clusters: dict[str, Cluster] = {}
        self.closed = False
        self.streams = 0  # open watch and log-follow streams (tests check they end)
        self.forwards = 0  # open port-forward connections (kubectl port-forward sessions)
        self.log_cuts: list[int] = []  # sim fault: cut the next log-follow streams after N lines each
        self.chat_faults: list[dict[str, Any]] = []  # sim fault: the next chat streams drop or send a bad chunk
        self.chat_rate: float | None = None  # decode tokens per real second for every engine (None: each its own)
        self.chat_requests: list[tuple[str, dict]] = []  # (service, body) of each chat request, as received
        self.completions = 0  # chat completions answered (their ids count them: unique)
        self.revocations = 0  # sim fault: a watch or log stream opened before a revocation ends
        self.floods: dict[tuple, Any] = {}  # benchmark floods' logs, built once (routes.logs.FloodLog)
        self.churn: asyncio.Task | None = None  # benchmark hook: pods' restart counts bumped (routes.control.churn)
        self.churned = 0  # changes the churn made
        self._last_tick = 0.0
        with world.lock:
            for org in world.orgs.values():
                for st in org.k8s.values():
                    c = Cluster(world, org, st, self.defaults)
                    self.clusters[st.spec.name] = c
                    if hasattr(st, "busy_fn"):
                        st.busy_fn = c.node_busy
            world.listeners.append(self._on_event)

    def _on_event(self, event: str, payload: object) -> None:
        for c in self.clusters.values():
            c.on_world_event(event, payload)

    def tick(self) -> datetime:
        """Sync the clock and every cluster (holds the World lock briefly)."""
        with self.world.lock:
            now = self.world.sync()
            for c in self.clusters.values():
                c.reconcile(now)
            self._last_tick = time.monotonic()
            return now

    async def atick(self) -> None:
        if time.monotonic() - self._last_tick >= TICK_EVERY:
            await run_in_threadpool(self.tick)

    def cluster_for(self, name: str) -> Cluster | None:
        """Only the simulated human's own organization's clusters resolve."""
        c = self.clusters.get(name)
        if c is None or c.org is not self.world.main_org:
            return None
        return c

    def close(self) -> None:
        self.closed = True
        if self.churn is not None:
            self.churn.cancel()
