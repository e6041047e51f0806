"""The Kubernetes API under ``/k8s/<cluster>``, the device sign-in endpoints and the ``/_sim/k8s`` controls.

Every handler that touches the World runs in the thread pool (the World lock is a threading lock); the
streams (watch, ``logs -f``) poll the store's event history and the clock from the event loop in short
steps, take the World lock only for an instant per step, stop when the client goes away, and end when
the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import html
import json
import math
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ..world import World
from . import authz, inference, openapi, podlogs, portforward, tables
from .auth import POLL_INTERVAL, Auth
from .cluster import Cluster
from .objects import (
    BY_GV,
    GROUP_ORDER,
    K8S_VERSION,
    SUBRESOURCES,
    KubeError,
    Resource,
    fields_match,
    find,
    iso,
    json_patch,
    labels_match,
    merge_patch,
    normalize_pod_spec,
    not_found,
    parse_field_selector,
    parse_label_selector,
    parse_time,
    strategic_merge,
    to_json,
)
from .state import PodRun

POLL = 0.05  # real seconds between a stream's looks at the store
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
        self.floods: dict[tuple, Any] = {}  # benchmark floods' logs, built once (_FloodLog)
        self.churn: asyncio.Task | None = None  # benchmark hook: pods' restart counts bumped at a rate (_churn)
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

    async def _churn(self, c: Cluster, rate: float, seconds: float) -> None:
        """Bump the restart count of the cluster's running pods, one after another, ``rate`` times a real second
        for ``seconds`` (0: until stopped): every bump is a MODIFIED event on the pod watch (bench/pods.py)."""
        t0 = time.monotonic()
        done, i = 0, 0
        while not self.closed and (seconds <= 0 or time.monotonic() - t0 < seconds):
            due = int((time.monotonic() - t0) * rate) - done
            if due > 0:
                with self.world.lock:
                    runs = [r for r in c.runs.values() if r.state in ("running", "ready") and r.alive]
                    for _ in range(due if runs else 0):
                        r = runs[i % len(runs)]
                        i += 1
                        r.restarts += 1
                        c.kubelet.render_put(r, c.t)
                done += due
                self.churned += due if runs else 0
            await asyncio.sleep(0.01)


# ---- responses ----------------------------------------------------------------------------------


def jresp(obj: Any, status: int = 200) -> Response:
    return Response(to_json(obj), status_code=status, media_type="application/json")


def status_resp(e: KubeError) -> Response:
    return jresp(e.status(), e.code)


class Stream(Response):
    """A chunked response fed by an async iterator; stops when the client disconnects."""

    def __init__(self, gen: AsyncIterator[bytes], media_type: str) -> None:
        super().__init__(status_code=200, media_type=media_type)
        self.gen = gen
        self.headers["Transfer-Encoding"] = "chunked"
        self.headers["Cache-Control"] = "no-cache, private"
        del self.headers["content-length"]

    async def __call__(self, scope, receive, send) -> None:
        kube = scope["app"].state.kube
        kube.streams += 1
        try:
            await self._run(scope, receive, send)
        finally:
            kube.streams -= 1

    async def _run(self, scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})

        async def listen() -> None:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    return

        async def produce() -> None:
            async for chunk in self.gen:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        tasks = [asyncio.ensure_future(listen()), asyncio.ensure_future(produce())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            try:
                await self.gen.aclose()
            except RuntimeError:
                pass
        for exc in results:
            if isinstance(exc, Exception) and not isinstance(exc, OSError):
                raise exc


# ---- discovery --------------------------------------------------------------------------------


def _resource_list(group: str, version: str) -> dict:
    out = []
    for r in BY_GV[(group, version)]:
        item = {
            "name": r.plural,
            "singularName": r.kind.lower(),
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short:
            item["shortNames"] = list(r.short)
        if r.categories:
            item["categories"] = list(r.categories)
        out.append(item)
        for sub in SUBRESOURCES.get(r.plural, []):
            kind = {
                "log": "Pod",
                "scale": "Scale",
                "proxy": "ServiceProxyOptions",
                "portforward": "PodPortForwardOptions",
            }.get(sub, r.kind)
            verbs = {
                "log": ["get"],
                "portforward": ["create", "get"],
                "scale": ["get", "patch", "update"],
                "proxy": ["create", "delete", "get", "patch", "update"],
            }.get(sub, ["get", "patch", "update"])
            s = {
                "name": f"{r.plural}/{sub}",
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": kind,
                "verbs": verbs,
            }
            if sub == "scale":
                s.update(group="autoscaling", version="v1")
            out.append(s)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": out,
    }


def _group(g: str) -> dict:
    v = {"groupVersion": f"{g}/v1", "version": "v1"}
    return {"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": [v], "preferredVersion": v}


def _version(cluster: str) -> dict:
    return {
        "major": "1",
        "minor": "32",
        "gitVersion": K8S_VERSION,
        "gitCommit": "ncui-sim",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.6",
        "compiler": "gc",
        "platform": "linux/amd64",
        "emulationMajor": "1",
        "emulationMinor": "32",
    }


# ---- the request ------------------------------------------------------------------------------


class Target:
    def __init__(self, r: Resource, ns: str | None, name: str | None, sub: str | None, rest: str) -> None:
        self.r, self.ns, self.name, self.sub, self.rest = r, ns, name, sub, rest


def parse_target(parts: list[str]) -> Target | None:
    if parts[0] == "api" and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[0] == "apis" and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if (group, version) not in BY_GV or not rest:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3 and find(group, version, rest[2]):
        r = find(group, version, rest[2])
        return Target(
            r, rest[1], rest[3] if len(rest) > 3 else None, rest[4] if len(rest) > 4 else None, "/".join(rest[5:])
        )
    r = find(group, version, rest[0])
    if r is None:
        return None
    return Target(r, None, rest[1] if len(rest) > 1 else None, rest[2] if len(rest) > 2 else None, "/".join(rest[3:]))


def mount_kube(app: FastAPI, world: World) -> Kube:
    """Serve the simulated Kubernetes clusters from ``app``; returns the ``Kube`` (also ``app.state.kube``)."""
    kube = Kube(world)
    app.state.kube = kube

    async def k8s(request: Request, cluster: str, rest: str = "") -> Response:
        try:
            return await _handle(kube, request, cluster, rest)
        except KubeError as e:
            return status_resp(e)
        except json.JSONDecodeError:
            return status_resp(KubeError(400, "BadRequest", "the request body is not valid JSON"))

    for path in ("/k8s/{cluster}/{rest:path}", "/k8s/{cluster}"):
        app.add_api_route(path, k8s, methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)

    async def k8s_root(request: Request) -> Response:
        """``kubectl get/create --raw`` drops the server URL's path: on the HTTPS listener, serve the API at
        the root too, for the cluster the bearer token signed in to."""
        if request.url.scheme != "https":
            return JSONResponse({"error": "not-found", "detail": f"Nothing at {request.url.path[:120]}."}, 404)
        auth = request.headers.get("authorization", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        cname = kube.auth.cluster_of(token) if token else None
        rest = request.url.path.lstrip("/")
        if cname is None:
            if rest == "version":
                return jresp(_version(""))
            return jresp(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": "Unauthorized",
                    "reason": "Unauthorized",
                    "code": 401,
                },
                401,
            )
        return await k8s(request, cname, rest)

    for path in (
        "/api",
        "/api/v1",
        "/api/v1/{rest:path}",
        "/apis",
        "/apis/{rest:path}",
        "/openapi/v3",
        "/openapi/v3/{rest:path}",
        "/version",
    ):
        app.add_api_route(path, k8s_root, methods=["GET", "POST", "PUT", "PATCH", "DELETE"], include_in_schema=False)

    async def pf_ws(websocket: WebSocket, cluster: str, ns: str, name: str) -> None:
        await _portforward(kube, websocket, cluster, ns, name)

    async def pf_ws_root(websocket: WebSocket, ns: str, name: str) -> None:
        auth = websocket.headers.get("authorization", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        await _portforward(kube, websocket, (kube.auth.cluster_of(token) if token else None) or "", ns, name)

    app.add_api_websocket_route("/k8s/{cluster}/api/v1/namespaces/{ns}/pods/{name}/portforward", pf_ws)
    app.add_api_websocket_route("/api/v1/namespaces/{ns}/pods/{name}/portforward", pf_ws_root)

    _device_routes(app, kube)
    _sim_routes(app, kube)
    return kube


async def _handle(kube: Kube, request: Request, cname: str, rest: str) -> Response:
    c = kube.cluster_for(cname)
    if c is None:
        raise KubeError(
            404,
            "NotFound",
            f"the server could not find the requested resource (no cluster named {cname[:60]} in this organization)",
        )
    parts = [p for p in rest.split("/") if p]
    method = request.method
    q = request.query_params
    if parts in (["version"], ["healthz"], ["livez"], ["readyz"]):
        return jresp(_version(cname)) if parts == ["version"] else Response("ok", media_type="text/plain")
    auth = request.headers.get("authorization", "")
    token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""

    def check() -> bool:
        now = kube.tick()
        return bool(token) and kube.auth.check(token, cname, now) is not None

    if not await run_in_threadpool(check):
        return jresp(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "Unauthorized",
                "reason": "Unauthorized",
                "code": 401,
            },
            401,
        )
    prefix = f"/k8s/{cname}"
    if not parts:
        return jresp(
            {"paths": ["/api", "/api/v1", "/apis", "/openapi/v3", "/version"] + [f"/apis/{g}/v1" for g in GROUP_ORDER]}
        )
    if parts == ["api"]:
        return jresp(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": request.url.netloc}],
            }
        )
    if parts == ["apis"]:
        groups = [_group(g) for g in [*GROUP_ORDER, authz.GROUP]]
        return jresp({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    if parts[:2] == ["apis", authz.GROUP]:
        if len(parts) == 2:
            return jresp(_group(authz.GROUP))
        if parts[2:] == ["v1"]:
            return jresp(authz.resource_list())
        if len(parts) == 4 and parts[2] == "v1" and method == "POST":
            review = {"selfsubjectaccessreviews": authz.access_review, "selfsubjectrulesreviews": authz.rules_review}
            if parts[3] in review:
                raw = await request.body()
                if "protobuf" in request.headers.get("content-type", ""):
                    body = authz.from_protobuf(raw, parts[3])
                else:
                    body = json.loads(raw or b"null")
                return jresp(review[parts[3]](body), 201)
        raise KubeError(404, "NotFound", "the server could not find the requested resource")
    if parts == ["api", "v1"]:
        return jresp(_resource_list("", "v1"))
    if len(parts) == 2 and parts[0] == "apis" and parts[1] in GROUP_ORDER:
        return jresp(_group(parts[1]))
    if len(parts) == 3 and parts[0] == "apis" and (parts[1], parts[2]) in BY_GV:
        return jresp(_resource_list(parts[1], parts[2]))
    if parts[:2] == ["openapi", "v3"]:
        if len(parts) == 2:
            return jresp(openapi.index(prefix))
        key = "/".join(parts[2:])
        for g, v in BY_GV:
            if openapi.gv_key(g, v) == key:
                return Response(openapi.doc_bytes(g, v), media_type="application/json")
        raise KubeError(404, "NotFound", "the server could not find the requested resource")
    t = parse_target(parts)
    if t is None:
        raise KubeError(404, "NotFound", "the server could not find the requested resource")
    if t.r.namespaced and t.ns is None and t.name is not None:
        raise KubeError(404, "NotFound", "the server could not find the requested resource")
    if t.sub == "log" and t.r.plural == "pods" and method == "GET":
        return await _logs(kube, c, t, q)
    if t.sub == "proxy" and t.r.plural == "services":
        return await _proxy(kube, c, t, request)
    if t.sub == "portforward" and t.r.plural == "pods" and method in ("GET", "POST"):
        # kubectl's fallback after a refused WebSocket (a plain SPDY/3.1 upgrade): the same refusal, or why not
        await run_in_threadpool(_pf_pod, kube, c, t.ns or "", t.name or "")
        raise KubeError(
            400,
            "BadRequest",
            "the box serves port-forward over WebSocket only (subprotocol SPDY/3.1+portforward.k8s.io, "
            "kubectl 1.30 or later); a plain SPDY/3.1 upgrade is not supported",
        )
    if method == "GET" and t.name is None and q.get("watch") in ("true", "1"):
        return await _watch(kube, c, t, request)
    body = None
    if method in ("POST", "PUT", "PATCH"):
        raw = await request.body()
        ctype = request.headers.get("content-type", "application/json").split(";")[0].strip()
        if ctype == "application/apply-patch+yaml":
            import yaml

            body = yaml.safe_load(raw)
        elif "protobuf" in ctype:
            kind = t.r.kind.lower()
            raise KubeError(
                415,
                "UnsupportedMediaType",
                f"this cluster reads JSON and YAML, not the protobuf that `kubectl create {kind}` sends. Write "
                f"the {t.r.kind} as YAML and apply it: kubectl create {kind} NAME ... --dry-run=client -o yaml "
                f"> {kind}.yaml && kubectl apply -f {kind}.yaml",
            )
        else:
            body = json.loads(raw or b"null")
    else:
        ctype = ""
    accept = request.headers.get("accept", "")
    return await run_in_threadpool(_sync_op, kube, c, t, method, dict(q), body, ctype, accept)


# ---- synchronous operations (thread pool, under the World lock) -------------------------------


def _sync_op(kube: Kube, c: Cluster, t: Target, method: str, q: dict, body: Any, ctype: str, accept: str) -> Response:
    with kube.world.lock:
        now = kube.tick()
        r = t.r
        if t.ns is not None and r.plural != "namespaces" and c.store.peek("namespaces", "", t.ns) is None:
            if method == "POST" or t.name is not None:
                raise KubeError(404, "NotFound", f'namespaces "{t.ns}" not found', {"name": t.ns, "kind": "namespaces"})
        if t.sub == "scale":
            return _scale(c, t, method, body, ctype, now)
        if t.sub not in (None, "status"):
            raise KubeError(404, "NotFound", "the server could not find the requested resource")
        if method == "GET" and t.name is None:
            return _list(c, r, t.ns, q, accept, now)
        if method == "GET":
            obj = c.store.get(r.plural, t.ns or "", t.name)
            if obj is None:
                raise not_found(r, t.name)
            _typed(obj, r)
            if tables.wants_table(accept):
                return jresp(
                    tables.table(
                        r.plural, [obj], now, obj["metadata"]["resourceVersion"], q.get("includeObject", "Metadata")
                    )
                )
            return jresp(obj)
        if method == "POST" and t.name is None:
            return _create(kube, c, r, t.ns, body, q, now)
        if method == "PUT" and t.name:
            return _update(c, r, t.ns, t.name, body, q, now, t.sub == "status")
        if method == "PATCH" and t.name:
            cur = c.store.get(r.plural, t.ns or "", t.name)
            if cur is None:
                raise not_found(r, t.name)
            if ctype == "application/json-patch+json":
                new = json_patch(cur, body)
            elif ctype == "application/strategic-merge-patch+json":
                new = strategic_merge(cur, body)
            elif ctype == "application/apply-patch+yaml":
                new = strategic_merge(cur, body)
            else:
                new = merge_patch(cur, body)
            return _update(c, r, t.ns, t.name, new, q, now, t.sub == "status", patched=True)
        if method == "DELETE" and t.name:
            return _delete(c, r, t.ns, t.name, q, now)
        raise KubeError(405, "MethodNotAllowed", f"{method} is not supported on {r.plural}")


def _typed(obj: dict, r: Resource) -> dict:
    obj.setdefault("apiVersion", r.api_version)
    obj.setdefault("kind", r.kind)
    return obj


def _list(c: Cluster, r: Resource, ns: str | None, q: dict, accept: str, now: datetime) -> Response:
    items, rv = c.store.list(r.plural, ns if r.namespaced else None)
    lsel = parse_label_selector(q.get("labelSelector"))
    fsel = parse_field_selector(q.get("fieldSelector"))
    items = [
        _typed(o, r) for o in items if labels_match(o["metadata"].get("labels") or {}, lsel) and fields_match(o, fsel)
    ]
    if tables.wants_table(accept):
        return jresp(tables.table(r.plural, items, now, str(rv), q.get("includeObject", "Metadata")))
    return jresp(
        {"kind": f"{r.kind}List", "apiVersion": r.api_version, "metadata": {"resourceVersion": str(rv)}, "items": items}
    )


def _create(kube: Kube, c: Cluster, r: Resource, ns: str | None, body: Any, q: dict, now: datetime) -> Response:
    if not isinstance(body, dict):
        raise KubeError(400, "BadRequest", "the body must be a JSON object")
    if r.plural == "nodes":
        raise KubeError(403, "Forbidden", "nodes are managed by National Compute's market: they cannot be created")
    kind, api = body.get("kind"), body.get("apiVersion")
    if kind != r.kind or api != r.api_version:
        raise KubeError(
            400,
            "BadRequest",
            f"the API version in the data ({api}) does not match the expected API version ({r.api_version})"
            if api != r.api_version
            else f"kind {kind} does not match {r.kind}",
        )
    obj = copy.deepcopy(body)
    meta = obj.setdefault("metadata", {})
    if not meta.get("name"):
        if meta.get("generateName"):
            meta["name"] = meta["generateName"] + c.suffix()
        else:
            raise KubeError(
                422,
                "Invalid",
                f'{r.kind}.{r.group or "core"} "" is invalid: metadata.name: '
                f"Required value: name or generateName is required",
                {
                    "kind": r.plural,
                    "causes": [
                        {
                            "reason": "FieldValueRequired",
                            "message": "Required value: name or generateName is required",
                            "field": "metadata.name",
                        }
                    ],
                },
            )
    name = meta["name"]
    if r.namespaced:
        if meta.get("namespace") and ns and meta["namespace"] != ns:
            raise KubeError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
            )
        meta["namespace"] = ns or meta.get("namespace") or "default"
    else:
        meta.pop("namespace", None)
    if c.store.peek(r.plural, meta.get("namespace", ""), name) is not None:
        gr = f"{r.plural}.{r.group}" if r.group else r.plural
        raise KubeError(
            409, "AlreadyExists", f'{gr} "{name}" already exists', {"name": name, "group": r.group, "kind": r.plural}
        )
    meta.update(uid=c.uid(), creationTimestamp=iso(now), generation=1)
    _defaults(c, r, obj, now)
    _admit(c, r, obj)
    meta.pop("resourceVersion", None)
    if q.get("dryRun"):
        return jresp(obj, 201)
    out = c.store.put(r.plural, obj)
    c.created(r.plural, c.store.peek(r.plural, meta.get("namespace", ""), name), now)
    c.controllers(now)
    out = c.store.get(r.plural, meta.get("namespace", ""), name) or out
    return jresp(_typed(out, r), 201)


def _defaults(c: Cluster, r: Resource, obj: dict, now: datetime) -> None:
    spec = (
        obj.setdefault("spec", {})
        if r.plural not in ("serviceaccounts", "configmaps", "secrets", "roles", "rolebindings", "events")
        else None
    )
    if r.plural == "jobs":
        uid_probe = obj["metadata"]["uid"]
        spec.setdefault("parallelism", 1)
        spec.setdefault("completions", 1)
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("manualSelector", False)
        spec.setdefault("podReplacementPolicy", "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
        tmpl = spec.setdefault("template", {})
        labels = tmpl.setdefault("metadata", {}).setdefault("labels", {})
        if not spec.get("selector"):
            extra = {
                "batch.kubernetes.io/controller-uid": uid_probe,
                "batch.kubernetes.io/job-name": obj["metadata"]["name"],
                "controller-uid": uid_probe,
                "job-name": obj["metadata"]["name"],
            }
            labels.update(extra)
            spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid_probe}}
            jl = obj["metadata"].setdefault("labels", {})
            for k in (
                "batch.kubernetes.io/controller-uid",
                "batch.kubernetes.io/job-name",
                "controller-uid",
                "job-name",
            ):
                jl.setdefault(k, extra[k])
        normalize_pod_spec(tmpl.setdefault("spec", {}))
        obj["status"] = {}
    elif r.plural in ("deployments", "replicasets"):
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        if r.plural == "deployments":
            spec.setdefault("progressDeadlineSeconds", 600)
            st = spec.setdefault("strategy", {"type": "RollingUpdate"})
            if st.get("type", "RollingUpdate") == "RollingUpdate":
                st.setdefault("rollingUpdate", {"maxSurge": "25%", "maxUnavailable": "25%"})
        normalize_pod_spec(spec.setdefault("template", {}).setdefault("spec", {}))
        if not spec.get("selector"):
            raise KubeError(
                422, "Invalid", f'{r.kind}.apps "{obj["metadata"]["name"]}" is invalid: spec.selector: Required value'
            )
        obj["status"] = {}
    elif r.plural == "services":
        spec.setdefault("type", "ClusterIP")
        if not spec.get("clusterIP"):
            n = next(c.service_ips)
            spec["clusterIP"] = f"10.96.{n // 250}.{n % 250 + 2}"
        spec["clusterIPs"] = [spec["clusterIP"]]
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for p in spec.get("ports") or []:
            p.setdefault("protocol", "TCP")
            p.setdefault("targetPort", p.get("port"))
        obj["status"] = {"loadBalancer": {}}
    elif r.plural == "pods":
        normalize_pod_spec(spec)
        obj["status"] = {"phase": "Pending"}
    elif r.plural == "namespaces":
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
    elif r.plural == "secrets":
        obj.setdefault("type", "Opaque")


def _admit(c: Cluster, r: Resource, obj: dict) -> None:
    name = obj["metadata"]["name"]
    if r.plural == "jobs":
        c.admit("Job", name, obj["spec"]["template"].get("spec", {}), int(obj["spec"].get("parallelism", 1)))
    elif r.plural in ("deployments", "replicasets"):
        c.admit(r.kind, name, obj["spec"]["template"].get("spec", {}), int(obj["spec"].get("replicas", 1)))
    elif r.plural == "pods":
        c.admit("Pod", name, obj["spec"], 1)


def _update(
    c: Cluster,
    r: Resource,
    ns: str | None,
    name: str,
    body: Any,
    q: dict,
    now: datetime,
    status_only: bool,
    patched: bool = False,
) -> Response:
    cur = c.store.peek(r.plural, ns or "", name)
    if cur is None:
        raise not_found(r, name)
    if not isinstance(body, dict):
        raise KubeError(400, "BadRequest", "the body must be a JSON object")
    new = copy.deepcopy(body)
    meta = new.setdefault("metadata", {})
    rv = meta.get("resourceVersion")
    if rv and not patched and rv != cur["metadata"]["resourceVersion"]:
        raise KubeError(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {r.plural} "{name}": the object has been '
            f"modified; please apply your changes to the latest version and try again",
        )
    for k in ("uid", "creationTimestamp", "namespace", "name", "generation", "ownerReferences", "finalizers"):
        if k in cur["metadata"]:
            meta[k] = cur["metadata"][k]
    if r.plural in ("jobs", "pods"):  # their pod templates are immutable
        new["spec"] = _immutable_spec(r, cur["spec"], new.get("spec") or {})
    if status_only:
        new["spec"] = cur.get("spec")
    elif "status" in cur:
        new["status"] = cur["status"]
    if r.plural in ("deployments", "replicasets", "jobs", "pods") and "spec" in new:
        tmpl = new["spec"].get("template")
        if isinstance(tmpl, dict):
            normalize_pod_spec(tmpl.setdefault("spec", {}))
        if r.plural == "deployments" and new["spec"].get("template") != cur["spec"].get("template"):
            c.admit("Deployment", name, new["spec"]["template"].get("spec", {}), int(new["spec"].get("replicas", 1)))
    if new.get("spec") != cur.get("spec"):
        meta["generation"] = cur["metadata"].get("generation", 1) + 1
    new.setdefault("apiVersion", r.api_version)
    new.setdefault("kind", r.kind)
    meta["resourceVersion"] = cur["metadata"]["resourceVersion"]
    if new == _typed(copy.deepcopy(cur), r):  # nothing changed: no new resourceVersion (kubectl: "(no change)")
        return jresp(new)
    if q.get("dryRun"):
        return jresp(new)
    if r.plural == "pods":  # keep the controller's own copy in step
        run = c.runs.get((ns or "", name))
        if run is not None:
            run.obj["metadata"]["labels"] = meta.get("labels", {})
            run.obj["metadata"]["annotations"] = meta.get("annotations", {})
            new = run.obj
    if r.plural == "jobs":
        ctl = c.jobs.get((ns or "", name))
        if ctl is not None and ctl.suspended_by_us and new["spec"].get("suspend") is False:
            new["spec"]["suspend"] = True  # still waiting for its node
    out = c.store.put(r.plural, new)
    c.dirty = True
    c.controllers(now)
    out = c.store.get(r.plural, ns or "", name) or out
    return jresp(_typed(out, r))


def _immutable_spec(r: Resource, cur: dict, new: dict) -> dict:
    if r.plural == "pods":
        out = copy.deepcopy(cur)
        for i, ctr in enumerate(new.get("containers") or []):
            if i < len(out.get("containers", [])) and "image" in ctr:
                out["containers"][i]["image"] = ctr["image"]
        return out
    out = copy.deepcopy(new)
    out["template"] = copy.deepcopy(cur.get("template"))
    out["selector"] = copy.deepcopy(cur.get("selector"))
    for k in ("completions", "completionMode", "podFailurePolicy", "podReplacementPolicy"):
        if k in cur:
            out[k] = copy.deepcopy(cur[k])
    for k, v in cur.items():
        out.setdefault(k, copy.deepcopy(v))
    return out


def _delete(c: Cluster, r: Resource, ns: str | None, name: str, q: dict, now: datetime) -> Response:
    if r.plural == "nodes":
        raise KubeError(
            403,
            "Forbidden",
            "nodes are managed by National Compute's market: withdraw the limit "
            "price (PUT /api/k8s/bid 0) to let them go",
        )
    if r.plural == "namespaces" and name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        raise KubeError(403, "Forbidden", f'namespaces "{name}" is forbidden: this namespace may not be deleted')
    if q.get("dryRun"):
        obj = c.store.get(r.plural, ns or "", name)
        if obj is None:
            raise not_found(r, name)
        return jresp(_typed(obj, r))
    if r.plural == "pods" and (ns or "", name) in c.runs:
        obj = c.store.get(r.plural, ns or "", name)
        if obj is None:
            raise not_found(r, name)
        try:
            grace = int(q["gracePeriodSeconds"]) if q.get("gracePeriodSeconds") not in (None, "") else None
        except ValueError:
            raise KubeError(400, "BadRequest", "gracePeriodSeconds must be a whole number of seconds") from None
        if not c.delete_pod(ns or "", name, grace, now):  # Terminating for its grace period
            obj = c.store.get(r.plural, ns or "", name) or obj
        c.controllers(now)
        return jresp(_typed(obj, r))
    obj = c.store.delete(r.plural, ns or "", name)
    if obj is None:
        raise not_found(r, name)
    c.deleted(r.plural, ns or "", name, now)
    c.controllers(now)
    return jresp(_typed(obj, r))


def _scale(c: Cluster, t: Target, method: str, body: Any, ctype: str, now: datetime) -> Response:
    r = t.r
    if r.plural not in ("deployments", "replicasets") or not t.name:
        raise KubeError(404, "NotFound", "the server could not find the requested resource")
    obj = c.store.peek(r.plural, t.ns or "", t.name)
    if obj is None:
        raise not_found(r, t.name)

    def scale_obj(o: dict) -> dict:
        sel = tables.selector_to_text(o["spec"].get("selector") or {})
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                "name": t.name,
                "namespace": t.ns,
                "uid": o["metadata"]["uid"],
                "resourceVersion": o["metadata"]["resourceVersion"],
                "creationTimestamp": o["metadata"]["creationTimestamp"],
            },
            "spec": {"replicas": int(o["spec"].get("replicas", 1))},
            "status": {"replicas": int(o.get("status", {}).get("replicas", 0)), "selector": sel},
        }

    if method == "GET":
        return jresp(scale_obj(obj))
    cur = scale_obj(obj)
    if method == "PUT":
        new = body
    elif ctype == "application/json-patch+json":
        new = json_patch(cur, body)
    else:
        new = merge_patch(cur, body)
    replicas = int((new.get("spec") or {}).get("replicas", cur["spec"]["replicas"]))
    if replicas < 0:
        raise KubeError(422, "Invalid", "spec.replicas: must be greater than or equal to 0")
    if replicas > int(obj["spec"].get("replicas", 1)):
        c.admit(r.kind, t.name, obj["spec"]["template"].get("spec", {}), replicas)
    obj["spec"]["replicas"] = replicas
    obj["metadata"]["generation"] = obj["metadata"].get("generation", 1) + 1
    c.store.put(r.plural, obj)
    c.dirty = True
    c.controllers(now)
    return jresp(scale_obj(c.store.peek(r.plural, t.ns or "", t.name)))


# ---- watch ------------------------------------------------------------------------------------


async def _watch(kube: Kube, c: Cluster, t: Target, request: Request) -> Response:
    q = request.query_params
    r = t.r
    ns = t.ns if r.namespaced else None
    lsel = parse_label_selector(q.get("labelSelector"))
    fsel = parse_field_selector(q.get("fieldSelector"))
    want_table = tables.wants_table(request.headers.get("accept", ""))
    include = q.get("includeObject", "Metadata")
    try:
        timeout = float(q.get("timeoutSeconds") or 1800)
    except ValueError:
        timeout = 1800
    rv_text = q.get("resourceVersion") or ""
    try:
        rv = int(rv_text) if rv_text else 0
    except ValueError:
        raise KubeError(400, "BadRequest", f"invalid resource version: {rv_text}") from None
    await run_in_threadpool(kube.tick)

    def matches(obj: dict, namespace: str) -> bool:
        if ns is not None and namespace != ns:
            return False
        return labels_match(obj["metadata"].get("labels") or {}, lsel) and fields_match(obj, fsel)

    sent_columns = False

    def encode(type_: str, obj: dict) -> bytes:
        nonlocal sent_columns
        obj = _typed(copy.deepcopy(obj), r)
        if want_table:
            now = kube.world.clock.now()
            tbl = tables.table(
                r.plural, [obj], now, obj["metadata"]["resourceVersion"], include, columns=not sent_columns
            )
            sent_columns = True
            obj = tbl
        return to_json({"type": type_, "object": obj}) + b"\n"

    async def gen() -> AsyncIterator[bytes]:
        nonlocal rv
        deadline = time.monotonic() + timeout
        revocations = kube.revocations
        if rv == 0:  # no resourceVersion: the current state as ADDED events, then changes
            items, rv = c.store.list(r.plural, ns)
            for o in items:
                if matches(o, o["metadata"].get("namespace", "")):
                    yield encode("ADDED", o)
        elif rv > c.store.rv:  # a version this cluster never reached (a watcher from a cluster before a restart)
            yield (
                to_json(
                    {
                        "type": "ERROR",
                        "object": {
                            "kind": "Status",
                            "apiVersion": "v1",
                            "metadata": {},
                            "status": "Failure",
                            "message": f"Too large resource version: {rv}, current: {c.store.rv}",
                            "reason": "Timeout",
                            "details": {
                                "causes": [
                                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                                ],
                                "retryAfterSeconds": 1,
                            },
                            "code": 504,
                        },
                    }
                )
                + b"\n"
            )
            return
        while not kube.closed and time.monotonic() < deadline and kube.revocations == revocations:
            events = c.store.events_after(rv)
            if events is None:
                yield (
                    to_json(
                        {
                            "type": "ERROR",
                            "object": {
                                "kind": "Status",
                                "apiVersion": "v1",
                                "metadata": {},
                                "status": "Failure",
                                "message": f"too old resource version: {rv} ({c.store.oldest_rv})",
                                "reason": "Expired",
                                "code": 410,
                            },
                        }
                    )
                    + b"\n"
                )
                return
            for e in events:
                rv = e.rv
                if e.resource == r.plural and matches(e.obj, e.namespace):
                    yield encode(e.type, e.obj)
            if not events:
                await kube.atick()
                await asyncio.sleep(POLL)

    return Stream(gen(), "application/json")


# ---- logs -------------------------------------------------------------------------------------


async def _logs(kube: Kube, c: Cluster, t: Target, q) -> Response:
    follow = q.get("follow") in ("true", "1")
    stamps = q.get("timestamps") in ("true", "1")
    previous = q.get("previous") in ("true", "1")
    tail = int(q["tailLines"]) if q.get("tailLines") not in (None, "") else None
    since_time = parse_time(q["sinceTime"]) if q.get("sinceTime") else None
    since_s = int(q["sinceSeconds"]) if q.get("sinceSeconds") else None
    limit = int(q["limitBytes"]) if q.get("limitBytes") else None
    container = q.get("container") or ""

    def first() -> tuple[object, str, list, bool]:
        with kube.world.lock:
            now = kube.tick()
            run = c.runs.get((t.ns or "", t.name or ""))
            if run is None or c.store.peek("pods", t.ns or "", t.name or "") is None:
                raise not_found(t.r, t.name or "")
            names = run.containers()
            inits = run.init_containers()
            cname = container
            if not cname:
                if len(names) != 1:
                    msg = f"a container name must be specified for pod {run.name}, choose one of: [{' '.join(names)}]"
                    if inits:
                        msg += f" or one of the init containers: [{' '.join(inits)}]"
                    raise KubeError(400, "BadRequest", msg)
                cname = names[0]
            if cname not in names and cname not in inits:
                raise KubeError(400, "BadRequest", f"container {cname} is not valid for pod {run.name}")
            if previous:
                raise KubeError(
                    400, "BadRequest", f'previous terminated container "{cname}" in pod "{run.name}" not found'
                )
            if not podlogs.container_started(run, cname):
                reason = "PodInitializing" if (run.init_containers() and cname in names) else "ContainerCreating"
                raise KubeError(
                    400, "BadRequest", f'container "{cname}" in pod "{run.name}" is waiting to start: {reason}'
                )
            lines = podlogs.log_lines(run, cname, now)
            lo = since_time or (now - timedelta(seconds=since_s) if since_s is not None else None)
            if lo is not None:
                lines = [x for x in lines if x[0] >= lo]
            done = podlogs.container_done(run, cname, now)
            return run, cname, lines, done

    run, cname, lines, done = await run_in_threadpool(first)
    flood = _flood_of(run, cname)
    if flood is not None:

        def ended() -> bool:
            with kube.world.lock:
                return podlogs.container_done(run, cname, kube.tick()) or not run.alive

        return _flood(kube, run, cname, flood, follow, since_time, stamps, ended)
    if tail is not None:
        lines = lines[-tail:] if tail > 0 else []

    def fmt(x: tuple[datetime, str]) -> bytes:
        text = x[1]
        if stamps:
            return f"{x[0].astimezone(timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f')}000Z {text}\n".encode()
        return (text + "\n").encode()

    if not follow:
        data = b"".join(fmt(x) for x in lines)
        if limit is not None:
            data = data[:limit]
        return Response(data, media_type="text/plain")

    cut = kube.log_cuts.pop(0) if kube.log_cuts else None
    revocations = kube.revocations

    async def gen() -> AsyncIterator[bytes]:
        sent = 0
        count = 0

        def counted(chunk: bytes) -> bytes:
            nonlocal count
            count += 1
            if cut is not None and count > cut:
                raise _Dropped("fault injection: log stream cut")
            return chunk

        for x in lines:
            chunk = counted(fmt(x))
            sent += len(chunk)
            yield chunk
        seen = len(podlogs.log_lines(run, cname, lines[-1][0])) if lines else 0
        cursor_t = lines[-1][0] if lines else None
        finished = done

        def more() -> tuple[list, bool]:
            with kube.world.lock:
                now = kube.tick()
                all_lines = podlogs.log_lines(run, cname, now)
                return all_lines, podlogs.container_done(run, cname, now) or not run.alive

        while not finished and not kube.closed:
            if (limit is not None and sent >= limit) or kube.revocations != revocations:
                return
            await asyncio.sleep(POLL * 2)
            all_lines, finished = await run_in_threadpool(more)
            if cursor_t is not None:
                new = [x for x in all_lines[seen:]]
            else:
                new = all_lines[seen:]
            seen = len(all_lines)
            for x in new:
                chunk = counted(fmt(x))
                sent += len(chunk)
                yield chunk
                cursor_t = x[0]

    return Stream(gen(), "text/plain")


class _Dropped(Exception):
    """Raised inside a stream to cut its connection mid-body (fault injection; the server's log filter
    hides it)."""


FLOOD_ENV = "NCUI_SIM_LOG_FLOOD"  # a pod container's env: "LINES" or "LINES@RATE" (lines per real second)


def _flood_of(run, container: str) -> tuple[int, float] | None:
    """A benchmark hook: a container whose env sets ``NCUI_SIM_LOG_FLOOD`` logs LINES synthetic loss lines
    at RATE lines per real second (0 or absent: as fast as the server can), instead of its plan's log."""
    for c in run.obj["spec"].get("containers") or []:
        if c.get("name") != container:
            continue
        for e in c.get("env") or []:
            if e.get("name") == FLOOD_ENV:
                text = str(e.get("value", ""))
                n, _, rate = text.partition("@")
                try:
                    return max(0, int(n)), max(0.0, float(rate or 0))
                except ValueError:
                    return None
    return None


