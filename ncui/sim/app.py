"""National Compute in a box: the HTTP face of the simulated world (FastAPI).

Serves CONTRACT.md under ``/api``, the recipe catalog under ``<access prefix>/first-job/``, one OpenAPI
document per area at ``/api/<area>/openapi.json`` (no token needed), and a few ``/_sim`` controls
(advance the clock, inject faults) that are not part of the contract. The middleware (faults, the journal of
writes, the box's Date) is in ``middleware.py``, the catalog's files in ``catalog/``, the Kubernetes API in ``kube/``.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import yaml
from fastapi import Depends, FastAPI, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from ..api import models as m
from . import catalog
from .drift import DriftMiddleware, move_routes, named
from .middleware import DateMiddleware, FaultMiddleware, FaultRule, Faults, JournalMiddleware
from .money import dollars, ucredits
from .world import OrgState, SimError, World

AREAS = {
    "billing": ("Billing and account", ("/api/whoami", "/api/billing/")),
    "k8s": ("Kubernetes clusters", ("/api/k8s/",)),
    "market": ("Market feed", ("/api/market/",)),
    "vm": ("VM capacity", ("/api/vm/", "/api/whoami")),
}

ERR = {"model": m.ErrorBody}
AUTH_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {**ERR, "description": "Missing or wrong token"},
    422: {**ERR, "description": "Invalid request"},
}
NOT_FOUND = {404: {**ERR, "description": "No such cluster or resource in this organization"}}

_bearer = HTTPBearer(auto_error=False, description="The National Compute token")


class Advance(BaseModel):
    seconds: float = Field(ge=0, le=30 * 24 * 3600)


class Speed(BaseModel):
    speed: float = Field(ge=0, le=100_000)


class DockerBody(BaseModel):
    missing: bool = True
    host: str | None = Field(default=None, max_length=100)  # a Host name of NC_SSH_CONFIG; none: every node


class SlurmLogin(BaseModel):
    public_key: str | None = Field(default=None, max_length=16_000)
    cluster: str | None = Field(default=None, max_length=100)


class TopupBody(BaseModel):
    usd: float = Field(gt=0, le=1_000_000)


class ChargeBody(BaseModel):
    usd: float = Field(gt=0, le=1_000_000)
    description: str = Field(default="Charge made by the box (/_sim/billing/charge)", max_length=300)


class DemandBody(BaseModel):
    nodes: int = Field(ge=0, le=64)


class ExecBody(BaseModel):
    """The sign-in command a hostile or intercepted kubeconfig answer names instead of the box's own."""

    command: str = Field(min_length=1, max_length=4000)
    args: list[str] = Field(default_factory=list, max_length=100)
    env: list[dict[str, str]] = Field(default_factory=list, max_length=20)  # [{"name": ..., "value": ...}]


# ---- the app ------------------------------------------------------------------------------------


@dataclass
class SimConfig:
    access_prefix: str = "/access"
    drift: str | None = None  # a drift's name (drift.named): the contract served drifts so (documents and answers)


