"""One simulated cluster's state: its pods' runs, its Jobs' bookkeeping, its nodes, the wake-ups ahead.

``ClusterState`` is what the cluster's parts (``nodesync``, ``kubelet``, ``scheduler``, ``pods``,
``controllers``) read and move; it hands out the cluster's ids (uids, name suffixes, pod IPs) from seeded
counters, so the same seed and the same requests give the same names, and keeps the discrete-event queue
(``wake``). ``cluster.Cluster`` is this state with its parts composed.
"""

from __future__ import annotations

import heapq
import itertools
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from ..world import K8sState, Node, OrgState, World
from . import profiles
from .events import Recorder
from .store import Store

GATE = "nationalcompute.com/gpu-market"
TERMINAL = ("succeeded", "failed")
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


@dataclass
class PodRun:
    ns: str
    name: str
    uid: str
    owner_kind: str  # Job | ReplicaSet | ""
    owner: str
    profile: str
    gpus: int
    created: datetime
    attempt: int
    obj: dict
    node: str | None = None
    bound: datetime | None = None
    start: datetime | None = None  # R: the node is ready, images start to pull
    plan: profiles.Plan | None = None
    state: str = "pending"  # gated | pending | creating | init:K | running | ready | succeeded | failed
    times: dict = field(default_factory=dict)
    ended: datetime | None = None
    exit_code: int | None = None
    disrupted: bool = False
    accounted: bool = False
    alive: bool = True
    deleting: datetime | None = None  # deleted while its containers ran: Terminating until this instant
    extra_logs: list = field(default_factory=list)  # (t, container, text)
    restarts: int = 0  # the containers' restartCount (the box's churn control bumps it: bench/pods.py)
    ip: str | None = None  # given on first asking (ClusterState.pod_ip)
    said: str | None = None  # the last FailedScheduling words (said again only when they change)
    term_reason: str = "Error"  # a failed container's reason
    disruption: str = "The node was reclaimed"  # the DisruptionTarget condition's message

    @property
    def key(self) -> tuple[str, str]:
        return (self.ns, self.name)

    @property
    def active(self) -> bool:
        return self.alive and self.deleting is None and self.state not in TERMINAL

    @property
    def holds(self) -> bool:
        """Its node is taken: running, or Terminating (its containers still stop)."""
        return self.alive and self.state not in TERMINAL

    def containers(self) -> list[str]:
        return [c["name"] for c in self.obj["spec"].get("containers", [])]

    def init_containers(self) -> list[str]:
        return [c["name"] for c in self.obj["spec"].get("initContainers") or []]


@dataclass
class JobCtl:
    ns: str
    name: str
    uid: str
    gpus: int
    waiting_since: datetime | None = None
    suspended_by_us: bool = False
    failed: int = 0
    attempts: int = 0
    done: bool = False
    said: str | None = None  # the last WaitingForNode words
    doomed: bool = False  # every pod of it fails (exit 1): ``/_sim/k8s/fail`` marked it


class ClusterState:
    """What one cluster holds: its objects (``store``), the runs of its pods and the bookkeeping of its Jobs,
    the nodes the market gave it, what its pods left on the shared volume and the nodes' disks, the wake-ups
    ahead, and the seeded counters its ids come from."""

    def __init__(self, world: World, org: OrgState, st: K8sState, defaults: dict) -> None:
        self.world, self.org, self.st, self.spec = world, org, st, st.spec
        self.name = st.spec.name
        self.defaults = defaults  # shared sim knobs (finance tune defect)
        self.rng = random.Random(f"kube:{world.seed}:{self.name}")
        self.uids = itertools.count(1)
        self.t: datetime = world.now()
        self.store = Store(clock=lambda: self.t)  # (events on the cluster's clock: compacted by it)
        self.wakeups: list = []
        self.seq = itertools.count()
        self.runs: dict[tuple[str, str], PodRun] = {}
        self.jobs: dict[tuple[str, str], JobCtl] = {}
        self.nodes: dict[str, Node] = {}
        self.node_ips: dict[str, int] = {}
        self.removed_reason: dict[str, str] = {}
        self.shared: dict[str, list[tuple[datetime, bool, tuple]]] = {}
        self.node_local: dict[str, dict[str, datetime]] = {}
        self.warm: dict[str, datetime] = {}
        self.pod_ips = itertools.count(10)
        self.service_ips = itertools.count(20)
        self.claims: dict[tuple[str, str], datetime] = {}  # jobs waiting for a node: since when
        self.held: set[tuple[str, str, str]] = set()  # (resource, namespace, name) a sim control put in as given
        self.dirty = True
        self.events = Recorder(self.store, self.name, world.seed)
        self.expire_at = self.t  # the next look for expired events

    # ---- ids and time ---------------------------------------------------------------------------

    def uid(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ncsim:{self.world.seed}:{self.name}:{next(self.uids)}"))

    def suffix(self, n: int = 5) -> str:
        return "".join(self.rng.choice(NAME_CHARS) for _ in range(n))

    def wake(self, t: datetime, fn: Callable[[datetime], None]) -> None:
        heapq.heappush(self.wakeups, (t, next(self.seq), fn))

    def node_ip(self, node: str | None) -> str:
        i = self.node_ips.get(node or "", 0)
        return f"10.0.{i // 250}.{i % 250}"

    def pod_ip(self, r: PodRun) -> str:
        """The pod's IP, given on first asking (the order of asking is part of the seeded run)."""
        if r.ip is None:
            n = next(self.pod_ips)
            r.ip = f"10.244.{self.node_ips.get(r.node, 0) % 250}.{n % 250 + 2}"
        return r.ip
