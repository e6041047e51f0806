"""ncui.kube.linestream over real loopback TCP (and TLS): a server in the test writes crafted HTTP/1.1 bytes.

No mocks: every stream is a real ``asyncio.start_server`` on 127.0.0.1, port 0. Where a test must know that
the client has read a given piece before the server writes the next one, it waits on a condition of the
stream with a deadline, never on a fixed sleep.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import fcntl
import json
import os
import socket
import ssl
import sys
import termios
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from ncui.kube.linestream import Head, Lines, LineStream, StreamFailed
from ncui.sim.kube.tls import self_signed

from .waits import until as kc_until

DEADLINE = 3.0  # seconds: no single step of these tests should come anywhere near this
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
CLOSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
END = b"0\r\n\r\n"


def frame(piece: bytes, ext: bytes = b"") -> bytes:
    """One chunk of a chunked body."""
    return b"%x%s\r\n%s\r\n" % (len(piece), ext, piece)


def chunked(data: bytes, size: int) -> bytes:
    """``data`` framed in chunks of ``size`` bytes, and the last chunk."""
    return b"".join(frame(data[i : i + size]) for i in range(0, len(data), size)) + END


def length_head(n: int, status: bytes = b"200 OK") -> bytes:
    return b"HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % (status, n)


async def until(cond: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    """Wait until ``cond()`` holds, failing after ``timeout`` seconds (``waits.until``, ``what`` second)."""
    await kc_until(cond, timeout, what)


Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Server:
    """A raw HTTP/1.1 server: reads each request's head (kept in ``requests``), then runs ``handler``."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler, self.tls = handler, tls
        self.requests: list[bytes] = []
        self.finished = asyncio.Event()  # a handler returned (or saw the client go)
        self.errors: list[BaseException] = []
        self._tasks: set[asyncio.Task] = set()
        self._writers: list[asyncio.StreamWriter] = []
        self.port = 0

    def url(self, path: str = "/log") -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}{path}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.append(writer)
        try:
            self.requests.append(await reader.readuntil(b"\r\n\r\n"))
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away first: some tests do exactly that
        except asyncio.CancelledError:
            raise
        except BaseException as e:  # pragma: no cover - shown by the test that checks ``errors``
            self.errors.append(e)
        finally:
            self.finished.set()
            writer.close()

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self._server.close()
        for w in self._writers:
            w.close()
        for t in list(self._tasks):
            t.cancel()
        for t in list(self._tasks):
            with contextlib.suppress(BaseException):
                await t
        await asyncio.wait_for(self._server.wait_closed(), DEADLINE)
        assert not self.errors, self.errors


def writes(*pieces: bytes, hold: bool = False) -> Handler:
    """A handler that writes ``pieces`` in turn; with ``hold`` it then keeps the connection open until the
    client closes it (a follow stream, or a body whose end is framed, not the connection's end)."""

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for p in pieces:
            writer.write(p)
            await writer.drain()
        if hold:
            await reader.read()  # b"" once the client has closed its side

    return handler


def unread(stream: LineStream) -> int:
    """Bytes that wait in the client's socket, not read yet (FIONREAD)."""
    assert stream._transport is not None
    buf = array.array("i", [0])
    fcntl.ioctl(stream._transport.get_extra_info("socket").fileno(), termios.FIONREAD, buf)
    return buf[0]


async def collect(stream: LineStream, read_timeout: float = DEADLINE) -> list[Lines]:
    out = []
    async for batch in stream.batches(read_timeout=read_timeout):
        assert isinstance(batch, Lines)
        out.append(batch)
    return out


def flat(batches: list[Lines]) -> list[str]:
    return [line for b in batches for line in b]


async def fetch(*pieces: bytes, hold: bool = False, **kw) -> tuple[Head, list[Lines]]:
    """Open a stream against a server writing ``pieces``; all its batches."""
    async with Server(writes(*pieces, hold=hold)) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True, connect_timeout=DEADLINE, **kw)
        try:
            batches = await asyncio.wait_for(collect(stream), DEADLINE)
        finally:
            stream.close()
    return head, batches


