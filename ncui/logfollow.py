"""Following a log, whatever carries it: batched delivery, a bounded buffer, resumption without loss or repeats.

``FollowCore`` is the transport-independent part of a log follower; a follower subclasses it with its own
``run()`` (the Kubernetes pod log in ``kube/logs.py``, a container's ``docker logs`` or a file's ``tail -F``
over ssh in ``remote/node.py``). A timestamped log (``timestamps=true``, ``docker logs -t``) resumes from
the last timestamp it saw: the new stream starts at that timestamp (``sinceTime``, ``--since``) and the core
skips what it already delivered (lines with an earlier timestamp, and as many lines with that same
timestamp and text as it already had). A log without timestamps (a file) resumes by line count.

Lines are cleaned of terminal control sequences, delivered in batches (never a call per line): at most
every ``batch_interval`` seconds, every ``busy_interval`` while the log is fast, and at once when
``batch_lines`` are waiting. The newest ``keep`` lines stay in a ring buffer.
No Textual here.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import TypedDict

from .backoff import RetryLoop
from .textsafe import clean, unsafe

__all__ = [
    "FollowCore",
    "FollowOptions",
    "LossCurve",
    "LOSS",
    "parse_loss",
    "loss_unit",
    "clean_line",
    "split_timestamp",
    "split_entry",
    "entry_text",
    "entry_texts",
    "ts_key",
    "Entries",
]

_NUM = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|nan|inf"
# The loss lines ncui charts: nanoGPT's ``iter 100: loss 2.4712, time 380.12ms`` (optionally ``, mfu 12.3%``)
# and the Post-train tune's ``epoch 1 step 40/620: loss 1.2345, lr 1.87e-04`` (its step counts across epochs).
LOSS = re.compile(
    rf"\biter (?P<iter>\d+): loss (?P<loss>{_NUM}), time (\d+(?:\.\d+)?)ms(?:, mfu (-?\d+(?:\.\d+)?)%)?"
    rf"|\bepoch \d+ step (?P<step>\d+)(?:/\d+)?: loss (?P<sloss>{_NUM})"
)


def parse_loss(text: str) -> tuple[int, float] | None:
    """A loss line → ``(iteration or step, loss)``: ``iter 100: loss 2.4712, time 380.12ms`` → ``(100, 2.4712)``,
    ``epoch 2 step 320/620: loss 0.8123, lr 9.03e-05`` → ``(320, 0.8123)``; None for any other line."""
    m = LOSS.search(text)
    if m is None:
        return None
    if m.group("iter") is not None:
        return int(m.group("iter")), float(m.group("loss"))
    return int(m.group("step")), float(m.group("sloss"))


def loss_unit(text: str) -> str:
    """What a loss line counts: "iter" (nanoGPT) or "step" (the tune)."""
    m = LOSS.search(text)
    return "step" if m is not None and m.group("step") is not None else "iter"


class LossCurve:
    """The loss points of a log (``parse_loss``), for a chart: bounded however long the log; ``unit`` is what
    its x counts ("iter" or "step"), from the first loss line.

    A batch of up to ``sample`` lines is read whole; of a bigger one (a burst) an even sample of ``sample``
    lines and its last line, since a chart a few hundred cells wide cannot show more. Past ``max_points``
    every other point is dropped, which keeps the curve's shape, its first point and its newest.
    """

    def __init__(self, *, sample: int = 500, max_points: int = 4000) -> None:
        self.sample, self.max_points = sample, max_points
        self.points: list[tuple[int, float]] = []
        self.unit = "iter"

    def clear(self) -> None:
        self.points = []
        self.unit = "iter"

    def add(self, lines: list[str], *, entries: bool = False) -> bool:
        """Take a batch of log lines (or of a follower's entries); True when it added points."""
        if len(lines) > self.sample:
            step = len(lines) // self.sample
            lines = lines[::step] + lines[-1:]
        if entries:
            lines = list(map(entry_text, lines))
        new = [x for x in map(parse_loss, lines) if x is not None]
        if not new:
            return False
        pts = self.points
        if not pts:
            self.unit = loss_unit(next(x for x in lines if parse_loss(x) is not None))
        pts.extend(new)
        while len(pts) > self.max_points:
            del pts[1:-1:2]  # every other point, keeping the first and the newest
        return True


def clean_line(text: str) -> str:
    """A log line safe to show (``textsafe.clean``; a tab stays, the pane expands it). A ``\\r`` (a progress
    bar redrawing itself) keeps what a terminal would end up showing: the text after the last one."""
    if unsafe(text) is None:
        return text
    if "\r" in text:
        parts = [p for p in text.split("\r") if p]
        text = parts[-1] if parts else ""
    return clean(text, tab="\t")


_TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)$")


