"""The engines in the pods: the service proxy (``kubectl get --raw …/proxy/…``, the app's chat), what an engine
answers (``/v1/models``, ``/v1/chat/completions``, health; a router's workers), and a chat's SSE stream."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator
from datetime import datetime

from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from .. import inference
from ..apiserver import Kube
from ..cluster import Cluster
from ..objects import KubeError
from ..state import PodRun
from .call import Call
from .http import Stream, _Dropped, jresp


async def proxy(call: Call) -> Response:
    """``…/services/[SCHEME:]NAME[:PORT]/proxy/PATH``: the request answered by the first ready pod the service
    selects (its engine), or a 503 when none is."""
    kube, c, t, request = call.kube, call.c, call.target, call.request
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
            return engine(kube, c, be, request.method, path, raw, now, svc_name)

    return await run_in_threadpool(answer)


def engine(kube: Kube, c: Cluster, be: PodRun, method: str, path: str, raw: bytes, now: datetime, via: str) -> Response:
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
            return chat_stream(kube, out, cid, created, server, body)
        return jresp(inference.whole(out, cid, created))
    return jresp({"detail": "Not Found"}, 404)


def chat_stream(kube: Kube, c: inference.Completion, cid: str, created: int, server: str, body: dict) -> Response:
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
