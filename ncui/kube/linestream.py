"""A streaming HTTP/1.1 GET read as batches of lines: what a fast log needs.

httpx (httpcore, anyio, h11) hands a stream over a small read at a time through several layers of Python:
at hundreds of thousands of log lines a second that alone is most of a core. A thread with blocking reads
is no better in CPython: each read gives the GIL up, and getting it back waits for the busy loop thread
(the switch interval), so the reader starves while the screen draws. This is an asyncio protocol on the
loop's own transport instead: asyncio's TLS reads up to 256 KiB of the socket per loop turn and decrypts
it in one go, and each turn here is a few ``bytes.find`` calls for the chunked framing, one decode and one
split. A batch waits until the consumer takes it; past ``max_pending`` lines reading pauses (the server
waits), so memory is bounded however fast the log is. A slow log is gathered for ``gap`` seconds after a
small batch, so a log at a few lines per chunk does not cost a wake-up per chunk.

``stream, head = await LineStream.open(url, headers, verify)``; ``async for batch in stream.batches()``;
``stream.close()``. No Textual here.
"""

from __future__ import annotations

import asyncio
import codecs
import re
import ssl
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Protocol, TypeGuard, cast
from urllib.parse import urlsplit

from ..backoff import within

__all__ = ["LineStream", "Lines", "Head", "StreamFailed"]

_PLAIN = bytes(range(0x20, 0x7F)) + b"\n"  # what translate() deletes from a plain piece: everything
_HEX = re.compile(rb"[0-9A-Fa-f]{1,16}")
_HEAD_MAX = 1 << 16  # a response head, or an error's body, longer than this is cut
_MAX_PENDING, _GAP, _SMALL = 50_000, 0.05, 1000  # LineStream's defaults


class _Secret(Protocol):
    """A header's value that must not show itself: pydantic's or ncui's ``SecretStr``."""

    def get_secret_value(self) -> str: ...


def _secret(value: object) -> TypeGuard[_Secret]:
    return hasattr(value, "get_secret_value")


class StreamFailed(Exception):
    """The connection failed, was cut, or spoke no HTTP/1.1 we understand."""


class Lines(list[str]):
    """A batch of lines (no newline). ``plain``: every character is printable ASCII, so there is nothing to
    clean (checked on the bytes as they arrive, which costs next to nothing)."""

    __slots__ = ("plain",)

    def __init__(self, lines: Iterable[str] = (), plain: bool = False) -> None:
        super().__init__(lines)
        self.plain = plain


class Head:
    """The response's status, and its body (at most 64 KiB) when the status is an error."""

    def __init__(self, status: int, reason: str, body: bytes = b"") -> None:
        self.status, self.reason, self.body = status, reason, body


class _Protocol(asyncio.Protocol):
    def __init__(self, owner: LineStream) -> None:
        self.s = owner

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # create_connection's transport is a stream's (it reads and writes); typeshed declares the base class
        self.s._transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.s._feed(data)

    def eof_received(self) -> bool | None:
        self.s._eof()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.s._lost(exc)


