"""The simulated world: organizations, their clusters and nodes, the markets, billing and VM capacity.

Time moves in steps of one virtual minute. ``sync()`` runs every step due by the clock, in order, so the
state at a virtual instant depends only on the random seed and on what was asked of it, not on how often
anybody looked. Every public method takes the world's lock: the HTTP server (its own thread) and a
test (another) may both touch it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import random
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from fractions import Fraction

from .clock import VirtualClock
from .market import Demand, Market
from .money import usd
from .scenarios import SCENARIOS, ClusterSpec, OrgSpec, Scenario

STEP = 60.0  # virtual seconds per market step
ASSESS_EVERY = 10  # steps between billing assessments (the burn rate lags by about this much)
WARMUP_STEPS = 6 * 60  # market history before the world's start (six hours of ticks)
SETTLE_STEPS = 120  # unrecorded market steps before the history starts
IDLE_GRACE_STEPS = 10  # an idle market node is kept this long in case another job comes
JOIN_MIN, JOIN_MAX = 10 * 60, 15 * 60  # a granted node takes 10–15 minutes to build and join
TICKS_KEPT = 7 * 24 * 60
SSH_KEY_TYPES = {
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
}


class SimError(Exception):
    """A refusal the API turns into ``{"error": slug, "detail": ...}`` with ``status``."""

    def __init__(self, status: int, slug: str, detail: str, **extra) -> None:
        super().__init__(detail)
        self.status, self.slug, self.detail, self.extra = status, slug, detail, extra


@dataclass
class Node:
    name: str
    cluster: str
    role: str  # "gpu" | "cpu"
    source: str  # "market" | "reserved" | "cpu"
    gpus: int
    gpu_model: str
    gpu_vendor: str
    granted_at: datetime
    ready_at: datetime
    price_key: str = ""  # the market demand that holds it

    def ready(self, now: datetime) -> bool:
        return now >= self.ready_at


@dataclass
class K8sState:
    spec: ClusterSpec
    org: str
    bid: int = 0  # µcredits per GPU hour; 0 = no standing limit price
    last_ceiling: int = 0  # what held nodes keep bidding after a withdrawal
    bid_updated_at: datetime | None = None
    nodes: list[Node] = field(default_factory=list)
    requested_nodes: int = 0  # GPU nodes the workloads need (the Kubernetes layer sets demand_fn)
    demand_fn: Callable[[], int] | None = None
    busy_fn: Callable[[Node], bool] | None = None  # the Kubernetes layer: does a pod run on this node
    idle_since_step: int | None = None

    def gpu_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "gpu"]

    def market_nodes(self) -> list[Node]:
        return [n for n in self.nodes if n.source == "market"]

    def wanted(self) -> int:
        return self.demand_fn() if self.demand_fn is not None else self.requested_nodes


@dataclass
class AllocationState:
    id: str
    gpus: int
    gpu_model: str
    granted_at: datetime
    ready_at: datetime
    public_ip: str
    ssh_port: int
    keys: tuple[str, ...]  # fingerprints installed at grant
    state: str = "pending"  # pending → provisioning → active; released | reclaimed

    def state_at(self, now: datetime) -> str:
        if self.state in ("released", "reclaimed"):
            return self.state
        if now >= self.ready_at:
            return "active"
        if now >= self.granted_at + timedelta(minutes=1):
            return "provisioning"
        return "pending"


@dataclass
class VmState:
    spec: ClusterSpec
    version: int = 1
    max_gpus: int = 0
    price: int = 0
    allocations: list[AllocationState] = field(default_factory=list)
    ssh_user: str = "ubuntu"


@dataclass
class ResearchState:
    """A public-research organization's node request, as the box stands in for Marshall's pool (ours: the service
    has no API for it). Requested when the world starts, it waits behind the leases ahead: the queue position is
    how many of them still run, the estimate assumes each runs its full length (as Marshall's pool watch says),
    and the node is assigned when the last one actually ends (earlier than the estimate), or at once by a sim
    control. The meter charges the lease's rate from assignment until release."""

    requested_at: datetime
    full_ends: tuple[datetime, ...]  # when each lease ahead would end at its full length
    actual_ends: tuple[datetime, ...]  # when each really ends (runs end early)
    host: str  # the node's hostname
    public_ip: str
    gpus: int = 8
    gpu_model: str = "H100-SXM-80GB"
    gpu_vendor: str = "nvidia"
    price: int = 2_500_000  # µcredits per GPU hour of the lease (ours)
    lease_seconds: int = 2 * 3600  # one full lease: 8 GPUs × $2.50 × 2 h = $40, within the scenario's balance
    ssh_user: str = "ubuntu"
    ssh_port: int = 22  # the port its node listens on once assigned (22 on the service; the box's own here)
    assigned_at: datetime | None = None  # set by the sim control (assign now)
    released_at: datetime | None = None

    def assigned_time(self) -> datetime:
        natural = max(self.actual_ends) if self.actual_ends else self.requested_at
        return natural if self.assigned_at is None else min(natural, self.assigned_at)

    def state_at(self, now: datetime) -> str:
        if self.released_at is not None and now >= self.released_at:
            return "released"
        return "assigned" if now >= self.assigned_time() else "queued"

    def position_at(self, now: datetime) -> int:
        return sum(1 for a in self.actual_ends if a > now)

    def estimate_at(self, now: datetime) -> int:
        """Seconds until the node is expected, assuming every lease ahead runs its full length."""
        ahead = [f for f, a in zip(self.full_ends, self.actual_ends, strict=True) if a > now]
        return max(0, round((max(ahead) - now).total_seconds())) if ahead else 0


@dataclass
class SshKeyState:
    id: str
    name: str
    fingerprint: str
    public_key: str
    created_at: datetime


@dataclass
class TxState:
    id: str
    at: datetime
    kind: str
    amount: int
    description: str
    gpu_hours: float | None = None
    price: int | None = None
    cluster: str | None = None  # a charge's cluster and node (ours: each charge names them where it can)
    node: str | None = None


@dataclass
class Meter:
    """What one node (a cluster's node, a VM allocation, the research node) accrued: exact, and what was charged."""

    owed: Fraction = Fraction(0)
    debited: int = 0
    interval_owed: Fraction = Fraction(0)
    interval_gpu_hours: Fraction = Fraction(0)


@dataclass
class OrgState:
    spec: OrgSpec
    token: str
    balance: int
    transactions: list[TxState] = field(default_factory=list)
    owed: Fraction = Fraction(0)  # exact charges accrued since the start
    debited: int = 0  # what assessments took so far (whole µcredits)
    interval_owed: Fraction = Fraction(0)
    interval_gpu_hours: Fraction = Fraction(0)
    burn_hr: int = 0
    assessed_at: datetime | None = None
    k8s: dict[str, K8sState] = field(default_factory=dict)
    vm: dict[str, VmState] = field(default_factory=dict)
    ssh_keys: list[SshKeyState] = field(default_factory=list)
    research: ResearchState | None = None  # a public_research organization's node (the box's stand-in)
    meters: dict[tuple[str | None, str], Meter] = field(default_factory=dict)  # (cluster, node) → its meter


def token_for(seed: int, scenario: str, org: str) -> str:
    digest = hashlib.sha256(f"ncsim:{seed}:{scenario}:{org}".encode()).hexdigest()[:24]
    return f"ncsim_{org}_{digest}"


class World:
    def __init__(
        self,
        scenario: str | Scenario = "k8s-market",
        *,
        seed: int = 1,
        speed: float = 1.0,
        start: datetime | None = None,
        volatility: float = 1.0,
    ) -> None:
        self.scenario = SCENARIOS[scenario] if isinstance(scenario, str) else scenario
        self.seed = seed
        if start is None:
            start = datetime.now(timezone.utc).replace(second=0, microsecond=0)
        self.start = start.astimezone(timezone.utc)
        self.epoch = self.start - timedelta(seconds=WARMUP_STEPS * STEP)
        self.clock = VirtualClock(self.epoch, speed, elapsed=WARMUP_STEPS * STEP)
        self.lock = threading.RLock()
        self.step_index = 0  # steps done; the next step happens at epoch + step_index × STEP
        self._grant_rng = random.Random(f"grants:{seed}")
        self._ids = itertools.count(1)
        self.listeners: list[Callable[[str, object], None]] = []
        self.markets: dict[str, Market] = {
            ms.gpu_model: Market.generate(
                ms.gpu_model,
                ms.gpus_per_node,
                capacity=ms.capacity,
                floor=ms.floor,
                typical=ms.typical,
                seed=seed,
                volatility=volatility,
            )
            for ms in self.scenario.markets
        }
        self.ticks: dict[str, deque] = {k: deque(maxlen=TICKS_KEPT) for k in self.markets}
        self.orgs: dict[str, OrgState] = {}
        for spec in [self.scenario.org] + ([self.scenario.other] if self.scenario.other else []):
            self._add_org(spec)
        self.main_org = self.orgs[self.scenario.org.key]
        for market in self.markets.values():  # let the bidders settle before history starts
            for _ in range(SETTLE_STEPS):
                market.evolve()
                market.clear([])
        with self.lock:
            self._run_until(WARMUP_STEPS * STEP)

    # ---- set-up -------------------------------------------------------------------------------

    def _add_org(self, spec: OrgSpec) -> None:
        org = OrgState(spec, token_for(self.seed, self.scenario.name, spec.key), spec.balance)
        org.transactions.append(TxState(self._id("tx"), self.epoch, "topup", spec.balance, "Credits purchased"))
        for c in spec.clusters:
            if c.kind == "kubernetes":
                st = K8sState(c, spec.key)
                if c.cpu_worker:
                    st.nodes.append(
                        Node(f"{c.name}-cpu-worker-0", c.name, "cpu", "cpu", 0, "", "", self.epoch, self.epoch)
                    )
                for i in range(c.reserved_nodes if c.market else max(1, c.reserved_nodes)):
                    st.nodes.append(
                        Node(
                            f"{c.name}-{_short(c.gpu_model)}-r{i}",
                            c.name,
                            "gpu",
                            "reserved",
                            c.gpus_per_node,
                            c.gpu_model,
                            c.gpu_vendor,
                            self.epoch,
                            self.epoch,
                        )
                    )
                org.k8s[c.name] = st
            elif c.kind == "vm":
                org.vm[c.name] = VmState(c)
        if spec.org_kind == "public_research":
            rng = random.Random(f"research:{self.seed}:{spec.key}")
            lease = ResearchState.lease_seconds
            # Three leases ahead, each started some time ago; each run ends early, somewhere in its last part.
            full = sorted(self.start + timedelta(seconds=round(rng.uniform(0.1, 0.9) * lease)) for _ in range(3))
            actual = tuple(f - timedelta(seconds=round(rng.uniform(0.05, 0.3) * (f - self.start).total_seconds()))
                           for f in full)  # fmt: skip
            org.research = ResearchState(self.start, tuple(full), actual, f"pr-h100-{rng.randrange(1, 200):04d}",
                                         "127.12.0.1")  # fmt: skip
        self.orgs[spec.key] = org

    def _id(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids):06d}"

    # ---- time ---------------------------------------------------------------------------------

    def now(self) -> datetime:
        return self.clock.now()

    def sync(self) -> datetime:
        """Run every step that is due; return now."""
        with self.lock:
            elapsed = self.clock.elapsed()
            self._run_until(elapsed)
            return self.epoch + timedelta(seconds=elapsed)

    def advance(self, seconds: float) -> datetime:
        """Move the virtual clock forward (tests, demos) and run what became due."""
        with self.lock:
            self.clock.advance(seconds)
            return self.sync()

    def _run_until(self, elapsed: float) -> None:
        while (self.step_index + 1) * STEP <= elapsed + 1e-9:
            self.step_index += 1
            self._step(self.epoch + timedelta(seconds=self.step_index * STEP))

    def at_step(self, k: int) -> datetime:
        return self.epoch + timedelta(seconds=k * STEP)

    # ---- one step -----------------------------------------------------------------------------

    def _step(self, t: datetime) -> None:
        for market in self.markets.values():
            market.evolve()
        for model, market in self.markets.items():
            demands, owners = self._demands(model, t)
            clearing = market.clear(demands)
            self.ticks[model].append((t, clearing.price, clearing.gpus))
            for d in demands:
                self._settle(owners[d.key], d, clearing.winners.get(d.key, 0), t)
        self._meter(t)
        if self.step_index % ASSESS_EVERY == 0:
            self._assess(t)
        self._emit("step", t)

    def _demands(self, model: str, t: datetime) -> tuple[list[Demand], dict]:
        demands, owners = [], {}
        for org in self.orgs.values():
            broke = org.balance - (org.owed.__floor__() - org.debited) <= 0
            for st in org.k8s.values():
                if not st.spec.market or st.spec.gpu_model != model:
                    continue
                held = len(st.market_nodes())
                reserved = sum(1 for n in st.gpu_nodes() if n.source == "reserved")
                need = max(0, st.wanted() - reserved)
                if st.bid > 0:
                    nodes, price = need, st.bid
                else:  # withdrawn: keep what is held while it is busy, pull nothing new
                    nodes, price = min(need, held), st.last_ceiling
                if nodes < held:  # idle held nodes stay a while for the next job
                    if st.idle_since_step is None:
                        st.idle_since_step = self.step_index
                    if self.step_index - st.idle_since_step < IDLE_GRACE_STEPS and price > 0:
                        nodes = held
                else:
                    st.idle_since_step = None
                if broke or price <= 0:
                    nodes = 0
                key = f"k8s:{org.spec.key}:{st.spec.name}"
                demands.append(Demand(key, price, nodes, min(held, nodes)))
                owners[key] = st
            for vm in org.vm.values():
                if vm.spec.gpu_model != model:
                    continue
                live = [a for a in vm.allocations if a.state not in ("released", "reclaimed")]
                nodes = 0 if broke else vm.max_gpus // vm.spec.gpus_per_node
                key = f"vm:{org.spec.key}:{vm.spec.name}"
                demands.append(Demand(key, vm.price, nodes, min(len(live), nodes)))
                owners[key] = vm
        return demands, owners

    def _settle(self, owner, d: Demand, won: int, t: datetime) -> None:
        """Grant or take back nodes so that ``owner`` holds what it won."""
        if isinstance(owner, K8sState):
            held = owner.market_nodes()
            if won > len(held):
                for _ in range(won - len(held)):
                    delay = self._grant_rng.uniform(JOIN_MIN, JOIN_MAX)
                    spec = owner.spec
                    node = Node(
                        f"{spec.name}-{_short(spec.gpu_model)}-{next(self._ids):04d}",
                        spec.name,
                        "gpu",
                        "market",
                        spec.gpus_per_node,
                        spec.gpu_model,
                        spec.gpu_vendor,
                        t,
                        t + timedelta(seconds=round(delay)),
                        d.key,
                    )
                    owner.nodes.append(node)
                    self._emit("node-granted", node)
            elif won < len(held):
                # Joining nodes go first, then the newest; a drop we asked for is a release.
                reason = "released" if d.nodes < len(held) else "reclaimed"
                busy = owner.busy_fn if reason == "released" and owner.busy_fn else (lambda n: False)
                victims = sorted(held, key=lambda n: (busy(n), n.ready(t), -n.granted_at.timestamp()))
                for node in victims[: len(held) - won]:
                    owner.nodes.remove(node)
                    self._emit(f"node-{reason}", node)
        else:
            live = [a for a in owner.allocations if a.state not in ("released", "reclaimed")]
            if won > len(live):
                org = self._org_of_vm(owner)
                for _ in range(won - len(live)):
                    delay = self._grant_rng.uniform(JOIN_MIN, JOIN_MAX)
                    n = next(self._ids)
                    a = AllocationState(
                        f"alloc-{n:06d}",
                        owner.spec.gpus_per_node,
                        owner.spec.gpu_model,
                        t,
                        t + timedelta(seconds=round(delay)),
                        f"127.10.{(n >> 8) & 255}.{n & 255 or 1}",
                        22,
                        tuple(k.fingerprint for k in org.ssh_keys),
                    )
                    owner.allocations.append(a)
                    self._emit("vm-granted", a)
            elif won < len(live):
                victims = sorted(live, key=lambda a: (a.state_at(t) == "active", -a.granted_at.timestamp()))
                for a in victims[: len(live) - won]:
                    a.state = "reclaimed"
                    self._emit("vm-reclaimed", a)

    def _org_of_vm(self, vm: VmState) -> OrgState:
        return next(o for o in self.orgs.values() if vm in o.vm.values())

    def _meter(self, t: datetime) -> None:
        """Charge every market node that is up this minute its market's assessed price."""
        for org in self.orgs.values():
            for st in org.k8s.values():
                if not st.spec.market:
                    continue
                price = self.markets[st.spec.gpu_model].last.price
                for node in st.market_nodes():
                    if node.ready(t):
                        self._accrue(org, price, node.gpus, st.spec.name, node.name)
            for vm in org.vm.values():
                price = self.markets[vm.spec.gpu_model].last.price
                for a in vm.allocations:
                    if a.state_at(t) == "active":
                        self._accrue(org, price, a.gpus, vm.spec.name, a.id)
            if org.research is not None and org.research.state_at(t) == "assigned":
                self._accrue(org, org.research.price, org.research.gpus, None, org.research.host)

    def _accrue(self, org: OrgState, price: int, gpus: int, cluster: str | None, node: str) -> None:
        amount = Fraction(price * gpus, 60)
        org.owed += amount
        org.interval_owed += amount
        org.interval_gpu_hours += Fraction(gpus, 60)
        meter = org.meters.setdefault((cluster, node), Meter())
        meter.owed += amount
        meter.interval_owed += amount
        meter.interval_gpu_hours += Fraction(gpus, 60)

    def _assess(self, t: datetime) -> None:
        """Every ASSESS_EVERY steps: one charge per node that accrued whole µcredits since the last, naming its
        cluster and node (a research node names its host: it has no cluster)."""
        for org in self.orgs.values():
            for (cluster, node), meter in org.meters.items():
                charge = meter.owed.__floor__() - meter.debited
                if charge > 0:
                    gh = meter.interval_gpu_hours
                    avg = round(meter.interval_owed / gh) if gh else None
                    where = f"{cluster}/{node}" if cluster else node
                    meter.debited += charge
                    org.debited += charge
                    org.balance -= charge
                    org.transactions.append(
                        TxState(
                            self._id("tx"),
                            t,
                            "charge",
                            -charge,
                            f"GPU market: {float(gh):.2f} GPU-hours on {where}",
                            float(gh),
                            avg,
                            cluster,
                            node,
                        )
                    )
                meter.interval_owed = Fraction(0)
                meter.interval_gpu_hours = Fraction(0)
            org.burn_hr = round(org.interval_owed * (60 // ASSESS_EVERY))
            org.assessed_at = t
            org.interval_owed = Fraction(0)
            org.interval_gpu_hours = Fraction(0)

    def _emit(self, event: str, payload: object) -> None:
        for fn in list(self.listeners):
            fn(event, payload)

    # ---- lookups ------------------------------------------------------------------------------

    def org_for_token(self, token: str) -> OrgState | None:
        for org in self.orgs.values():
            if hashlib.sha256(token.encode()).digest() == hashlib.sha256(org.token.encode()).digest():
                return org
        return None

    def k8s_cluster(self, org: OrgState, name: str | None) -> K8sState:
        if not name:
            if not org.k8s:
                raise SimError(404, "not-found", f"{org.spec.org_name} has no Kubernetes cluster.")
            return next(iter(org.k8s.values()))
        if name in org.k8s:
            return org.k8s[name]
        if any(c.name == name for c in org.spec.clusters):
            raise SimError(404, "not-found", f"{name} is not a Kubernetes cluster.")
        raise SimError(404, "not-found", f"No cluster named {name} in {org.spec.org_name}.")

    def vm_cluster(self, org: OrgState) -> VmState:
        if not org.vm:
            raise SimError(404, "not-found", f"{org.spec.org_name} has no VM cluster.")
        return next(iter(org.vm.values()))

    def market_of(self, st: K8sState) -> Market:
        if not st.spec.market:
            raise SimError(
                422, "not-a-market", f"{st.spec.name} is a fixed cluster: it has no market and no limit price."
            )
        return self.markets[st.spec.gpu_model]

    # ---- actions ------------------------------------------------------------------------------

    def set_bid(self, st: K8sState, price: int) -> None:
        market = self.market_of(st)
        if 0 < price < market.floor:
            raise SimError(
                422,
                "bid-too-low",
                f"{usd(price)} per GPU hour is under the market's floor of {usd(market.floor)}: it would never clear.",
                min_price_per_gpu_hour=market.floor,
            )
        st.bid = price
        if price > 0:
            st.last_ceiling = price
        st.bid_updated_at = self.now()

    def set_vm_capacity(self, org: OrgState, max_gpus: int, price: int, expected_version: int) -> VmState:
        vm = self.vm_cluster(org)
        if expected_version != vm.version:
            raise SimError(
                409,
                "version-conflict",
                f"expected_version {expected_version} is stale: the capacity is at version {vm.version}.",
                version=vm.version,
            )
        gpn = vm.spec.gpus_per_node
        if max_gpus % gpn:
            raise SimError(422, "invalid", f"max_gpus must be a multiple of {gpn} (whole nodes).")
        market = self.markets[vm.spec.gpu_model]
        if max_gpus > 0 and price < market.floor:
            raise SimError(
                422,
                "bid-too-low",
                f"{usd(price)} per GPU hour is under the market's floor of {usd(market.floor)}: it would never clear.",
                min_price_per_gpu_hour=market.floor,
            )
        vm.max_gpus, vm.price = max_gpus, price
        vm.version += 1
        if max_gpus == 0:
            for a in vm.allocations:
                if a.state not in ("released", "reclaimed"):
                    a.state = "released"
                    self._emit("vm-released", a)
        return vm

    def research_node(self, org: OrgState) -> ResearchState:
        if org.research is None:
            raise SimError(404, "not-found", f"{org.spec.org_name} is not a public research organization: no node.")
        return org.research

    def add_ssh_key(self, org: OrgState, name: str, public_key: str) -> SshKeyState:
        fp = fingerprint(public_key)
        for k in org.ssh_keys:
            if k.fingerprint == fp:
                return k
        key = SshKeyState(self._id("key"), name.strip(), fp, public_key.strip(), self.now())
        org.ssh_keys.append(key)
        return key

    def tick_list(self, model: str | None, since: datetime | None, limit: int) -> list[tuple]:
        out = []
        for m, ticks in self.ticks.items():
            if model and m != model:
                continue
            sel = [(t, m, p, g) for (t, p, g) in ticks if since is None or t > since]
            out.extend(sel[-limit:])
        out.sort(key=lambda x: (x[0], x[1]))
        return out[-limit:]


def fingerprint(public_key: str) -> str:
    """OpenSSH's SHA256 fingerprint of a public key line; SimError(422) when it is not one."""
    parts = public_key.strip().split()
    if len(parts) < 2 or parts[0] not in SSH_KEY_TYPES:
        raise SimError(
            422, "invalid", "public_key must be an OpenSSH public key line, like 'ssh-ed25519 AAAA… you@host'."
        )
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        raise SimError(422, "invalid", "public_key's base64 part is not valid.") from None
    n = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else -1
    if n <= 0 or blob[4 : 4 + n].decode("ascii", "replace") != parts[0]:
        raise SimError(422, "invalid", "public_key's key data does not match its type.")
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _short(gpu_model: str) -> str:
    return gpu_model.split("-")[0].lower()
