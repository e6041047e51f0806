"""``authorization.k8s.io/v1`` for ``kubectl auth can-i``: what the signed-in user may do on the box's cluster.

The user may do what the box serves: every verb a resource's discovery lists (``objects.RESOURCES``), on
any namespace, and its subresources. Nodes are the market's (read only); anything else is not served.
"""

from __future__ import annotations

from typing import Any

from .objects import RESOURCES, SUBRESOURCES, KubeError

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


def _fields(buf: bytes) -> dict[int, list]:
    """A protobuf message's fields: number → values (varints as ints, length-delimited as bytes)."""
    out: dict[int, list] = {}
    i = 0

    def varint() -> int:
        nonlocal i
        n = shift = 0
        while True:
            b = buf[i]
            i += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                return n

    while i < len(buf):
        key = varint()
        num, wire = key >> 3, key & 7
        if wire == 0:
            val: Any = varint()
        elif wire == 2:
            n = varint()
            val, i = buf[i : i + n], i + n
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            val, i = buf[i : i + size], i + size
        else:
            raise ValueError(f"protobuf wire type {wire}")
        out.setdefault(num, []).append(val)
    return out


def _strings(buf: bytes, names: dict[int, str]) -> dict:
    f = _fields(buf)
    return {name: f[num][-1].decode() for num, name in names.items() if num in f}


def from_protobuf(raw: bytes, kind: str) -> dict:
    """The JSON form of the review kubectl sends as protobuf (its typed client does): the ``k8s\\0`` envelope
    (runtime.Unknown: 2 = raw), then the review (2 = spec), with authorization/v1's field numbers."""
    try:
        if not raw.startswith(b"k8s\x00"):
            raise ValueError("no k8s protobuf envelope")
        review = _fields(_fields(raw[4:]).get(2, [b""])[-1])
        spec = _fields(review.get(2, [b""])[-1])
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
