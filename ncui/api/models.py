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

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from ..textsafe import clean
from .money import Price


class Model(BaseModel):
    """Base for every wire model: extra fields allowed, frozen (snapshots in the store are immutable).

    A field marked ``Feeds(..., degrades=True)`` (typed ``X | None``) is one the contract requires but ncui can do
    without: when an answer leaves it out, sends it null or retyped (a value its type refuses), only the figures it
    feeds read unknown, with ``unknown(name)``'s reason, and the rest of the answer is read (a renamed or retyped
    field never fails the whole balance). A field ncui cannot act without at all stays plain (required)."""

    model_config = ConfigDict(extra="allow", frozen=True, json_schema_extra=lambda s, c: _as_contract(s, c))
    _unknown: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _degrade(cls, data: object, handler: Any) -> Any:
        names = _degrading(cls)
        if not names or not isinstance(data, dict):
            return handler(data)
        why = {n: _gone(n) for n in names if n not in data}
        why |= {n: _retyped(cls, n, None) for n in names if n in data and data[n] is None}
        kept = {k: v for k, v in data.items() if k not in why}
        try:
            obj = handler(kept)
        except ValidationError as e:
            bad = {err["loc"][0]: err["msg"] for err in e.errors() if err["loc"] and err["loc"][0] in names}
            if not bad:
                raise
            why |= {n: _retyped(cls, str(n), kept[n], msg) for n, msg in bad.items()}
            obj = handler({k: v for k, v in kept.items() if k not in bad})  # anything else wrong still fails
        if isinstance(obj, Model):
            obj._unknown.update(why)
        return obj

    def unknown(self, name: str) -> str:
        """Why field ``name`` is unknown ("" when it was read)."""
        return self._unknown.get(name, "")


def _gone(name: str) -> str:
    return f"National Compute's answer has no {name} (its contract changed: ncui doctor)"


_JSON_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    return next((name for t, name in _JSON_TYPES if isinstance(value, t)), type(value).__name__)


def _retyped(cls: type[BaseModel], name: str, value: object, msg: str = "") -> str:
    """Why a field sent with a value its type refuses is unknown (the type as the published contract has it)."""
    got, expected = _json_type(value), _expected_type(cls, name)
    if got != expected or not msg:
        return f"National Compute's answer has {name} as {got}, not {expected} (its contract changed: ncui doctor)"
    said = clean(str(msg))[:120]
    return (
        f"National Compute's answer has {name} as a {got} ncui cannot read: {said} (its contract changed: ncui doctor)"
    )


_EXPECTED: dict[tuple[type, str], str] = {}


def _expected_type(cls: type[BaseModel], name: str) -> str:
    if (cls, name) not in _EXPECTED:
        prop = cls.model_json_schema().get("properties", {}).get(name, {})
        types = [prop.get("type")] + [a.get("type") for a in prop.get("anyOf", [])]
        if "$ref" in prop or any("$ref" in a for a in prop.get("anyOf", [])):
            types.append("object")
        _EXPECTED[(cls, name)] = " or ".join(dict.fromkeys(t for t in types if t and t != "null")) or "its type"
    return _EXPECTED[(cls, name)]


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
        if "anyOf" in prop:
            alts = [a for a in prop["anyOf"] if a.get("type") != "null"]
            if len(alts) == 1:
                del prop["anyOf"]
                prop.update(alts[0])
            else:
                prop["anyOf"] = alts  # (an open enum: the known values, or any string)
        prop.pop("default", None)
        schema["required"] = [*schema.get("required", []), name]
    order = list(getattr(cls, "model_fields", {}))
    if "required" in schema:  # (in the fields' order, as pydantic lists them)
        schema["required"].sort(key=lambda n: order.index(n) if n in order else len(order))


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
    name: str  # (identity: ncui names, selects and signs in to a cluster by it; an answer without it fails)
    # a kind the service adds is read (whoami never fails on it): that cluster says it is a kind ncui does not know;
    # a kind not sent reads unknown, with the reason, and that cluster is shown as one ncui cannot use
    kind: Annotated[ClusterKind | str | None, Feeds("which screens each cluster gets", degrades=True)] = None

    @property
    def known(self) -> bool:
        return self.kind in KNOWN_KINDS

    @property
    def kind_said(self) -> str:
        """The kind as shown: ``vm``, ``tpu: a kind ncui does not know``, or ``kind unknown: <why>``."""
        if self.kind is None:
            return f"kind unknown: {self.unknown('kind')}"
        return self.kind if self.known else f"{self.kind}: a kind ncui does not know"

    @property
    def kind_short(self) -> str:
        """The kind in a column: ``vm``, ``tpu ?``, ``unknown ?``."""
        return self.kind if self.kind is not None and self.known else f"{self.kind or 'unknown'} ?"

    @property
    def not_known(self) -> str:
        """Why ncui shows nothing of this cluster, as a sentence ("" for a kind ncui knows)."""
        if self.kind is None:
            return f"{self.name}'s kind is unknown ({self.unknown('kind')}): ncui shows nothing of it and sets nothing"
        if not self.known:
            return f"{self.name} is a {self.kind} cluster, a kind ncui does not know"
        return ""


