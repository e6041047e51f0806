"""The box's side of ``kubectl port-forward``: the kubelet's stream pairs over SPDY/3.1, and HTTP over a stream.

kubectl 1.30+ opens ``POST|GET …/pods/NAME/portforward`` as a WebSocket with the subprotocol
``SPDY/3.1+portforward.k8s.io`` and runs a SPDY/3.1 client over its binary messages (client-go
tools/portforward, tunneling_connection.go). For every local connection it opens two streams with the headers
``streamtype: error|data``, ``port: N`` and ``requestid: K``; it writes nothing on the error stream and reads it
to the end. As the kubelet does (pkg/kubelet/cri/streaming/portforward/httpstream.go), the box answers each
SYN_STREAM with an empty SYN_REPLY, and once both streams of a request are there it connects them to the pod's
port: ``dial(port)`` gives either a handler that serves the connection or the sentence a refused connection
writes on the error stream. When the handler ends, the data stream and then the error stream are closed (FIN);
kubectl then resets the data stream. Ctrl-C on kubectl resets every stream and sends GOAWAY: the session cancels
its handlers and ends.

``serve_http`` is the handler for an engine: HTTP/1.1 (h11) over the stream's bytes, each request answered by
an ASGI app (the engine's HTTP handler, the same one the service proxy reaches), keep-alive and chunked
(streamed) answers included.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import h11

from . import spdy

log = logging.getLogger("ncui.sim.portforward")

PROTOCOL = "portforward.k8s.io"
WS_PROTOCOL = "SPDY/3.1+" + PROTOCOL  # client-go's WebsocketsSPDYTunnelingPrefix + the port-forward protocol

Write = Callable[[bytes], Awaitable[None]]
Handler = Callable[[asyncio.StreamReader, Write], Awaitable[None]]
Dial = Callable[[int], Awaitable["Handler | str"]]


class Refused(Exception):
    """Raised by a handler (or the app it serves) when the pod's side drops the connection: the message goes to
    kubectl on the error stream, as the kubelet reports a connection that failed."""


async def connect(
    dial: Dial, port_text: str, inbound: asyncio.StreamReader, write: Write, on_serve: Callable[[], None]
) -> str:
    """Connect one forwarded connection to the pod's ``port_text`` and serve it to the end: '' or the error the
    kubelet would report. ``on_serve`` is called when a handler takes the connection. Cancellation (the client
    dropped it) propagates."""
    try:
        port = int(port_text)
        if not 0 < port < 65536:
            raise ValueError
    except ValueError:
        return f"invalid port {port_text[:20]!r}"
    try:
        target = await dial(port)
        if isinstance(target, str):
            return target
        on_serve()
        await target(inbound, write)
        return ""
    except Refused as e:
        return str(e)
    except Exception as e:  # a bug in a handler: the client reads it on the error stream
        log.exception("port-forward: the handler for port %s failed", port)
        return f"error forwarding port {port}: {type(e).__name__}: {e}"


class _Stream:
    def __init__(self, sid: int, kind: str, port: str, request: str) -> None:
        self.sid, self.kind, self.port, self.request = sid, kind, port, request
        self.inbound = asyncio.StreamReader()
        self.closed = False  # our side sent FIN or the peer reset it: nothing more goes out


class Session:
    """One port-forward connection. ``send`` writes bytes to the client (one WebSocket message each); feed what
    arrives to ``feed`` and call ``close`` when the transport is gone. ``done`` is set once the client went away
    (GOAWAY) or broke the protocol; ``active`` counts the forwarded connections being served now."""

    def __init__(self, send: Write, dial: Dial) -> None:
        self._send = send
        self._dial = dial
        self._codec = spdy.Codec()
        self._lock = asyncio.Lock()  # encode + send as one step: header compression follows the send order
        self._streams: dict[int, _Stream] = {}
        self._pairs: dict[str, dict[str, _Stream]] = {}
        self._tasks: dict[str, asyncio.Task] = {}  # by request id, while the pair is being served
        self._running: set[asyncio.Task] = set()  # every task not yet finished (close waits for them)
        self._last_sid = 0
        self.done = asyncio.Event()
        self.served = 0  # forwarded connections handled so far

    @property
    def active(self) -> int:
        return len(self._running)

    async def _out(self, make: Callable[[spdy.Codec], bytes]) -> None:
        async with self._lock:
            if self.done.is_set():
                return
            try:
                await self._send(make(self._codec))
            except Exception as e:  # the transport went away under us: the session is over
                log.debug("port-forward: send failed: %s", e)
                self.done.set()

    # ---- frames in ----------------------------------------------------------------------------

    async def feed(self, data: bytes) -> None:
        try:
            frames = self._codec.feed(data)
        except spdy.SpdyError as e:
            log.info("port-forward: protocol error from the client: %s", e)
            await self._out(lambda c: c.goaway(self._last_sid, spdy.GOAWAY_PROTOCOL_ERROR))
            self.done.set()
            return
        for f in frames:
            await self._on(f)

    async def _on(self, f: spdy.Frame) -> None:
        if f.type == spdy.SYN_STREAM:
            await self._syn_stream(f)
        elif f.type == spdy.DATA:
            st = self._streams.get(f.stream_id)
            if st is not None and st.kind == "data" and not st.inbound.at_eof():
                if f.data:
                    st.inbound.feed_data(f.data)
                if f.fin:
                    st.inbound.feed_eof()
        elif f.type == spdy.RST_STREAM:
            st = self._streams.pop(f.stream_id, None)
            if st is not None:
                st.closed = True
                if not st.inbound.at_eof():
                    st.inbound.feed_eof()
                task = self._tasks.get(st.request)
                if st.kind == "data" and task is not None and not task.done():
                    task.cancel()  # the client dropped this connection (Ctrl-C, or its local side failed)
        elif f.type == spdy.PING:
            if f.ping_id % 2 == 1:  # the client's (odd) pings are echoed; spdystream pings every 10 s
                await self._out(lambda c: c.ping(f.ping_id))
        elif f.type == spdy.GOAWAY:
            self.done.set()
        # SYN_REPLY, HEADERS, SETTINGS, WINDOW_UPDATE: nothing to do (spdystream does no flow control)

    async def _syn_stream(self, f: spdy.Frame) -> None:
        sid = f.stream_id
        if sid % 2 == 0 or sid <= self._last_sid:  # client streams are odd and increasing
            await self._out(lambda c: c.rst_stream(sid, spdy.PROTOCOL_ERROR))
            return
        self._last_sid = sid
        kind, port = f.header("streamtype"), f.header("port")
        # a client without request ids (before 1.6): the kubelet pairs error N with data N+2
        request = f.header("requestid") or str(sid if kind == "error" else sid - 2)
        st = _Stream(sid, kind, port, request)
        self._streams[sid] = st
        await self._out(lambda c: c.syn_reply(sid))
        if f.fin:
            st.inbound.feed_eof()
        pair = self._pairs.setdefault(request, {})
        if kind not in ("error", "data") or kind in pair:
            why = (
                f"unknown stream type {kind!r}" if kind not in ("error", "data") else f"{kind} stream already assigned"
            )
            await self._fail(pair.get("error") or st, f"error processing stream for request {request}: {why}")
            return
        pair[kind] = st
        if len(pair) == 2:
            task = asyncio.create_task(self._forward(request, pair["data"], pair["error"]))
            self._tasks[request] = task
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    # ---- one forwarded connection ---------------------------------------------------------------

    async def _forward(self, request: str, data: _Stream, err: _Stream) -> None:
        async def write(b: bytes) -> None:
            if not data.closed and b:
                await self._out(lambda c: c.data(data.sid, b))

        try:
            message = await connect(self._dial, data.port, data.inbound, write, self._count)
        except asyncio.CancelledError:
            data.closed = err.closed = True  # reset by the client or the session ends: say nothing more
            raise
        finally:
            self._pairs.pop(request, None)
            self._tasks.pop(request, None)
        # as the kubelet: the error (if any) on the error stream, then FIN on the error and the data stream
        if message and not err.closed:
            await self._out(lambda c: c.data(err.sid, message.encode()))
        await self._fin(err)
        await self._fin(data)
        self._streams.pop(data.sid, None)
        self._streams.pop(err.sid, None)

    def _count(self) -> None:
        self.served += 1

    async def _fin(self, st: _Stream) -> None:
        if not st.closed:
            st.closed = True
            await self._out(lambda c: c.data(st.sid, b"", fin=True))

    async def _fail(self, st: _Stream, message: str) -> None:
        if not st.closed:
            await self._out(lambda c: c.data(st.sid, message.encode()))
        await self._fin(st)

    # ---- the end ------------------------------------------------------------------------------

    async def close(self) -> None:
        """The transport is gone (or going): cancel every forwarded connection and wait for them."""
        self.done.set()
        tasks = list(self._running)
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


# ---- the channel protocol (the official Python client) ----------------------------------------------

CHANNEL_PROTOCOLS = ("v4.channel.k8s.io", "v5.channel.k8s.io")
CLOSE_CHANNEL = 255  # v5: "channel N is closed" (a half-close of that channel)


class ChannelSession:
    """Port-forward over the WebSocket channel protocol, as the kubelet's websocket.go serves it: the ports are in
    the URL (``?ports=8000,9000``); port i has data channel 2i and error channel 2i+1, each of which first
    carries the port number (2 bytes, little-endian); every message is its channel byte, then data. One
    connection per port; ``done`` is set once every port's connection has ended (the WebSocket then closes)."""

    def __init__(self, send: Write, dial: Dial, ports: list[int]) -> None:
        self._send, self._dial, self.ports = send, dial, ports
        self._inbound = [asyncio.StreamReader() for _ in ports]
        self._tasks: list[asyncio.Task] = []
        self._lock = asyncio.Lock()
        self.done = asyncio.Event()
        self.served = 0

    async def _out(self, channel: int, data: bytes) -> None:
        async with self._lock:
            if not self.done.is_set():
                await self._send(bytes([channel]) + data)

    async def start(self) -> None:
        for i, port in enumerate(self.ports):
            for ch in (2 * i, 2 * i + 1):
                await self._out(ch, port.to_bytes(2, "little"))
        forwards = [asyncio.create_task(self._forward(i)) for i in range(len(self.ports))]

        async def all_done() -> None:
            await asyncio.gather(*forwards, return_exceptions=True)
            self.done.set()

        self._tasks = [*forwards, asyncio.create_task(all_done())]

    async def _forward(self, i: int) -> None:
        async def write(b: bytes) -> None:
            if b:
                await self._out(2 * i, b)

        message = await connect(self._dial, str(self.ports[i]), self._inbound[i], write, self._count)
        if message:
            await self._out(2 * i + 1, message.encode())

    def _count(self) -> None:
        self.served += 1

    async def feed(self, message: bytes) -> None:
        if not message:
            return
        ch, data = message[0], message[1:]
        if ch == CLOSE_CHANNEL and data:
            ch, data = data[0], b""
            if ch % 2 == 0 and ch // 2 < len(self.ports):
                self._inbound[ch // 2].feed_eof()
        elif ch % 2 == 0 and ch // 2 < len(self.ports) and data and not self._inbound[ch // 2].at_eof():
            self._inbound[ch // 2].feed_data(data)

    async def close(self) -> None:
        self.done.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t


# ---- HTTP/1.1 over a forwarded stream ---------------------------------------------------------------


async def serve_http(
    reader: asyncio.StreamReader, write: Write, app: Any, port: int = 8000, scope: dict | None = None
) -> None:
    """Serve HTTP/1.1 requests read from ``reader`` with the ASGI ``app`` until the client closes; ``scope``: more
    keys for each request's ASGI scope (the box's own app, which its streamed answers look up)."""
    conn = h11.Connection(h11.SERVER)

    async def next_event() -> Any:
        while True:
            ev = conn.next_event()
            if ev is not h11.NEED_DATA:
                return ev
            conn.receive_data(await reader.read(65536))  # b"" = the client half-closed

    while True:
        try:
            ev = await next_event()
            if not isinstance(ev, h11.Request):
                return  # ConnectionClosed, or PAUSED after a protocol switch we never grant
            if conn.they_are_waiting_for_100_continue:  # curl asks before a body over 1 KiB: no 1 s pause
                await write(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
            body = bytearray()
            while True:
                part = await next_event()
                if isinstance(part, h11.Data):
                    body += part.data
                elif isinstance(part, h11.EndOfMessage):
                    break
                else:
                    return
        except h11.RemoteProtocolError as e:
            with contextlib.suppress(h11.LocalProtocolError):
                msg = f"Bad Request: {e}\n".encode()
                await write(
                    conn.send(
                        h11.Response(
                            status_code=e.error_status_hint,
                            headers=[("content-type", "text/plain"), ("content-length", str(len(msg)))],
                        )
                    )
                    + conn.send(h11.Data(data=msg))
                    + conn.send(h11.EndOfMessage())
                )
            return
        await _asgi_request(conn, ev, bytes(body), write, app, port, scope or {})
        if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
            return
        try:
            conn.start_next_cycle()
        except h11.LocalProtocolError:
            return


async def _asgi_request(
    conn: h11.Connection, req: h11.Request, body: bytes, write: Write, app: Any, port: int, extra: dict
) -> None:
    target = req.target.decode("latin-1")
    path, _, query = target.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": req.http_version.decode(),
        "method": req.method.decode(),
        "scheme": "http",
        "path": path,
        "raw_path": path.encode("latin-1"),
        "query_string": query.encode("latin-1"),
        "root_path": "",
        "headers": [(k.lower(), v) for k, v in req.headers],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", port),
        **extra,
    }
    delivered = False
    finished = False
    started = False

    async def receive() -> dict:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # until the connection is cancelled: the client is still there
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        nonlocal started, finished
        if finished:
            return
        if message["type"] == "http.response.start":
            started = True
            headers = [(k, v) for k, v in message.get("headers", [])]
            await write(conn.send(h11.Response(status_code=message["status"], headers=headers)))
        elif message["type"] == "http.response.body":
            out = b""
            if message.get("body"):
                out += conn.send(h11.Data(data=message["body"]))
            if not message.get("more_body", False):
                out += conn.send(h11.EndOfMessage())
                finished = True
            await write(out)

    try:
        await app(scope, receive, send)
    except (asyncio.CancelledError, Refused):
        raise
    except Exception:
        log.exception("port-forward: the engine failed on %s %s", scope["method"], path)
        if not started:
            msg = b"Internal Server Error\n"
            await write(
                conn.send(
                    h11.Response(
                        status_code=500, headers=[("content-type", "text/plain"), ("content-length", str(len(msg)))]
                    )
                )
                + conn.send(h11.Data(data=msg))
                + conn.send(h11.EndOfMessage())
            )
            return
        raise
    if not finished:  # the app ended without finishing its answer: the connection cannot be reused
        raise ConnectionError("the engine's answer was cut short")
