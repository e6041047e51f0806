"""The service's contract against what ncui reads, derived from ncui's own code (no hand-kept list):

- the requests: ``api.client.ENDPOINTS``, the table the client sends from (method, path, the answer's model);
- the fields: each model's pydantic fields (wire name, type, required or not, ``Literal`` values), and what each
  feeds (``models.Feeds``);
- the enum values ncui matches on: every ``x.<field> == "value"`` / ``in (...)`` in ncui's code (an inspection of
  the source, ``matched_values``) that is one of that field's ``Literal`` values; the error slugs
  ``api.errors.WIRE_ERRORS``.

``compare`` takes the four documents as fetched and gives the checks. Severity (the issue): a path, method or field
ncui reads that is gone or retyped is a failure; a value the service added, or a path no document describes, is a
warning; fields the service added are fine (details, for ``--verbose``).
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, WithJsonSchema

from ..api import models as m
from ..api.client import ENDPOINTS, Endpoint
from ..api.errors import WIRE_ERRORS
from . import FAIL, OK, WARN, Check

AREAS = ("vm", "k8s", "market", "billing")


def doc_path(area: str) -> str:
    return f"/api/{area}/openapi.json"


FIX_DRIFT = "ncui and this service disagree: update ncui (pip install -U ncui), or file an issue with this line"


# ---- what ncui reads ------------------------------------------------------------------------------------


@dataclass
class Accepts:
    """What ncui accepts for a value: JSON types, the ``Literal`` values (``open``: any other string too), the
    models an object is read with and the annotations of an array's items. ``any``: anything."""

    types: set[str] = field(default_factory=set)
    literals: set[str] = field(default_factory=set)
    open: bool = False
    models: list[type[BaseModel]] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)
    any: bool = False


_SCALARS: dict[Any, set[str]] = {
    bool: {"boolean"},
    int: {"integer"},
    float: {"number", "integer"},
    str: {"string"},
    datetime: {"string"},
    date: {"string"},
    type(None): {"null"},
}


def accepts(ann: Any, out: Accepts | None = None) -> Accepts:
    out = out if out is not None else Accepts()
    origin = typing.get_origin(ann)
    if origin is typing.Annotated:
        base, *meta = typing.get_args(ann)
        schema = next((x.json_schema for x in meta if isinstance(x, WithJsonSchema)), None)
        if schema and isinstance(schema.get("type"), str):  # e.g. Price: a number of dollars on the wire
            out.types |= {"number", "integer"} if schema["type"] == "number" else {schema["type"]}
            return out
        return accepts(base, out)
    if origin in (typing.Union, types.UnionType):
        for a in typing.get_args(ann):
            accepts(a, out)
        return out
    if origin is typing.Literal:
        out.types.add("string")
        out.literals |= {str(v) for v in typing.get_args(ann)}
        return out
    if origin in (list, tuple, set, frozenset):
        out.types.add("array")
        out.items += list(typing.get_args(ann)[:1])
        return out
    if origin is dict or ann is dict:
        out.types.add("object")
        return out
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        out.types.add("object")
        out.models.append(ann)
        return out
    if ann in _SCALARS:
        out.types |= _SCALARS[ann]
        out.open |= ann is str
        return out
    out.any = True
    return out


def feeds_of(info: Any) -> str:
    return next((x.what for x in getattr(info, "metadata", ()) if isinstance(x, m.Feeds)), "")


def degrades(info: Any) -> bool:
    """Required by the contract, but ncui reads an answer without it (``models.Feeds(degrades=True)``)."""
    return any(isinstance(x, m.Feeds) and x.degrades for x in getattr(info, "metadata", ()))


def wire_name(name: str, info: Any) -> str:
    alias = info.validation_alias if isinstance(info.validation_alias, str) else None
    return alias or info.alias or name


_STR = r"""(?:"([^"\\]*)"|'([^'\\]*)')"""


