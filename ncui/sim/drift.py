"""The box's contract can drift on purpose (``ncui sim --contract-drift NAME``): as a real service's might, between
one release and the next. A drift changes the OpenAPI documents and the answers alike:

- ``field-renamed``: ``GET /api/billing/balance`` says ``burn_ucredits_per_hour`` instead of ``burn_ucredits_hr``;
- ``enum-added``: a cluster's ``kind`` may be ``tpu``, and whoami lists a ``tpu`` cluster;
- ``path-moved``: the price-to-win ladder moves from ``/api/k8s/market/ladder`` to ``/api/market/ladder``.

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
