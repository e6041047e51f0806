"""SPDY/3.1 framing and the port-forward session (ncui/sim/kube/spdy.py, portforward.py) without kubectl.

The client side here is the same Codec playing spdystream's part, fed byte by byte the way spdystream's framer
writes (one WebSocket message per field); the real kubectl is in test_kube_portforward.py.
"""

from __future__ import annotations

import asyncio
import struct
import zlib

import pytest
from starlette.responses import JSONResponse, StreamingResponse

from ncui.sim.kube import portforward, spdy
from ncui.sim.kube.spdy import Codec, Frame, SpdyError

from .waits import until


def test_dictionary_is_spdy3s():
    d = spdy.DICTIONARY
    # draft 3's dictionary: 1423 bytes, length-prefixed words from "options" to "origin", then the raw tail
    assert len(d) == 1423 and zlib.adler32(d) == 3821447106
    assert d.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head") and d.endswith(b"utf-,*,enq=0.")
    assert b"\x00\x00\x00\x06200 OK\x00\x00\x00\x07version\x00\x00\x00\x08HTTP/1.1" in d


def _feed_bytewise(codec: Codec, data: bytes) -> list[Frame]:
    out: list[Frame] = []
    for i in range(len(data)):
        out += codec.feed(data[i : i + 1])
    return out


def test_frames_round_trip_split_anywhere_with_one_header_context_per_direction():
    client, server = Codec(), Codec()
    wire = (
        client.syn_stream(1, {"streamtype": "error", "port": "8000", "requestid": "0"})
        + client.syn_stream(3, {"StreamType": "data", "port": "8000", "requestid": "0"}, fin=False)
        + client.data(3, b"GET / HTTP/1.1\r\n\r\n")
        + client.data(1, fin=True)
        + client.ping(1)
        + client.window_update(3, 1000)
        + client.control(spdy.SETTINGS, 0, struct.pack(">III", 1, (1 << 24) | 7, 65536))
        + client.rst_stream(3, spdy.CANCEL)
        + client.goaway(3)
    )
    frames = _feed_bytewise(server, wire)
    kinds = [(f.type, f.stream_id) for f in frames]
    assert kinds == [
        (spdy.SYN_STREAM, 1),
        (spdy.SYN_STREAM, 3),
        (spdy.DATA, 3),
        (spdy.DATA, 1),
        (spdy.PING, 0),
        (spdy.WINDOW_UPDATE, 3),
        (spdy.SETTINGS, 0),
        (spdy.RST_STREAM, 3),
        (spdy.GOAWAY, 3),
    ]
    e, d = frames[0], frames[1]
    assert e.header("streamtype") == "error" and d.header("streamtype") == "data"  # names travel in lower case
    assert d.headers == {"streamtype": ["data"], "port": ["8000"], "requestid": ["0"]}
    assert frames[2].data == b"GET / HTTP/1.1\r\n\r\n" and not frames[2].fin
    assert frames[3].fin and frames[3].data == b""
    assert frames[4].ping_id == 1 and frames[5].delta == 1000 and frames[6].settings == [(1, 7, 65536)]
    assert frames[7].status == spdy.CANCEL and frames[8].status == spdy.GOAWAY_OK
    # the second header block was compressed against the first (one zlib context), and still decodes
    again = client.syn_stream(5, {"streamtype": "data", "port": "8000", "requestid": "0"})
    assert len(again) < 40 and server.feed(again)[0].headers == d.headers
    # multiple values of a header travel NUL-separated
    reply = client.syn_reply(7, {"x": ["a", "b"]}, fin=True)
    (f,) = server.feed(reply)
    assert f.type == spdy.SYN_REPLY and f.fin and f.headers == {"x": ["a", "b"]}


def test_big_data_is_cut_into_frames_and_fin_rides_on_the_last():
    payload = bytes(range(256)) * 300  # 76,800 bytes: three frames of at most CHUNK
    frames = Codec().feed(Codec.data(9, payload, fin=True))
    assert [len(f.data) for f in frames] == [spdy.CHUNK, spdy.CHUNK, len(payload) - 2 * spdy.CHUNK]
    assert [f.fin for f in frames] == [False, False, True] and b"".join(f.data for f in frames) == payload


