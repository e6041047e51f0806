"""Container logs: ``GET …/pods/NAME/log``, whole or followed, from the run's plan on the virtual clock
(``podlogs``); and the benchmark's floods (a container that logs millions of lines at a rate)."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone

from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from .. import podlogs
from ..apiserver import Kube
from ..objects import KubeError, not_found, parse_time
from .call import Call
from .http import POLL, Stream, _Dropped


async def logs(call: Call) -> Response:
    """``kubectl logs [-f]`` of a pod's container: its lines so far (tail, since, timestamps, a byte limit), then,
    following, each new line until the container ends, the client goes, a revocation or a sim cut."""
    kube, c, t, q = call.kube, call.c, call.target, call.q
    follow = q.get("follow") in ("true", "1")
    stamps = q.get("timestamps") in ("true", "1")
    previous = q.get("previous") in ("true", "1")
    tail = int(q["tailLines"]) if q.get("tailLines") not in (None, "") else None
    since_time = parse_time(q["sinceTime"]) if q.get("sinceTime") else None
    since_s = int(q["sinceSeconds"]) if q.get("sinceSeconds") else None
    limit = int(q["limitBytes"]) if q.get("limitBytes") else None
    container = q.get("container") or ""

    def first() -> tuple[object, str, list, bool]:
        with kube.world.lock:
            now = kube.tick()
            run = c.runs.get((t.ns or "", t.name or ""))
            if run is None or c.store.peek("pods", t.ns or "", t.name or "") is None:
                raise not_found(t.r, t.name or "")
            names = run.containers()
            inits = run.init_containers()
            cname = container
            if not cname:
                if len(names) != 1:
                    msg = f"a container name must be specified for pod {run.name}, choose one of: [{' '.join(names)}]"
                    if inits:
                        msg += f" or one of the init containers: [{' '.join(inits)}]"
                    raise KubeError(400, "BadRequest", msg)
                cname = names[0]
            if cname not in names and cname not in inits:
                raise KubeError(400, "BadRequest", f"container {cname} is not valid for pod {run.name}")
            if previous:
                raise KubeError(
                    400, "BadRequest", f'previous terminated container "{cname}" in pod "{run.name}" not found'
                )
            if not podlogs.container_started(run, cname):
                reason = "PodInitializing" if (run.init_containers() and cname in names) else "ContainerCreating"
                raise KubeError(
                    400, "BadRequest", f'container "{cname}" in pod "{run.name}" is waiting to start: {reason}'
                )
            lines = podlogs.log_lines(run, cname, now)
            lo = since_time or (now - timedelta(seconds=since_s) if since_s is not None else None)
            if lo is not None:
                lines = [x for x in lines if x[0] >= lo]
            done = podlogs.container_done(run, cname, now)
            return run, cname, lines, done

    run, cname, lines, done = await run_in_threadpool(first)
    flood = _flood_of(run, cname)
    if flood is not None:

        def ended() -> bool:
            with kube.world.lock:
                return podlogs.container_done(run, cname, kube.tick()) or not run.alive

        return _flood(kube, run, cname, flood, follow, since_time, stamps, ended)
    if tail is not None:
        lines = lines[-tail:] if tail > 0 else []

    def fmt(x: tuple[datetime, str]) -> bytes:
        text = x[1]
        if stamps:
            return f"{x[0].astimezone(timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%f')}000Z {text}\n".encode()
        return (text + "\n").encode()

    if not follow:
        data = b"".join(fmt(x) for x in lines)
        if limit is not None:
            data = data[:limit]
        return Response(data, media_type="text/plain")

    cut = kube.log_cuts.pop(0) if kube.log_cuts else None
    revocations = kube.revocations

    async def gen() -> AsyncIterator[bytes]:
        sent = 0
        count = 0

        def counted(chunk: bytes) -> bytes:
            nonlocal count
            count += 1
            if cut is not None and count > cut:
                raise _Dropped("fault injection: log stream cut")
            return chunk

        for x in lines:
            chunk = counted(fmt(x))
            sent += len(chunk)
            yield chunk
        seen = len(podlogs.log_lines(run, cname, lines[-1][0])) if lines else 0
        cursor_t = lines[-1][0] if lines else None
        finished = done

        def more() -> tuple[list, bool]:
            with kube.world.lock:
                now = kube.tick()
                all_lines = podlogs.log_lines(run, cname, now)
                return all_lines, podlogs.container_done(run, cname, now) or not run.alive

        while not finished and not kube.closed:
            if (limit is not None and sent >= limit) or kube.revocations != revocations:
                return
            await asyncio.sleep(POLL * 2)
            all_lines, finished = await run_in_threadpool(more)
            if cursor_t is not None:
                new = [x for x in all_lines[seen:]]
            else:
                new = all_lines[seen:]
            seen = len(all_lines)
            for x in new:
                chunk = counted(fmt(x))
                sent += len(chunk)
                yield chunk
                cursor_t = x[0]

    return Stream(gen(), "text/plain")


FLOOD_ENV = "NCUI_SIM_LOG_FLOOD"  # a pod container's env: "LINES" or "LINES@RATE" (lines per real second)


def _flood_of(run, container: str) -> tuple[int, float] | None:
    """A benchmark hook: a container whose env sets ``NCUI_SIM_LOG_FLOOD`` logs LINES synthetic loss lines
    at RATE lines per real second (0 or absent: as fast as the server can), instead of its plan's log."""
    for c in run.obj["spec"].get("containers") or []:
        if c.get("name") != container:
            continue
        for e in c.get("env") or []:
            if e.get("name") == FLOOD_ENV:
                text = str(e.get("value", ""))
                n, _, rate = text.partition("@")
                try:
                    return max(0, int(n)), max(0.0, float(rate or 0))
                except ValueError:
                    return None
    return None