# ---- the request ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, target",
    [
        ("/path?q=1", "/path?q=1"),
        ("", "/"),
        (
            "/api/v1/namespaces/ns/pods/p/log?follow=true&tailLines=5",
            "/api/v1/namespaces/ns/pods/p/log?follow=true&tailLines=5",
        ),
    ],
)
async def test_request_line_and_headers(path: str, target: str) -> None:
    async with Server(writes(length_head(3) + b"ok\n")) as srv:
        stream, head = await LineStream.open(
            srv.url(path), {"Authorization": "Bearer dummy-token-123", "X-Extra": "yes"}, True
        )
        assert head.status == 200 and head.reason == "OK"
        assert flat(await collect(stream)) == ["ok"]
        stream.close()
    assert len(srv.requests) == 1
    req = srv.requests[0].decode("latin-1")
    assert req.endswith("\r\n\r\n")
    lines = req[:-4].split("\r\n")
    assert lines[0] == f"GET {target} HTTP/1.1"
    fields = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    assert fields["host"] == f"127.0.0.1:{srv.port}"
    assert fields["authorization"] == "Bearer dummy-token-123"
    assert fields["x-extra"] == "yes"


# ---- chunked bodies --------------------------------------------------------------------------------------


async def test_chunked_split_mid_line_and_mid_utf8_across_chunks_and_writes() -> None:
    text = [
        "plain ascii line",
        "héllo wörld",
        "日本語のログ行です",
        "emoji 🎉 party 🎊 ok",
        "",
        "x" * 50,
        "ünïcödé everywhere ✓",
        "café au lait",
        "after the split ½ ¾",
        "last line",
    ]
    data = ("\n".join(text) + "\n").encode()
    size = 7  # 7-byte chunks: boundaries fall mid-line and inside 2-, 3- and 4-byte characters
    pieces = [data[i : i + size] for i in range(0, len(data), size)]

    def bad_utf8(p: bytes) -> bool:
        try:
            p.decode()
        except UnicodeDecodeError:
            return True
        return False

    assert sum(map(bad_utf8, pieces)) >= 5  # the test's own premise: many chunks cut a character
    wire = b"".join(frame(p) for p in pieces) + END
    # Cut the TCP stream between the two bytes of the "é" of "café": inside a chunk's data.
    k = data.index("café".encode()) + len(b"caf") + 1
    chunk, off = divmod(k, size)
    assert off != 0  # inside the chunk's data, not at its edge
    at = sum(len(frame(p)) for p in pieces[:chunk]) + len(b"%x\r\n" % len(pieces[chunk])) + off
    first, second = wire[:at], wire[at:]
    assert first.endswith(b"\xc3") and second.startswith(b"\xa9")

    got: list[Lines] = []
    go = asyncio.Event()

    async def handler(reader, writer) -> None:
        writer.write(CHUNKED_HEAD + first)
        await writer.drain()
        await go.wait()
        writer.write(second)
        await writer.drain()
        await reader.read()

    async with Server(handler) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True, gap=0)
        assert head.status == 200
        consumer = asyncio.create_task(collect(stream))
        # The client has read the first write whole: "caf" waits for its line's end, the 0xC3 in the decoder.
        await until(lambda: stream._rest == "caf", "the first write to be read up to mid-character")
        await until(lambda: stream._waiter is not None, "the consumer to wait for more")
        assert not consumer.done()
        go.set()
        got = await asyncio.wait_for(consumer, DEADLINE)
        stream.close()
    assert flat(got) == text  # exact: nothing lost, nothing doubled, nothing replaced
    assert len(got) >= 2  # the first write's lines came before the second write was sent
    assert not any(b.plain for b in got if any(not line.isascii() for line in b))


async def test_final_line_without_newline_chunked() -> None:
    head, batches = await fetch(
        CHUNKED_HEAD + frame(b"one\ntw") + frame(b"o\nno newline at") + frame(b" the end") + END, hold=True
    )
    assert flat(batches) == ["one", "two", "no newline at the end"]


