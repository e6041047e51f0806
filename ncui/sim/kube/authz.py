"""``authorization.k8s.io/v1`` for ``kubectl auth can-i``: what the signed-in user may do on the box's cluster.

The user may do what the box serves: every verb a resource's discovery lists (``objects.RESOURCES``), on
any namespace, and its subresources. Nodes are the market's (read only); anything else is not served.
"""

from __future__ import annotations

from typing import Any

from .objects import RESOURCES, SUBRESOURCES, KubeError
from .protowire import envelope, fields

GROUP = "authorization.k8s.io"
SUB_VERBS = {
    "log": ("get",),
    "status": ("get", "patch", "update"),
    "scale": ("get", "patch", "update"),
    "proxy": ("create", "delete", "get", "patch", "update"),
}


def resource_list() -> dict:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/v1",
        "resources": [
            {"name": p, "singularName": p[:-1].lower(), "namespaced": False, "kind": k, "verbs": ["create"]}
            for p, k in (
                ("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
                ("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
            )
        ],
    }


def _strings(buf: bytes, names: dict[int, str]) -> dict:
    f = fields(buf)
    return {name: f[num][-1].decode() for num, name in names.items() if num in f}


def from_protobuf(raw: bytes, kind: str) -> dict:
    """The JSON form of the review kubectl sends as protobuf (its typed client does): the ``k8s\\0`` envelope
    (protowire.envelope), then the review (2 = spec), with authorization/v1's field numbers."""
    try:
        review = fields(envelope(raw)[2])
        spec = fields(review.get(2, [b""])[-1])
        if kind == "selfsubjectrulesreviews":
            return {"spec": _strings(review.get(2, [b""])[-1], {1: "namespace"})}
        out: dict = {}
        if 1 in spec:
            out["resourceAttributes"] = _strings(
                spec[1][-1],
                {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"},
            )
        if 2 in spec:
            out["nonResourceAttributes"] = _strings(spec[2][-1], {1: "path", 2: "verb"})
        return {"spec": out}
    except (ValueError, IndexError, UnicodeDecodeError) as e:
        raise KubeError(400, "BadRequest", f"could not read the {kind[:-1]} ({e})") from None


def _verdict(attrs: dict) -> tuple[bool, str]:
    verb, res = str(attrs.get("verb", "")), str(attrs.get("resource", ""))
    group, sub = str(attrs.get("group", "")), str(attrs.get("subresource", ""))
    match = [r for r in RESOURCES if r.plural == res and (group in ("", "*") or r.group == group)]
    if not match:
        what = f"{res}.{group}" if group else res
        return False, f"this cluster does not serve {what}"
    r = match[0]
    if sub:
        if sub not in SUBRESOURCES.get(r.plural, []):
            return False, f"this cluster does not serve {r.plural}/{sub}"
        verbs: tuple[str, ...] = ("get",) if r.plural == "nodes" else SUB_VERBS.get(sub, ())
    else:
        verbs = r.verbs
    if verb == "*":
        return False, f"not every verb: {r.plural} allows {', '.join(verbs)}"
    if verb not in verbs:
        if r.plural == "nodes":
            return False, "nodes are managed by National Compute's market: you may get, list and watch them"
        return False, f"{r.plural}{'/' + sub if sub else ''} allows {', '.join(verbs)}"
    return True, ""


def access_review(body: Any) -> dict:
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise KubeError(400, "BadRequest", "a SelfSubjectAccessReview needs a spec")
    spec = body["spec"]
    if isinstance(spec.get("resourceAttributes"), dict):
        allowed, why = _verdict(spec["resourceAttributes"])
    else:
        allowed, why = True, ""  # non-resource URLs (/healthz, /version, /api…) are open to every signed-in user
    status: dict = {"allowed": allowed}
    if why:
        status["reason"] = why
    return {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": f"{GROUP}/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": status,
    }


def rules_review(body: Any) -> dict:
    spec = body.get("spec") if isinstance(body, dict) else None
    rules = []
    for r in RESOURCES:
        rules.append({"verbs": list(r.verbs), "apiGroups": [r.group], "resources": [r.plural]})
        for sub in SUBRESOURCES.get(r.plural, []):
            verbs = ["get"] if r.plural == "nodes" else list(SUB_VERBS.get(sub, ()))
            rules.append({"verbs": verbs, "apiGroups": [r.group], "resources": [f"{r.plural}/{sub}"]})
    rules.append(
        {
            "verbs": ["create"],
            "apiGroups": [GROUP],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
        }
    )
    return {
        "kind": "SelfSubjectRulesReview",
        "apiVersion": f"{GROUP}/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec if isinstance(spec, dict) else {},
        "status": {
            "resourceRules": rules,
            "nonResourceRules": [
                {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/version"]}
            ],
            "incomplete": False,
        },
    }