@cache
def matched_values() -> dict[str, frozenset[str]]:
    """Field name → the strings ncui's code compares that attribute with (``a.state == "active"``,
    ``c.kind in ("vm", "slurm")``, ``getattr(w, "org_kind", "") == "public_research"``): read off ncui's source, so
    a new match is in it the moment it is written. Only the fields whose model gives ``Literal`` values are looked
    for, by a regular expression over the source (parsing all of it took a second). The box (``sim/``) and doctor
    itself are not ncui's reading."""
    names = sorted(_literal_fields())
    alt = "|".join(map(re.escape, names))
    eq = re.compile(rf"""(?:\.({alt})\b|getattr\([^,()]+,\s*["']({alt})["'][^()]*\))\s*(?:==|!=)\s*{_STR}""")
    within = re.compile(rf"""\.({alt})\s+(?:not\s+)?in\s+[(\[{{]([^()\[\]{{}}]*)[)\]}}]""")
    each = re.compile(_STR)
    root = Path(__file__).resolve().parent.parent
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py") if names else ():
        if path.relative_to(root).parts[0] in ("sim", "doctor"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, ValueError):
            continue
        for mo in eq.finditer(text):
            found.setdefault(mo.group(1) or mo.group(2), set()).add(mo.group(3) or mo.group(4) or "")
        for mo in within.finditer(text):
            for v in each.finditer(mo.group(2)):
                found.setdefault(mo.group(1), set()).add(v.group(1) or v.group(2) or "")
    return {k: frozenset(v) for k, v in found.items()}


def _literal_fields() -> set[str]:
    """The names of the fields, in every model ncui reads an answer with, whose type gives Literal values."""
    out: set[str] = set()
    seen: set[type[BaseModel]] = set()
    todo = [e.model for e in ENDPOINTS.values() if e.model is not None]
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            a = accepts(info.annotation)
            if a.literals:
                out.add(name)
            todo += a.models + [x for i in a.items for x in accepts(i).models]
    return out


def contract_endpoints() -> list[Endpoint]:
    return [e for e in ENDPOINTS.values() if e.contract]


# ---- what the documents say -------------------------------------------------------------------------------


def _norm(path: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", path)


class Docs:
    """The documents as fetched: ``area → dict`` (or a string: why it could not be read)."""

    def __init__(self, docs: dict[str, dict | str]) -> None:
        self.docs = docs
        self.ops: dict[tuple[str, str], tuple[str, dict, dict]] = {}  # (METHOD, norm path) → (area, doc, op)
        self.paths: dict[str, set[str]] = {}  # norm path → methods
        self.shown: dict[str, str] = {}  # norm path → as the document writes it
        for area, doc in docs.items():
            if not isinstance(doc, dict):
                continue
            for p, item in (doc.get("paths") or {}).items():
                if not isinstance(item, dict):
                    continue
                for method, op in item.items():
                    if isinstance(op, dict) and method.upper() in ("GET", "PUT", "POST", "DELETE", "PATCH"):
                        self.ops.setdefault((method.upper(), _norm(p)), (area, doc, op))
                        self.paths.setdefault(_norm(p), set()).add(method.upper())
                        self.shown[_norm(p)] = p


def resolve(doc: dict, schema: Any, depth: int = 0) -> dict:
    while isinstance(schema, dict) and "$ref" in schema and depth < 50:
        ref = str(schema["$ref"])
        node: Any = doc
        for part in ref.removeprefix("#/").split("/"):
            node = node.get(part, {}) if isinstance(node, dict) else {}
        schema, depth = node, depth + 1
    return schema if isinstance(schema, dict) else {}


def branches(doc: dict, schema: Any, depth: int = 0) -> list[dict]:
    """A schema's alternatives (anyOf / oneOf flattened, a lone allOf taken), each resolved."""
    s = resolve(doc, schema)
    if depth > 20:
        return [s]
    alts = s.get("anyOf") or s.get("oneOf")
    if isinstance(alts, list):
        return [b for a in alts for b in branches(doc, a, depth + 1)]
    all_of = s.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        return branches(doc, all_of[0], depth + 1)
    return [s]


def sends(doc: dict, schema: Any) -> tuple[set[str] | None, set[str], bool]:
    """What the service may send: its JSON types (None: anything), its enum values, and whether a plain string
    beside them is allowed (an open enum)."""
    kinds: set[str] = set()
    enum: set[str] = set()
    open_ = False
    for b in branches(doc, schema):
        t = b.get("type")
        if isinstance(t, list):
            kinds |= {str(x) for x in t}
        elif isinstance(t, str):
            kinds.add(t)
        elif "enum" in b:
            kinds |= {_json_type(v) for v in b["enum"]}
        elif "properties" in b:
            kinds.add("object")
        else:
            return None, enum, True
        if b.get("nullable") is True:
            kinds.add("null")
        if isinstance(b.get("enum"), list):
            enum |= {str(v) for v in b["enum"] if v is not None}
        elif t == "string" or (isinstance(t, list) and "string" in t):
            open_ = True
    return kinds, enum, open_


def _json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(v), "string")