async def test_chunk_extensions_and_trailers() -> None:
    # The server keeps the connection open: the last chunk and the trailers' empty line end the stream.
    body = (
        frame(b"hello", b";ext=1")
        + frame(b" world\nsecond", b";a=b;c")
        + frame(b" line\n", b' ; x="y"')
        + b"0;last=1\r\nX-Trailer: yes\r\nX-Other: 2\r\n\r\n"
    )
    head, batches = await fetch(CHUNKED_HEAD + body, hold=True)
    assert head.status == 200
    assert flat(batches) == ["hello world", "second line"]


async def test_uppercase_hex_chunk_sizes_and_lf_only_lines() -> None:
    data = b"".join(b"line %03d %s\n" % (i, b"y" * (i % 40)) for i in range(300))
    pieces = [data[i : i + 0x1AF] for i in range(0, len(data), 0x1AF)]
    body = b"".join(b"%X\r\n%s\r\n" % (len(p), p) for p in pieces) + END
    assert b"1AF\r\n" in body
    head, batches = await fetch(CHUNKED_HEAD + body)
    assert flat(batches) == [f"line {i:03d} {'y' * (i % 40)}" for i in range(300)]
    assert all(b.plain for b in batches)


# ---- .plain ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body, lines, plain",
    [
        (b"hello world ~!@#$%^&*()_+{}|:<>?\nsecond line\n", ["hello world ~!@#$%^&*()_+{}|:<>?", "second line"], True),
        (b"\x1b[31mred\x1b[0m\n", ["\x1b[31mred\x1b[0m"], False),
        ("héllo\n".encode(), ["héllo"], False),
        (b"tab\there\n", ["tab\there"], False),
        (b"del\x7f\n", ["del\x7f"], False),
        (b"crlf line\r\n", ["crlf line\r"], False),  # only \n splits: the \r stays in its line
        (b"bad \xff byte\n", ["bad \ufffd byte"], False),
    ],
    ids=["ascii", "escape", "non-ascii", "tab", "del", "cr", "invalid-utf8"],
)
async def test_plain_flag(body: bytes, lines: list[str], plain: bool) -> None:
    head, batches = await fetch(CHUNKED_HEAD + frame(body) + END)
    assert flat(batches) == lines
    assert batches and all(b.plain is plain for b in batches)


async def test_plain_flag_per_batch_and_partial_line_carries_its_taint() -> None:
    # A non-plain start of a line ("\x1b[1m") waits in one chunk; its plain ASCII end comes in the next.
    head, batches = await fetch(CHUNKED_HEAD + frame(b"\x1b[1mbold") + frame(b" end\n") + END)
    assert flat(batches) == ["\x1b[1mbold end"]
    assert not any(b.plain for b in batches)


async def test_plain_false_for_replacement_char_from_invalid_sequence_cut_at_a_chunk() -> None:
    # 0xE2 opens a 3-byte sequence that "x" does not continue: the decoder gives "\ufffdx" on the second piece,
    # whose bytes are all printable ASCII, and the first piece left no text behind to carry the taint.
    head, batches = await fetch(CHUNKED_HEAD + frame(b"\xe2") + frame(b"x\n") + END)
    assert flat(batches) == ["\ufffdx"]
    assert not any(b.plain for b in batches)


# ---- Content-Length and read-until-close bodies --------------------------------------------------------


@pytest.mark.parametrize("mode", ["chunked", "length", "close"])
async def test_body_framings_deliver_every_line_and_the_last_unterminated_one(mode: str) -> None:
    data = "first\nsecond ✓\n\nfourth\nno newline".encode()
    if mode == "chunked":
        wire, hold = CHUNKED_HEAD + chunked(data, 5), True
    elif mode == "length":
        wire, hold = length_head(len(data)) + data, True  # the server stays: the length alone ends it
    else:
        wire, hold = CLOSE_HEAD + data, False
    head, batches = await fetch(wire, hold=hold)
    assert head.status == 200
    assert flat(batches) == ["first", "second ✓", "", "fourth", "no newline"]


