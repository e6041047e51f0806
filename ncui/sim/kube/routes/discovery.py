"""Discovery: what ``kubectl`` asks before anything else (the API's versions, groups and resources, the
OpenAPI v3 documents, ``/version``, the health checks), and ``kubectl auth can-i``'s access reviews."""

from __future__ import annotations

import json

from fastapi.responses import Response

from .. import authz, openapi
from ..objects import BY_GV, GROUP_ORDER, K8S_VERSION, SUBRESOURCES, KubeError
from .call import Call
from .http import jresp

NOT_FOUND = "the server could not find the requested resource"


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


def version_info(cluster: str) -> dict:
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


# ---- the handlers (routes.dispatch routes to them) ---------------------------------------------------


async def version(call: Call) -> Response:
    return jresp(version_info(call.cname))


async def healthy(call: Call) -> Response:
    return Response("ok", media_type="text/plain")


async def paths(call: Call) -> Response:
    return jresp(
        {"paths": ["/api", "/api/v1", "/apis", "/openapi/v3", "/version"] + [f"/apis/{g}/v1" for g in GROUP_ORDER]}
    )


async def api_versions(call: Call) -> Response:
    return jresp(
        {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": call.request.url.netloc}],
        }
    )


async def api_groups(call: Call) -> Response:
    groups = [_group(g) for g in [*GROUP_ORDER, authz.GROUP]]
    return jresp({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})


async def authz_group(call: Call) -> Response:
    return jresp(_group(authz.GROUP))


async def authz_resources(call: Call) -> Response:
    return jresp(authz.resource_list())


async def authz_review(call: Call) -> Response:
    """``POST …/selfsubjectaccessreviews`` (``kubectl auth can-i``) and ``…/selfsubjectrulesreviews``."""
    review = {"selfsubjectaccessreviews": authz.access_review, "selfsubjectrulesreviews": authz.rules_review}
    kind = call.args["review"]
    if kind not in review:
        raise KubeError(404, "NotFound", NOT_FOUND)
    raw = await call.request.body()
    if "protobuf" in call.request.headers.get("content-type", ""):
        body = authz.from_protobuf(raw, kind)
    else:
        body = json.loads(raw or b"null")
    return jresp(review[kind](body), 201)


async def core_resources(call: Call) -> Response:
    return jresp(_resource_list("", "v1"))


async def group(call: Call) -> Response:
    if call.args["group"] not in GROUP_ORDER:
        raise KubeError(404, "NotFound", NOT_FOUND)
    return jresp(_group(call.args["group"]))


async def group_resources(call: Call) -> Response:
    g, v = call.args["group"], call.args["version"]
    if (g, v) not in BY_GV:
        raise KubeError(404, "NotFound", NOT_FOUND)
    return jresp(_resource_list(g, v))


async def openapi_index(call: Call) -> Response:
    return jresp(openapi.index(f"/k8s/{call.cname}"))


async def openapi_doc(call: Call) -> Response:
    key = call.args["rest"]
    for g, v in BY_GV:
        if openapi.gv_key(g, v) == key:
            return Response(openapi.doc_bytes(g, v), media_type="application/json")
    raise KubeError(404, "NotFound", NOT_FOUND)


async def not_found(call: Call) -> Response:
    raise KubeError(404, "NotFound", NOT_FOUND)