@pytest.mark.parametrize(
    "wire, why",
    [
        (Codec.control(spdy.PING, 0, struct.pack(">I", 1)).replace(b"\x80\x03", b"\x80\x02", 1), "version 2"),
        (struct.pack(">II", 0, 3) + b"abc", "data frame on stream 0"),
        (Codec.control(spdy.SYN_STREAM, 0, struct.pack(">IIBB", 1, 0, 0, 0) + b"not zlib"), "bad header block"),
        (Codec.control(spdy.RST_STREAM, 0, b"\x00\x00"), "short RST_STREAM"),
    ],
)
def test_malformed_frames_are_protocol_errors(wire, why):
    with pytest.raises(SpdyError, match=why):
        Codec().feed(wire)


# ---- the session, as kubectl drives it ----------------------------------------------------------


class Client:
    """kubectl's side: streams over a Session, everything the box sends parsed back into frames."""

    def __init__(self, dial) -> None:
        self.codec, self.frames = Codec(), asyncio.Queue()
        self.session = portforward.Session(self._receive, dial)
        self.sid = 1

    async def _receive(self, b: bytes) -> None:
        for f in self.codec.feed(b):
            self.frames.put_nowait(f)

    async def send(self, b: bytes) -> None:
        for i in range(0, len(b), 7):  # split as a WebSocket tunnel may
            await self.session.feed(b[i : i + 7])

    async def open(self, port: int, request: str) -> tuple[int, int]:
        e, d = self.sid, self.sid + 2
        self.sid += 4
        await self.send(self.codec.syn_stream(e, {"streamtype": "error", "port": str(port), "requestid": request}))
        await self.send(self.codec.data(e, fin=True))  # kubectl writes nothing on the error stream
        await self.send(self.codec.syn_stream(d, {"streamtype": "data", "port": str(port), "requestid": request}))
        return e, d

    async def until(self, pred, frames: list[Frame]) -> list[Frame]:
        while not pred(frames):
            frames.append(await asyncio.wait_for(self.frames.get(), 5))
        return frames


def _body(frames: list[Frame], sid: int) -> bytes:
    return b"".join(f.data for f in frames if f.type == spdy.DATA and f.stream_id == sid)


def _fin(frames: list[Frame], sid: int) -> bool:
    return any(f.type == spdy.DATA and f.stream_id == sid and f.fin for f in frames)


async def _engine(scope, receive, send):
    msg = await receive()
    if scope["path"] == "/stream":

        async def gen():
            for i in range(3):
                yield f"data: {i}\n\n".encode()

        return await StreamingResponse(gen(), media_type="text/event-stream")(scope, receive, send)
    await JSONResponse({"path": scope["path"], "got": msg["body"].decode()})(scope, receive, send)


