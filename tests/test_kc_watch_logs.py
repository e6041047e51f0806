"""The pod watcher (list + watch, re-list after 410) and the log follower (resume without loss or repeats)."""

from __future__ import annotations

import asyncio
import re

from ncui.kube.logs import LOSS, LogFollower, clean_line, parse_loss
from ncui.kube.status import job_status, pod_ready, pod_status
from ncui.kube.watch import ResourceWatcher

from .kc_support import advance_until, busybox_job, recipe, until


async def test_watcher_follows_a_train_job_and_relists_after_410(kc_factory):
    k, kc = kc_factory()
    k.set_bid(5.0)
    pods: list[dict] = []  # snapshots
    jobs: list[dict] = []
    pw = ResourceWatcher(kc, "pods", lambda s: pods.append(dict(s)))
    jw = ResourceWatcher(kc, "jobs", lambda s: jobs.append(dict(s)))
    tasks = [asyncio.ensure_future(pw.run()), asyncio.ensure_future(jw.run())]
    try:
        await until(lambda: pw.synced and jw.synced, what="the first lists")
        assert pods == [{}]  # one (empty) snapshot: nothing runs yet
        assert all(r.error is None for r in await kc.apply(recipe(k, "nanogpt-job-nvidia.yaml")))
        await until(
            lambda: jobs and "nanogpt" in jobs[-1] and job_status(jobs[-1]["nanogpt"]) == "Suspended",
            what="the job waits suspended",
        )
        assert pods[-1] == {}  # kubectl get pods stays empty while the job waits

        def seen() -> list[str]:
            out: list[str] = []
            for s in pods:
                for p in s.values():
                    v = f"{pod_status(p)} {pod_ready(p)}"
                    if not out or out[-1] != v:
                        out.append(v)
            return out

        def watched() -> bool:  # both watchers hold what the box holds now
            def held(w):
                return {n: o["metadata"]["resourceVersion"] for n, o in w.snapshot.items()}

            return held(pw) == k.versions("/api/v1/namespaces/default/pods") and held(jw) == k.versions(
                "/apis/batch/v1/namespaces/default/jobs"
            )

        await advance_until(k, lambda: "Running 1/1" in seen(), step=60, caught_up=watched, what="Running")
        assert seen()[:3] == ["Pending 0/1", "ContainerCreating 0/1", "Running 1/1"], seen()
        # the history is compacted: the open watch gets 410 Gone and the watcher lists again
        n = len(pods)
        k.sim_post("/_sim/k8s/compact")
        await advance_until(k, lambda: "Completed 0/1" in seen(), step=120, caught_up=watched, what="Completed")
        assert pw.lists >= 2 and jw.lists >= 2
        assert all(len(s) == 1 for s in pods[1:]), "one pod, never a duplicate, never an empty snapshot"
        assert len(pods) > n
        await until(lambda: job_status(jobs[-1]["nanogpt"]) == "Complete", what="the job completes")
        statuses = [job_status(s["nanogpt"]) for s in jobs if "nanogpt" in s]
        i = statuses.index("Suspended")
        assert statuses[-1] == "Complete" and "Running" in statuses[i:], statuses
        versions = [s["nanogpt"]["metadata"]["resourceVersion"] for s in jobs if "nanogpt" in s]
        assert len(versions) == len(set(versions)), "a snapshot per change, no repeats"
        assert pw.error is None
    finally:
        pw.stop()
        jw.stop()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert all(t.done() for t in tasks)


async def test_follower_resumes_after_drops_without_loss_or_repeats(kc_factory):
    k, kc = kc_factory()
    k.set_bid(5.0)
    await kc.apply(recipe(k, "nanogpt-job-nvidia.yaml"))
    await advance_until(k, lambda: any(v.startswith("Running") for v in k.pod_statuses().values()), step=60)
    pod = next(iter(k.pod_statuses()))
    await advance_until(k, lambda: True, step=300)  # some lines are in already
    assert k.sim_post("/_sim/k8s/logcut", {"after": 17, "count": 3}).status_code == 200
    batches: list[list[str]] = []
    f = LogFollower(kc, pod, "main", on_lines=batches.append, batch_interval=0.05)
    task = asyncio.ensure_future(f.run())
    try:
        await advance_until(
            k,
            lambda: "Completed 0/1" in k.pod_statuses().values(),
            step=60,
            caught_up=lambda: f.total == k.log_count(pod),
        )
        await until(lambda: f.ended, 20, what="the follower ends with the container")
    finally:
        f.stop()
        await asyncio.gather(task, return_exceptions=True)
    full = [x async for x in kc.pod_logs(pod, "main", follow=False, timestamps=False)]
    got = [x for b in batches for x in b]
    assert f.streams >= 4  # three cuts, each resumed
    assert got == full, (len(got), len(full))
    assert [t for _, t in f.lines()] == full and f.total == len(full)
    assert sum(1 for x in got if LOSS.search(x)) == 201
    assert f.end_reason == "the container terminated"


