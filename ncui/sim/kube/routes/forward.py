"""``kubectl port-forward`` (and the official client's port-forward): a WebSocket to a pod, SPDY/3.1 or the
channel protocol inside it (``kube/portforward.py``), each connection answered by the pod's engine."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from fastapi import FastAPI, WebSocket
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from .. import inference, portforward
from ..apiserver import Kube
from ..cluster import Cluster
from ..objects import KubeError
from ..state import PodRun
from .call import Call
from .http import POLL, bearer, status_resp
from .proxy import engine


def mount(app: FastAPI, kube: Kube) -> None:
    """The port-forward WebSockets: under ``/k8s/<cluster>``, and at the root for the cluster the token signed in to."""

    async def pf_ws(websocket: WebSocket, cluster: str, ns: str, name: str) -> None:
        await _portforward(kube, websocket, cluster, ns, name)

    async def pf_ws_root(websocket: WebSocket, ns: str, name: str) -> None:
        token = bearer(websocket.headers)
        await _portforward(kube, websocket, (kube.auth.cluster_of(token) if token else None) or "", ns, name)

    app.add_api_websocket_route("/k8s/{cluster}/api/v1/namespaces/{ns}/pods/{name}/portforward", pf_ws)
    app.add_api_websocket_route("/api/v1/namespaces/{ns}/pods/{name}/portforward", pf_ws_root)


async def spdy_refused(call: Call) -> Response:
    """kubectl's fallback after a refused WebSocket (a plain SPDY/3.1 upgrade): the same refusal, or why not."""
    t = call.target
    await run_in_threadpool(_pf_pod, call.kube, call.c, t.ns or "", t.name or "")
    raise KubeError(
        400,
        "BadRequest",
        "the box serves port-forward over WebSocket only (subprotocol SPDY/3.1+portforward.k8s.io, "
        "kubectl 1.30 or later); a plain SPDY/3.1 upgrade is not supported",
    )


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
                return engine(kube, c, r, scope["method"], scope["path"], bytes(raw), now, _pf_via(c, r))

        resp = await run_in_threadpool(answer)
        await resp(scope, receive, send)

    return app


async def _portforward(kube: Kube, ws: WebSocket, cname: str, ns: str, name: str) -> None:
    """``kubectl port-forward``: SPDY/3.1 tunnelled in the WebSocket's binary messages; or the channel protocol
    of the official Python client (see portforward.py)."""
    token = bearer(ws.headers)

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
        c, pod = await run_in_threadpool(check)
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

    async def until_pod_gone() -> None:
        """The pod deleted (its sandbox gone): the kubelet's stream ends, and kubectl with it."""
        while True:
            await kube.atick()
            r = c.runs.get(key)
            if r is None or r.uid != pod.uid or not r.alive:
                return
            await asyncio.sleep(POLL * 4)

    tasks = [asyncio.ensure_future(x) for x in (pump(), session.done.wait(), until_closed(), until_pod_gone())]
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