async def test_content_length_ignores_bytes_past_the_length() -> None:
    data = b"abc\ndef\n"
    head, batches = await fetch(length_head(len(data)) + data + b"GARBAGE AFTER\n", hold=True)
    assert flat(batches) == ["abc", "def"]


async def test_content_length_zero_is_an_empty_stream() -> None:
    head, batches = await fetch(length_head(0), hold=True)
    assert head.status == 200
    assert batches == []


async def test_content_length_cut_short_fails() -> None:
    async with Server(writes(length_head(100) + b"only\nthis\n")) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True)
        got: list[str] = []
        with pytest.raises(StreamFailed):
            async for batch in stream.batches(read_timeout=DEADLINE):
                got.extend(batch)
        stream.close()
    assert got == ["only", "this"]


async def test_read_until_close_over_several_writes() -> None:
    pieces = [CLOSE_HEAD] + [b"part %d of a li" % i + b"ne\n" for i in range(50)]
    head, batches = await fetch(*pieces)
    assert flat(batches) == [f"part {i} of a line" for i in range(50)]


# ---- error statuses ----------------------------------------------------------------------------------------


ERROR_JSON = json.dumps(
    {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": 'pods "nope" not found',
        "reason": "NotFound",
        "code": 404,
    }
).encode()


@pytest.mark.parametrize("mode", ["length", "chunked", "close"])
async def test_404_returns_head_with_json_body_and_is_closed(mode: str) -> None:
    if mode == "length":
        wire = (
            b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(ERROR_JSON)
            + ERROR_JSON
        )
    elif mode == "chunked":
        wire = (
            b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            + chunked(ERROR_JSON, 17)
        )
    else:
        wire = b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n\r\n" + ERROR_JSON
    async with Server(writes(wire, hold=mode != "close")) as srv:
        stream, head = await asyncio.wait_for(LineStream.open(srv.url(), {}, True), DEADLINE)
        assert head.status == 404 and head.reason == "Not Found"
        assert head.body == ERROR_JSON
        assert json.loads(head.body)["reason"] == "NotFound"
        assert stream._closed
        assert await collect(stream) == []  # no lines: the error body is the head's
        if mode != "close":
            await asyncio.wait_for(srv.finished.wait(), DEADLINE)  # and the connection was let go


async def test_error_body_is_cut_at_64_kib() -> None:
    big = b"E" * 100_000
    async with Server(writes(b"HTTP/1.1 500 Internal Server Error\r\n\r\n" + big)) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True)
    assert head.status == 500 and head.reason == "Internal Server Error"
    assert head.body == big[: 1 << 16]


async def test_401_without_body() -> None:
    async with Server(writes(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", hold=True)) as srv:
        stream, head = await asyncio.wait_for(LineStream.open(srv.url(), {}, True), DEADLINE)
    assert (head.status, head.reason, head.body) == (401, "Unauthorized", b"")


# ---- failures -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cut",
    [b"64\r\nc\nd\n", b"", frame(b"c\n") + frame(b"d\n") + b"5"],
    ids=["mid-chunk-data", "at-chunk-edge", "mid-size-line"],
)
async def test_chunked_stream_cut_raises_after_the_lines_that_came(cut: bytes) -> None:
    sent = CHUNKED_HEAD + frame(b"a\nb\n") + cut
    want = ["a", "b"] + (["c", "d"] if cut else [])
    async with Server(writes(sent)) as srv:  # the handler returns and closes: no last chunk
        stream, head = await LineStream.open(srv.url(), {}, True, gap=0)
        assert head.status == 200
        got: list[str] = []
        with pytest.raises(StreamFailed):
            async for batch in stream.batches(read_timeout=DEADLINE):
                got.extend(batch)
        stream.close()
    assert got == want


@pytest.mark.parametrize(
    "bad",
    [b"zz\r\n", b"5\r\nhelloXX\r\n", b"4 4\r\nabcd\r\n", b"1" * 2000],
    ids=["not-hex", "no-crlf-after-data", "space-in-size", "size-line-too-long"],
)
async def test_malformed_chunk_raises(bad: bytes) -> None:
    async with Server(writes(CHUNKED_HEAD + frame(b"good line\n") + bad, hold=True)) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True)
        got: list[str] = []
        with pytest.raises(StreamFailed, match="malformed"):
            async for batch in stream.batches(read_timeout=DEADLINE):
                got.extend(batch)
        stream.close()
        await asyncio.wait_for(srv.finished.wait(), DEADLINE)  # the client dropped the connection
    assert got == ["good line"]