def split_timestamp(line: str) -> tuple[str | None, str]:
    """``"2026-11-02T09:00:01.5Z text"`` → ``("2026-11-02T09:00:01.5Z", "text")``; no timestamp → (None, line)."""
    sp = line.find(" ")
    head = line[:sp] if sp >= 0 else line
    if 20 <= len(head) <= 35 and head[4] == "-" and head[10] == "T" and _TS.match(head):
        return head, line[sp + 1 :] if sp >= 0 else ""
    return None, line


# The usual line, as the kubelet writes it: "2026-11-02T09:00:01.123456789Z text" (nine-digit nanoseconds, UTC).
_USUAL = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ")
_PRINTABLE = bytes(range(0x20, 0x7F))  # what translate() deletes: a clean ASCII batch leaves nothing


def _plain(text: str) -> bool:
    """Printable ASCII only (``linestream.Lines.plain`` says the same of a batch read from the wire)."""
    return text.isascii() and not text.encode("ascii").translate(None, _PRINTABLE)


# One character each (no new string per line): "Z" and " " after the usual timestamp's 29 characters.
_AT_29, _AT_30, _TEXT_PART = itemgetter(29), itemgetter(30), itemgetter(slice(31, None))
_Z, _SPACE = {"Z"}, {" "}


def _usual_shape(raw: list[str]) -> bool:
    """Every line has "Z " after 29 characters (with the first and last lines matched whole: the usual batch)."""
    try:
        return set(map(_AT_29, raw)) == _Z and set(map(_AT_30, raw)) == _SPACE
    except IndexError:  # a short line: not the usual form
        return False


_TS_PARTS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def ts_key(ts: str) -> str:
    """A sortable form of an RFC 3339 timestamp: UTC, nanoseconds always nine digits."""
    if len(ts) == 30 and ts[19] == "." and ts[-1] == "Z":
        return ts
    m = _TS_PARTS.match(ts)
    if m is None:
        return ts
    base, frac, zone = m.group(1), (m.group(2) or "")[:9].ljust(9, "0"), m.group(3)
    if zone != "Z":
        from datetime import datetime, timezone

        base = datetime.fromisoformat(base + zone).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{frac}Z"


def split_entry(entry: str) -> tuple[str, str]:
    """An entry ("<timestamp> <text>"; the timestamp has no space and may be empty) → (timestamp, text)."""
    i = entry.find(" ")
    return (entry[:i], entry[i + 1 :]) if i >= 0 else ("", entry)


def entry_text(entry: str) -> str:
    return entry[entry.find(" ") + 1 :]


class Entries(list[str]):
    """A batch of entries as the follower delivers it. ``usual``: every entry has the usual 30-character
    timestamp, so the texts are a slice away (``entry_texts``)."""

    __slots__ = ("usual",)

    def __init__(self, entries: Iterable[str] = (), usual: bool = False) -> None:
        super().__init__(entries)
        self.usual = usual


def entry_texts(entries: list[str], usual: bool = False) -> list[str]:
    """The texts of entries (``usual``: as ``Entries.usual`` says of them)."""
    return list(map(_TEXT_PART if usual else entry_text, entries))


