"""The Kubernetes API's router: a request to ``/k8s/<cluster>/<path>`` goes to the first route of ``ROUTES`` whose
method and path pattern match; a resource path (``api/v1/…``, ``apis/GROUP/VERSION/…``) then to the first of
``RESOURCE_ROUTES`` that matches its resource and subresource, else to the object verbs (``crud``).

A pattern is the path's segments: a literal, ``{name}`` (one segment, bound into ``Call.args``) or a last ``**``
(the rest, bound as ``rest``). Every route but the version and health checks needs a valid sign-in.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from .. import authz
from ..apiserver import Kube
from ..objects import KubeError
from . import crud, discovery, forward, logs, proxy, watch
from .call import Call, parse_target
from .http import UNAUTHORIZED, bearer, jresp

Handler = Callable[[Call], Awaitable[Response]]
ANY = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Route:
    methods: frozenset[str]
    pattern: str
    handler: Handler
    signed_in: bool = True  # the version and health checks answer anybody

    def match(self, method: str, parts: list[str]) -> dict[str, str] | None:
        if method not in self.methods:
            return None
        want = self.pattern.split("/") if self.pattern else []
        args: dict[str, str] = {}
        for i, seg in enumerate(want):
            if seg == "**":
                args["rest"] = "/".join(parts[i:])
                return args
            if i >= len(parts):
                return None
            if seg.startswith("{"):
                args[seg[1:-1]] = parts[i]
            elif seg != parts[i]:
                return None
        return args if len(parts) == len(want) else None


def _r(methods: str | frozenset[str], pattern: str, handler: Handler, signed_in: bool = True) -> Route:
    return Route(frozenset({methods}) if isinstance(methods, str) else methods, pattern, handler, signed_in)


async def resource(call: Call) -> Response:
    """A resource path: the first of ``RESOURCE_ROUTES`` that takes it, else an object verb."""
    t = parse_target(call.parts)
    if t is None or (t.r.namespaced and t.ns is None and t.name is not None):
        raise KubeError(404, "NotFound", discovery.NOT_FOUND)
    call.t = t
    for r in RESOURCE_ROUTES:
        if r.takes(call):
            return await r.handler(call)
    return await crud.objects(call)


AZ = authz.GROUP

# (methods, path pattern) → handler, first match wins
ROUTES: tuple[Route, ...] = (
    _r(ANY, "version", discovery.version, signed_in=False),
    _r(ANY, "healthz", discovery.healthy, signed_in=False),
    _r(ANY, "livez", discovery.healthy, signed_in=False),
    _r(ANY, "readyz", discovery.healthy, signed_in=False),
    _r(ANY, "", discovery.paths),
    _r(ANY, "api", discovery.api_versions),
    _r(ANY, "apis", discovery.api_groups),
    _r(ANY, f"apis/{AZ}", discovery.authz_group),
    _r(ANY, f"apis/{AZ}/v1", discovery.authz_resources),
    _r("POST", f"apis/{AZ}/v1/{{review}}", discovery.authz_review),
    _r(ANY, f"apis/{AZ}/**", discovery.not_found),
    _r(ANY, "api/v1", discovery.core_resources),
    _r(ANY, "apis/{group}", discovery.group),
    _r(ANY, "apis/{group}/{version}", discovery.group_resources),
    _r(ANY, "openapi/v3", discovery.openapi_index),
    _r(ANY, "openapi/v3/**", discovery.openapi_doc),
    _r(ANY, "**", resource),
)


@dataclass(frozen=True)
class ResourceRoute:
    """A route on a resource path: its methods, the resource (``plural``) and subresource it is for, and for a
    watch, a collection (no name) asked with ``?watch=true``."""

    methods: frozenset[str]
    handler: Handler
    plural: str | None = None
    sub: str | None = None
    watch: bool = False

    def takes(self, call: Call) -> bool:
        t = call.target
        if call.method not in self.methods or (self.plural is not None and t.r.plural != self.plural):
            return False
        if self.watch:
            return t.name is None and call.q.get("watch") in ("true", "1")
        return t.sub == self.sub


RESOURCE_ROUTES: tuple[ResourceRoute, ...] = (
    ResourceRoute(frozenset({"GET"}), logs.logs, plural="pods", sub="log"),
    ResourceRoute(ANY, proxy.proxy, plural="services", sub="proxy"),
    ResourceRoute(frozenset({"GET", "POST"}), forward.spdy_refused, plural="pods", sub="portforward"),
    ResourceRoute(frozenset({"GET"}), watch.watch, watch=True),
)


async def handle(kube: Kube, request: Request, cname: str, rest: str) -> Response:
    """Route one request to cluster ``cname``'s API (its path below ``/k8s/<cluster>``: ``rest``)."""
    c = kube.cluster_for(cname)
    if c is None:
        raise KubeError(
            404,
            "NotFound",
            f"the server could not find the requested resource (no cluster named {cname[:60]} in this organization)",
        )
    parts = [p for p in rest.split("/") if p]
    for route in ROUTES:
        args = route.match(request.method, parts)
        if args is None:
            continue
        if route.signed_in and not await run_in_threadpool(_signed_in, kube, bearer(request.headers), cname):
            return jresp(UNAUTHORIZED, 401)
        return await route.handler(Call(kube, c, request, cname, parts, args))
    raise KubeError(405, "MethodNotAllowed", f"{request.method} is not supported")  # ANY covers what is served


def _signed_in(kube: Kube, token: str, cname: str) -> bool:
    now = kube.tick()
    return bool(token) and kube.auth.check(token, cname, now) is not None