def _answer_schema(op: dict) -> Any:
    for code, resp in sorted((op.get("responses") or {}).items()):
        if str(code).startswith("2") and isinstance(resp, dict):
            content = resp.get("content") or {}
            for media, body in content.items():
                if "json" in media and isinstance(body, dict):
                    return body.get("schema")
    return None


# ---- the comparison --------------------------------------------------------------------------------------


@dataclass
class Finding:
    status: str
    text: str


@dataclass
class Reading:
    """One answer's comparison: what drifted, what the service added, how many fields ncui reads there."""

    ep: Endpoint
    findings: list[Finding] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    fields: int = 0


def _describe(kinds: Iterable[str]) -> str:
    ks = sorted(set(kinds) - {"null"}) or ["null"]
    return " or ".join(ks)


def compare_model(
    doc: dict, model: type[BaseModel], schema: Any, where: str, feeds: str, r: Reading, depth: int = 0
) -> None:
    obj = next((b for b in branches(doc, schema) if "properties" in b or b.get("type") == "object"), None)
    if obj is None or depth > 8:
        return
    props = obj.get("properties") or {}
    if not isinstance(props, dict):
        return
    required = set(obj.get("required") or ())
    read: set[str] = set()
    for name, info in model.model_fields.items():
        wire = wire_name(name, info)
        read.add(wire)
        r.fields += 1
        what = feeds_of(info) or feeds
        if wire not in props:
            if degrades(info):
                r.findings.append(Finding(FAIL, f"no field {where}{wire}; {what} will read unknown"))
            elif info.is_required():
                r.findings.append(
                    Finding(
                        FAIL,
                        f"no field {where}{wire}; {what} will read unknown (ncui requires it: today the whole answer "
                        f"is unreadable, {r.ep.what} fails)",
                    )
                )
            else:
                r.findings.append(Finding(WARN, f"no field {where}{wire}; {what} will read unknown"))
            continue
        if degrades(info) and wire not in required:
            r.findings.append(Finding(WARN, f"{where}{wire} may be left out; {what} then reads unknown"))
        elif info.is_required() and wire not in required:
            r.findings.append(
                Finding(WARN, f"{where}{wire} may be left out; ncui needs it: {r.ep.what} fails without it")
            )
        ann: Any = info.annotation
        if info.metadata:  # (pydantic keeps a field's Annotated metadata beside its annotation: put it back)
            ann = typing.Annotated.__class_getitem__((ann, *info.metadata))  # type: ignore[attr-defined]
        compare_value(doc, ann, props[wire], f"{where}{wire}", name, what, r, depth)
    for extra in sorted(set(props) - read):
        r.added.append(f"{r.ep.method} {r.ep.path}: the service added {where}{extra}")