_CHILD = r"""
import asyncio, sys
from ncui.kube.linestream import LineStream, StreamFailed

async def main():
    opened = asyncio.Event()
    async def handler(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        await writer.drain()
        await opened.wait()
        writer.write(sys.argv[1].encode("latin-1"))
        await writer.drain()
        await reader.read()
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    stream, head = await LineStream.open(f"http://127.0.0.1:{port}/log", {}, True)
    print("ready", flush=True)
    opened.set()
    try:
        async for batch in stream.batches(read_timeout=5):
            pass
        print("ended", flush=True)
    except StreamFailed:
        print("StreamFailed", flush=True)

asyncio.run(main())
"""


async def test_negative_chunk_size_raises_instead_of_hanging() -> None:
    # In a child process: the bug freezes the event loop it runs on, so only a process can be cut off.
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _CHILD, "-5\r\nhello\r\n0\r\n\r\n", cwd=root, env=env, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    try:
        assert await asyncio.wait_for(proc.stdout.readline(), 15) == b"ready\n"
        try:
            result = await asyncio.wait_for(proc.stdout.readline(), 1.0)
        except asyncio.TimeoutError:
            pytest.fail("the stream hung on a chunk size of -5")
        assert result == b"StreamFailed\n"
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


@pytest.mark.parametrize(
    "answer, hold, match",
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", True, "not HTTP"),
        (b"HTTP/1.1 abc OK\r\n\r\n", True, "not HTTP"),
        (b"<html>hello</html>", False, "closed the connection|cut"),
        (b"X" * 70_000, True, "too long"),
        (b"", False, "cut"),
    ],
    ids=["ssh-banner", "non-numeric-status", "no-head-then-close", "endless-head", "closed-at-once"],
)
async def test_non_http_answer_fails_open(answer: bytes, hold: bool, match: str) -> None:
    async with Server(writes(answer, hold=hold)) as srv:
        # connect_timeout is long: the failure must come from the answer itself, well before it.
        with pytest.raises(StreamFailed, match=match):
            await asyncio.wait_for(LineStream.open(srv.url(), {}, True, connect_timeout=30), DEADLINE)
        if hold:
            await asyncio.wait_for(srv.finished.wait(), DEADLINE)  # the client let go of the connection


async def test_connection_refused_fails_open() -> None:
    with socket.socket() as s:  # bound, never listening: nobody can take the port meanwhile, and it refuses
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        t0 = time.monotonic()
        with pytest.raises(StreamFailed, match="ConnectionRefused|Errno"):
            await LineStream.open(f"http://127.0.0.1:{port}/log", {}, True, connect_timeout=30)
        assert time.monotonic() - t0 < DEADLINE


async def test_silent_server_times_out_open() -> None:
    async def silent(reader, writer) -> None:
        await reader.read()

    async with Server(silent) as srv:
        t0 = time.monotonic()
        with pytest.raises(StreamFailed, match="Timeout"):
            await LineStream.open(srv.url(), {}, True, connect_timeout=0.2)
        assert 0.15 < time.monotonic() - t0 < DEADLINE
        await asyncio.wait_for(srv.finished.wait(), DEADLINE)


async def test_read_timeout_on_a_silent_stream() -> None:
    async with Server(writes(CHUNKED_HEAD + frame(b"one\n"), hold=True)) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True, gap=0)
        got: list[str] = []
        with pytest.raises(asyncio.TimeoutError):
            async for batch in stream.batches(read_timeout=0.2):
                got.extend(batch)
        stream.close()
    assert got == ["one"]