async def test_follower_cleans_escapes_keeps_a_bounded_buffer_and_batches(kc_factory):
    k, kc = kc_factory()
    nasty = "x\r[red: \x1b[31mred\x1b[0m title: \x1b]0;title\x07 end]\x07"
    res = await kc.apply([busybox_job("nasty", nasty), busybox_job("flood", "run", {"NCUI_SIM_LOG_FLOOD": "5000"})])
    assert [r.error for r in res] == [None, None]
    await advance_until(k, lambda: sum(v.startswith("Running") for v in k.pod_statuses().values()) == 2, step=10)
    await advance_until(k, lambda: True, step=5)
    names = {n.rsplit("-", 1)[0]: n for n in k.pod_statuses()}
    got: list[str] = []
    f = LogFollower(kc, names["nasty"], on_lines=got.extend)
    t1 = asyncio.ensure_future(f.run())
    await until(lambda: any(x.startswith("[red") for x in got), what="the command line")
    line = next(x for x in got if x.startswith("[red"))
    assert line == "[red: red title:  end]"
    assert not any(re.search(r"[\x00-\x08\x0a-\x1f\x7f]", x) for x in got)
    f.stop()
    # a long log into a small buffer: the newest 1000 stay; delivered in batches; a cut mid-way resumes
    k.sim_post("/_sim/k8s/logcut", {"after": 1234})
    calls: list[int] = []
    g = LogFollower(kc, names["flood"], on_lines=lambda b: calls.append(len(b)), keep=1000)
    t2 = asyncio.ensure_future(g.run())
    await until(lambda: sum(calls) >= 5000, 20, what="all 5,000 lines delivered")
    kept = g.lines()
    assert len(kept) == 1000 and kept[0][1].startswith("iter 4000:") and kept[-1][1].startswith("iter 4999:")
    assert sum(calls) == 5000 and len(calls) < 100 and g.streams >= 2
    await advance_until(k, lambda: all(v.startswith("Completed") for v in k.pod_statuses().values()), step=60)
    await until(lambda: g.ended, 20, what="the flood follower ends")
    assert g.total == 5000
    g.stop()
    await asyncio.gather(t1, t2, return_exceptions=True)


def test_parse_loss_and_clean_line():
    assert parse_loss("iter 100: loss 2.4712, time 380.12ms") == (100, 2.4712)
    assert parse_loss("iter 2000: loss 1.0213, time 379.40ms, mfu 12.34%") == (2000, 1.0213)
    assert parse_loss("[rank0] iter 7: loss 3e-2, time 1ms") == (7, 0.03)
    assert parse_loss("step 250: train loss 1.6, val loss 1.7") is None
    assert parse_loss("iter x: loss 1, time 2ms") is None
    assert LOSS.search("iter 1: loss 2.5, time 3.5ms, mfu -100.00%").group(4) == "-100.00"
    assert clean_line("plain\tline") == "plain\tline"
    assert clean_line("\x1b[1;32mok\x1b[0m") == "ok"
    assert clean_line("Fetching:  10%\rFetching: 100%") == "Fetching: 100%"
    assert clean_line("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\b") == "alinkb"
    assert clean_line("bell\x07 nul\x00 del\x7f") == "bell nul del"


