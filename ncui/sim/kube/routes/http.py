"""What every area of the Kubernetes API answers with: JSON bodies, ``Status`` errors, the 401, chunked streams
(watch, ``logs -f``, chat), and the bearer token of a request."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from fastapi.responses import Response

from ..objects import KubeError, to_json

POLL = 0.05  # real seconds between a stream's looks at the store

UNAUTHORIZED = KubeError(401, "Unauthorized", "Unauthorized").status()


def bearer(headers: Mapping[str, str]) -> str:
    """The bearer token a request carries ('' for none)."""
    auth = headers.get("authorization", "")
    return auth[7:].strip() if auth[:7].lower() == "bearer " else ""


def too_large(rv: int, current: int) -> KubeError:
    """A version this cluster never reached: the API server's 504 (client-go lists again)."""
    details = {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }
    return KubeError(504, "Timeout", f"Too large resource version: {rv}, current: {current}", details)


def jresp(obj: Any, status: int = 200) -> Response:
    return Response(to_json(obj), status_code=status, media_type="application/json")


def status_resp(e: KubeError) -> Response:
    return jresp(e.status(), e.code)


class Stream(Response):
    """A chunked response fed by an async iterator; stops when the client disconnects."""

    def __init__(self, gen: AsyncIterator[bytes], media_type: str) -> None:
        super().__init__(status_code=200, media_type=media_type)
        self.gen = gen
        self.headers["Transfer-Encoding"] = "chunked"
        self.headers["Cache-Control"] = "no-cache, private"
        del self.headers["content-length"]

    async def __call__(self, scope, receive, send) -> None:
        kube = scope["app"].state.kube
        kube.streams += 1
        try:
            await self._run(scope, receive, send)
        finally:
            kube.streams -= 1

    async def _run(self, scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})

        async def listen() -> None:
            while True:
                msg = await receive()
                if msg["type"] == "http.disconnect":
                    return

        async def produce() -> None:
            async for chunk in self.gen:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        tasks = [asyncio.ensure_future(listen()), asyncio.ensure_future(produce())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in tasks:
                t.cancel()
            results = await asyncio.gather(*tasks, return_exceptions=True)
            try:
                await self.gen.aclose()
            except RuntimeError:
                pass
        for exc in results:
            if isinstance(exc, Exception) and not isinstance(exc, OSError):
                raise exc


class _Dropped(Exception):
    """Raised inside a stream to cut its connection mid-body (fault injection; the server's log filter
    hides it by this name)."""