class LineStream:
    def __init__(self, *, max_pending: int = _MAX_PENDING, gap: float = _GAP, small: int = _SMALL) -> None:
        self._loop = asyncio.get_running_loop()
        self.max_pending, self.gap, self.small = max_pending, gap, small
        self._transport: asyncio.Transport | None = None
        self._head: asyncio.Future[Head] = self._loop.create_future()
        self._head.add_done_callback(_retrieved)
        self._buf = b""  # bytes not parsed yet (the head, a chunk-size line)
        self._status: Head | None = None
        self._mode = ""  # "chunked", "length" or "close": how the body ends
        self._left = 0  # bytes left of the current chunk (chunked) or of the body (length)
        self._chunk_end = False  # a chunk's data is in; its CRLF is next
        self._trailers = False  # the last chunk came; trailers until an empty line
        self._error_body: list[bytes] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._decode = self._decoder.decode
        self._rest = ""  # the start of a line whose end has not come yet
        self._rest_plain = True
        self._lines = Lines(plain=True)  # the batch being gathered; .plain: every line of it so far
        self._paused = False
        self._done = False  # the body is complete (or the connection is gone)
        self._error: Exception | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    @classmethod
    async def open(
        cls,
        url: str,
        headers: Mapping[str, str | _Secret],
        verify: ssl.SSLContext | bool,
        *,
        connect_timeout: float = 15.0,
        max_pending: int = _MAX_PENDING,
        gap: float = _GAP,
        small: int = _SMALL,
    ) -> tuple[LineStream, Head]:
        """Connect, send the GET and read the response's head (on an error status, its body too, and the
        stream is closed). Raises ``StreamFailed`` when it cannot. A header's value may be a ``SecretStr``
        (the bearer token): it is revealed only inside the bytes written, never held in a local here."""
        s = cls(max_pending=max_pending, gap=gap, small=small)
        u = urlsplit(url)
        host = u.hostname or ""
        tls: ssl.SSLContext | None = None
        if u.scheme == "https":
            if isinstance(verify, ssl.SSLContext):
                tls = verify
            else:
                tls = ssl.create_default_context()
                if verify is False:
                    tls.check_hostname = False
                    tls.verify_mode = ssl.CERT_NONE
        port = u.port or (443 if tls else 80)
        target = (u.path or "/") + (f"?{u.query}" if u.query else "")
        netloc = f"[{host}]" if ":" in host else host
        lines = [
            f"GET {target} HTTP/1.1",
            f"Host: {netloc}:{port}",
            "User-Agent: ncui",
            "Accept: */*",
            "Connection: close",
            *(f"{k}: {v}" for k, v in headers.items() if not _secret(v)),
        ]
        secrets = [(k, v) for k, v in headers.items() if _secret(v)]
        try:
            await within(s._connect(host, port, tls), connect_timeout)
            assert s._transport is not None
            s._transport.write(
                (
                    "\r\n".join(lines) + "".join(f"\r\n{k}: {v.get_secret_value()}" for k, v in secrets) + "\r\n\r\n"
                ).encode("latin-1")
            )
            head = await within(asyncio.shield(s._head), connect_timeout)
        except (OSError, asyncio.TimeoutError) as e:
            s.close()
            raise StreamFailed(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__) from None
        except BaseException:
            s.close()
            raise
        if head.status >= 400:
            s.close()
        return s, head

    async def _connect(self, host: str, port: int, tls: ssl.SSLContext | None) -> None:
        await self._loop.create_connection(
            lambda: _Protocol(self), host, port, ssl=tls, server_hostname=host if tls else None
        )

    # ---- parsing (called by the protocol) -----------------------------------------------------------

    def _fail(self, message: str) -> None:
        self._finish(StreamFailed(message))
        if self._transport is not None:
            self._transport.abort()

    def _finish(self, error: Exception | None = None) -> None:
        if self._done:
            return
        self._done = True
        if error is not None and not self._closed:
            self._error = error
        if not self._head.done():
            if self._status is not None:  # an error status whose body is in
                self._status.body = b"".join(self._error_body)[:_HEAD_MAX]
                self._head.set_result(self._status)
            else:
                self._head.set_exception(error or StreamFailed("the server closed the connection"))
        elif self._error is None and not self._closed:
            self._take_text(self._decode(b"", True), self._rest_plain, final=True)
        self._wake()

    def _feed(self, data: bytes) -> None:
        if self._done or self._closed:
            return
        if self._status is None:
            self._buf += data
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self._buf) > _HEAD_MAX:
                    self._fail("the response's head is too long")
                return
            if not self._parse_head(self._buf[:end].decode("latin-1")):
                return
            data, self._buf = self._buf[end + 4 :], b""
            if not data:
                return
        if self._mode == "chunked":
            self._chunked(data)
        elif self._mode == "length":
            piece = data[: self._left]
            self._left -= len(piece)
            self._body(piece)
            if self._left <= 0:
                self._finish()
        else:
            self._body(data)

    def _parse_head(self, text: str) -> bool:
        lines = text.split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            self._fail("the server's answer is not HTTP/1.1")
            return False
        status, reason = int(parts[1]), parts[2] if len(parts) > 2 else ""
        fields: dict[str, str] = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            fields[k.strip().lower()] = v.strip()
        if "chunked" in fields.get("transfer-encoding", "").lower():
            self._mode = "chunked"
        elif fields.get("content-length", "").isdigit():
            self._mode, self._left = "length", int(fields["content-length"])
        else:
            self._mode = "close"
        self._status = Head(status, reason)
        if status < 400:
            self._head.set_result(self._status)
        if self._mode == "length" and self._left == 0:
            self._finish()
            return False
        return True

    def _chunked(self, data: bytes) -> None:
        buf = self._buf + data if self._buf else data
        self._buf = b""
        i, n = 0, len(buf)
        while i < n:
            if self._left:
                piece = buf[i : i + self._left]
                self._left -= len(piece)
                i += len(piece)
                self._body(piece)
                if not self._left:
                    self._chunk_end = True
                continue
            j = buf.find(b"\r\n", i)
            if j < 0:
                if n - i > 1024:
                    self._fail("a chunk of the response is malformed")
                    return
                self._buf = buf[i:]
                return
            line = buf[i:j]
            i = j + 2
            if self._chunk_end:  # the CRLF after a chunk's data
                self._chunk_end = False
                if line:
                    self._fail("a chunk of the response is malformed")
                    return
                continue
            if self._trailers:
                if not line:
                    self._finish()
                    return
                continue
            digits = line.split(b";", 1)[0].strip()
            if not _HEX.fullmatch(digits):  # int() would take "-5", "+5", "0x5"
                self._fail("a chunk of the response is malformed")
                return
            size = int(digits, 16)
            if size == 0:
                self._trailers = True
            else:
                self._left = size

    def _body(self, piece: bytes) -> None:
        if not piece:
            return
        status = self._status
        if status is not None and status.status >= 400:
            if sum(map(len, self._error_body)) < _HEAD_MAX:
                self._error_body.append(piece)
            return
        # plain: printable ASCII, and no bytes of a character cut at the last piece's end are still waiting
        plain = piece.isascii() and not piece.translate(None, _PLAIN) and not self._decoder.getstate()[0]
        self._take_text(self._decode(piece), plain)

    def _take_text(self, text: str, plain: bool, final: bool = False) -> None:
        if self._rest:
            text = self._rest + text
            plain = plain and self._rest_plain
        parts = text.split("\n")
        self._rest = "" if final else parts.pop()
        self._rest_plain = plain
        if final and parts and not parts[-1]:
            parts.pop()
        if not parts:
            return
        self._lines.extend(parts)
        if not plain:
            self._lines.plain = False
        if len(self._lines) >= self.max_pending and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()  # the server waits until the consumer has taken these
        self._wake()

    def _eof(self) -> None:
        if self._mode == "close" and self._status is not None:
            self._finish()
        elif not self._done:
            self._finish(StreamFailed("the server cut the stream"))

    def _lost(self, exc: Exception | None) -> None:
        if exc is not None and not self._done:
            self._finish(StreamFailed(f"{type(exc).__name__}: {exc}"))
        else:
            self._eof()

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    # ---- the consumer ---------------------------------------------------------------------------------

    async def batches(self, read_timeout: float | None = None) -> AsyncIterator[Lines]:
        """The lines as they arrive, in batches; raises ``StreamFailed`` when the connection fails, and
        ``asyncio.TimeoutError`` when nothing came for ``read_timeout`` seconds."""
        last_small = False
        while True:
            if last_small and self.gap > 0 and not self._done:
                await asyncio.sleep(self.gap)  # a slow log: gather a few chunks before the next turn
            if self._lines:
                batch, self._lines = self._lines, Lines(plain=True)  # handed over whole, not copied
                if self._paused and self._transport is not None:
                    self._paused = False
                    self._transport.resume_reading()
                last_small = len(batch) < self.small
                yield batch
                continue
            if self._done:
                if self._error is not None:
                    raise self._error
                return
            self._waiter = self._loop.create_future()
            try:
                if read_timeout is None:
                    await self._waiter
                else:
                    await within(self._waiter, read_timeout)
            finally:
                self._waiter = None

    def close(self) -> None:
        self._closed = True
        self._lines = Lines(plain=True)
        if self._transport is not None:
            self._transport.abort()
        self._done = True
        if not self._head.done():
            self._head.set_exception(StreamFailed("closed"))
        self._wake()


def _retrieved(fut: asyncio.Future[Head]) -> None:
    """An error head nobody awaits any more (the opener was cancelled) is not an error to report."""
    if not fut.cancelled():
        fut.exception()