class Whoami(Model):
    user: User
    org_id: str
    org_name: Annotated[str | None, Feeds("the organization in the header", degrades=True)] = None
    org_kind: Annotated[
        OrgKind | str | None, Feeds("whether the organization gets the public research node", degrades=True)
    ] = None
    # (optional in the contract as the box publishes it: an answer without it reads as no clusters)
    clusters: Annotated[list[ClusterRef], Feeds("the clusters ncui offers")] = Field(default_factory=list)

    @property
    def org_said(self) -> str:
        """The organization's name for a sentence; when the answer did not give it, unknown with the reason."""
        return self.org_name if self.org_name is not None else f"your organization ({self.org_unknown})"

    @property
    def org_unknown(self) -> str:
        return f"its name unknown: {self.unknown('org_name')}"

    @property
    def kind_said(self) -> str:
        """The organization's kind as shown: ``public research``, or unknown with the reason."""
        if self.org_kind is None:
            return f"its kind unknown: {self.unknown('org_kind')}"
        return self.org_kind.replace("_", " ")


# ---- billing --------------------------------------------------------------------------------------


class BillingSummary(Model):
    balance_ucredits: Annotated[int | None, Feeds("the balance the money questions use", degrades=True)] = None
    purchases: Annotated[bool | None, Feeds("whether ncui offers a top-up", degrades=True)] = None


class Balance(Model):
    balance_ucredits: Annotated[int | None, Feeds("the header's balance", degrades=True)] = None
    burn_ucredits_hr: Annotated[int | None, Feeds("the header's burn", degrades=True)] = Field(
        default=None, description="The meter's last assessed hourly rate (about 10 min behind); required"
    )
    assessed_at: datetime | None = None


class Transaction(Model):
    id: str
    at: datetime
    kind: Literal["charge", "topup", "refund"] | str
    amount_ucredits: Annotated[
        int | None, Feeds("the spend in the last day and the report's charges", degrades=True)
    ] = Field(default=None, description="Negative for charges")
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
    market: Annotated[bool | None, Feeds("whether the cluster asks for a limit price", degrades=True)] = Field(
        default=None, description="true: the market grants nodes; false: a fixed cluster, no limit price"
    )
    gpus_per_node: int
    cpu_worker: bool
    shared_volume: bool
    gpu_vendor: Annotated[
        GpuVendor | str | None, Feeds("which recipe files ncui fetches (the vendor rule)", degrades=True)
    ] = None
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
    price_per_gpu_hour: Annotated[Price | None, Feeds("the price-to-win ladder", degrades=True)] = None


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
    spend_ucredits_hr: Annotated[int | None, Feeds("the market spend per hour", degrades=True)] = None
    as_of: datetime


# ---- market feed ----------------------------------------------------------------------------------


class Tick(Model):
    at: datetime
    gpu_model: str
    price_per_gpu_hour: Annotated[Price | None, Feeds("the market chart", degrades=True)] = None
    gpus: int = Field(description="GPUs the winners hold at this price")


class Ticks(Model):
    ticks: list[Tick] = Field(description="Oldest first")


# ---- VM capacity ----------------------------------------------------------------------------------

AllocationState = Literal["pending", "provisioning", "active", "released", "reclaimed"]


class Allocation(Model):
    id: str
    state: Annotated[AllocationState | str | None, Feeds("whether a VM node is ready", degrades=True)] = None
    gpus: int
    gpu_model: str
    public_ip: Annotated[str | None, Feeds("where ncui connects to a VM node")] = None
    granted_at: datetime | None = None
    ssh_port: int = Field(default=22, description="ours: the simulator's nodes listen on loopback ports")

    @property
    def state_said(self) -> str:
        """The state as shown: ``active``, or unknown with the reason when the answer did not give it."""
        return self.state if self.state is not None else f"in a state not known ({self.unknown('state')})"


class VmEnvironment(Model):
    ssh_user: Annotated[str | None, Feeds("the user ncui signs in as on a VM node", degrades=True)] = None


class VmCapacity(Model):
    version: Annotated[int | None, Feeds("declaring VM capacity (the expected version)", degrades=True)] = None
    max_gpus: Annotated[int | None, Feeds("the VM capacity declared", degrades=True)] = None
    max_price_per_gpu_hour: Annotated[Price | None, Feeds("the VM limit price", degrades=True)] = None
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
    fingerprint: Annotated[str | None, Feeds("whether your ssh key is registered", degrades=True)] = None
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
