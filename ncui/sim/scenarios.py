"""Scenarios: who the simulated organization is, what cluster it has, and the market around it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .money import USD, ucredits


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    kind: str  # kubernetes | vm | slurm
    gpu_vendor: str = "nvidia"
    gpu_model: str = "H100-SXM-80GB"
    gpus_per_node: int = 8
    market: bool = True
    cpu_worker: bool = True
    shared_volume: bool = True
    reservation_packing: bool = False
    reserved_nodes: int = 0


@dataclass(frozen=True)
class OrgSpec:
    key: str
    org_id: str
    org_name: str
    org_kind: str
    email: str
    balance: int  # µcredits at the start
    purchases: bool = True
    clusters: tuple[ClusterSpec, ...] = ()


@dataclass(frozen=True)
class MarketSpec:
    gpu_model: str
    gpus_per_node: int
    capacity: int
    floor: int
    typical: int


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    org: OrgSpec
    markets: tuple[MarketSpec, ...] = field(default=())
    # Another organization in the same world: its cluster names must never resolve for ours.
    other: OrgSpec | None = None
    # Post-train: how many finance-analyst tunes come out defective before they pass again (0: every tune
    # passes, the default; a defective tune is what a scenario or POST /_sim/k8s/tune asks for).
    tune_defects: int = 0


H100 = MarketSpec("H100-SXM-80GB", 8, capacity=24, floor=int(1.50 * USD), typical=int(3.60 * USD))
MI300X = MarketSpec("MI300X-192GB", 8, capacity=16, floor=int(1.20 * USD), typical=int(2.80 * USD))

_OTHER = OrgSpec(
    key="other",
    org_id="org_7f3e2a",
    org_name="Kestrel Robotics",
    org_kind="company",
    email="ops@kestrel.example",
    balance=5_000 * USD,
    clusters=(ClusterSpec("kestrel", "kubernetes"),),
)


def _org(
    key: str,
    name: str,
    kind: str,
    balance: float,
    purchases: bool,
    *clusters: ClusterSpec,
    email: str = "ada@halcyon.example",
) -> OrgSpec:
    return OrgSpec(
        key=key,
        org_id=f"org_{key}",
        org_name=name,
        org_kind=kind,
        email=email,
        balance=ucredits(balance),
        purchases=purchases,
        clusters=tuple(clusters),
    )


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in [
        Scenario(
            "k8s-market",
            "A Kubernetes cluster on the market (NVIDIA H100, 8 GPUs a node, shared volume, CPU worker)",
            _org("halcyon", "Halcyon Lab", "research", 250.00, True, ClusterSpec("halcyon", "kubernetes")),
            (H100, MI300X),
            _OTHER,
        ),
        Scenario(
            "k8s-bad-tune",
            "k8s-market, but its first Post-train tune comes out defective (delete the Job, tune again: it passes)",
            _org("halcyon", "Halcyon Lab", "research", 250.00, True, ClusterSpec("halcyon", "kubernetes")),
            (H100, MI300X),
            _OTHER,
            tune_defects=1,
        ),
        Scenario(
            "k8s-fixed-amd",
            "A fixed Kubernetes cluster (AMD MI300X, two reserved nodes, no limit price)",
            _org(
                "marlin",
                "Marlin Institute",
                "research",
                120.00,
                False,
                ClusterSpec(
                    "marlin", "kubernetes", gpu_vendor="amd", gpu_model="MI300X-192GB", market=False, reserved_nodes=2
                ),
                email="grace@marlin.example",
            ),
            (H100, MI300X),
            _OTHER,
        ),
        Scenario(
            "k8s-packing",
            "A market Kubernetes cluster with one reserved node and reservation packing",
            _org(
                "osprey",
                "Osprey AI",
                "company",
                400.00,
                True,
                ClusterSpec("osprey", "kubernetes", reservation_packing=True, reserved_nodes=1),
                email="lin@osprey.example",
            ),
            (H100, MI300X),
            _OTHER,
        ),
        Scenario(
            "vm",
            "A VM cluster: nodes arrive as ssh hosts (NVIDIA H100)",
            _org(
                "tern",
                "Tern Labs",
                "research",
                300.00,
                True,
                ClusterSpec("tern-vm", "vm", cpu_worker=False, shared_volume=False),
                email="sam@tern.example",
            ),
            (H100, MI300X),
            _OTHER,
        ),
        Scenario(
            "slurm",
            "A Slurm cluster reached over ssh",
            _org(
                "plover",
                "Plover University",
                "research",
                90.00,
                False,
                ClusterSpec("plover", "slurm", cpu_worker=False, shared_volume=True),
                email="kim@plover.example",
            ),
            (H100, MI300X),
            _OTHER,
        ),
        Scenario(
            "public-research",
            "A public research organization: no clusters, whole nodes from Marshall",
            _org("puffin", "Puffin Public Research", "public_research", 60.00, False, email="ana@puffin.example"),
            (H100, MI300X),
            _OTHER,
        ),
    ]
}

DEFAULT_SCENARIO = "k8s-market"
