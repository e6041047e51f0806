"""The OpenAPI v3 pieces kubectl needs: an index, and per group-version a document whose ``patch``
operations carry ``x-kubernetes-group-version-kind`` and take ``fieldValidation``.

The patch operations do not list ``application/strategic-merge-patch+json``, so kubectl apply computes
its strategic merge patch from its built-in types instead of from a schema we would have to publish.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re

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
        model = _model_of(version, r.kind)
        if model is None:
            schemas[_schema_name(group, version, r.kind)] = {"type": "object", "description": r.kind}
        else:
            _schemas_of(model, schemas, _schema_name(group, version, r.kind))
        schemas[_schema_name(group, version, r.kind)]["x-kubernetes-group-version-kind"] = [gvk]
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": K8S_VERSION},
        "paths": paths,
        "components": {"schemas": schemas},
    }


# ---- schemas for `kubectl explain`, derived from the official `kubernetes` package's models ----------


def _model_of(version: str, kind: str):
    from kubernetes.client import models

    v = version.capitalize()
    return getattr(models, f"Core{v}{kind}", None) or getattr(models, f"{v}{kind}", None)  # CoreV1Event first


def _ref_name(model_name: str) -> str:
    """``V1PodSpec`` → ``io.k8s.ncui.v1.PodSpec``: kubectl explain names a field's type by the last part."""
    m = re.match(r"^(?:Core)?(V\d+(?:alpha\d+|beta\d+)?)(.+)$", model_name)
    return f"io.k8s.ncui.{m.group(1).lower()}.{m.group(2)}" if m else f"io.k8s.ncui.{model_name}"


def _type_schema(t: str, schemas: dict) -> dict:
    t = t.strip()
    if t[:5] in ("List[", "list["):
        return {"type": "array", "items": _bare(_type_schema(t[5:-1], schemas))}
    if t[:5] in ("Dict[", "dict("):  # Dict[str, X]
        return {"type": "object", "additionalProperties": _bare(_type_schema(t[5:-1].split(",", 1)[1], schemas))}
    simple = {
        "str": {"type": "string"},
        "int": {"type": "integer", "format": "int32"},
        "float": {"type": "number", "format": "double"},
        "bool": {"type": "boolean"},
        "datetime": {"type": "string", "format": "date-time"},
        "date": {"type": "string", "format": "date"},
        "object": {"type": "object", "x-kubernetes-int-or-string": True},
    }
    if t in simple:
        return dict(simple[t])
    from kubernetes.client import models

    model = getattr(models, t, None)
    if model is None:
        return {"type": "object"}
    _schemas_of(model, schemas)
    return {"allOf": [{"$ref": f"#/components/schemas/{_ref_name(t)}"}]}


def _bare(schema: dict) -> dict:
    """An array's items or a map's values name their type with a plain ``$ref`` (kubectl explain follows it)."""
    return schema["allOf"][0] if "allOf" in schema else schema


def _schemas_of(model, schemas: dict, name: str | None = None) -> None:
    """Add ``model``'s schema (and those of the types its fields use) to ``schemas``: each field's JSON name,
    type and description as the package's generated model carries them."""
    name = name or _ref_name(model.__name__)
    if name in schemas:
        return
    doc = (model.__doc__ or "").strip().split("\n\n")[0].strip()
    out: dict = {"type": "object", "description": doc, "properties": {}}
    schemas[name] = out  # before the fields: a type may refer to itself
    fields = getattr(model, "model_fields", {})
    required = []
    for attr, t in model.openapi_types.items():
        key = model.attribute_map.get(attr, attr)
        prop = _type_schema(t, schemas)
        info = fields.get(attr)
        if info is not None and info.description:
            prop["description"] = info.description
        if info is not None and info.is_required():
            required.append(key)
        out["properties"][key] = prop
    if required:
        out["required"] = required


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
    """A group-version's document, built once (its schemas come from the `kubernetes` package's models)."""
    return _doc_text(group, version).encode()