# ---- close, pacing and backpressure --------------------------------------------------------------------------


async def test_close_while_waiting_ends_iteration_promptly() -> None:
    async with Server(writes(CHUNKED_HEAD + frame(b"hello\n"), hold=True)) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True, gap=0)
        got: list[str] = []

        async def consume() -> None:
            async for batch in stream.batches():  # a follow stream: no read timeout
                got.extend(batch)

        task = asyncio.create_task(consume())
        await until(lambda: got == ["hello"] and stream._waiter is not None, "the consumer to wait for more")
        assert not task.done() and not srv.finished.is_set()
        t0 = time.monotonic()
        stream.close()
        await asyncio.wait_for(task, 1.0)  # ends, and without an error (await would raise it)
        assert time.monotonic() - t0 < 1.0
        await asyncio.wait_for(srv.finished.wait(), DEADLINE)  # the server saw the connection closed
    assert got == ["hello"]
    assert task.exception() is None


async def test_a_consumer_cancelled_as_its_bytes_arrive_is_cancelled() -> None:
    """A watcher stopped (its task cancelled) in the very turn its next bytes arrive ends there. On Python 3.10/3.11
    ``asyncio.wait_for`` returned the bytes instead and lost the cancellation: the stopped watcher went on reading
    for its 330 s read timeout (CI: test_drop_ends_streams_and_long_run and the sign-in gate test hung)."""
    async with Server(writes(CHUNKED_HEAD + frame(b"hello\n"), hold=True)) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True, gap=0)
        got: list[str] = []

        async def consume() -> None:
            async for batch in stream.batches(read_timeout=330):  # a watch's: its timeoutSeconds + 30
                got.extend(batch)

        task = asyncio.create_task(consume())
        await until(lambda: got == ["hello"] and stream._waiter is not None, "the consumer to wait for more")
        stream._wake()  # bytes came (the protocol wakes the consumer) ...
        task.cancel()  # ... and, in the same turn of the loop, the watcher is stopped
        done, _ = await asyncio.wait({task}, timeout=DEADLINE)
        stream.close()
        assert task in done and task.cancelled()


async def test_close_before_consuming_drops_pending_lines() -> None:
    async with Server(writes(CHUNKED_HEAD + frame(b"a\nb\n"), hold=True)) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True)
        await until(lambda: stream._lines == ["a", "b"], "the lines to be read")
        stream.close()
        assert await asyncio.wait_for(collect(stream), DEADLINE) == []
        await asyncio.wait_for(srv.finished.wait(), DEADLINE)


async def test_gap_after_a_small_batch_gathers_the_next_writes() -> None:
    gap = 0.25
    go = asyncio.Event()

    async def handler(reader, writer) -> None:
        writer.write(CHUNKED_HEAD + frame(b"a\n"))
        await writer.drain()
        await go.wait()
        for piece in (frame(b"b\n"), frame(b"c\n"), END):  # three writes, each sent at once
            writer.write(piece)
            await writer.drain()
        await reader.read()

    async with Server(handler) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True, gap=gap, small=1000)
        it = stream.batches(read_timeout=DEADLINE).__aiter__()
        first = await asyncio.wait_for(it.__anext__(), DEADLINE)
        t1 = time.monotonic()
        go.set()
        second = await asyncio.wait_for(it.__anext__(), DEADLINE)
        waited = time.monotonic() - t1
        with pytest.raises(StopAsyncIteration):
            await asyncio.wait_for(it.__anext__(), DEADLINE)
        await it.aclose()
        stream.close()
    assert first == ["a"]
    assert second == ["b", "c"]  # gathered in one batch: the consumer slept through the writes
    assert waited >= gap * 0.9