def test_a_batch_is_taken_whole_when_usual_and_line_by_line_when_not():
    # What the follower makes of a stream's lines (its per-batch fast path must agree with the careful one).
    ts = [f"2026-11-02T09:00:0{i}.000000000Z" for i in range(8)]
    entries: list[list[str]] = []
    texts: list[list[str]] = []
    f = LogFollower(None, "p", on_lines=texts.append, on_entries=entries.append)  # type: ignore[arg-type]
    f._take([f"{ts[0]} iter 1: loss 2.5, time 1ms", f"{ts[1]} plain"])  # the usual batch
    f._flush()
    f._take([f"{ts[2]} \x1b[31mred\x1b[0m", f"{ts[3]} tab\there", f"{ts[4]} ünïcode ok"])  # cleaned, kept
    f._take(["no timestamp: a continuation"])  # the previous line's timestamp
    f._take([f"{ts[5][:19]}.5Z short fraction", f"{ts[6]} "])  # another RFC 3339 form; an empty text
    f._flush()
    assert texts == [
        ["iter 1: loss 2.5, time 1ms", "plain"],
        ["red", "tab\there", "ünïcode ok", "no timestamp: a continuation", "short fraction", ""],
    ]
    assert entries[0] == [f"{ts[0]} iter 1: loss 2.5, time 1ms", f"{ts[1]} plain"]
    assert f.lines() == [
        (ts[0], "iter 1: loss 2.5, time 1ms"),
        (ts[1], "plain"),
        (ts[2], "red"),
        (ts[3], "tab\there"),
        (ts[4], "ünïcode ok"),
        (ts[4], "no timestamp: a continuation"),
        ("2026-11-02T09:00:05.5Z", "short fraction"),
        (ts[6], ""),
    ]
    assert f.total == 8 and f._last_ts == ts[6]
    assert [b.usual for b in entries] == [True, False]  # the pane slices usual entries' texts, splits others
    # first and last lines usual, but not every line between: a short continuation, and a text with a "Z"
    # where a timestamp's would be (both line by line, each with the timestamp it belongs to)
    entries.clear()
    chance = "x" * 29 + "Z" + "y" + " text"
    f._take([f"{ts[7]} a", "cont", chance, f"{ts[7]} b"])
    f._flush()
    assert entries == [[f"{ts[7]} a", f"{ts[7]} cont", f"{ts[7]} {chance}", f"{ts[7]} b"]]
    assert entries[0].usual  # as entries they all have the usual timestamp now
    # a batch read off the wire says whether it is printable ASCII, checked on its bytes
    from ncui.kube.linestream import Lines

    entries.clear()
    f._take(Lines([f"{ts[7]} c", f"{ts[7]} d"], plain=True))
    f._flush()
    assert entries == [[f"{ts[7]} c", f"{ts[7]} d"]] and entries[0].usual
    # a burst longer than the buffer: the newest `keep` stay, every line is counted and delivered
    g = LogFollower(None, "p", on_lines=texts.append, keep=100)  # type: ignore[arg-type]
    g._take([f"{ts[7]} line {i}" for i in range(1000)])
    assert [t for _, t in g.lines()] == [f"line {i}" for i in range(900, 1000)] and g.total == 1000
    texts.clear()
    g._flush()
    assert texts == [[f"line {i}" for i in range(1000)]]


def test_loss_curve_samples_a_burst_and_stays_bounded():
    from ncui.kube.logs import LossCurve

    c = LossCurve(sample=100, max_points=1000)
    assert not c.add(["step 1: nothing to plot"])
    assert c.add([f"iter {i}: loss {10 - i / 1000:.4f}, time 1ms" for i in range(50)])
    assert c.points[:2] == [(0, 10.0), (1, 9.999)] and len(c.points) == 50  # a small batch: every line
    burst = [f"2026-11-02T09:00:00.000000000Z iter {i}: loss {10 - i / 1e6:.6f}, time 1ms" for i in range(50, 100_050)]
    assert c.add(burst, entries=True)  # a burst: an even sample and its last line
    assert 100 <= len(c.points) - 50 <= 102 and c.points[-1] == (100_049, 10 - 100_049 / 1e6)
    for n in range(30):
        c.add([f"iter {200_000 + n * 100 + i}: loss 1.0, time 1ms" for i in range(100)])
    assert len(c.points) <= 1000 and c.points[-1][0] == 200_000 + 29 * 100 + 99  # bounded; the newest kept
    xs = [x for x, _ in c.points]
    assert xs == sorted(xs) and xs[0] == 0  # thinned evenly, in order, from the start


async def test_a_watch_from_a_version_the_cluster_never_reached_lists_again(kc_factory):
    # A cluster restarted behind the same address counts its resourceVersions from the start again: a watch
    # from the old cluster's version is refused (504 ResourceVersionTooLarge, as kube-apiserver does), and the
    # watcher lists again at once, without an error on screen; it had waited for versions that never come.
    from ncui.kube.client import Gone

    k, kc = kc_factory()
    _, rv = await kc.list("jobs")
    try:
        async for _ in kc.watch("jobs", str(int(rv) + 1000), timeout_seconds=5):
            raise AssertionError("an event from a version the cluster never reached")
        raise AssertionError("the watch ended without an error")
    except Gone as e:
        assert e.status == 504 and "Too large resource version" in str(e)
    real_watch = kc.watch

    def watch_from_the_old_cluster(kind, rv, *a, **kw):  # the watcher's first watch: as after a restart
        kc.watch = real_watch
        return real_watch(kind, str(int(rv) + 1000), *a, **kw)

    kc.watch = watch_from_the_old_cluster
    errors: list[str] = []
    jw = ResourceWatcher(kc, "jobs", lambda s: None, on_error=errors.append)
    task = asyncio.ensure_future(jw.run())
    try:
        await until(lambda: jw.lists == 2, what="a second list")
        assert all(r.error is None for r in await kc.apply([busybox_job("later", "true")]))
        await until(lambda: "later" in jw.snapshot, what="the new job, watched")
    finally:
        jw.stop()
        await asyncio.gather(task, return_exceptions=True)
    assert errors == [] and jw.lists == 2
