"""SPDY/3.1 framing as ``kubectl port-forward`` speaks it (client-go over moby/spdystream).

Plain Python: one ``Codec`` per connection end turns the bytes that arrive into ``Frame`` objects (``feed``,
incremental: a frame may come split over many WebSocket messages, since spdystream writes each field with its
own ``Write`` and every ``Write`` of the tunnel is one message) and encodes the frames it sends. Header blocks
are zlib-compressed with the fixed SPDY/3 dictionary, one compression context per direction for the whole
connection, so frames must be encoded in the order they are sent. spdystream does no flow control: WINDOW_UPDATE
and SETTINGS are parsed and may be ignored.

Wire format (draft-mbelshe-httpbis-spdy-00, SPDY/3): a control frame is ``1|version(15) type(16) flags(8)
length(24) data``; a data frame is ``0|stream-id(31) flags(8) length(24) data``; FIN is flag 0x01 on both.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

VERSION = 3
DATA, SYN_STREAM, SYN_REPLY, RST_STREAM, SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE = 0, 1, 2, 3, 4, 6, 7, 8, 9
NAMES = {
    DATA: "DATA",
    SYN_STREAM: "SYN_STREAM",
    SYN_REPLY: "SYN_REPLY",
    RST_STREAM: "RST_STREAM",
    SETTINGS: "SETTINGS",
    PING: "PING",
    GOAWAY: "GOAWAY",
    HEADERS: "HEADERS",
    WINDOW_UPDATE: "WINDOW_UPDATE",
}
FLAG_FIN = 0x01
# RST_STREAM status codes
PROTOCOL_ERROR, INVALID_STREAM, REFUSED_STREAM, UNSUPPORTED_VERSION, CANCEL, INTERNAL_ERROR = 1, 2, 3, 4, 5, 6
GOAWAY_OK, GOAWAY_PROTOCOL_ERROR, GOAWAY_INTERNAL_ERROR = 0, 1, 2
MAX_LENGTH = (1 << 24) - 1  # a frame's length field
CHUNK = 32 * 1024  # how much data the box puts in one DATA frame

# The SPDY/3 header dictionary: length-prefixed words, then a raw tail (status lines, dates, media types).
_WORDS = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age "
    "allow authorization cache-control connection content-base content-encoding content-language content-length "
    "content-location content-md5 content-range content-type date etag expect expires from host if-match "
    "if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma "
    "proxy-authenticate proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade "
    "user-agent vary via warning www-authenticate method get status"
).split() + ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()


class SpdyError(Exception):
    """The peer broke the protocol (a malformed frame, a bad header block): the connection cannot go on."""


@dataclass
class Frame:
    type: int  # DATA or a control frame type
    stream_id: int = 0
    flags: int = 0
    data: bytes = b""  # DATA's payload
    headers: dict[str, list[str]] = field(default_factory=dict)  # SYN_STREAM, SYN_REPLY, HEADERS
    status: int = 0  # RST_STREAM, GOAWAY
    ping_id: int = 0
    associated: int = 0  # SYN_STREAM
    priority: int = 0  # SYN_STREAM
    delta: int = 0  # WINDOW_UPDATE
    settings: list[tuple[int, int, int]] = field(default_factory=list)  # (flags, id, value)
    version: int = VERSION

    @property
    def fin(self) -> bool:
        return bool(self.flags & FLAG_FIN)

    def header(self, name: str) -> str:
        """The first value of a header ('' when absent); names are lower case on the wire."""
        return (self.headers.get(name.lower()) or [""])[0]

    def __repr__(self) -> str:  # short, for logs and test failures
        what = NAMES.get(self.type, str(self.type))
        extra = f" {len(self.data)}B" if self.type == DATA else (f" {self.headers}" if self.headers else "")
        return f"<{what} #{self.stream_id}{' FIN' if self.fin else ''}{extra}>"


class Codec:
    """One end of a SPDY/3.1 connection: ``feed`` parses what arrives, the other methods encode what it sends."""

    def __init__(self, max_buffer: int = 4 * MAX_LENGTH) -> None:
        self._buf = bytearray()
        self._max = max_buffer
        self._z = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
        self._unz = zlib.decompressobj(15, DICTIONARY)

    # ---- reading ----------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Frame]:
        """Every whole frame ``data`` completes (the rest waits for more); SpdyError on a malformed one."""
        self._buf += data
        if len(self._buf) > self._max:
            raise SpdyError("frame larger than the box accepts")
        out = []
        while len(self._buf) >= 8:
            (length,) = struct.unpack_from(">I", self._buf, 4)
            length &= 0xFFFFFF
            if len(self._buf) < 8 + length:
                break
            head, body = bytes(self._buf[:8]), bytes(self._buf[8 : 8 + length])
            del self._buf[: 8 + length]
            out.append(self._frame(head, body))
        return out

    def _frame(self, head: bytes, body: bytes) -> Frame:
        first, flags_len = struct.unpack(">II", head)
        flags = flags_len >> 24
        if not first & 0x80000000:
            sid = first & 0x7FFFFFFF
            if sid == 0:
                raise SpdyError("data frame on stream 0")
            return Frame(DATA, sid, flags, data=body)
        version, ftype = (first >> 16) & 0x7FFF, first & 0xFFFF
        if version != VERSION:
            raise SpdyError(f"unsupported SPDY version {version}")
        f = Frame(ftype, flags=flags, version=version)
        try:
            if ftype == SYN_STREAM:
                sid, assoc, prio = struct.unpack_from(">IIB", body)
                f.stream_id, f.associated, f.priority = sid & 0x7FFFFFFF, assoc & 0x7FFFFFFF, prio >> 5
                f.headers = self._read_headers(body[10:])
            elif ftype in (SYN_REPLY, HEADERS):
                f.stream_id = struct.unpack_from(">I", body)[0] & 0x7FFFFFFF
                f.headers = self._read_headers(body[4:])
            elif ftype == RST_STREAM:
                sid, f.status = struct.unpack_from(">II", body)
                f.stream_id = sid & 0x7FFFFFFF
            elif ftype == PING:
                (f.ping_id,) = struct.unpack_from(">I", body)
            elif ftype == GOAWAY:
                last, f.status = struct.unpack_from(">II", body)
                f.stream_id = last & 0x7FFFFFFF
            elif ftype == WINDOW_UPDATE:
                sid, delta = struct.unpack_from(">II", body)
                f.stream_id, f.delta = sid & 0x7FFFFFFF, delta & 0x7FFFFFFF
            elif ftype == SETTINGS:
                (n,) = struct.unpack_from(">I", body)
                for i in range(n):
                    fid, value = struct.unpack_from(">II", body, 4 + 8 * i)
                    f.settings.append((fid >> 24, fid & 0xFFFFFF, value))
            # other control types (CREDENTIAL, NOOP) are ignored, as the spec asks
        except struct.error as e:
            raise SpdyError(f"short {NAMES.get(ftype, ftype)} frame") from e
        if ftype in (SYN_STREAM, SYN_REPLY, HEADERS, RST_STREAM) and f.stream_id == 0:
            raise SpdyError(f"{NAMES[ftype]} on stream 0")
        return f

    def _read_headers(self, block: bytes) -> dict[str, list[str]]:
        try:
            raw = self._unz.decompress(block)
        except zlib.error as e:
            raise SpdyError(f"bad header block: {e}") from e
        try:
            (n,) = struct.unpack_from(">I", raw)
            pos, out = 4, {}
            for _ in range(n):
                (ln,) = struct.unpack_from(">I", raw, pos)
                name = raw[pos + 4 : pos + 4 + ln].decode("latin-1")
                pos += 4 + ln
                (lv,) = struct.unpack_from(">I", raw, pos)
                value = raw[pos + 4 : pos + 4 + lv].decode("latin-1")
                pos += 4 + lv
                out.setdefault(name.lower(), []).extend(value.split("\x00"))
        except struct.error as e:
            raise SpdyError("truncated header block") from e
        return out

    # ---- writing ----------------------------------------------------------------------------

    def _header_block(self, headers: dict[str, list[str]] | dict[str, str]) -> bytes:
        raw = bytearray(struct.pack(">I", len(headers)))
        for name, values in headers.items():
            v = ("\x00".join(values) if isinstance(values, list) else values).encode("latin-1")
            n = name.lower().encode("latin-1")
            raw += struct.pack(">I", len(n)) + n + struct.pack(">I", len(v)) + v
        return self._z.compress(bytes(raw)) + self._z.flush(zlib.Z_SYNC_FLUSH)

    @staticmethod
    def control(ftype: int, flags: int, body: bytes) -> bytes:
        return struct.pack(">HHI", 0x8000 | VERSION, ftype, (flags << 24) | len(body)) + body

    def syn_stream(self, sid: int, headers: dict, fin: bool = False, associated: int = 0, priority: int = 0) -> bytes:
        body = struct.pack(">IIBB", sid, associated, priority << 5, 0) + self._header_block(headers)
        return self.control(SYN_STREAM, FLAG_FIN if fin else 0, body)

    def syn_reply(self, sid: int, headers: dict | None = None, fin: bool = False) -> bytes:
        return self.control(
            SYN_REPLY, FLAG_FIN if fin else 0, struct.pack(">I", sid) + self._header_block(headers or {})
        )

    @staticmethod
    def data(sid: int, payload: bytes = b"", fin: bool = False) -> bytes:
        """One DATA frame per CHUNK of ``payload`` (FIN on the last); an empty payload with ``fin`` half-closes."""
        frames, pos = [], 0
        while True:
            part = payload[pos : pos + CHUNK]
            pos += len(part)
            last = pos >= len(payload)
            flags = FLAG_FIN if fin and last else 0
            frames.append(struct.pack(">II", sid & 0x7FFFFFFF, (flags << 24) | len(part)) + part)
            if last:
                return b"".join(frames)

    @classmethod
    def rst_stream(cls, sid: int, status: int = CANCEL) -> bytes:
        return cls.control(RST_STREAM, 0, struct.pack(">II", sid, status))

    @classmethod
    def ping(cls, ping_id: int) -> bytes:
        return cls.control(PING, 0, struct.pack(">I", ping_id))

    @classmethod
    def goaway(cls, last_good: int, status: int = GOAWAY_OK) -> bytes:
        return cls.control(GOAWAY, 0, struct.pack(">II", last_good, status))

    @classmethod
    def window_update(cls, sid: int, delta: int) -> bytes:
        return cls.control(WINDOW_UPDATE, 0, struct.pack(">II", sid, delta))