def create_app(world: World, config: SimConfig | None = None) -> FastAPI:
    config = config or SimConfig()
    app = FastAPI(title="National Compute in a box", version="0.1.0", openapi_url=None, docs_url=None, redoc_url=None)
    app.state.world = world
    app.state.faults = Faults()
    app.state.kubeconfig_exec = {}  # cluster name → the sign-in plugin its kubeconfig names (/_sim/kubeconfig/exec)
    app.state.config = config
    app.add_middleware(FaultMiddleware, faults=app.state.faults)
    app.state.received = deque(maxlen=200)  # the newest writes, as received (JournalMiddleware)
    app.add_middleware(JournalMiddleware, journal=app.state.received)
    app.add_middleware(DateMiddleware, world=world)  # outermost: a fault's answer is dated too
    _install_error_handlers(app)

    def org_dep(request: Request, creds: HTTPAuthorizationCredentials | None = Security(_bearer)) -> OrgState:
        if creds is None or not creds.credentials:
            raise SimError(401, "unauthorized", "A token is required: send Authorization: Bearer <token>.")
        org = world.org_for_token(creds.credentials)
        if org is None:
            raise SimError(401, "unauthorized", "That token is not valid for National Compute.")
        world.sync()
        return org

    Org = Depends(org_dep)

    # ---- account and billing ----------------------------------------------------------------

    whoami_links = {
        200: {
            "description": "Who the token belongs to",
            "links": {
                "ListSshKeys": {"operationId": "list_ssh_keys", "parameters": {"org_id": "$response.body#/org_id"}},
                "AddSshKey": {"operationId": "add_ssh_key", "parameters": {"org_id": "$response.body#/org_id"}},
            },
        }
    }

    @app.get(
        "/api/whoami",
        response_model=m.Whoami,
        responses={**AUTH_ERRORS, **whoami_links},
        tags=["account"],
        operation_id="whoami",
    )
    def whoami(org: OrgState = Org) -> m.Whoami:
        s = org.spec
        return m.Whoami(
            user=m.User(id=f"user_{s.key}", email=s.email),
            org_id=s.org_id,
            org_name=s.org_name,
            org_kind=s.org_kind,
            clusters=[m.ClusterRef(name=c.name, kind=c.kind) for c in s.clusters],
        )

    @app.get("/api/billing/summary", response_model=m.BillingSummary, responses=AUTH_ERRORS, tags=["billing"])
    def billing_summary(org: OrgState = Org) -> m.BillingSummary:
        with world.lock:
            return m.BillingSummary(balance_ucredits=org.balance, purchases=org.spec.purchases)

    @app.get("/api/billing/balance", response_model=m.Balance, responses=AUTH_ERRORS, tags=["billing"])
    def billing_balance(org: OrgState = Org) -> m.Balance:
        with world.lock:
            return m.Balance(balance_ucredits=org.balance, burn_ucredits_hr=org.burn_hr, assessed_at=org.assessed_at)

    @app.get("/api/billing/transactions", response_model=m.Transactions, responses=AUTH_ERRORS, tags=["billing"])
    def billing_transactions(
        org: OrgState = Org, since: str | None = SINCE, limit: int = Query(100, ge=1, le=1000)
    ) -> m.Transactions:
        after = _since(since)
        with world.lock:
            txs = [t for t in org.transactions if after is None or t.at > after]
            txs = sorted(txs, key=lambda t: (t.at, t.id), reverse=True)[:limit]
            return m.Transactions(
                transactions=[
                    m.Transaction(
                        id=t.id,
                        at=t.at,
                        kind=t.kind,
                        amount_ucredits=t.amount,
                        description=t.description,
                        gpu_hours=t.gpu_hours,
                        price_per_gpu_hour=dollars(t.price) if t.price is not None else None,
                        cluster=t.cluster,
                        node=t.node,
                    )
                    for t in txs
                ]
            )

    # ---- kubernetes -------------------------------------------------------------------------

    k8s_errors = {**AUTH_ERRORS, **NOT_FOUND}

    @app.get("/api/k8s/cluster", response_model=m.K8sCluster, responses=k8s_errors, tags=["k8s"])
    def k8s_cluster(org: OrgState = Org, cluster: str | None = None) -> m.K8sCluster:
        with world.lock:
            st = world.k8s_cluster(org, cluster)
            c = st.spec
            return m.K8sCluster(
                name=c.name,
                market=c.market,
                gpus_per_node=c.gpus_per_node,
                cpu_worker=c.cpu_worker,
                shared_volume=c.shared_volume,
                gpu_vendor=c.gpu_vendor,
                gpu_model=c.gpu_model,
                reservation_packing=c.reservation_packing,
                reserved_nodes=c.reserved_nodes if c.market else len(st.gpu_nodes()),
            )

    @app.get(
        "/api/k8s/cluster/kubeconfig",
        tags=["k8s"],
        response_model=None,
        responses={
            **k8s_errors,
            200: {
                "description": "A kubeconfig (YAML)",
                "content": {
                    "application/yaml": {
                        "schema": {
                            "type": "object",
                            "required": ["apiVersion", "kind", "clusters", "users", "contexts"],
                        }
                    }
                },
            },
        },
    )
    def k8s_kubeconfig(request: Request, cluster: str, org: OrgState = Org) -> PlainTextResponse:
        with world.lock:
            st = world.k8s_cluster(org, cluster)
        base = str(request.base_url).rstrip("/")
        tls = getattr(request.app.state, "kube_tls", None)  # SimServer's HTTPS listener for kubectl
        exec_ = request.app.state.kubeconfig_exec.get(st.spec.name)  # (a hostile answer, set by /_sim)
        return PlainTextResponse(
            kubeconfig_yaml(st.spec.name, base, tls.url if tls else None, tls.ca_pem if tls else None, exec_),
            media_type="application/yaml",
        )

    def _bid(st) -> m.Bid:
        return m.Bid(cluster=st.spec.name, max_price_per_gpu_hour=dollars(st.bid), updated_at=st.bid_updated_at)

    @app.get("/api/k8s/bid", response_model=m.Bid, responses=k8s_errors, tags=["k8s"])
    def get_bid(org: OrgState = Org, cluster: str | None = None) -> m.Bid:
        with world.lock:
            st = world.k8s_cluster(org, cluster)
            world.market_of(st)
            return _bid(st)

    @app.put("/api/k8s/bid", response_model=m.Bid, responses=k8s_errors, tags=["k8s"])
    def put_bid(body: m.BidRequest, org: OrgState = Org, cluster: str | None = None) -> m.Bid:
        with world.lock:
            st = world.k8s_cluster(org, cluster)
            world.set_bid(st, body.max_price_per_gpu_hour)
            return _bid(st)

    @app.get("/api/k8s/market/ladder", response_model=m.Ladder, responses=k8s_errors, tags=["k8s"])
    def ladder(org: OrgState = Org, cluster: str | None = None) -> m.Ladder:
        with world.lock:
            st = world.k8s_cluster(org, cluster)
            market = world.market_of(st)
            return m.Ladder(
                gpu_model=market.gpu_model,
                gpus_per_node=market.gpus_per_node,
                as_of=world.at_step(world.step_index),
                rungs=[m.LadderRung(nodes=n, price_per_gpu_hour=dollars(p)) for n, p in market.ladder(8)],
                floor_price_per_gpu_hour=dollars(market.floor),
            )

    @app.get("/api/k8s/market/spend", response_model=m.Spend, responses=k8s_errors, tags=["k8s"])
    def spend(org: OrgState = Org, cluster: str | None = None) -> m.Spend:
        with world.lock:
            st = world.k8s_cluster(org, cluster)
            now = world.now()
            if not st.spec.market:
                nodes = st.gpu_nodes()
                return m.Spend(
                    nodes_held=len(nodes),
                    gpus_held=sum(n.gpus for n in nodes),
                    price_per_gpu_hour=None,
                    spend_ucredits_hr=0,
                    as_of=now,
                )
            held = [n for n in st.market_nodes() if n.ready(now)]
            gpus = sum(n.gpus for n in held)
            price = world.markets[st.spec.gpu_model].last.price
            return m.Spend(
                nodes_held=len(held),
                gpus_held=gpus,
                price_per_gpu_hour=dollars(price) if held else None,
                spend_ucredits_hr=price * gpus if held else 0,
                as_of=now,
            )

    # ---- market feed ------------------------------------------------------------------------

    @app.get("/api/market/ticks", response_model=m.Ticks, responses=AUTH_ERRORS, tags=["market"])
    def ticks(
        org: OrgState = Org,
        since: str | None = SINCE,
        gpu_model: str | None = None,
        limit: int = Query(360, ge=1, le=10_000),
    ) -> m.Ticks:
        with world.lock:
            rows = world.tick_list(gpu_model, _since(since), limit)
        return m.Ticks(ticks=[m.Tick(at=t, gpu_model=g, price_per_gpu_hour=dollars(p), gpus=n) for t, g, p, n in rows])

    # ---- VM ---------------------------------------------------------------------------------

    vm_errors = {**AUTH_ERRORS, **NOT_FOUND}

    def _capacity(vm, now) -> m.VmCapacity:
        ssh = getattr(app.state, "ssh", None)  # the box's ssh nodes (SimServer): active once its node listens
        allocs = []
        for a in vm.allocations:
            state = a.state_at(now)
            if ssh is not None and state == "active" and ssh.endpoint(a.id) is None:
                state = "provisioning"
            allocs.append(
                m.Allocation(
                    id=a.id,
                    state=state,
                    gpus=a.gpus,
                    gpu_model=a.gpu_model,
                    public_ip=a.public_ip if state == "active" else None,
                    granted_at=a.granted_at,
                    ssh_port=a.ssh_port,
                )
            )
        return m.VmCapacity(
            version=vm.version,
            max_gpus=vm.max_gpus,
            max_price_per_gpu_hour=dollars(vm.price),
            allocations=allocs,
            environment=m.VmEnvironment(ssh_user=vm.ssh_user),
            gpu_model=vm.spec.gpu_model,
            gpus_per_node=vm.spec.gpus_per_node,
        )

    @app.get("/api/vm/capacity", response_model=m.VmCapacity, responses=vm_errors, tags=["vm"])
    def vm_capacity(org: OrgState = Org) -> m.VmCapacity:
        _settle_ssh()
        with world.lock:
            return _capacity(world.vm_cluster(org), world.now())

    @app.put(
        "/api/vm/capacity",
        response_model=m.VmCapacity,
        responses={**vm_errors, 409: {**ERR, "description": "expected_version is stale"}},
        tags=["vm"],
    )
    def put_vm_capacity(body: m.VmCapacityRequest, org: OrgState = Org) -> m.VmCapacity:
        with world.lock:
            vm = world.set_vm_capacity(org, body.max_gpus, body.max_price_per_gpu_hour, body.expected_version)
        _settle_ssh()  # a release has closed the node's listener when the answer arrives
        with world.lock:
            return _capacity(vm, world.now())

    def _settle_ssh() -> None:
        """Nodes due by the clock listen (and released ones are gone) before the answer is made; outside the
        World's lock (the ssh loop takes it)."""
        ssh = getattr(app.state, "ssh", None)
        if ssh is not None:
            ssh.settle()

    def _org_path(org: OrgState, org_id: str) -> None:
        if org_id != org.spec.org_id:
            raise SimError(404, "not-found", f"No organization {org_id[:60]} for this token.")

    def _key(k) -> m.SshKey:
        return m.SshKey(
            id=k.id, name=k.name, fingerprint=k.fingerprint, public_key=k.public_key, created_at=k.created_at
        )

    @app.get(
        "/api/vm/orgs/{org_id}/ssh-keys",
        response_model=m.SshKeys,
        responses=vm_errors,
        tags=["vm"],
        operation_id="list_ssh_keys",
    )
    def list_keys(org_id: str, org: OrgState = Org) -> m.SshKeys:
        _org_path(org, org_id)
        with world.lock:
            return m.SshKeys(keys=[_key(k) for k in org.ssh_keys])

    @app.post(
        "/api/vm/orgs/{org_id}/ssh-keys",
        response_model=m.SshKey,
        responses=vm_errors,
        tags=["vm"],
        status_code=201,
        operation_id="add_ssh_key",
    )
    def add_key(org_id: str, body: m.SshKeyRequest, org: OrgState = Org) -> m.SshKey:
        _org_path(org, org_id)
        with world.lock:
            return _key(world.add_ssh_key(org, body.name, body.public_key))

    # ---- openapi ----------------------------------------------------------------------------

    docs: dict[str, dict] = {}
    drifted = named(config.drift) if config.drift else None

    def openapi_for(area: str | None) -> dict:
        key = area or "all"
        if key not in docs:
            if area:
                title, prefixes = AREAS[area]
                routes = [r for r in app.routes if getattr(r, "path", "").startswith(prefixes)]
            else:
                title, routes = (
                    "National Compute",
                    [
                        r
                        for r in app.routes
                        if getattr(r, "path", "").startswith("/api/")
                        and not getattr(r, "path", "").endswith("openapi.json")
                    ],
                )
            doc = get_openapi(
                title=f"National Compute — {title}",
                version="0.1.0",
                routes=routes,
                description="Served by ncui's National Compute in a box.",
            )
            docs[key] = _prune_links(doc)
            if drifted is not None:
                drifted.doc(docs[key])
        return docs[key]

    for area in AREAS:

        def serve(area=area) -> JSONResponse:
            return JSONResponse(openapi_for(area))

        app.add_api_route(f"/api/{area}/openapi.json", serve, include_in_schema=False, methods=["GET"])
    app.add_api_route(
        "/api/openapi.json", lambda: JSONResponse(openapi_for(None)), include_in_schema=False, methods=["GET"]
    )

    # ---- the recipe catalog -----------------------------------------------------------------

    prefix = config.access_prefix.rstrip("/")

    @app.get(prefix + "/setup.sh", include_in_schema=False)
    def setup_sh(request: Request) -> Response:
        """The guide's setup script (``curl -fsSL <access>/setup.sh | sh -s -- <cluster>``), aimed at this box."""
        ssh = getattr(request.app.state, "ssh", None)
        api = str(request.base_url).rstrip("/")
        data = catalog.setup_script(api, str(ssh.config_path) if ssh is not None else "")
        return Response(data, media_type="text/x-shellscript; charset=utf-8")

    @app.get(prefix + "/first-job/", include_in_schema=False)
    def catalog_index() -> Response:
        return Response(_catalog_json(), media_type="application/json")

    @app.get(prefix + "/first-job/{filename}", include_in_schema=False)
    def catalog_file(filename: str) -> Response:
        data = catalog.file_bytes(filename)
        if data is None:
            raise SimError(404, "not-found", f"{filename[:80]} is not in the catalog.")
        media = "application/yaml" if filename.endswith((".yaml", ".yml")) else "text/plain"
        return Response(data, media_type=f"{media}; charset=utf-8")

    # ---- simulator controls (not part of the contract) --------------------------------------

    @app.post("/_sim/advance", include_in_schema=False)
    def sim_advance(body: Advance, org: OrgState = Org) -> dict:
        now = world.advance(body.seconds)
        return {"now": now.isoformat()}

    @app.post("/_sim/speed", include_in_schema=False)
    def sim_speed(body: Speed, org: OrgState = Org) -> dict:
        world.sync()
        world.clock.set_speed(body.speed)
        return {"speed": world.clock.speed}

    @app.post("/_sim/faults", include_in_schema=False)
    def sim_fault(rule: FaultRule, org: OrgState = Org) -> dict:
        app.state.faults.add(rule)
        return {"ok": True}

    @app.delete("/_sim/faults", include_in_schema=False)
    def sim_faults_clear(org: OrgState = Org) -> dict:
        app.state.faults.clear()
        return {"ok": True}

    @app.post("/_sim/kubeconfig/exec", include_in_schema=False)
    def sim_kubeconfig_exec(body: ExecBody, org: OrgState = Org, cluster: str | None = None) -> dict:
        """Make the cluster's kubeconfig answer name another sign-in command (a hostile or intercepted answer)."""
        with world.lock:
            name = world.k8s_cluster(org, cluster).spec.name
        app.state.kubeconfig_exec[name] = body.model_dump()
        return {"ok": True}

    @app.delete("/_sim/kubeconfig/exec", include_in_schema=False)
    def sim_kubeconfig_exec_clear(org: OrgState = Org) -> dict:
        app.state.kubeconfig_exec.clear()
        return {"ok": True}

    @app.post("/_sim/billing/topup", include_in_schema=False)
    def sim_topup(body: TopupBody, org: OrgState = Org) -> dict:
        """The human buys credits on the console's Billing page (a long soak outlasts the scenario's balance)."""
        from .world import TxState

        with world.lock:
            amount = ucredits(body.usd)
            org.balance += amount
            org.transactions.append(TxState(world._id("tx"), world.now(), "topup", amount, "Credits purchased"))
            return {"balance_ucredits": org.balance}

    @app.post("/_sim/billing/charge", include_in_schema=False)
    def sim_charge(body: ChargeBody, org: OrgState = Org) -> dict:
        """A charge of ``usd`` now, as the meter's (naming no node): spend pushed past a spending limit's 80% or
        100% on demand, for a test or a demo."""
        from .world import TxState

        with world.lock:
            amount = ucredits(body.usd)
            org.balance -= amount
            org.transactions.append(TxState(world._id("tx"), world.now(), "charge", -amount, body.description))
            return {"balance_ucredits": org.balance}

    @app.post("/_sim/ssh/drop", include_in_schema=False)
    def sim_ssh_drop(org: OrgState = Org) -> dict:
        """Cut every ssh connection to the box's nodes (they stay up): clients reconnect and resume."""
        ssh = getattr(app.state, "ssh", None)
        return {"dropped": ssh.drop_sessions() if ssh is not None else 0}

    @app.post("/_sim/k8s/demand", include_in_schema=False)
    def sim_demand(body: DemandBody, org: OrgState = Org, cluster: str | None = None) -> dict:
        with world.lock:
            st = world.k8s_cluster(org, cluster)
            st.requested_nodes = body.nodes
        return {"ok": True}

    @app.post("/_sim/ssh/docker", include_in_schema=False)
    def sim_ssh_docker(body: DockerBody, org: OrgState = Org) -> dict:
        """Make docker missing (or back) on one ssh host by its Host name, or on every node now and from now on."""
        ssh = getattr(app.state, "ssh", None)
        return {"hosts": ssh.set_docker(body.missing, body.host) if ssh is not None else 0}

    # The human's side of the guide's slurm-login: sign the box's stand-in key (written where NC_SSH_CONFIG's
    # CertificateFile points) or a given public key (the certificate comes back) for 24 h; DELETE: signed out.
    @app.post("/_sim/slurm/login", include_in_schema=False)
    def sim_slurm_login(body: SlurmLogin | None = None, org: OrgState = Org) -> dict:
        ssh = getattr(app.state, "ssh", None)
        if ssh is None:
            raise SimError(404, "not-found", "This box serves no ssh hosts.")
        body = body or SlurmLogin()
        return ssh.sign(body.cluster, body.public_key)

    @app.delete("/_sim/slurm/login", include_in_schema=False)
    def sim_slurm_logout(org: OrgState = Org) -> dict:
        ssh = getattr(app.state, "ssh", None)
        if ssh is not None:
            ssh.sign_out()
        return {"ok": True}

    # Marshall's node assignment, which the service exposes only inside a workspace (no API): box-only reads.
    def _research(org: OrgState) -> dict:
        _settle_ssh()
        ssh = getattr(app.state, "ssh", None)
        with world.lock:
            now = world.sync()
            r = world.research_node(org)
            state = r.state_at(now)
            if state == "assigned" and ssh is not None and ssh.host("research-node") is None:
                state = "assigning"  # the node is not listening yet
            live = state == "assigned"
            return {
                "state": state,
                "requested_at": r.requested_at.isoformat(),
                "queue_position": r.position_at(now) if state == "queued" else None,
                "estimated_wait_seconds": r.estimate_at(now) if state == "queued" else None,
                "assigned_at": r.assigned_time().isoformat() if state in ("assigned", "released") else None,
                "released_at": r.released_at.isoformat() if r.released_at is not None else None,
                "public_ip": r.public_ip if live else None,
                "ssh_user": r.ssh_user if live else None,
                "ssh_port": r.ssh_port if live else None,
                "ssh_host": "research-node" if live else None,
                "hostname": r.host,
                "gpus": r.gpus,
                "gpu_model": r.gpu_model,
                "price_per_gpu_hour": r.price,
                "lease_seconds": r.lease_seconds,
                "lease_ucredits": r.price * r.gpus * r.lease_seconds // 3600,
            }

    @app.get("/_sim/research/status", include_in_schema=False)
    def sim_research_status(org: OrgState = Org) -> dict:
        return _research(org)

    @app.post("/_sim/research/assign", include_in_schema=False)
    def sim_research_assign(org: OrgState = Org) -> dict:
        with world.lock:
            r = world.research_node(org)
            if r.state_at(world.sync()) == "queued":
                r.assigned_at = world.now()
        return _research(org)

    @app.post("/_sim/research/release", include_in_schema=False)
    def sim_research_release(org: OrgState = Org) -> dict:
        """What Marshall's public_research_release does (ncui never calls it): the node and its disk go."""
        with world.lock:
            r = world.research_node(org)
            if r.released_at is None and r.state_at(world.sync()) == "assigned":
                r.released_at = world.now()
        return _research(org)

    from .kube import mount_kube  # the Kubernetes API at /k8s/<cluster>, sign-in, /_sim/k8s controls

    mount_kube(app, world)
    if drifted is not None:
        move_routes(app, drifted)
        app.add_middleware(DriftMiddleware, drift=drifted)
    return app


