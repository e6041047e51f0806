"""Watches: a resource's changes from the store's event history as a stream of JSON lines (or Table rows)."""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import AsyncIterator

from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from .. import tables
from ..objects import KubeError, fields_match, labels_match, parse_field_selector, parse_label_selector, to_json
from .call import Call
from .crud import typed
from .http import POLL, Stream, too_large


async def watch(call: Call) -> Response:
    """``?watch=true``: the objects as ADDED (without a resourceVersion), then every change, until the timeout, the
    client goes, a revocation or a drop; a version the store no longer has is a 410, one it never reached a 504."""
    kube, c, t, request = call.kube, call.c, call.target, call.request
    q = request.query_params
    r = t.r
    ns = t.ns if r.namespaced else None
    lsel = parse_label_selector(q.get("labelSelector"))
    fsel = parse_field_selector(q.get("fieldSelector"))
    want_table = tables.wants_table(request.headers.get("accept", ""))
    include = q.get("includeObject", "Metadata")
    try:
        timeout = float(q.get("timeoutSeconds") or 1800)
    except ValueError:
        timeout = 1800
    rv_text = q.get("resourceVersion") or ""
    try:
        rv = int(rv_text) if rv_text else 0
    except ValueError:
        raise KubeError(400, "BadRequest", f"invalid resource version: {rv_text}") from None
    await run_in_threadpool(kube.tick)

    def matches(obj: dict, namespace: str) -> bool:
        if ns is not None and namespace != ns:
            return False
        return labels_match(obj["metadata"].get("labels") or {}, lsel) and fields_match(obj, fsel)

    sent_columns = False

    def encode(type_: str, obj: dict) -> bytes:
        nonlocal sent_columns
        obj = typed(copy.deepcopy(obj), r)
        if want_table:
            now = kube.world.clock.now()
            tbl = tables.table(
                r.plural, [obj], now, obj["metadata"]["resourceVersion"], include, columns=not sent_columns
            )
            sent_columns = True
            obj = tbl
        return to_json({"type": type_, "object": obj}) + b"\n"

    async def gen() -> AsyncIterator[bytes]:
        nonlocal rv
        deadline = time.monotonic() + timeout
        revocations = kube.revocations
        if rv == 0:  # no resourceVersion: the current state as ADDED events, then changes
            items, rv = c.store.list(r.plural, ns)
            for o in items:
                if matches(o, o["metadata"].get("namespace", "")):
                    yield encode("ADDED", o)
        elif rv > c.store.rv:  # a version this cluster never reached (a watcher from a cluster before a restart)
            yield _error(too_large(rv, c.store.rv))
            return
        reader = c.store.open_reader(rv)  # (an open watch: compaction does not cut what it has not read)
        first = True
        try:
            while not kube.closed and time.monotonic() < deadline and kube.revocations == revocations:
                events = c.store.events_after(rv, reader, first)
                if events is None:  # the etcd compaction passed it, as the API server's watch cache says it
                    yield _error(KubeError(410, "Expired", f"too old resource version: {rv} ({c.store.oldest_rv})"))
                    return
                first = False
                for e in events:
                    rv = e.rv
                    if e.resource == r.plural and matches(e.obj, e.namespace):
                        yield encode(e.type, e.obj)
                if not events:
                    await kube.atick()
                    await asyncio.sleep(POLL)
        finally:
            c.store.close_reader(reader)

    return Stream(gen(), "application/json")


def _error(e: KubeError) -> bytes:
    """A watch's ERROR event: the Status the stream ends with."""
    return to_json({"type": "ERROR", "object": e.status()}) + b"\n"