def compare_value(
    doc: dict, ann: Any, schema: Any, where: str, name: str, feeds: str, r: Reading, depth: int = 0
) -> None:
    a = accepts(ann)
    kinds, enum, service_open = sends(doc, schema)
    if a.any or kinds is None:
        return
    extra = kinds - a.types
    if extra - {"null"}:
        r.findings.append(
            Finding(
                FAIL, f"{where} is now {_describe(kinds)} (ncui reads {_describe(a.types)}); {feeds} will read unknown"
            )
        )
        return
    if "null" in extra:
        r.findings.append(Finding(FAIL, f"{where} may be null (ncui needs a value); {feeds} will read unknown"))
    if enum and a.literals:
        for v in sorted(enum - a.literals):
            if a.open:
                r.findings.append(
                    Finding(WARN, f"{where} may be {v!r}, a value ncui does not know; ncui says so where it shows it")
                )
            else:
                r.findings.append(
                    Finding(
                        FAIL,
                        f"{where} may be {v!r}, a value ncui does not know; an answer with it is unreadable "
                        f"({r.ep.what} fails)",
                    )
                )
        if not service_open:
            matched = matched_values().get(name, frozenset()) & a.literals
            for v in sorted((a.literals - enum) & matched):
                r.findings.append(
                    Finding(FAIL, f"{where} is never {v!r} any more, a value ncui waits for; {feeds} will read unknown")
                )
    sub = [b for b in branches(doc, schema)]
    if a.models:
        compare_model(doc, a.models[0], schema, where + ".", feeds, r, depth + 1)
    if a.items:
        arr = next((b for b in sub if b.get("type") == "array"), None)
        if arr is not None and "items" in arr:
            compare_value(doc, a.items[0], arr["items"], where + "[]", name, feeds, r, depth + 1)


def _request_schema(op: dict) -> Any:
    body = op.get("requestBody") or {}
    for media, content in (body.get("content") or {}).items() if isinstance(body, dict) else ():
        if "json" in media and isinstance(content, dict):
            return content.get("schema")
    return None


def compare_body(doc: dict, op: dict, r: Reading) -> None:
    """What ncui sends (``ep.body``'s fields) against what the service takes: a field it no longer takes, or one it
    now requires that ncui does not send, makes the request refused."""
    model = r.ep.body
    if model is None:
        return
    obj = next((b for b in branches(doc, _request_schema(op)) if "properties" in b), None)
    if obj is None:
        r.findings.append(Finding(WARN, "the document gives no JSON body for it; what ncui sends is not checked"))
        return
    props = obj.get("properties") or {}
    sent = {wire_name(n, i) for n, i in model.model_fields.items()}
    for wire in sorted(sent - set(props)):
        r.findings.append(Finding(FAIL, f"the body's field {wire} is no longer taken; {r.ep.what} will be refused"))
    for wire in sorted(set(obj.get("required") or ()) - sent):
        r.findings.append(
            Finding(FAIL, f"the body now requires {wire}, which ncui does not send; {r.ep.what} will be refused")
        )


def _moved(docs: Docs, ep: Endpoint) -> str:
    """A path of the documents that ends as ep's does and has its method: where it may have moved."""
    last = _norm(ep.path).rstrip("/").rsplit("/", 1)[-1]
    near = sorted(
        docs.shown[p] for p, ms in docs.paths.items() if p.rstrip("/").endswith("/" + last) and ep.method in ms
    )
    return f" (the documents have {ep.method} {near[0]}: moved?)" if near else ""


def _area(path: str) -> str | None:
    return next((a for a in AREAS if path.startswith(f"/api/{a}/")), None)