# ---- helpers ------------------------------------------------------------------------------------


def _prune_links(doc: dict) -> dict:
    """Drop response links to operations that this document does not contain."""
    ops = {
        op.get("operationId") for item in doc.get("paths", {}).values() for op in item.values() if isinstance(op, dict)
    }
    for item in doc.get("paths", {}).values():
        for op in item.values():
            for resp in (op.get("responses") or {}).values() if isinstance(op, dict) else ():
                links = resp.get("links")
                if links:
                    kept = {k: v for k, v in links.items() if v.get("operationId") in ops}
                    if kept:
                        resp["links"] = kept
                    else:
                        del resp["links"]
    return doc


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(SimError)
    async def sim_error(request: Request, exc: SimError) -> JSONResponse:
        body: dict[str, Any] = {"error": exc.slug, "detail": exc.detail}
        for k, v in exc.extra.items():
            body[k] = float(dollars(v)) if k.endswith("price_per_gpu_hour") else v
        headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
        return JSONResponse(body, status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errs = exc.errors()
        first = errs[0] if errs else {}
        loc = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")) or "body"
        msg = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
        return JSONResponse({"error": "invalid", "detail": f"{loc}: {msg}"}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        status, headers = exc.status_code, dict(getattr(exc, "headers", None) or {})
        slug = {404: "not-found", 405: "method-not-allowed"}.get(status, "error")
        detail = exc.detail if isinstance(exc.detail, str) else "error"
        if status == 404:
            detail = f"Nothing at {request.url.path[:120]}."
        elif status == 400:  # FastAPI's "error parsing the body": the contract calls that invalid
            status, slug, detail = 422, "invalid", "The request body is not valid JSON."
        elif status == 405:  # list every method of the path, not just the first route's
            methods: set[str] = set()
            for route in app.router.routes:
                if getattr(route, "path", None) == request.url.path or (route.matches(request.scope)[0] != Match.NONE):
                    methods |= set(getattr(route, "methods", None) or ())
            headers["Allow"] = ", ".join(sorted(methods))
            detail = f"{request.method} is not supported here; use {headers['Allow']}."
        return JSONResponse({"error": slug, "detail": detail}, status_code=status, headers=headers or None)


SINCE = Query(
    None, description="Only what is newer than this instant (RFC 3339)", json_schema_extra={"format": "date-time"}
)


def _since(text: str | None) -> datetime | None:
    """An RFC 3339 instant (``2026-11-29T18:00:00Z``); 422 for anything else."""
    if text is None:
        return None
    try:
        t = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        if "T" not in text.upper():
            raise ValueError
    except ValueError:
        raise SimError(422, "invalid", "since must be an RFC 3339 time, like 2026-11-29T18:00:00Z.") from None
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


_CATALOG_JSON: list[bytes] = []


def _catalog_json() -> bytes:
    """The catalog's index as served: each recipe checked against the contract's model, once."""
    if not _CATALOG_JSON:
        checked = [m.Recipe.model_validate(r).model_dump(mode="json") for r in catalog.recipes()]
        _CATALOG_JSON.append(json.dumps(checked, indent=1).encode())
    return _CATALOG_JSON[0]


def kubeconfig_yaml(
    cluster: str,
    api_base: str,
    kube_base: str | None = None,
    ca_pem: bytes | None = None,
    exec_: dict[str, Any] | None = None,
) -> str:
    """A kubeconfig whose user signs in through ncui's exec credential plugin (a device-code flow).

    ``kube_base`` is the Kubernetes API's https origin (kubectl sends credentials only over TLS) and
    ``ca_pem`` the certificate it pins; without them the cluster is served at ``api_base``. ``exec_``
    (``command``, ``args``, ``env``): another sign-in command instead, as a hostile answer would name.
    """
    import base64
    import sys

    server: dict[str, Any] = {"server": f"{kube_base or api_base}/k8s/{cluster}"}
    if ca_pem:
        server["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": server}],
        "users": [
            {
                "name": f"{cluster}-user",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": sys.executable,
                        "args": ["-m", "ncui.kube.signin", "--api", api_base, "--cluster", cluster],
                        "interactiveMode": "IfAvailable",
                        "provideClusterInfo": False,
                    }
                    if exec_ is None
                    else {
                        "apiVersion": "client.authentication.k8s.io/v1",
                        "command": exec_["command"],
                        "args": list(exec_.get("args") or []),
                        **({"env": list(exec_["env"])} if exec_.get("env") else {}),
                        "interactiveMode": "IfAvailable",
                        "provideClusterInfo": False,
                    }
                },
            }
        ],
        "contexts": [
            {"name": cluster, "context": {"cluster": cluster, "user": f"{cluster}-user", "namespace": "default"}}
        ],
        "current-context": cluster,
    }
    return yaml.safe_dump(doc, sort_keys=False)
