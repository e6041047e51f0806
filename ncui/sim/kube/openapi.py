"""The OpenAPI v3 pieces kubectl needs: an index, and per group-version a document whose ``patch``
operations carry ``x-kubernetes-group-version-kind`` and take ``fieldValidation``.

The patch operations do not list ``application/strategic-merge-patch+json``, so kubectl apply computes
its strategic merge patch from its built-in types instead of from a schema we would have to publish.
"""

from __future__ import annotations

import copy
import functools
import gzip
import hashlib
import json
from importlib import resources

from .objects import BY_GV, K8S_VERSION

Q = lambda name: {"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True}}  # noqa: E731


def gv_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def gv_doc(group: str, version: str) -> dict:
    paths: dict = {}
    schemas: dict = {}
    for r in BY_GV[(group, version)]:
        gvk = {"group": group, "version": version, "kind": r.kind}
        base = f"/{gv_key(group, version)}/" + ("namespaces/{namespace}/" if r.namespaced else "")
        ref = {"$ref": f"#/components/schemas/{_schema_name(group, version, r.kind)}"}
        ok = {"200": {"description": "OK", "content": {"application/json": {"schema": ref}}}}
        item = {
            "get": {
                "operationId": f"read{r.kind}",
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": gvk,
                "responses": ok,
            },
            "patch": {
                "operationId": f"patch{r.kind}",
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [Q("dryRun"), Q("fieldManager"), Q("fieldValidation"), Q("force")],
                "requestBody": {
                    "content": {
                        "application/json-patch+json": {"schema": {"type": "object"}},
                        "application/merge-patch+json": {"schema": {"type": "object"}},
                        "application/apply-patch+yaml": {"schema": {"type": "object"}},
                    }
                },
                "responses": ok,
            },
            "delete": {
                "operationId": f"delete{r.kind}",
                "x-kubernetes-action": "delete",
                "x-kubernetes-group-version-kind": gvk,
                "responses": ok,
            },
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}],
        }
        if r.namespaced:
            item["parameters"].append(
                {"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}
            )
        paths[base + r.plural + "/{name}"] = item
        paths[base + r.plural] = {
            "post": {
                "operationId": f"create{r.kind}",
                "x-kubernetes-action": "post",
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [Q("dryRun"), Q("fieldManager"), Q("fieldValidation")],
                "responses": ok,
            }
        }
        _kind_schemas(group, version, r.kind, schemas)
        schemas[_schema_name(group, version, r.kind)]["x-kubernetes-group-version-kind"] = [gvk]
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": K8S_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }


# ---- schemas for `kubectl explain`: the package's explain_schema.json.gz ---------------------------------
# (derived from the official `kubernetes` package's models by tools/gen_explain_schema.py, which says when to run
# it; the box does not need that package, a test-extra dependency)

_REF = "#/components/schemas/"


@functools.cache
def _explain_schema() -> dict:
    with resources.files(__package__).joinpath("explain_schema.json.gz").open("rb") as f:
        return json.loads(gzip.decompress(f.read()))


def _kind_schemas(group: str, version: str, kind: str, schemas: dict) -> None:
    """Add ``kind``'s schema to ``schemas`` under its API name, with those of the types its fields use (by
    their ``$ref``s, transitively); a kind the schema lacks is a bare object."""
    data = _explain_schema()
    root = data["kinds"].get(f"{group}/{version}/{kind}")
    schemas[_schema_name(group, version, kind)] = (
        {"type": "object", "description": kind} if root is None else copy.deepcopy(root)
    )
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(_REF) and ref[len(_REF) :] not in schemas:
                name = ref[len(_REF) :]
                schemas[name] = data["types"][name]  # (read only: the document is serialized once)
                todo.append(schemas[name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)


@functools.cache
def _doc_text(group: str, version: str) -> str:
    return json.dumps(gv_doc(group, version), sort_keys=True)


def _schema_name(group: str, version: str, kind: str) -> str:
    g = {
        "": "io.k8s.api.core",
        "apps": "io.k8s.api.apps",
        "batch": "io.k8s.api.batch",
        "rbac.authorization.k8s.io": "io.k8s.api.rbac",
    }.get(group, group)
    return f"{g}.{version}.{kind}"


def index(prefix: str) -> dict:
    out = {}
    for group, version in BY_GV:
        key = gv_key(group, version)
        h = hashlib.sha256(_doc_text(group, version).encode()).hexdigest()[:32].upper()
        out[key] = {"serverRelativeURL": f"{prefix}/openapi/v3/{key}?hash={h}"}
    return {"paths": out}


def doc_bytes(group: str, version: str) -> bytes:
    """A group-version's document, built once (its schemas from explain_schema.json.gz)."""
    return _doc_text(group, version).encode()
