"""Soak: ncui left running against the box at high speed for 10 virtual hours (``--quick``: 2) while the box
cycles faults, then idle against a box that changes nothing.

    PYTHONPATH=. .venv/bin/python bench/soak.py [--hours 10] [--speed 60] [--quick]

A separate ``ncui sim`` serves a long nanoGPT run (the catalog's Job with ``NCUI_SIM_ITERS``: it logs loss lines
for the whole soak) on a market node. ncui runs on a real pty at 80x24 on Workloads, following the pod's log,
with every poller and the four watches; a bench hook inside (bench/harness.py) records what the log follower
delivered, when each slice was last read, and approves a sign-in link as the human would. The box cycles fault
windows with quiet periods between: 5xx, slow answers, truncated and dropped responses on the API; 5xx on the
Kubernetes API; dropped watches after a compact (410s on the way back); a cut log stream; a sign-in expiry; a
reclaim of the node mid-run (the Job's next pod is followed as a person would select it).
Targets (issue 16): 0 crashes and tracebacks; 0 log lines lost or repeated against the box's own record (the
container's whole log read back once the box stands still); after each fault window every slice fresh within two
of its poll intervals; RSS growth < 5 MB per virtual hour after warm-up (the slope); CPU per virtual hour printed;
idle (``ncui --api``, the box at speed 0) <= 1% of a core and <= 1 KB/s written to the terminal. The machine is
shared: figures are noisy. A benchmark, not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import CHILD, Box, PtyApp  # noqa: E402
from ncui.logfollow import entry_text, split_timestamp  # noqa: E402

SOAK = (
    CHILD
    + r"""
import httpx
from ncui.screens import kubepane as W
from ncui.screens.modals import SignInModal
from ncui.store import SLICES

got = {}  # pod -> the entries ("timestamp text") its followers delivered
_follower = W.log_follower
def log_follower(kube, pod, *a, **kw):
    f = _follower(kube, pod, *a, **kw)
    inner = f.on_entries
    def on_entries(entries):
        got.setdefault(pod, []).extend(entries)
        inner(entries)
    f.on_entries = on_entries
    return f
W.log_follower = log_follower
API = sys.argv[1]

class SoakBench(BenchApp):
    def on_mount(self):
        self.reads = {}  # slice -> monotonic times it was read successfully
        self.approved = set()
        names = tuple(SLICES) + W.WATCHED
        self.store.subscribe(names, self._read, interested=False)
        self.set_interval(0.25, self._look)
    def _read(self, s):
        if not s.failing and s.fetched_at is not None:
            self.reads.setdefault(s.name, []).append(s.fetched_at)
    def _look(self):
        if not getattr(self, "_bench_loaded", False) and self.store.get("cluster").loaded:
            self._bench_loaded = True
            report(ev="loaded")
        if isinstance(self.screen, SignInModal) and self.screen.link not in self.approved:
            self.approved.add(self.screen.link)  # the human approves the new link (an idle day's expiry)
            self.run_worker(self._approve(self.screen.link), exit_on_error=False)
        q = self.query("#kube-pane")
        if not q:
            return
        pane = q.first()
        pods = self.store.value("k8s_pods") or {}
        alive = [p for p in pods.values() if (p.get("status") or {}).get("phase") in ("Pending", "Running")]
        newest = max(alive, key=lambda p: p["metadata"]["creationTimestamp"], default=None)
        if newest is not None and pane.pod != newest["metadata"]["name"]:
            pane.select(newest["metadata"]["name"])  # the reclaimed pod's successor: a person selects it
    async def _approve(self, link):
        async with httpx.AsyncClient() as h:
            await h.post(API + "/device", data={"code": link.split("code=", 1)[1]})
        report(ev="approved")
    def on_cmd_lines(self):
        report(ev="lines", got=got)
    def on_cmd_memory(self, start=False, top=20):
        # what grew (--trace): tracemalloc's allocations still held, by where they were made, against a snapshot
        # taken after the warm-up; and the counts of objects by type the collector tracks
        import collections, gc, tracemalloc
        counts = collections.Counter(type(o).__name__ for o in gc.get_objects())
        if start:
            tracemalloc.start(12)
            self._mem0, self._types0 = tracemalloc.take_snapshot(), counts
            report(ev="memory")
            return
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        at = lambda f: f"{f.filename.rsplit('site-packages/', 1)[-1]}:{f.lineno}"
        grew = [(st.size_diff, st.count_diff, [at(f) for f in st.traceback])
                for st in snap.compare_to(self._mem0, "traceback")[:top]]
        types = (counts - self._types0).most_common(top)
        report(ev="memory", grew=grew, types=types, traced=tracemalloc.get_traced_memory()[0])
    def on_cmd_fresh(self):
        specs = self.pollers.specs if self.pollers else {}
        report(ev="fresh", reads=self.reads,
               intervals={n: self.pollers._usual_delay(s) for n, s in specs.items() if s.enabled()})