class FollowOptions(TypedDict, total=False):
    """``FollowCore``'s keywords, which every follower passes through (``**opts: Unpack[FollowOptions]``)."""

    on_lines: Callable[[list[str]], None] | None
    on_entries: Callable[[list[str]], None] | None
    on_state: Callable[[str], None] | None
    batch_interval: float
    keep: int
    batch_lines: int
    busy_lines: int
    busy_interval: float
    backoff: tuple[float, float]


class FollowCore(RetryLoop):
    """The buffer, the batching and the resume bookkeeping of a log follower; a subclass writes ``run()``:
    ``self._start()`` first, ``self._resume_point()`` before each new stream, ``self._deliver(raw)`` for each
    batch read, ``self._end(reason)`` when the log is complete and ``self._finish()`` in a ``finally``."""

    def __init__(
        self,
        *,
        on_lines: Callable[[list[str]], None] | None = None,
        on_entries: Callable[[list[str]], None] | None = None,
        on_state: Callable[[str], None] | None = None,
        batch_interval: float = 0.1,
        keep: int = 50_000,
        batch_lines: int = 100_000,
        busy_lines: int = 200,
        busy_interval: float = 0.5,
        backoff: tuple[float, float] = (0.2, 10.0),
    ) -> None:
        self.on_lines, self.on_entries, self.on_state = on_lines, on_entries, on_state
        self.batch_interval = batch_interval
        self.batch_lines = batch_lines  # a batch this long goes out at once, whatever the interval
        # After a batch of busy_lines or more, the next waits busy_interval: a log at thousands of lines a
        # second repaints twice a second instead of ten times (CPU), a slow one still shows within 100 ms.
        self.busy_lines, self.busy_interval = busy_lines, max(batch_interval, busy_interval)
        self._last_size = 0
        self.keep = keep
        self.backoff = backoff
        # Lines are kept as entries, "<timestamp> <text>" strings (see split_entry): a log of millions of
        # lines makes no tuple per line. The usual line is its own entry, as it came off the wire.
        self._buf: deque[str] = deque(maxlen=max(1, keep))
        self._pending = Entries(usual=True)  # .usual: every pending entry has the usual 30-character timestamp
        self._last_key: str | None = None  # the newest timestamp delivered (sortable form)
        self._last_ts: str | None = None  # … as the server wrote it
        self._skip: Counter[str] | None = None  # on a resumed stream: texts at _resume_key still to skip
        self._resume_key = ""
        self.total = 0  # lines delivered since the start
        self.streams = 0  # streams opened (1 + resumptions)
        self.ended = False  # the log is complete (its container terminated and every line is in)
        self.end_reason: str | None = None
        self.error: str | None = None  # the last error (a human sentence), None once lines flow
        self.state: str = ""
        self._stopped = False
        self._task = None  # RetryLoop's: the running task
        self._flusher: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._last_flush = 0.0
        self._rng = random.Random()

    # ---- the buffer ---------------------------------------------------------------------------------

    def lines(self) -> list[tuple[str, str]]:
        """The newest ``keep`` lines as (timestamp, text)."""
        return list(map(split_entry, self._buf))

    def texts(self) -> list[str]:
        return list(map(entry_text, self._buf))

    # ---- delivery -----------------------------------------------------------------------------------

    def _flush(self) -> None:
        if not self._pending:
            return
        batch, self._pending = self._pending, Entries(usual=True)
        self._last_flush = time.monotonic()
        self._last_size = len(batch)
        if self.on_lines is not None:
            self.on_lines(entry_texts(batch, batch.usual))
        if self.on_entries is not None:
            self.on_entries(batch)

    async def _flush_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            busy = self._last_size >= self.busy_lines  # a fast log: nobody reads it line by line anyway
            wait = self._last_flush + (self.busy_interval if busy else self.batch_interval) - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._flush()

    def _take(self, raw: list[str]) -> None:
        """Add a batch of raw ``timestamp text`` lines, skipping what a resumed stream repeats."""
        if not raw:
            return
        if self._skip is None and all(map(_USUAL.match, (raw[0], raw[-1]))) and _usual_shape(raw):
            if getattr(raw, "plain", False) or _plain("".join(raw)):
                # The usual batch, checked a whole batch at a time: every line "<30-character RFC 3339
                # timestamp> <text>", printable ASCII, nothing to skip. Each line is its own entry.
                self._pending.extend(raw)
                self._buf.extend(raw if len(raw) <= self.keep else raw[-self.keep :])
                self.total += len(raw)
                self._last_key = self._last_ts = raw[-1][:30]
                return
        out = self._pending
        n0 = len(out)
        last_key, last_ts = self._last_key, self._last_ts
        skip, resume_key = self._skip, self._resume_key
        needs = unsafe
        for line in raw:
            sp = line.find(" ")
            if sp == 30 and line[29] == "Z" and line[10] == "T" and line[19] == ".":  # the usual form
                ts = key = line[:30]
                text = line[31:]
            else:
                stamp, text = split_timestamp(line)
                if stamp is None:  # a continuation (a text with a newline in it): the previous line's timestamp
                    ts, key = last_ts or "", last_key or ""
                else:
                    ts, key = stamp, ts_key(stamp)
            if needs(text) is not None:
                text = clean_line(text)
            if skip is not None:
                if key < resume_key:
                    continue
                if key == resume_key:
                    if skip.get(text, 0) > 0:
                        skip[text] -= 1
                        continue
                else:
                    skip = None  # past the resumption point: nothing more to skip
            last_key, last_ts = key, ts
            out.append(f"{ts} {text}")
            if len(ts) != 30:
                out.usual = False
        added = len(out) - n0
        if added:
            self._buf.extend(out[n0:] if n0 else out)
            self.total += added
            self._last_key, self._last_ts = last_key, last_ts
        self._skip = skip

    def _texts_at_last(self) -> Counter[str]:
        """The texts already delivered with the newest timestamp (what a resumed stream repeats first)."""
        c: Counter[str] = Counter()
        buf, ts = self._buf, self._last_ts
        for i in range(len(buf) - 1, -1, -1):
            t, text = split_entry(buf[i])
            if t != ts:
                break
            c[text] += 1
        return c

    def _take_untimed(self, raw: list[str]) -> None:
        """Add a batch of lines without timestamps (a file's): cleaned, each with an empty timestamp."""
        if not raw:
            return
        needs = unsafe
        new = [f" {clean_line(t) if needs(t) is not None else t}" for t in raw]
        self._pending.extend(new)
        self._pending.usual = False
        self._buf.extend(new if len(new) <= self.keep else new[-self.keep :])
        self.total += len(new)

    def _resume_point(self) -> bool:
        """Before a new stream: True when lines were delivered already (so the stream resumes after them);
        then the texts at the newest timestamp are what the core skips first."""
        if self._last_key is None:
            return False
        self._skip, self._resume_key = self._texts_at_last(), self._last_key
        return True

    def _deliver(self, raw: list[str], *, timed: bool = True) -> None:
        """Take a batch read off the wire and wake the flusher (or flush at once: a burst, bounded memory)."""
        n = len(self._pending)
        (self._take if timed else self._take_untimed)(raw)
        if len(self._pending) >= self.batch_lines:
            self._flush()
        elif len(self._pending) > n and not self._wake.is_set():
            self._wake.set()

    # ---- the loop's frame ----------------------------------------------------------------------------

    def _start(self) -> None:
        self._task = asyncio.current_task()
        self._flusher = asyncio.ensure_future(self._flush_loop())

    def _finish(self) -> None:
        self._flush()
        if self._flusher is not None:
            self._flusher.cancel()

    def _say(self, state: str) -> None:
        self.state = state
        if self.on_state is not None:
            self.on_state(state)

    def _end(self, reason: str) -> None:
        self._flush()
        self.ended = True
        self.end_reason = reason
        self._say("ended")