class FloodLog:
    """A flood's whole log, built once (a benchmark measures its readers, not the box's f-strings): line
    ``k`` is ``text(k)`` stamped (the container's start + ``k`` microseconds), so ``sinceTime`` resumes."""

    def __init__(self, base: datetime, total: int, stamps: bool) -> None:
        from array import array

        parts: list[str] = []
        offsets = array("Q", [0])
        pos = 0
        for sec in range(0, total, 1_000_000):
            p = (base + timedelta(seconds=sec // 1_000_000)).strftime("%Y-%m-%dT%H:%M:%S")
            for k in range(sec, min(total, sec + 1_000_000)):
                text = f"iter {k}: loss {1 + (k % 997) / 331:.4f}, time {380 + k % 37}.12ms"
                line = f"{p}.{k % 1_000_000:06d}000Z {text}\n" if stamps else text + "\n"
                parts.append(line)
                pos += len(line)  # ASCII: characters are bytes
                offsets.append(pos)
        self.data = memoryview("".join(parts).encode("ascii"))
        self.offsets = offsets

    def lines(self, i: int, j: int) -> bytes:
        return bytes(self.data[self.offsets[i] : self.offsets[j]])


def _flood(
    kube: Kube,
    run,
    container: str,
    flood: tuple[int, float],
    follow: bool,
    since_time: datetime | None,
    stamps: bool,
    ended,
) -> Response:
    """Serve a flood (``_flood_of``): as fast as the connection takes it, or at its rate; a follow stream
    then stays open, as the kubelet's does, until the container ends (``ended()``)."""
    total, rate = flood
    base = run.times.get("running") or run.start
    base = base.astimezone(timezone.utc).replace(microsecond=0)
    start = 0
    if since_time is not None:
        start = min(total, max(0, math.ceil((since_time - base).total_seconds() * 1_000_000 - 1e-6)))
    key = (run.ns, run.name, container, base, total, stamps)
    cut = kube.log_cuts.pop(0) if follow and kube.log_cuts else None

    async def gen() -> AsyncIterator[bytes]:
        log = kube.floods.get(key)
        if log is None:
            log = kube.floods[key] = await run_in_threadpool(FloodLog, base, total, stamps)
        if not follow:
            yield log.lines(start, total)
            return
        i = start
        t0 = time.monotonic()
        while i < total and not kube.closed:
            if rate > 0:
                due = min(total, start + int((time.monotonic() - t0) * rate))
                if due <= i:
                    await asyncio.sleep(0.005)
                    continue
                j = min(due, i + 5000)
            else:
                j = min(total, i + 4000)
            if cut is not None and j - start > cut:
                yield log.lines(i, start + cut)
                raise _Dropped("fault injection: log stream cut")
            yield log.lines(i, j)
            i = j
            await asyncio.sleep(0)
        while not kube.closed and not await run_in_threadpool(ended):
            await asyncio.sleep(POLL * 2)

    return Stream(gen(), "text/plain")