async def test_session_pairs_streams_serves_http_keepalive_and_ends_like_the_kubelet():
    async def dial(port: int):
        if port != 8000:
            return f"error forwarding port {port}: connection refused"
        return lambda reader, write: portforward.serve_http(reader, write, _engine, port)

    c = Client(dial)
    e1, d1 = await c.open(8000, "0")
    e2, d2 = await c.open(8000, "1")  # a second connection at the same time
    frames: list[Frame] = []
    replies = lambda fs: {f.stream_id for f in fs if f.type == spdy.SYN_REPLY}  # noqa: E731
    await c.until(lambda fs: replies(fs) == {e1, d1, e2, d2}, frames)  # every stream answered at once
    assert c.session.active == 2
    post = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
    await c.send(c.codec.data(d2, post))
    await c.until(lambda fs: _body(fs, d2) == b"HTTP/1.1 100 \r\n\r\n", frames)  # curl asks before a body
    await c.send(c.codec.data(d2, b"hi"))
    await c.send(c.codec.data(d1, b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"))
    await c.until(lambda fs: b'"got":"hi"' in _body(fs, d2) and b"data: 2" in _body(fs, d1), frames)
    assert _body(frames, d2).startswith(b"HTTP/1.1 100 \r\n\r\nHTTP/1.1 200 ")
    assert b"transfer-encoding: chunked" in _body(frames, d1).lower()  # a streamed answer goes out as it comes
    # keep-alive: a second request on the same connection
    await c.send(c.codec.data(d2, b"GET /again HTTP/1.1\r\nHost: x\r\n\r\n"))
    await c.until(lambda fs: b'"path":"/again"' in _body(fs, d2), frames)
    assert not _fin(frames, d2)
    # the local side closes (kubectl half-closes the data stream): the box closes error then data, no message
    await c.send(c.codec.data(d2, fin=True))
    await c.until(lambda fs: _fin(fs, d2), frames)
    assert _fin(frames, e2) and _body(frames, e2) == b""
    # a reset (Ctrl-C) cancels the other connection's handler
    await c.send(c.codec.rst_stream(d1))
    await until(lambda: c.session.active == 0, 5, "no stream of the session left active")
    assert c.session.served == 2
    # pings are echoed; GOAWAY ends the session
    await c.send(c.codec.ping(5))
    await c.until(lambda fs: any(f.type == spdy.PING and f.ping_id == 5 for f in fs), frames)
    await c.send(c.codec.goaway(0))
    assert c.session.done.is_set()
    await c.session.close()


async def test_a_refused_port_and_a_broken_peer():
    async def dial(port: int):
        return f"error forwarding port {port} to pod p, uid u: connection refused"

    c = Client(dial)
    e, d = await c.open(9000, "0")
    frames = await c.until(lambda fs: _fin(fs, d), [])
    # the message on the error stream (kubectl prints it and drops the connection), then FIN on both
    assert _body(frames, e) == b"error forwarding port 9000 to pod p, uid u: connection refused" and _fin(frames, e)
    assert c.session.served == 0
    # a second data stream for the same request is an error, as in the kubelet
    e2, d2 = await c.open(8000, "1")
    await c.send(c.codec.syn_stream(d2 + 2, {"streamtype": "data", "port": "8000", "requestid": "1"}))
    frames = await c.until(lambda fs: b"already assigned" in _body(fs, e2), [])
    # garbage ends the session with GOAWAY(PROTOCOL_ERROR)
    await c.session.feed(b"\x80\x07\x00\x01\x00\x00\x00\x04\x00\x00\x00\x01")  # version 7
    frames = await c.until(lambda fs: any(f.type == spdy.GOAWAY for f in fs), [])
    assert frames[-1].status == spdy.GOAWAY_PROTOCOL_ERROR and c.session.done.is_set()
    await c.session.close()


async def test_bad_http_gets_400_and_the_connection_closes():
    c = Client(lambda port: _handler())
    e, d = await c.open(8000, "0")
    await c.send(c.codec.data(d, b"NOT HTTP AT ALL\r\n\r\n"))
    frames = await c.until(lambda fs: _fin(fs, d), [])
    assert _body(frames, d).startswith(b"HTTP/1.1 400 ")


async def _handler():
    return lambda reader, write: portforward.serve_http(reader, write, _engine)


async def test_channel_protocol_as_the_python_client_speaks_it():
    sent: list[bytes] = []

    async def send(b: bytes) -> None:
        sent.append(b)

    async def dial(port: int):
        if port == 9000:
            return "connection refused"
        return lambda reader, write: portforward.serve_http(reader, write, _engine, port)

    s = portforward.ChannelSession(send, dial, [8000, 9000])
    await s.start()
    # every channel first carries its port, little-endian: data 0 and error 1 for 8000, 2 and 3 for 9000
    assert sent[:4] == [b"\x00\x40\x1f", b"\x01\x40\x1f", b"\x02\x28\x23", b"\x03\x28\x23"]
    await s.feed(b"\x00GET /x HTTP/1.1\r\nHost: y\r\nConnection: close\r\n\r\n")
    await asyncio.wait_for(s.done.wait(), 5)  # both connections ended: the WebSocket may close
    assert b"\x03connection refused" in sent
    data = b"".join(m[1:] for m in sent[4:] if m[0] == 0)
    assert data.startswith(b"HTTP/1.1 200 ") and data.endswith(b'{"path":"/x","got":""}')
    assert s.served == 1
    await s.close()
