"""The ``/_sim/k8s`` controls (not part of the contract): faults and knobs a test, the demo or a benchmark turns.

Each control is a ``POST`` with the organization's token; ``CONTROLS`` is their table, path → handler.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ..apiserver import Kube
from ..cluster import Cluster
from ..objects import KubeError, by_kind
from .http import bearer, status_resp


def mount(app: FastAPI, kube: Kube) -> None:
    """Serve ``CONTROLS``, each refused (401) without the simulated human's organization's token."""
    for path, fn in CONTROLS:
        app.add_api_route(path, _guarded(kube, fn), methods=["POST"], include_in_schema=False)


Control = Callable[[Kube, Request, str], Awaitable[Response]]


def _guarded(kube: Kube, fn: Control) -> Callable[..., Awaitable[Response]]:
    async def route(request: Request, cluster: str = "") -> Response:
        tok = bearer(request.headers)
        if not (tok and kube.world.org_for_token(tok) is kube.world.main_org):
            return JSONResponse({"error": "unauthorized", "detail": "A token is required."}, 401)
        try:
            return await fn(kube, request, cluster)
        except KubeError as e:
            return status_resp(e)

    return route


async def _body(request: Request) -> dict:
    try:
        b = json.loads(await request.body() or b"{}")
    except json.JSONDecodeError:
        b = {}
    return b if isinstance(b, dict) else {}


def _cluster(kube: Kube, name: str) -> Cluster:
    """The named cluster of the human's organization, or its first."""
    world = kube.world
    c = kube.cluster_for(name) if name else next((c for c in kube.clusters.values() if c.org is world.main_org), None)
    if c is None:
        raise KubeError(404, "NotFound", "no such cluster")
    return c


async def reclaim(kube: Kube, request: Request, cluster: str) -> Response:
    """Take the cluster's market nodes back now (``node``: only that one), as a higher bid does."""
    b = await _body(request)

    def go() -> Response:
        with kube.world.lock:
            kube.tick()
            return JSONResponse({"reclaimed": _cluster(kube, cluster).reclaim(b.get("node"))})

    return await run_in_threadpool(go)


async def hold(kube: Kube, request: Request, cluster: str) -> Response:
    """Put objects into the cluster as given, their status included, and keep every controller off them
    (``Cluster.hold``): the states the box's lifecycles never reach, each as a real cluster would show it, for
    kubectl to print (``Init:CrashLoopBackOff``, ``Evicted``, a lost node's ``Unknown``, a cordoned node…).
    ``{"objects": [...]}``, each a Pod, Job, Deployment, ReplicaSet or Node with its ``apiVersion``, ``kind`` and
    ``metadata.name``; a namespaced one lands in ``default`` unless it names another namespace."""
    b = await _body(request)
    objs = b.get("objects")
    if not isinstance(objs, list) or not objs or not all(isinstance(o, dict) for o in objs):
        raise KubeError(422, "Invalid", 'the body needs "objects": a list of Kubernetes objects')
    c = _cluster(kube, cluster)

    def go() -> Response:
        with kube.world.lock:
            now = kube.tick()
            todo = []
            for o in objs:
                r = by_kind(str(o.get("apiVersion", "")), str(o.get("kind", "")))
                meta = o.get("metadata")
                name = meta.get("name") if isinstance(meta, dict) else None
                if r is None or r.plural not in Cluster.HOLDABLE:
                    raise KubeError(
                        422,
                        "Invalid",
                        f"cannot hold {o.get('apiVersion')!s}/{o.get('kind')!s}: only a Pod, Job, "
                        "Deployment, ReplicaSet or Node",
                    )
                if not isinstance(name, str) or not name:
                    raise KubeError(422, "Invalid", f"a held {r.kind} needs metadata.name")
                obj = json.loads(json.dumps(o))  # (a copy the store owns)
                if r.namespaced:
                    obj["metadata"].setdefault("namespace", "default")
                    if c.store.peek("namespaces", "", obj["metadata"]["namespace"]) is None:
                        raise KubeError(404, "NotFound", f'namespaces "{obj["metadata"]["namespace"]}" not found')
                else:
                    obj["metadata"].pop("namespace", None)
                ns = obj["metadata"].get("namespace", "")
                if c.store.peek(r.plural, ns, name) is not None or any(
                    t[0] == r.plural and t[2] == (ns, name) for t in todo
                ):
                    raise KubeError(409, "AlreadyExists", f'{r.plural} "{name}" already exists')
                todo.append((r.plural, obj, (ns, name)))
            held = [f"{res}/{key[0]}/{key[1]}" if key[0] else f"{res}/{key[1]}" for res, _, key in todo]
            for res, obj, _ in todo:
                c.hold(res, obj, now)
            return JSONResponse({"held": held})

    return await run_in_threadpool(go)


async def compact(kube: Kube, request: Request, cluster: str) -> Response:
    """Forget the cluster's event history: a watch from an older version then gets a 410."""
    c = _cluster(kube, cluster)
    c.store.compact()
    return JSONResponse({"resourceVersion": str(c.store.rv)})


