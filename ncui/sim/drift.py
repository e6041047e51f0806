"""The box's contract can drift on purpose (``ncui sim --contract-drift NAME``): as a real service's might, between
one release and the next. A drift changes the OpenAPI documents and the answers alike:

- ``field-renamed``: ``GET /api/billing/balance`` says ``burn_ucredits_per_hour`` instead of ``burn_ucredits_hr``;
- ``enum-added``: a cluster's ``kind`` may be ``tpu``, and whoami lists a ``tpu`` cluster;
- ``path-moved``: the price-to-win ladder moves from ``/api/k8s/market/ladder`` to ``/api/market/ladder``;
- ``field-dropped:PATH:FIELD`` (any path and field): ``GET PATH``'s answers leave ``FIELD`` out wherever it is
  in them (at any depth: a ladder's rungs, a capacity's environment), and its schemas no longer have it.

It knows nothing of ncui's client: it edits what the box serves (its routes, its documents, its answers' JSON).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.routing import compile_path


@dataclass(frozen=True)
class Drift:
    name: str
    what: str
    moves: dict[str, str] = field(default_factory=dict)  # old path → new path
    doc: Callable[[dict], None] = lambda doc: None  # edits an OpenAPI document in place
    answers: dict[str, Callable[[Any], Any]] = field(default_factory=dict)  # path → edits its JSON answer


def _schema(doc: dict, name: str) -> dict:
    return doc.get("components", {}).get("schemas", {}).get(name, {})


OLD_BURN, NEW_BURN = "burn_ucredits_hr", "burn_ucredits_per_hour"


def _rename_doc(doc: dict) -> None:
    s = _schema(doc, "Balance")
    props = s.get("properties", {})
    if OLD_BURN in props:
        props[NEW_BURN] = props.pop(OLD_BURN)
        s["required"] = [NEW_BURN if r == OLD_BURN else r for r in s.get("required", [])]


def _rename_answer(body: Any) -> Any:
    if isinstance(body, dict) and OLD_BURN in body:
        body[NEW_BURN] = body.pop(OLD_BURN)
    return body


NEW_KIND, NEW_KIND_CLUSTER = "tpu", "tpu-east"


def _enum_doc(doc: dict) -> None:
    kind = _schema(doc, "ClusterRef").get("properties", {}).get("kind", {})
    for branch in [kind, *kind.get("anyOf", [])]:
        if isinstance(branch.get("enum"), list) and NEW_KIND not in branch["enum"]:
            branch["enum"].append(NEW_KIND)


def _enum_answer(body: Any) -> Any:
    if isinstance(body, dict) and isinstance(body.get("clusters"), list):
        body["clusters"].append({"name": NEW_KIND_CLUSTER, "kind": NEW_KIND})
    return body


DRIFTS: dict[str, Drift] = {
    d.name: d
    for d in (
        Drift(
            "field-renamed",
            f"GET /api/billing/balance: {OLD_BURN} renamed {NEW_BURN}",
            doc=_rename_doc,
            answers={"/api/billing/balance": _rename_answer},
        ),
        Drift(
            "enum-added",
            f"a cluster's kind may be {NEW_KIND!r} (whoami lists {NEW_KIND_CLUSTER})",
            doc=_enum_doc,
            answers={"/api/whoami": _enum_answer},
        ),
        Drift(
            "path-moved",
            "GET /api/k8s/market/ladder moved to /api/market/ladder",
            moves={"/api/k8s/market/ladder": "/api/market/ladder"},
        ),
    )
}


DROPPED = "field-dropped"


def named(name: str) -> Drift:
    """The drift called ``name``: one of ``DRIFTS``, or ``field-dropped:PATH:FIELD``. ValueError (what to type)
    for any other name."""
    if name in DRIFTS:
        return DRIFTS[name]
    kind, _, rest = name.partition(":")
    path, _, fld = rest.rpartition(":")
    if kind != DROPPED or not path.startswith("/") or not fld:
        raise ValueError(f"{name!r}: a drift is one of {', '.join(sorted(DRIFTS))}, or {DROPPED}:PATH:FIELD")
    return Drift(
        name,
        f"GET {path}: no field {fld}",
        doc=lambda doc: _drop_doc(doc, path, fld),
        answers={path: lambda body: _drop(body, fld)},
    )


def _drop(body: Any, fld: str) -> Any:
    if isinstance(body, dict):
        return {k: _drop(v, fld) for k, v in body.items() if k != fld}
    if isinstance(body, list):
        return [_drop(v, fld) for v in body]
    return body


def _drop_doc(doc: dict, path: str, fld: str) -> None:
    """``fld`` out of every schema ``GET path``'s 200 answer reaches (its own, and those it refers to)."""
    answer = doc.get("paths", {}).get(path, {}).get("get", {}).get("responses", {}).get("200", {})
    seen: set[str] = set()

    def walk(schema: Any) -> None:
        if isinstance(schema, list):
            for s in schema:
                walk(s)
            return
        if not isinstance(schema, dict):
            return
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            seen.add(ref)
            walk(_schema(doc, ref.rsplit("/", 1)[-1]))
        props = schema.get("properties")
        if isinstance(props, dict):
            props.pop(fld, None)
            if isinstance(schema.get("required"), list):
                schema["required"] = [r for r in schema["required"] if r != fld]
        for key, value in schema.items():
            if key not in ("$ref", "required"):
                walk(value)

    walk(answer.get("content", {}).get("application/json", {}).get("schema"))


def move_routes(app: Any, drift: Drift) -> None:
    """Serve each moved route at its new path only (its old one then answers 404, as a moved route does)."""
    for route in app.router.routes:
        new = drift.moves.get(getattr(route, "path", ""))
        if new is not None:
            route.path = new
            route.path_regex, route.path_format, route.param_convertors = compile_path(new)


class DriftMiddleware:
    """Edits the JSON answers a drift changes (the documents are edited where they are made: ``sim/app.py``)."""

    def __init__(self, app: Any, drift: Drift) -> None:
        self.app, self.drift = app, drift

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        edit = self.drift.answers.get(scope.get("path", "")) if scope["type"] == "http" else None
        if edit is None:
            return await self.app(scope, receive, send)
        start: dict = {}
        chunks: list[bytes] = []

        async def held(message: Any) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            if message["type"] != "http.response.body":
                return await send(message)
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(chunks)
            if start.get("status") == 200:
                try:
                    body = json.dumps(edit(json.loads(body))).encode()
                except ValueError:
                    pass
            headers = [(k, v) for k, v in start.get("headers", ()) if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({**start, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, held)