SoakBench(Backend(Endpoints(API, API + "/access"), SecretStr(sys.argv[2])), mode="bench").run()
"""
)

IDLE = "import sys\nfrom ncui.cli import main\nsys.exit(main(sys.argv[1:]))\n"  # the real `ncui --api`

BIG = 1_000_000


def faults(box: Box) -> list[tuple[str, list[tuple[str, dict | None, str]]]]:
    """Each window: its name and the box calls that open it (path, body, method); closing is DELETE /_sim/faults."""
    api = "/_sim/faults"
    return [
        ("5xx on the API", [(api, {"path_prefix": "/api/", "status": 503, "count": BIG}, "POST")]),
        ("slow answers (3 s)", [(api, {"path_prefix": "/api/", "delay": 3, "count": BIG}, "POST")]),
        ("dropped watches + 410", [("/_sim/k8s/compact", None, "POST"), ("/_sim/k8s/drop", None, "POST")]),
        ("reclaim mid-run", [("/_sim/k8s/reclaim", {}, "POST")]),
        ("truncated answers", [(api, {"path_prefix": "/api/", "truncate": True, "count": BIG}, "POST")]),
        ("sign-in expiry", [("/_sim/k8s/revoke", None, "POST")]),
        ("dropped answers", [(api, {"path_prefix": "/api/", "drop": True, "count": BIG}, "POST")]),
        ("5xx on the Kubernetes API", [(api, {"path_prefix": "/k8s/", "status": 503, "count": BIG}, "POST")]),
        ("log stream cut", [("/_sim/k8s/logcut", {"after": 20, "count": 3}, "POST"), ("/_sim/k8s/drop", None, "POST")]),
    ]


def long_job(box: Box, iters: int) -> list[dict]:
    import httpx

    vendor = box.post("/api/k8s/cluster", method="GET")["gpu_vendor"]
    r = httpx.get(f"{box.api}/access/first-job/nanogpt-job-{vendor}.yaml")
    if r.status_code == 404:
        r = httpx.get(f"{box.api}/access/first-job/nanogpt-job.yaml")
    r.raise_for_status()
    docs = [d for d in yaml.safe_load_all(r.text) if d]
    for d in docs:
        if d.get("kind") == "Job":
            c = d["spec"]["template"]["spec"]["containers"][0]
            c.setdefault("env", []).append({"name": "NCUI_SIM_ITERS", "value": str(iters)})
    return docs


async def apply(box: Box, docs: list[dict]) -> None:
    from ncui.kube.client import KubeClient

    kc = KubeClient.from_kubeconfig(box.kubeconfig.read_text())
    try:
        res = await kc.apply(docs)
        assert all(r.error is None for r in res), res
    finally:
        await kc.aclose()


async def box_record(box: Box, pods: list[str]) -> dict[str, list[str]]:
    """The box's own record of each pod's main container: its whole log, with timestamps (not a follow)."""
    from ncui.kube.client import KubeClient

    kc = KubeClient.from_kubeconfig(box.kubeconfig.read_text())
    out = {}
    try:
        for pod in pods:
            lines: list[str] = []
            async for batch in kc.pod_log_batches(pod, "main", follow=False, timestamps=True):
                lines.extend(batch)
            out[pod] = lines
    finally:
        await kc.aclose()
    return out


def slope(xs: list[float], ys: list[float]) -> float:
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0


def idle(box: Box, seconds: float, screen: bytes | None) -> dict:
    """The real ``ncui --api`` on a pty, the box standing still: CPU and bytes written over ``seconds`` after
    a warm-up (its first reads and the first paint)."""
    app = PtyApp(IDLE, box.env, (80, 24), ("--api", box.api, "--access", box.api + "/access"))
    try:
        time.sleep(8)  # start-up, first reads, first paint: not idle yet (pacing, nothing to wait for)
        if screen is not None:
            app.keys(screen)
            time.sleep(4)
        c0, b0, t0 = app.cpu(), app.written, time.monotonic()
        time.sleep(seconds)
        wall = time.monotonic() - t0
        return {
            "cpu_pct": 100 * (app.cpu() - c0) / wall,
            "bytes_s": (app.written - b0) / wall,
            "rss": app.rss()[0],
            "alive": app.alive(),
            "traceback": app.traceback(),
        }
    finally:
        app.stop(timeout=1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hours", type=float, default=10.0, help="virtual hours (default 10)")
    ap.add_argument("--speed", type=float, default=60.0, help="the box's speed (default 60: a virtual hour a minute)")
    ap.add_argument("--window", type=float, default=8.0, help="real seconds a fault window lasts (default 8)")
    ap.add_argument("--quiet", type=float, default=16.0, help="real seconds of quiet after each (default 16)")
    ap.add_argument("--idle", type=float, default=30.0, help="each idle measurement, real seconds (default 30)")
    ap.add_argument("--quick", action="store_true", help="2 virtual hours, 20 s idle windows (~5 min on 2 cores)")
    ap.add_argument(
        "--trace", action="store_true", help="what grew: tracemalloc from the warm-up on (slower; RSS counts it)"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.hours, args.idle = min(args.hours, 2.0), min(args.idle, 20.0)
        args.window, args.quiet = min(args.window, 5.0), min(args.quiet, 9.0)
    tmp = Path(tempfile.mkdtemp(prefix="ncui-bench-soak-"))
    box = Box(tmp, "--speed", str(args.speed))
    app = None
    try:
        ladder = box.post("/api/k8s/market/ladder", method="GET")
        bid = round(1.3 * max(r["price_per_gpu_hour"] for r in ladder["rungs"]), 2)  # wins a node, keeps it
        box.post("/_sim/billing/topup", {"usd": bid * ladder["gpus_per_node"] * (args.hours + 4)})  # the human pays
        box.put_bid(bid)
        iters = int(args.hours * 3600 / 0.4) + 20_000  # ~0.4 virtual s an iteration: longer than the soak
        asyncio.run(apply(box, long_job(box, iters)))
        app = PtyApp(SOAK, box.env, (80, 24), (box.api, box.token))
        if app.wait_event(lambda e: e.get("ev") == "loaded", 60) is None:
            raise SystemExit(f"ncui never loaded: {app.tail_text()}")
        app.keys(b"4")  # Workloads: the pods, the log follow, the loss chart
        print(
            f"# soak: ncui (80x24, real pty, Workloads following the log) against the box at speed {args.speed:g} "
            f"for {args.hours:g} virtual hours; fault windows of {args.window:g} s, {args.quiet:g} s quiet between",
            flush=True,
        )
        print(f"{'virtual h':>9}  {'RSS MB':>7}  {'CPU s':>6}  {'out KB':>7}  event")
        t0, c0 = time.monotonic(), app.cpu()
        real = args.hours * 3600 / args.speed
        samples: list[tuple[float, float, float]] = []  # (virtual hours, RSS, CPU s)
        windows: list[tuple[str, float, float]] = []
        cycle = faults(box)
        k = 0
        next_fault = t0 + args.quiet
        last_print = 0.0

        def vh() -> float:
            return (time.monotonic() - t0) * args.speed / 3600

        traced = False
        while time.monotonic() - t0 < real and app.alive():
            now = time.monotonic()
            if args.trace and not traced and vh() >= args.hours * 0.2:
                traced = app.ask("memory", "memory", start=True) is not None
            if now >= next_fault and now - t0 + args.window < real:
                name, calls = cycle[k % len(cycle)]
                k += 1
                start = time.monotonic()
                for path, body, method in calls:
                    box.post(path, body, method)
                time.sleep(args.window)  # the window lasts this long (pacing the faults, not waiting for anything)
                box.post("/_sim/faults", None, "DELETE")
                windows.append((name, start, time.monotonic()))
                next_fault = time.monotonic() + args.quiet
                print(f"{vh():>9.2f}  {app.rss()[0]:>7.1f}  {app.cpu() - c0:>6.1f}  {app.written / 1024:>7.0f}  {name}")
            samples.append((vh(), app.rss()[0], app.cpu() - c0))
            if time.monotonic() - last_print > 60:
                last_print = time.monotonic()
                print(f"{vh():>9.2f}  {samples[-1][1]:>7.1f}  {samples[-1][2]:>6.1f}  {app.written / 1024:>7.0f}")
            time.sleep(1)  # one sample a second
        hours = vh()
        cpu = app.cpu() - c0
        alive = app.alive()
        if traced:
            mem = app.ask("memory", "memory", timeout=120) or {}
            print(f"# what grew since the warm-up (tracemalloc: {mem.get('traced', 0) / 1e6:.1f} MB traced now):")
            for size, count, where in mem.get("grew", []):
                print(f"#   {size / 1024:+9.1f} KB {count:+7d} blocks  " + " < ".join(reversed(where[-4:])))
            print("#   objects by type: " + ", ".join(f"{t} {n:+d}" for t, n in mem.get("types", [])))
        box.post("/_sim/speed", {"speed": 0})  # the box stands still: its record is final
        fresh = app.ask("fresh", "fresh") or {}
        fresh_at = time.monotonic()
        # every line the box logged reaches the pane (a follower behind a fault window catches up)
        lost = repeated = followed = disorder = 0
        record: dict[str, list[str]] = {}
        got: dict[str, list[str]] = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and alive:
            got = (app.ask("lines", "lines") or {}).get("got", {})
            record = asyncio.run(box_record(box, list(got)))
            if all(len(got[p]) == len(record[p]) for p in got):
                break
            time.sleep(1)
        for pod, entries in got.items():
            # by text, in order: a text with a newline in it is two lines on the wire, the second without a
            # timestamp (the follower gives it its first half's); the box's record reads them as the wire does
            lines = [entry_text(e) for e in entries]
            want, have = Counter(split_timestamp(x)[1] for x in record.get(pod, [])), Counter(lines)
            disorder += lines != [split_timestamp(x)[1] for x in record.get(pod, [])]
            lost += sum((want - have).values())
            repeated += sum((have - want).values())
            followed += len(lines)
            for what, diff in (("lost", want - have), ("repeated", have - want)):
                for line in list(diff)[:3]:
                    print(f"#   {what} in {pod}: {line[:100]!r}")
        crashed = not alive or app.traceback()
        end = time.monotonic()
        status = app.stop()
        app = None
        # freshness: after each window, the first read of each polled slice within two of its intervals
        reads, intervals = fresh.get("reads", {}), fresh.get("intervals", {})
        late: list[str] = []
        judged = 0
        for i, (name, _s, e) in enumerate(windows):
            nxt = windows[i + 1][1] if i + 1 < len(windows) else fresh_at
            for sl, iv in intervals.items():
                if not iv:
                    continue
                first = next((t for t in reads.get(sl, []) if t > e), None)
                if first is not None and first - e <= 2 * iv:
                    judged += 1
                elif e + 2 * iv <= nxt:  # it had the time and was not fresh: late
                    judged += 1
                    late.append(f"{sl} after {name} ({'never' if first is None else f'{first - e:.0f} s'}, {iv:g} s)")
        warm = [s for s in samples if s[0] >= hours * 0.2]
        rss_slope = slope([s[0] for s in warm], [s[1] for s in warm]) if len(warm) > 2 else 0.0
        print(f"# {hours:.2f} virtual hours in {real:.0f} s; {len(windows)} fault windows; exit status {status}")
        print(
            f"# RSS {samples[0][1]:.1f} → {samples[-1][1]:.1f} MB, slope after warm-up {rss_slope:+.2f} MB per virtual "
            f"hour; CPU {cpu / max(hours, 1e-9):.1f} s per virtual hour ({100 * cpu / max(end - t0, 1):.1f}% of a core)"
        )
        print(f"# log: {followed:,} lines followed over {len(got)} pod(s): {lost} lost, {repeated} repeated")
        box.post("/_sim/k8s/churn", {"rate": 0})
        idles = [("Account", idle(box, args.idle, None)), ("Workloads", idle(box, args.idle, b"4"))]
        for where, m in idles:
            print(
                f"# idle on {where}: {m['cpu_pct']:.2f}% of a core, {m['bytes_s']:,.0f} B/s to the terminal, "
                f"RSS {m['rss']:.1f} MB"
            )
        checks = [
            ("0 crashes and 0 tracebacks", not crashed and all(m["alive"] and not m["traceback"] for _, m in idles)),
            (
                f"0 log lines lost or repeated ({followed:,} checked, in the box's order)",
                followed > 0 and lost == 0 and repeated == 0 and not disorder,
            ),
            (
                f"every slice fresh within two poll intervals after each window ({judged} judged"
                + (f"; late: {'; '.join(late[:4])}" if late else "")
                + ")",
                judged > 0 and not late,
            ),
            (f"RSS growth < 5 MB per virtual hour after warm-up ({rss_slope:+.2f})", rss_slope < 5),
            (
                "idle <= 1% of a core and <= 1 KB/s to the terminal (worst: "
                f"{max(m['cpu_pct'] for _, m in idles):.2f}%, {max(m['bytes_s'] for _, m in idles):,.0f} B/s)",
                all(m["cpu_pct"] <= 1 and m["bytes_s"] <= 1024 for _, m in idles),
            ),
        ]
        for what, ok in checks:
            print(f"# {'met ' if ok else 'MISS'} {what}")
    finally:
        if app is not None:
            app.stop()
        box.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