async def tune(kube: Kube, request: Request, cluster: str) -> Response:
    """The finance-analyst tune's verdict: ``defective`` with a ``count`` (the next N, then they pass), or forced."""
    b = await _body(request)
    d, count = b.get("defective"), b.get("count")
    with kube.world.lock:
        if d and isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            kube.defaults["tune_defective"], kube.defaults["tune_defects"] = None, count  # the next N, then pass
        else:
            kube.defaults["tune_defective"], kube.defaults["tune_defects"] = (None if d is None else bool(d)), 0
        return JSONResponse({"defective": kube.defaults["tune_defective"], "count": kube.defaults["tune_defects"]})


async def fail(kube: Kube, request: Request, cluster: str) -> Response:
    """The next ``count`` Jobs created (default 1) fail: every pod of each exits 1 where it would have succeeded,
    until the Job's backoffLimit gives up (the moment a researcher waits for, on demand)."""
    b = await _body(request)
    count = b.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        raise KubeError(422, "Invalid", '"count" is a whole number of Jobs')
    with kube.world.lock:
        kube.defaults["fail_jobs"] = count
    return JSONResponse({"fail_jobs": count})


async def logcut(kube: Kube, request: Request, cluster: str) -> Response:
    """Cut the next log-follow stream after ``after`` lines (``count`` streams, once each)."""
    b = await _body(request)
    n = int(b.get("after", 10))
    kube.log_cuts.extend([n] * max(1, int(b.get("count", 1))))
    return JSONResponse({"log_cuts": list(kube.log_cuts)})


async def revoke(kube: Kube, request: Request, cluster: str) -> Response:
    """Refuse every token signed in to the cluster from now on (as an idle day does) and end the open
    watch and log streams (of every cluster: the box has one API server), as a restart would: the
    client's next request gets a 401."""
    c = _cluster(kube, cluster)

    def go() -> int:
        with kube.world.lock:
            kube.revocations += 1
            return kube.auth.revoke(c.name)

    return JSONResponse({"revoked": await run_in_threadpool(go)})


async def chat(kube: Kube, request: Request, cluster: str) -> Response:
    """The engines' streams: ``rate`` (tokens per real second, for every engine; null: each its own), and a
    fault for the next stream: ``drop_after`` N tokens (the connection cut) or ``malformed_after`` N tokens
    (a chunk that is not JSON)."""
    b = await _body(request)
    if "rate" in b:
        kube.chat_rate = None if b["rate"] is None else max(1.0, float(b["rate"]))
    fault = {k: int(b[k]) for k in ("drop_after", "malformed_after") if isinstance(b.get(k), int)}
    if fault:
        kube.chat_faults.append(fault)
    return JSONResponse({"rate": kube.chat_rate, "faults": list(kube.chat_faults)})


async def drop(kube: Kube, request: Request, cluster: str) -> Response:
    """End every open watch and log stream (a load balancer's idle cut, an API server restart) without
    touching the sign-in: clients watch again from their last version (after a compact: 410, re-list)."""
    kube.revocations += 1  # what the streams watch to end (as a revocation ends them)
    return JSONResponse({"dropped": True})


async def churn(kube: Kube, request: Request, cluster: str) -> Response:
    """A benchmark hook: ``{"rate": 100, "seconds": 0}`` bumps running pods' restart counts ``rate`` times a
    real second (``seconds`` 0: until ``rate`` 0 stops it)."""
    b = await _body(request)
    c = _cluster(kube, cluster)
    if kube.churn is not None:
        kube.churn.cancel()
        kube.churn = None
    rate = max(0.0, float(b.get("rate", 0)))
    if rate > 0:
        kube.churn = asyncio.ensure_future(_churn(kube, c, rate, float(b.get("seconds", 0))))
    return JSONResponse({"rate": rate, "churned": kube.churned})


async def _churn(kube: Kube, c: Cluster, rate: float, seconds: float) -> None:
    """Bump the restart count of the cluster's running pods, one after another, ``rate`` times a real second
    for ``seconds`` (0: until stopped): every bump is a MODIFIED event on the pod watch (bench/pods.py)."""
    t0 = time.monotonic()
    done, i = 0, 0
    while not kube.closed and (seconds <= 0 or time.monotonic() - t0 < seconds):
        due = int((time.monotonic() - t0) * rate) - done
        if due > 0:
            with kube.world.lock:
                runs = [r for r in c.runs.values() if r.state in ("running", "ready") and r.alive]
                for _ in range(due if runs else 0):
                    r = runs[i % len(runs)]
                    i += 1
                    r.restarts += 1
                    c.kubelet.render_put(r, c.t)
            done += due
            kube.churned += due if runs else 0
        await asyncio.sleep(0.01)


CONTROLS: tuple[tuple[str, Control], ...] = (
    ("/_sim/k8s/chat", chat),
    ("/_sim/k8s/drop", drop),
    ("/_sim/k8s/churn", churn),
    ("/_sim/k8s/logcut", logcut),
    ("/_sim/k8s/revoke", revoke),
    ("/_sim/k8s/reclaim", reclaim),
    ("/_sim/k8s/compact", compact),
    ("/_sim/k8s/hold", hold),
    ("/_sim/k8s/tune", tune),
    ("/_sim/k8s/fail", fail),
)
