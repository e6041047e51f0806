"""The National Compute contract (../shared/CONTRACT.md) as pydantic models.

One model per request and response. The client parses with them, the simulator serves them and
publishes them as OpenAPI, so both sides cannot drift apart. Unknown fields are accepted (the real
service may send more). Balances are integer micro-credits; prices per GPU hour are ``Price``
(dollars on the wire, micro-credits in Python: see ``money.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from .money import Price


class Model(BaseModel):
    """Base for every wire model: extra fields allowed, frozen (snapshots in the store are immutable).

    A field marked ``Feeds(..., degrades=True)`` (typed ``X | None``) is one the contract requires but ncui can do
    without: when an answer leaves it out, only the figures it feeds read unknown, with ``unknown(name)``'s reason,
    and the rest of the answer is read (a renamed field never fails the whole balance)."""

    model_config = ConfigDict(extra="allow", frozen=True, json_schema_extra=lambda s, c: _as_contract(s, c))
    _unknown: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _degrade(cls, data: object, handler: Any) -> Any:
        obj = handler(data)
        if isinstance(data, dict) and isinstance(obj, Model):
            for name in _degrading(cls):
                if name not in data:
                    obj._unknown[name] = f"National Compute's answer has no {name} (its contract changed: ncui doctor)"
        return obj

    def unknown(self, name: str) -> str:
        """Why field ``name`` is unknown ("" when it was read)."""
        return self._unknown.get(name, "")


@dataclass(frozen=True)
class Feeds:
    """What ncui shows from a field (``Annotated[int, Feeds("the header's burn")]``): ``ncui doctor`` names it when
    the service's contract drops or retypes the field. Not part of the wire: pydantic keeps it as metadata.
    ``degrades``: the contract requires it, but an answer without it is still read (``Model.unknown``)."""

    what: str
    degrades: bool = False


_DEGRADING: dict[type, tuple[str, ...]] = {}


def _as_contract(schema: dict[str, Any], cls: type) -> None:
    """A degrading field is published as the contract has it (the box serves these schemas): required, not null."""
    for name in _degrading(cls):
        prop = schema.get("properties", {}).get(name)
        if prop is None:
            continue
        alts = [a for a in prop.pop("anyOf", []) if a.get("type") != "null"]
        if len(alts) == 1:
            prop.update(alts[0])
        prop.pop("default", None)
        schema["required"] = [*schema.get("required", []), name]


def _degrading(cls: type[BaseModel]) -> tuple[str, ...]:
    if cls not in _DEGRADING:
        _DEGRADING[cls] = tuple(
            n
            for n, f in cls.model_fields.items()
            if any(isinstance(x, Feeds) and x.degrades for x in f.metadata) and f.alias is None
        )
    return _DEGRADING[cls]


ClusterKind = Literal["kubernetes", "vm", "slurm"]
KNOWN_KINDS: frozenset[str] = frozenset(get_args(ClusterKind))
OrgKind = Literal["research", "company", "public_research"]
GpuVendor = Literal["nvidia", "amd"]
# The error slugs the contract names (ncui matches on some of them: api/errors.py's WIRE_ERRORS); others may come.
ErrorCode = Literal["unauthorized", "forbidden", "not-found", "invalid", "bid-too-low", "version-conflict"]


# ---- errors ---------------------------------------------------------------------------------------


class ErrorBody(Model):
    """Every error: ``{"error": slug, "detail": sentence, ...}`` with the HTTP status."""

    error: ErrorCode | str = Field(
        description="unauthorized | bid-too-low | version-conflict | invalid | not-found | …"
    )
    detail: str = Field(description="A human sentence")
    min_price_per_gpu_hour: Price | None = Field(default=None, description="bid-too-low: the floor")
    version: int | None = Field(default=None, description="version-conflict: the current version")


# ---- account --------------------------------------------------------------------------------------


class User(Model):
    id: str
    email: str


class ClusterRef(Model):
    name: str
    # a kind the service adds is read (whoami never fails on it): that cluster says it is a kind ncui does not know
    kind: Annotated[ClusterKind | str, Feeds("which screens each cluster gets")]

    @property
    def known(self) -> bool:
        return self.kind in KNOWN_KINDS

    @property
    def kind_said(self) -> str:
        """The kind as shown: ``vm``, or ``tpu: a kind ncui does not know``."""
        return self.kind if self.known else f"{self.kind}: a kind ncui does not know"


class Whoami(Model):
    user: User
    org_id: str
    org_name: Annotated[str, Feeds("the organization in the header")]
    org_kind: Annotated[OrgKind | str, Feeds("whether the organization gets the public research node")]
    clusters: Annotated[list[ClusterRef], Feeds("the clusters ncui offers")] = Field(default_factory=list)


# ---- billing --------------------------------------------------------------------------------------


class BillingSummary(Model):
    balance_ucredits: Annotated[int, Feeds("the balance the money questions use")]
    purchases: Annotated[bool, Feeds("whether ncui offers a top-up")]


class Balance(Model):
    balance_ucredits: Annotated[int, Feeds("the header's balance")]
    burn_ucredits_hr: Annotated[int | None, Feeds("the header's burn", degrades=True)] = Field(
        default=None, description="The meter's last assessed hourly rate (about 10 min behind); required"
    )
    assessed_at: datetime | None = None


class Transaction(Model):
    id: str
    at: datetime
    kind: Literal["charge", "topup", "refund"] | str
    amount_ucredits: Annotated[int, Feeds("the spend in the last day and the report's charges")] = Field(
        description="Negative for charges"
    )
    description: str
    gpu_hours: float | None = None
    price_per_gpu_hour: Price | None = None
    cluster: str | None = Field(default=None, description="ours: the cluster a charge is for")
    node: str | None = Field(default=None, description="ours: the node a charge is for, where it can say")


class Transactions(Model):
    transactions: list[Transaction] = Field(description="Newest first")


# ---- kubernetes cluster and its market ------------------------------------------------------------


class K8sCluster(Model):
    name: str
    market: Annotated[bool, Feeds("whether the cluster asks for a limit price")] = Field(
        description="true: the market grants nodes; false: a fixed cluster, no limit price"
    )
    gpus_per_node: int
    cpu_worker: bool
    shared_volume: bool
    gpu_vendor: Annotated[GpuVendor | str, Feeds("which recipe files ncui fetches (the vendor rule)")]
    gpu_model: str
    reservation_packing: bool = False
    reserved_nodes: int = 0


class BidRequest(Model):
    max_price_per_gpu_hour: Price = Field(description="The most you will pay per GPU hour; 0 withdraws")


class Bid(Model):
    cluster: str
    max_price_per_gpu_hour: Price = Field(description="0 when no limit price stands")
    updated_at: datetime | None = None


class LadderRung(Model):
    nodes: int
    price_per_gpu_hour: Annotated[Price, Feeds("the price-to-win ladder")]


class Ladder(Model):
    gpu_model: str
    gpus_per_node: int
    as_of: datetime
    rungs: list[LadderRung]
    floor_price_per_gpu_hour: Price | None = Field(default=None, description="Below this a bid is refused")


class Spend(Model):
    nodes_held: int
    gpus_held: int
    price_per_gpu_hour: Annotated[Price | None, Feeds("the live market rate")] = Field(
        default=None, description="Live assessed rate; null when nothing held"
    )
    spend_ucredits_hr: Annotated[int, Feeds("the market spend per hour")]
    as_of: datetime


# ---- market feed ----------------------------------------------------------------------------------


class Tick(Model):
    at: datetime
    gpu_model: str
    price_per_gpu_hour: Annotated[Price, Feeds("the market chart")]
    gpus: int = Field(description="GPUs the winners hold at this price")


class Ticks(Model):
    ticks: list[Tick] = Field(description="Oldest first")


# ---- VM capacity ----------------------------------------------------------------------------------

AllocationState = Literal["pending", "provisioning", "active", "released", "reclaimed"]


class Allocation(Model):
    id: str
    state: Annotated[AllocationState | str, Feeds("whether a VM node is ready")]
    gpus: int
    gpu_model: str
    public_ip: Annotated[str | None, Feeds("where ncui connects to a VM node")] = None
    granted_at: datetime | None = None
    ssh_port: int = Field(default=22, description="ours: the simulator's nodes listen on loopback ports")


class VmEnvironment(Model):
    ssh_user: Annotated[str, Feeds("the user ncui signs in as on a VM node")]


class VmCapacity(Model):
    version: Annotated[int, Feeds("declaring VM capacity (the expected version)")]
    max_gpus: Annotated[int, Feeds("the VM capacity declared")]
    max_price_per_gpu_hour: Annotated[Price, Feeds("the VM limit price")]
    allocations: list[Allocation] = Field(default_factory=list)
    environment: VmEnvironment
    # ours: what the cluster trades, so a declaration can be judged before it is sent (absent: unknown)
    gpu_model: str | None = Field(default=None, description="ours: the GPU class the VM cluster trades")
    gpus_per_node: int | None = Field(default=None, description="ours: GPUs per node (max_gpus is a multiple)")


class VmCapacityRequest(Model):
    max_gpus: int = Field(ge=0, le=4096)
    max_price_per_gpu_hour: Price
    expected_version: int = Field(ge=0)


class SshKey(Model):
    id: str
    name: str
    fingerprint: Annotated[str, Feeds("whether your ssh key is registered")]
    public_key: str
    created_at: datetime


class SshKeys(Model):
    keys: list[SshKey]


class SshKeyRequest(Model):
    name: str = Field(min_length=1, max_length=100)
    public_key: str = Field(min_length=1, max_length=16_384)


# ---- public research node (the box's stand-in for Marshall's status: no API on the service) ----------


class ResearchStatus(Model):
    """``GET /_sim/research/status`` (the box only; ours): Marshall's pool watch and ``public_research_status``,
    which the service keeps inside a workspace. ``state``: queued | assigning | assigned | released, or
    ``unavailable`` (made by the client: no such route, as on the real service). Prices in micro-credits."""

    state: str
    queue_position: int | None = None
    estimated_wait_seconds: int | None = None  # assumes every lease ahead runs its full length
    assigned_at: datetime | None = None
    released_at: datetime | None = None
    public_ip: str | None = None
    ssh_user: str | None = None
    ssh_port: int | None = None
    ssh_host: str | None = None  # its Host name in the box's NC_SSH_CONFIG
    hostname: str | None = None
    gpus: int | None = None
    gpu_model: str | None = None
    price_per_gpu_hour: int | None = None
    lease_seconds: int | None = None
    lease_ucredits: int | None = None


# ---- recipe catalog -------------------------------------------------------------------------------


class RecipeStep(Model):
    stem: str
    file: str = ""
    title: str = ""
    optional: bool = False
    needs: list[str] = Field(default_factory=list)


class RecipeObject(Model):
    kind: str
    name: str


class Recipe(Model):
    name: str
    title: str
    cluster_kind: str
    category: str
    description: str
    default_file: str
    vendor_variants: list[str] = Field(default_factory=list)
    steps: list[RecipeStep] = Field(default_factory=list)
    needs: list[str] = Field(default_factory=list)
    stop: list[str] = Field(default_factory=list)
    objects: list[RecipeObject] = Field(default_factory=list)
    expected_minutes: float | None = Field(
        default=None, description="ours: the run's length on one node once it starts; absent for serves"
    )
