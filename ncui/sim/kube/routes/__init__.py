"""The Kubernetes API under ``/k8s/<cluster>``, the device sign-in endpoints and the ``/_sim/k8s`` controls.

By area: ``dispatch`` (the router: a table of (method, path pattern) → handler), ``discovery``, ``crud`` (the
object verbs), ``watch``, ``logs``, ``proxy`` (the service proxy and the pods' engines), ``forward``
(port-forward), ``signin`` (the device code), ``control`` (the sim's controls); ``http`` and ``call`` are what
they share.

Every handler that touches the World runs in the thread pool (the World lock is a threading lock); the
streams (watch, ``logs -f``) poll the store's event history and the clock from the event loop in short
steps, take the World lock only for an instant per step, stop when the client goes away, and end when
the server stops.
"""

from __future__ import annotations

import json

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from ...world import World
from ..apiserver import Kube
from ..objects import KubeError
from . import control, dispatch, forward, signin
from .discovery import version_info
from .http import UNAUTHORIZED, bearer, jresp, status_resp

__all__ = ["Kube", "mount_kube"]


def mount_kube(app: FastAPI, world: World) -> Kube:
    """Serve the simulated Kubernetes clusters from ``app``; returns the ``Kube`` (also ``app.state.kube``)."""
    kube = Kube(world)
    app.state.kube = kube

    async def k8s(request: Request, cluster: str, rest: str = "") -> Response:
        try:
            return await dispatch.handle(kube, request, cluster, rest)
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
        token = bearer(request.headers)
        cname = kube.auth.cluster_of(token) if token else None
        rest = request.url.path.lstrip("/")
        if cname is None:
            if rest == "version":
                return jresp(version_info(""))
            return jresp(UNAUTHORIZED, 401)
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

    forward.mount(app, kube)
    signin.mount(app, kube)
    control.mount(app, kube)
    return kube