def compare(raw: dict[str, dict | str], endpoints: Iterable[Endpoint] | None = None) -> list[Check]:
    """The checks for the documents ``raw`` (area → the document, or why it could not be read)."""
    docs = Docs(raw)
    checks: list[Check] = []
    readings: list[Reading] = []
    for area in AREAS:
        d = raw.get(area)
        if isinstance(d, dict):
            n = sum(1 for _ in (d.get("paths") or {}))
            checks.append(Check(f"contract {doc_path(area)}", OK, f"read (OpenAPI {d.get('openapi', '?')}, {n} paths)"))
        else:
            checks.append(
                Check(
                    f"contract {doc_path(area)}",
                    FAIL,
                    f"cannot read it: {d or 'not fetched'}; what ncui reads there is not checked",
                    "check --api, the network, or the service's status page; then run ncui doctor again",
                )
            )
    for ep in endpoints if endpoints is not None else contract_endpoints():
        r = Reading(ep)
        readings.append(r)
        key = (ep.method, _norm(ep.path))
        ep_area = _area(ep.path)
        if ep_area is not None and not isinstance(raw.get(ep_area), dict):
            continue  # (said above: the document could not be read)
        if key not in docs.ops:
            methods = docs.paths.get(_norm(ep.path))
            if methods:
                r.findings.append(
                    Finding(
                        FAIL,
                        f"the service no longer takes {ep.method} here (only {', '.join(sorted(methods))}); "
                        f"{ep.what} will fail",
                    )
                )
            elif ep_area is None:
                r.findings.append(
                    Finding(WARN, f"no document describes it (ncui uses it for {ep.what}); its fields are not checked")
                )
            else:
                r.findings.append(
                    Finding(FAIL, f"no such path in {doc_path(ep_area)}{_moved(docs, ep)}; {ep.what} will fail")
                )
            continue
        _, doc, op = docs.ops[key]
        compare_body(doc, op, r)
        if ep.model is not None:
            schema = _answer_schema(op)
            if schema is None:
                r.findings.append(Finding(WARN, "the document gives no JSON answer for it; its fields are not checked"))
            else:
                compare_model(doc, ep.model, schema, "", f"what ncui shows from {ep.method} {ep.path}", r)
    checks += _error_codes(docs)
    for r in readings:
        for f in r.findings:
            checks.append(Check(f"{r.ep.method} {r.ep.path}", f.status, f.text, FIX_DRIFT))
    added = [a for r in readings for a in r.added]
    if not any(r.findings for r in readings):
        fields = sum(r.fields for r in readings)
        checks.append(
            Check(
                "contract",
                OK,
                f"compatible: the {len(readings)} requests ncui makes and the {fields} fields it reads are as it "
                f"expects" + (f"; the service added {len(added)} field(s) (--verbose)" if added else ""),
                details=added,
            )
        )
    elif added:
        checks.append(Check("contract: added fields", OK, f"the service added {len(added)} field(s)", details=added))
    return checks


def _error_codes(docs: Docs) -> list[Check]:
    """The error slugs ncui matches on (errors.WIRE_ERRORS) against those the documents enumerate."""
    listed: set[str] = set()
    enumerated = False
    for _, doc, op in docs.ops.values():
        for code, resp in (op.get("responses") or {}).items():
            if str(code)[:1] not in ("4", "5") or not isinstance(resp, dict):
                continue
            for media, body in (resp.get("content") or {}).items():
                if "json" not in media or not isinstance(body, dict):
                    continue
                obj = next((b for b in branches(doc, body.get("schema")) if "properties" in b), None)
                if obj is None or "error" not in obj["properties"]:
                    continue
                _, enum, _ = sends(doc, obj["properties"]["error"])
                if enum:
                    enumerated = True
                    listed |= enum
    ours = sorted(c.slug for c in WIRE_ERRORS)
    if not enumerated:
        return [Check("contract error codes", OK, "the service does not enumerate its error codes", details=ours)]
    gone = [s for s in ours if s not in listed]
    if gone:
        return [
            Check(
                "contract error codes",
                FAIL,
                f"{', '.join(gone)} no longer among the service's error codes; ncui would read such a refusal by its "
                "HTTP status alone",
                FIX_DRIFT,
                details=sorted(listed),
            )
        ]
    new = sorted(listed - {c for c in typing.get_args(m.ErrorCode)})
    return [
        Check(
            "contract error codes",
            OK,
            f"the {len(ours)} error codes ncui matches on are the service's"
            + (f" (it also lists {', '.join(new)})" if new else ""),
            details=sorted(listed),
        )
    ]