class _FloodLog:
    """A flood's whole log, built once (a benchmark measures its readers, not the box's f-strings): line
    ``k`` is ``text(k)`` stamped (the container's start + ``k`` microseconds), so ``sinceTime`` resumes."""

    def __init__(self, base: datetime, total: int, stamps: bool) -> None:
        from array import array

        parts: list[str] = []
        offsets = array("Q", [0])
        pos = 0
        for sec in range(0, total, 1_000_000):
            p = (base + timedelta(seconds=sec // 1_000_000)).strftime("%Y-%m-%dT%H:%M:%S")
            for k in range(sec, min(total, sec + 1_000_000)):
                text = f"iter {k}: loss {1 + (k % 997) / 331:.4f}, time {380 + k % 37}.12ms"
                line = f"{p}.{k % 1_000_000:06d}000Z {text}\n" if stamps else text + "\n"
                parts.append(line)
                pos += len(line)  # ASCII: characters are bytes
                offsets.append(pos)
        self.data = memoryview("".join(parts).encode("ascii"))
        self.offsets = offsets

    def lines(self, i: int, j: int) -> bytes:
        return bytes(self.data[self.offsets[i] : self.offsets[j]])


def _flood(
    kube: Kube,
    run,
    container: str,
    flood: tuple[int, float],
    follow: bool,
    since_time: datetime | None,
    stamps: bool,
    ended,
) -> Response:
    """Serve a flood (``_flood_of``): as fast as the connection takes it, or at its rate; a follow stream
    then stays open, as the kubelet's does, until the container ends (``ended()``)."""
    total, rate = flood
    base = run.times.get("running") or run.start
    base = base.astimezone(timezone.utc).replace(microsecond=0)
    start = 0
    if since_time is not None:
        start = min(total, max(0, math.ceil((since_time - base).total_seconds() * 1_000_000 - 1e-6)))
    key = (run.ns, run.name, container, base, total, stamps)
    cut = kube.log_cuts.pop(0) if follow and kube.log_cuts else None

    async def gen() -> AsyncIterator[bytes]:
        log = kube.floods.get(key)
        if log is None:
            log = kube.floods[key] = await run_in_threadpool(_FloodLog, base, total, stamps)
        if not follow:
            yield log.lines(start, total)
            return
        i = start
        t0 = time.monotonic()
        while i < total and not kube.closed:
            if rate > 0:
                due = min(total, start + int((time.monotonic() - t0) * rate))
                if due <= i:
                    await asyncio.sleep(0.005)
                    continue
                j = min(due, i + 5000)
            else:
                j = min(total, i + 4000)
            if cut is not None and j - start > cut:
                yield log.lines(i, start + cut)
                raise _Dropped("fault injection: log stream cut")
            yield log.lines(i, j)
            i = j
            await asyncio.sleep(0)
        while not kube.closed and not await run_in_threadpool(ended):
            await asyncio.sleep(POLL * 2)

    return Stream(gen(), "text/plain")


# ---- the service proxy ------------------------------------------------------------------------


async def _proxy(kube: Kube, c: Cluster, t: Target, request: Request) -> Response:
    raw = await request.body()
    spec = t.name or ""
    parts = spec.split(":")
    svc_name = parts[1] if len(parts) == 3 else parts[0]
    path = "/" + t.rest

    def answer() -> Response:
        with kube.world.lock:
            now = kube.tick()
            svc = c.store.peek("services", t.ns or "", svc_name)
            if svc is None:
                raise KubeError(
                    404, "NotFound", f'services "{svc_name}" not found', {"name": svc_name, "kind": "services"}
                )
            sel = svc["spec"].get("selector") or {}
            backends = [
                r
                for r in c.runs.values()
                if r.active
                and r.ns == (t.ns or "")
                and r.state == "ready"
                and sel
                and all(r.obj["metadata"].get("labels", {}).get(k) == v for k, v in sel.items())
            ]
            if not backends:
                raise KubeError(503, "ServiceUnavailable", f'no endpoints available for service "{svc_name}"')
            be = sorted(backends, key=lambda r: r.name)[0]
            return _engine(kube, c, be, request.method, path, raw, now, svc_name)

    return await run_in_threadpool(answer)


def _engine(
    kube: Kube, c: Cluster, be: PodRun, method: str, path: str, raw: bytes, now: datetime, via: str
) -> Response:
    """What the pod ``be``'s engine answers to ``method path`` (the service proxy and port-forward both reach it
    here; ``via``: the service the request came through, as ``chat_requests`` records it); under the World lock."""
    server = inference.server_of(be.profile)
    created = int(now.timestamp())
    if server is None:
        return Response(
            f"{be.name}: nothing listens on this port in the simulator\n",
            status_code=502,
            media_type="text/plain",
        )
    if be.profile == "router":
        workers = [r for r in c.runs.values() if r.active and r.profile == "kimi-worker" and r.state == "ready"]
        if not workers and path.startswith("/v1/"):
            return jresp(
                {
                    "object": "error",
                    "message": "No available backends for model moonshotai/Kimi-K3",
                    "type": "ServiceUnavailable",
                    "code": 503,
                },
                503,
            )
        if workers:
            be = workers[0]
    if path in ("/health", "/healthz"):
        return Response(b"", status_code=200)
    if path == "/v1/models" and method == "GET":
        return jresp(inference.models(server, created))
    if path == "/v1/chat/completions" and method == "POST":
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return jresp({"object": "error", "message": "invalid JSON", "type": "BadRequestError", "code": 400}, 400)
        body = body if isinstance(body, dict) else {}
        kube.chat_requests.append((via, body))
        out = inference.complete(server, body, kube.world.seed)
        cname = be.containers()[0]
        code = out[0] if isinstance(out, tuple) else 200
        kube.completions += 1
        cid = f"chatcmpl-{kube.completions:06d}{hashlib.sha256(raw).hexdigest()[:18]}"
        if isinstance(out, inference.Completion):
            be.extra_logs.append((now, cname, inference.sampling_line(cid, body, out, server)))
        be.extra_logs.append(
            (
                now,
                cname,
                f'INFO:     10.244.0.1:{40000 + len(be.extra_logs)} - "POST /v1/chat/completions HTTP/1.1" {code}',
            )
        )
        if isinstance(out, tuple):
            return jresp(out[1], code)
        if body.get("stream") is True:
            return _chat_stream(kube, out, cid, created, server, body)
        return jresp(inference.whole(out, cid, created))
    return jresp({"detail": "Not Found"}, 404)


# ---- port-forward ---------------------------------------------------------------------------------


def _pf_pod(kube: Kube, c: Cluster, ns: str, name: str) -> PodRun:
    """The pod a port-forward goes to, or the Status the API server refuses it with."""
    with kube.world.lock:
        kube.tick()
        obj = c.store.peek("pods", ns, name)
        r = c.runs.get((ns, name))
        if obj is None or r is None:
            raise KubeError(404, "NotFound", f'pods "{name}" not found', {"name": name, "kind": "pods"})
        if not obj["spec"].get("nodeName"):
            raise KubeError(400, "BadRequest", f"pod {name} does not have a host assigned")
        phase = (obj.get("status") or {}).get("phase", "Pending")
        if phase != "Running":
            raise KubeError(400, "BadRequest", f"pod {name} is not running (phase {phase}): nothing listens in it")
        return r


def _pf_listening(r: PodRun, port: int) -> str | None:
    """None when the pod's engine accepts a connection on ``port`` now, else why the connection is refused."""
    ports = [
        p.get("containerPort") for ct in r.obj["spec"].get("containers", []) for p in ct.get("ports") or [] if p
    ] or [8000]
    refused = (
        f"error forwarding port {port} to pod {r.name}, uid {r.uid}: failed to connect to localhost:{port} inside "
        f"the pod: dial tcp4 127.0.0.1:{port}: connect: connection refused"
    )
    if not r.active or r.state not in ("running", "ready"):
        return f"{refused} (the pod is not running)"
    if inference.server_of(r.profile) is None or port not in ports:
        return f"{refused} (nothing listens on port {port} in this pod)"
    if r.state != "ready":
        return f"{refused} (the engine is still loading: the pod reads READY 0/1)"
    return None


def _pf_via(c: Cluster, r: PodRun) -> str:
    """The service a forwarded request stands for (kubectl resolved svc/… to this pod): the first that selects
    the pod, else the pod's own name."""
    labels = r.obj["metadata"].get("labels") or {}
    for svc in c.store.iter("services", r.ns):  # sorted by name
        sel = svc["spec"].get("selector") or {}
        if sel and all(labels.get(k) == v for k, v in sel.items()):
            return svc["metadata"]["name"]
    return r.name


def _pf_engine_app(kube: Kube, c: Cluster, key: tuple[str, str], port: int) -> Any:
    """The pod's engine as an ASGI app for ``serve_http``: each request is answered by ``_engine``."""

    async def app(scope: dict, receive: Any, send: Any) -> None:
        raw = bytearray()
        while True:
            msg = await receive()
            raw += msg.get("body", b"")
            if not msg.get("more_body"):
                break

        def answer() -> Response:
            with kube.world.lock:
                now = kube.tick()
                r = c.runs.get(key)
                why = _pf_listening(r, port) if r is not None else "the pod is gone"
                if r is None or why:
                    raise portforward.Refused(f"lost connection to the pod's port {port}: {why}")
                return _engine(kube, c, r, scope["method"], scope["path"], bytes(raw), now, _pf_via(c, r))

        resp = await run_in_threadpool(answer)
        await resp(scope, receive, send)

    return app


async def _portforward(kube: Kube, ws: WebSocket, cname: str, ns: str, name: str) -> None:
    """``kubectl port-forward``: SPDY/3.1 tunnelled in the WebSocket's binary messages; or the channel protocol
    of the official Python client (see portforward.py)."""
    auth = ws.headers.get("authorization", "")
    token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""

    def check() -> tuple[Cluster, PodRun]:
        now = kube.tick()
        c = kube.cluster_for(cname)
        if c is None or not token or kube.auth.check(token, cname, now) is None:
            raise KubeError(401, "Unauthorized", "Unauthorized")
        return c, _pf_pod(kube, c, ns, name)

    offered = ws.scope.get("subprotocols") or []
    proto = next((p for p in (portforward.WS_PROTOCOL, *portforward.CHANNEL_PROTOCOLS) if p in offered), None)
    ports: list[int] = []
    try:
        c, _ = await run_in_threadpool(check)
        if proto is None:
            raise KubeError(
                400,
                "BadRequest",
                f"port-forward needs the WebSocket subprotocol {portforward.WS_PROTOCOL} (kubectl 1.30 or later) "
                f"or {portforward.CHANNEL_PROTOCOLS[0]} with ?ports=",
            )
        if proto in portforward.CHANNEL_PROTOCOLS:
            try:
                ports = [int(x) for x in ws.query_params.get("ports", "").split(",") if x.strip()]
            except ValueError:
                ports = [0]
            if not ports or not all(0 < x < 65536 for x in ports) or len(set(ports)) != len(ports):
                raise KubeError(400, "BadRequest", "port-forward needs ?ports=PORT[,PORT…] (distinct, 1 to 65535)")
    except KubeError as e:
        await ws.send_denial_response(status_resp(e))
        return
    await ws.accept(subprotocol=proto)
    key = (ns, name)

    async def dial(port: int) -> portforward.Handler | str:
        def look() -> str | None:
            with kube.world.lock:
                kube.tick()
                r = c.runs.get(key)
                return _pf_listening(r, port) if r is not None else f"pod {name} is gone"

        why = await run_in_threadpool(look)
        if why:
            return why
        app = _pf_engine_app(kube, c, key, port)
        return lambda reader, write: portforward.serve_http(reader, write, app, port, {"app": ws.scope["app"]})

    session: portforward.Session | portforward.ChannelSession
    if proto == portforward.WS_PROTOCOL:
        session = portforward.Session(ws.send_bytes, dial)
    else:
        session = portforward.ChannelSession(ws.send_bytes, dial, ports)
        await session.start()
    kube.forwards += 1

    async def pump() -> None:
        while not session.done.is_set():
            msg = await ws.receive()
            if msg["type"] == "websocket.disconnect":
                return
            if msg.get("bytes"):
                await session.feed(msg["bytes"])
            elif msg.get("text"):  # the tunnel carries binary messages only
                return

    async def until_closed() -> None:
        while not kube.closed:
            await asyncio.sleep(POLL * 4)

    tasks = [asyncio.ensure_future(x) for x in (pump(), session.done.wait(), until_closed())]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await session.close()
        kube.forwards -= 1
        with contextlib.suppress(Exception):
            await ws.close()


def _chat_stream(kube: Kube, c: inference.Completion, cid: str, created: int, server: str, body: dict) -> Response:
    """The answer as Server-Sent Events, as vLLM streams it: a role chunk after the prefill, one chunk per token
    at the engine's rate in real time, the finish reason, the usage when ``stream_options.include_usage`` asks
    for it, then ``[DONE]``. A chat fault (``/_sim/k8s/chat``) cuts the stream or sends a chunk that is not
    JSON after N tokens."""
    fault = kube.chat_faults.pop(0) if kube.chat_faults else {}
    rate = kube.chat_rate or inference.RATES[server]
    opts = body.get("stream_options")
    usage = isinstance(opts, dict) and opts.get("include_usage") is True
    ds = inference.deltas(c)

    async def gen() -> AsyncIterator[bytes]:
        await asyncio.sleep(inference.PREFILL + inference.PREFILL_PER_TOKEN * c.prompt_tokens)
        yield inference.chunk(c, cid, created, ds[0])
        t0, i = time.monotonic(), 1
        while i < len(ds) and not kube.closed:
            due = min(len(ds), 1 + int((time.monotonic() - t0) * rate) + 1)
            if due <= i:
                await asyncio.sleep(min(0.05, 1 / rate))
                continue
            out = []
            for d in ds[i:due]:
                if fault.get("malformed_after") == i - 1:
                    out.append(b'data: {"choices": [{"delta": {"content": "\xff\n\n')
                out.append(inference.chunk(c, cid, created, d))
                if fault.get("drop_after") == i:
                    yield b"".join(out)
                    raise _Dropped("fault injection: chat stream cut")
                i += 1
            yield b"".join(out)
        tail = inference.chunk(c, cid, created, {}, c.finish_reason)
        if usage:
            tail += inference.chunk(c, cid, created, None)
        yield tail + b"data: [DONE]\n\n"

    return Stream(gen(), "text/event-stream")


# ---- sign-in (device code) --------------------------------------------------------------------


def _device_routes(app: FastAPI, kube: Kube) -> None:
    world = kube.world

    async def code(request: Request) -> Response:
        try:
            body = json.loads(await request.body() or b"{}")
        except json.JSONDecodeError:
            body = {}
        name = str((body or {}).get("cluster", ""))

        def make() -> Response:
            with world.lock:
                now = kube.tick()
                c = kube.cluster_for(name)
                if c is None:
                    return JSONResponse(
                        {
                            "error": "not-found",
                            "detail": f"No cluster named {name[:60]} in {world.main_org.spec.org_name}.",
                        },
                        404,
                    )
                dc = kube.auth.new_code(c.org.spec.key, name, now)
            base = str(request.base_url).rstrip("/")
            return JSONResponse(
                {
                    "device_code": dc.device_code,
                    "user_code": dc.user_code,
                    "verification_uri": f"{base}/device",
                    "verification_uri_complete": f"{base}/device?code={dc.user_code}",
                    "expires_in": int((dc.expires - dc.created).total_seconds()),
                    "interval": POLL_INTERVAL,
                }
            )

        return await run_in_threadpool(make)

    async def token(request: Request) -> Response:
        try:
            body = json.loads(await request.body() or b"{}")
        except json.JSONDecodeError:
            body = {}

        def poll() -> Response:
            with world.lock:
                now = kube.tick()
                verdict, tok = kube.auth.poll(str((body or {}).get("device_code", "")), now)
            if verdict == "ok":
                return JSONResponse({"access_token": tok, "token_type": "Bearer", "idle_timeout": 86400})
            return JSONResponse({"error": verdict}, 400)

        return await run_in_threadpool(poll)

    async def session(request: Request, cluster: str = "") -> Response:
        auth = request.headers.get("authorization", "")
        tok = auth[7:].strip() if auth[:7].lower() == "bearer " else ""

        def check() -> Response:
            with world.lock:
                now = kube.tick()
                ok = bool(tok) and kube.auth.check(tok, cluster, now) is not None
            if ok:
                return JSONResponse({"cluster": cluster, "idle_timeout": 86400})
            return JSONResponse({"error": "unauthorized", "detail": "Sign in again."}, 401)

        return await run_in_threadpool(check)

    def page(title: str, body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(
            f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
            f"</head><body style='font-family:sans-serif;max-width:40em;margin:3em auto'>"
            f"<h1>{html.escape(title)}</h1>{body}</body></html>",
            status_code=status,
        )

    async def device_get(request: Request, code: str = "") -> Response:
        def show() -> Response:
            with world.lock:
                kube.tick()
                dc = kube.auth.by_user_code(code) if code else None
                if dc is None:
                    return page(
                        "Sign in to kubectl",
                        "<form method=post><label>Code <input name=code></label> <button>Continue</button></form>",
                        200 if not code else 404,
                    )
                if kube.auth.expired(dc):
                    return page("This code has expired", "<p>Run kubectl again for a fresh link.</p>", 410)
                org = world.orgs[dc.org].spec.org_name
            return page(
                "Approve kubectl sign-in",
                f"<p>kubectl asks to sign in to cluster <b>{html.escape(dc.cluster)}</b> of "
                f"<b>{html.escape(org)}</b> as you. Code <code>{html.escape(dc.user_code)}</code>.</p>"
                f"<form method=post action='/device'><input type=hidden name=code "
                f"value='{html.escape(dc.user_code)}'><button>Approve</button></form>",
            )

        return await run_in_threadpool(show)

    async def device_post(request: Request) -> Response:
        raw = (await request.body()).decode("utf-8", "replace")
        form = parse_qs(raw)
        ucode = (form.get("code") or [request.query_params.get("code", "")])[0]

        def approve() -> Response:
            with world.lock:
                now = kube.tick()
                dc = kube.auth.by_user_code(ucode) if ucode else None
                if dc is None:
                    return page("Unknown code", "<p>No sign-in waits for that code.</p>", 404)
                verdict = kube.auth.approve(dc, now)
            if verdict == "expired":
                return page("This code has expired", "<p>Run kubectl again for a fresh link.</p>", 410)
            return page("Approved", "<p>kubectl is signed in. You can close this tab.</p>")

        return await run_in_threadpool(approve)

    app.add_api_route("/api/k8s/device/code", code, methods=["POST"], include_in_schema=False)
    app.add_api_route("/api/k8s/device/token", token, methods=["POST"], include_in_schema=False)
    app.add_api_route("/api/k8s/device/session", session, methods=["GET"], include_in_schema=False)
    app.add_api_route("/device", device_get, methods=["GET"], include_in_schema=False)
    app.add_api_route("/device", device_post, methods=["POST"], include_in_schema=False)


# ---- sim controls (not part of the contract) --------------------------------------------------


def _sim_routes(app: FastAPI, kube: Kube) -> None:
    world = kube.world

    def org_ok(request: Request) -> bool:
        auth = request.headers.get("authorization", "")
        tok = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        return bool(tok) and world.org_for_token(tok) is world.main_org

    def denied() -> Response:
        return JSONResponse({"error": "unauthorized", "detail": "A token is required."}, 401)

    async def body_of(request: Request) -> dict:
        try:
            b = json.loads(await request.body() or b"{}")
        except json.JSONDecodeError:
            b = {}
        return b if isinstance(b, dict) else {}

    def cluster_of(name: str) -> Cluster:
        c = (
            kube.cluster_for(name)
            if name
            else next((c for c in kube.clusters.values() if c.org is world.main_org), None)
        )
        if c is None:
            raise KubeError(404, "NotFound", "no such cluster")
        return c

    async def reclaim(request: Request, cluster: str = "") -> Response:
        if not org_ok(request):
            return denied()
        b = await body_of(request)

        def go() -> Response:
            with world.lock:
                kube.tick()
                return JSONResponse({"reclaimed": cluster_of(cluster).reclaim(b.get("node"))})

        return await run_in_threadpool(go)

    async def compact(request: Request, cluster: str = "") -> Response:
        if not org_ok(request):
            return denied()
        c = cluster_of(cluster)
        c.store.compact()
        return JSONResponse({"resourceVersion": str(c.store.rv)})

    async def tune(request: Request) -> Response:
        if not org_ok(request):
            return denied()
        b = await body_of(request)
        d, count = b.get("defective"), b.get("count")
        with world.lock:
            if d and isinstance(count, int) and not isinstance(count, bool) and count >= 0:
                kube.defaults["tune_defective"], kube.defaults["tune_defects"] = None, count  # the next N, then pass
            else:
                kube.defaults["tune_defective"], kube.defaults["tune_defects"] = (None if d is None else bool(d)), 0
            return JSONResponse({"defective": kube.defaults["tune_defective"], "count": kube.defaults["tune_defects"]})

    async def logcut(request: Request) -> Response:
        """Cut the next log-follow stream after ``after`` lines (``count`` streams, once each)."""
        if not org_ok(request):
            return denied()
        b = await body_of(request)
        n = int(b.get("after", 10))
        kube.log_cuts.extend([n] * max(1, int(b.get("count", 1))))
        return JSONResponse({"log_cuts": list(kube.log_cuts)})

    async def revoke(request: Request, cluster: str = "") -> Response:
        """Refuse every token signed in to the cluster from now on (as an idle day does) and end the open
        watch and log streams (of every cluster: the box has one API server), as a restart would: the
        client's next request gets a 401."""
        if not org_ok(request):
            return denied()
        c = cluster_of(cluster)

        def go() -> int:
            with world.lock:
                kube.revocations += 1
                return kube.auth.revoke(c.name)

        return JSONResponse({"revoked": await run_in_threadpool(go)})

    async def chat(request: Request) -> Response:
        """The engines' streams: ``rate`` (tokens per real second, for every engine; null: each its own), and a
        fault for the next stream: ``drop_after`` N tokens (the connection cut) or ``malformed_after`` N tokens
        (a chunk that is not JSON)."""
        if not org_ok(request):
            return denied()
        b = await body_of(request)
        if "rate" in b:
            kube.chat_rate = None if b["rate"] is None else max(1.0, float(b["rate"]))
        fault = {k: int(b[k]) for k in ("drop_after", "malformed_after") if isinstance(b.get(k), int)}
        if fault:
            kube.chat_faults.append(fault)
        return JSONResponse({"rate": kube.chat_rate, "faults": list(kube.chat_faults)})

    app.add_api_route("/_sim/k8s/chat", chat, methods=["POST"], include_in_schema=False)

    async def drop(request: Request) -> Response:
        """End every open watch and log stream (a load balancer's idle cut, an API server restart) without
        touching the sign-in: clients watch again from their last version (after a compact: 410, re-list)."""
        if not org_ok(request):
            return denied()
        kube.revocations += 1  # what the streams watch to end (as a revocation ends them)
        return JSONResponse({"dropped": True})

    async def churn(request: Request, cluster: str = "") -> Response:
        """A benchmark hook: ``{"rate": 100, "seconds": 0}`` bumps running pods' restart counts ``rate`` times a
        real second (``seconds`` 0: until ``rate`` 0 stops it)."""
        if not org_ok(request):
            return denied()
        b = await body_of(request)
        c = cluster_of(cluster)
        if kube.churn is not None:
            kube.churn.cancel()
            kube.churn = None
        rate = max(0.0, float(b.get("rate", 0)))
        if rate > 0:
            kube.churn = asyncio.ensure_future(kube._churn(c, rate, float(b.get("seconds", 0))))
        return JSONResponse({"rate": rate, "churned": kube.churned})

    app.add_api_route("/_sim/k8s/drop", drop, methods=["POST"], include_in_schema=False)
    app.add_api_route("/_sim/k8s/churn", churn, methods=["POST"], include_in_schema=False)
    app.add_api_route("/_sim/k8s/logcut", logcut, methods=["POST"], include_in_schema=False)
    app.add_api_route("/_sim/k8s/revoke", revoke, methods=["POST"], include_in_schema=False)
    app.add_api_route("/_sim/k8s/reclaim", reclaim, methods=["POST"], include_in_schema=False)
    app.add_api_route("/_sim/k8s/compact", compact, methods=["POST"], include_in_schema=False)
    app.add_api_route("/_sim/k8s/tune", tune, methods=["POST"], include_in_schema=False)