async def test_no_gap_after_a_large_batch() -> None:
    go = asyncio.Event()

    async def handler(reader, writer) -> None:
        writer.write(CHUNKED_HEAD + frame(b"a\nb\nc\n"))
        await writer.drain()
        await go.wait()
        writer.write(frame(b"d\n"))
        await writer.drain()
        await reader.read()

    async with Server(handler) as srv:
        # small=3: a 3-line batch is not small, so no wait (a gap of 30 s would blow the deadline).
        stream, head = await LineStream.open(srv.url(), {}, True, gap=30, small=3)
        it = stream.batches().__aiter__()
        assert await asyncio.wait_for(it.__anext__(), DEADLINE) == ["a", "b", "c"]
        go.set()
        assert await asyncio.wait_for(it.__anext__(), DEADLINE) == ["d"]
        await it.aclose()
        stream.close()


async def test_backpressure_pauses_reading_and_loses_nothing() -> None:
    n = 20_000
    lines = [f"{i:06d} " + "z" * 50 for i in range(n)]  # ~1.2 MB: more than a few socket reads
    data = ("\n".join(lines) + "\n").encode()
    wire = CHUNKED_HEAD + chunked(data, 4093)
    written = asyncio.Event()

    async def handler(reader, writer) -> None:
        for i in range(0, len(wire), 65536):
            writer.write(wire[i : i + 65536])
            await writer.drain()  # waits while the client does not read
        written.set()
        await reader.read()

    async with Server(handler) as srv:
        stream, head = await LineStream.open(srv.url(), {}, True, max_pending=100)
        # Nobody consumes yet: reading pauses once 100 lines wait, long before the whole body is in.
        await until(lambda: stream._paused, "reading to pause")
        held = len(stream._lines)
        assert 100 <= held < n
        # And it really stopped reading: the server's bytes pile up in the socket, the lines do not grow.
        await until(lambda: unread(stream) >= 32768, "the server's bytes to wait unread in the socket")
        for _ in range(20):  # loop turns (not a wait for time): a reading transport would take those bytes
            await asyncio.sleep(0)
        assert unread(stream) >= 32768
        assert len(stream._lines) == held and stream._paused and not stream._done
        got: list[str] = []
        async for batch in stream.batches(read_timeout=DEADLINE):
            got.extend(batch)
        stream.close()
        assert written.is_set()  # resumed: the server could write it all
    assert got == lines  # every line, once, in order


# ---- TLS ------------------------------------------------------------------------------------------------------


@pytest.fixture
def tls_pair(tmp_path: Path) -> tuple[ssl.SSLContext, bytes]:
    cert, key = self_signed("127.0.0.1")
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    return server, cert


async def test_tls_stream_with_pinned_ca(tls_pair) -> None:
    server_ctx, cert = tls_pair
    verify = ssl.create_default_context(cadata=cert.decode())
    text = ["over tls", "ünïcödé ✓ 🎉", "x" * 3000, "last"]
    data = ("\n".join(text) + "\n").encode()
    async with Server(writes(CHUNKED_HEAD + chunked(data, 11), hold=True), tls=server_ctx) as srv:
        assert srv.url().startswith("https://127.0.0.1:")
        stream, head = await LineStream.open(
            srv.url("/path?q=1"), {"Authorization": "Bearer dummy-tls-token"}, verify, connect_timeout=DEADLINE
        )
        assert head.status == 200
        batches = await asyncio.wait_for(collect(stream), DEADLINE)
        stream.close()
    assert flat(batches) == text
    req = srv.requests[0].decode("latin-1").split("\r\n")
    assert req[0] == "GET /path?q=1 HTTP/1.1"
    assert "Authorization: Bearer dummy-tls-token" in req
    assert f"Host: 127.0.0.1:{srv.port}" in req


async def test_tls_verify_false_accepts_and_default_verify_rejects_self_signed(tls_pair) -> None:
    server_ctx, _ = tls_pair
    async with Server(writes(length_head(3) + b"ok\n", hold=True), tls=server_ctx) as srv:
        stream, head = await LineStream.open(srv.url(), {}, False)
        assert flat(await collect(stream)) == ["ok"]
        stream.close()
        with pytest.raises(StreamFailed, match="SSL|certificate"):
            await asyncio.wait_for(LineStream.open(srv.url(), {}, True, connect_timeout=30), DEADLINE)
