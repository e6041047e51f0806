"""The box's HTTP middleware: injected faults (a status, a delay, a connection cut halfway) for the next requests
to a path, the journal of the writes it received (what a client really sent), and every answer dated by the
box's own clock."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from dataclasses import dataclass
from email.utils import format_datetime

from pydantic import BaseModel, Field

from .world import World

# ---- faults -------------------------------------------------------------------------------------


class FaultRule(BaseModel):
    """A fault for requests whose path starts with ``path_prefix``, for the next ``count`` of them."""

    path_prefix: str = "/api/"
    count: int = Field(default=1, ge=1, le=1_000_000)
    status: int | None = Field(default=None, ge=400, le=599)
    delay: float = Field(default=0.0, ge=0, le=60)
    truncate: bool = False  # send half of the body: malformed JSON
    drop: bool = False  # cut the connection mid-body


class Faults:
    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def add(self, rule: FaultRule) -> None:
        with self._lock:
            self._rules.append(rule.model_copy())

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def take(self, path: str) -> FaultRule | None:
        with self._lock:
            for i, r in enumerate(self._rules):
                if path.startswith(r.path_prefix):
                    left = r.count - 1
                    if left <= 0:
                        del self._rules[i]
                    else:
                        self._rules[i] = r.model_copy(update={"count": left})
                    return r
        return None


class _Dropped(Exception):
    """Raised to make the server cut a connection mid-body (fault injection)."""


class FaultMiddleware:
    def __init__(self, app, faults: Faults) -> None:
        self.app, self.faults = app, faults

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/_sim"):
            return await self.app(scope, receive, send)
        rule = self.faults.take(scope["path"])
        if rule is None:
            return await self.app(scope, receive, send)
        if rule.delay:
            await asyncio.sleep(rule.delay)
        if rule.status:
            body = json.dumps(
                {
                    "error": "server-error" if rule.status >= 500 else "fault",
                    "detail": f"Injected fault: HTTP {rule.status}.",
                }
            ).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": rule.status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        if not (rule.truncate or rule.drop):
            return await self.app(scope, receive, send)
        start: dict = {}
        chunks: list[bytes] = []

        async def capture(message):
            if message["type"] == "http.response.start":
                start.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, capture)
        body = b"".join(chunks)
        half = body[: len(body) // 2]
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        length = len(body) if rule.drop else len(half)
        headers.append((b"content-length", str(length).encode()))
        await send({"type": "http.response.start", "status": start.get("status", 200), "headers": headers})
        await send({"type": "http.response.body", "body": half, "more_body": rule.drop})
        if rule.drop:
            raise _Dropped("fault injection: connection dropped")


@dataclass(frozen=True)
class Received:
    """A write the box received on the contract's paths: method, path, query string and body, as they came."""

    method: str
    path: str
    query: str
    body: bytes


class JournalMiddleware:
    """Keeps the newest writes (PUT, POST, PATCH, DELETE under /api/) in ``app.state.received``: what a client
    really sent, for a test to compare with what the client says it sent (ncui's history)."""

    def __init__(self, app, journal: deque[Received]) -> None:
        self.app, self.journal = app, journal

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] == "GET" or not scope["path"].startswith("/api/"):
            return await self.app(scope, receive, send)
        chunks: list[bytes] = []

        async def keep():
            message = await receive()
            if message["type"] == "http.request":
                chunks.append(message.get("body", b""))
                if not message.get("more_body"):
                    q = scope.get("query_string", b"").decode("latin-1")
                    self.journal.append(Received(scope["method"], scope["path"], q, b"".join(chunks)))
            return message

        return await self.app(scope, keep, send)


class DateMiddleware:
    """Every answer's ``Date`` header is the box's clock (RFC 9110's IMF-fixdate), as a service's is its own: a
    client reading the service's time off its answers (``api.client.ServiceClock``: AGE under ``ncui --api``)
    then sees the virtual clock, however fast it runs. Uvicorn's own wall-clock Date is off (``SimServer``)."""

    def __init__(self, app, world: World) -> None:
        self.app, self.world = app, world

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def dated(message):
            if message["type"] == "http.response.start":
                date = format_datetime(self.world.now(), usegmt=True).encode()
                message["headers"] = [(k, v) for k, v in message.get("headers", ()) if k.lower() != b"date"]
                message["headers"].append((b"date", date))
            await send(message)

        return await self.app(scope, receive, dated)
