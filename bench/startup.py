"""Start-up: time to first frame and to live data, ncui --demo beside a bare Textual app, in one run.

    .venv/bin/python bench/startup.py [--runs 7]

Each run is a fresh process (headless Textual); times are measured by this parent from spawn to the
moment the child reports the event on fd 1. Targets (issue 16): first frame within 1.10x the bare app's,
live data within 1 s against a running box. Prints one ``# met`` / ``# MISS`` line per target.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BARE = r"""
import os
from textual.app import App
from textual.widgets import DataTable, Footer, Header
class Bare(App):
    def compose(self):
        yield Header(); yield DataTable(); yield Footer()
    def on_mount(self):
        t = self.query_one(DataTable); t.add_columns("a", "b", "c")
        for i in range(20): t.add_row(i, i * 2, i * 3)
        self.call_after_refresh(self.done)
    def done(self):
        os.write(1, b"first-frame\n"); self.exit()
Bare().run(headless=True, size=(80, 24))
"""

NCUI = r"""
import os
from ncui.app import NCApp
from ncui.backend import Backend, DemoOptions
class Bench(NCApp):
    def on_mount(self):  # Textual calls NCApp.on_mount after this one (handlers run along the MRO)
        self.call_after_refresh(self.first)  # before the app's own start-up
        def live(s):
            if s.loaded:
                os.write(1, b"live\n"); self.exit()
        self.store.subscribe("balance", live, interested=False)
    def first(self):
        os.write(1, b"first-frame\n")
        def whole():  # Account's tables and chart, mounted just after the first frame (screens/account.py)
            if self.query_one("#account").tables:
                os.write(1, b"account-whole\n"); tick.stop()
        tick = self.set_interval(0.005, whole)
import sys
if len(sys.argv) > 1:  # against a separately started box: the path the real service takes
    from ncui.config import Endpoints, SecretStr
    backend = Backend(Endpoints(sys.argv[1], sys.argv[1] + "/access"), SecretStr(sys.argv[2]))
else:
    backend = Backend(demo=DemoOptions("k8s-market", 60, 1))
Bench(backend, mode="bench").run(headless=True, size=(80, 24))
"""


def run(code: str, *args: str) -> dict[str, float]:
    """One fresh process; a child that has not exited after 30 s is stopped with its stacks printed."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(
            [sys.executable, "-c", code, *args],
            stdout=subprocess.PIPE,
            stderr=err,
            env={**os.environ, "TEXTUAL": "", "PYTHONFAULTHANDLER": "1"},
        )
        watchdog = threading.Timer(30, lambda: p.send_signal(signal.SIGABRT))
        watchdog.start()
        out: dict[str, float] = {}
        assert p.stdout is not None
        for line in p.stdout:
            out[line.decode().strip()] = (time.perf_counter() - t0) * 1000
        p.wait()
        watchdog.cancel()
        if p.returncode != 0:
            err.seek(0)
            sys.exit(f"a run failed (exit {p.returncode}):\n{err.read().decode(errors='replace')[-6000:]}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args(argv)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, root)
    # as an installed package would be (and as `make demo` leaves it): ncui's bytecode compiled
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", os.path.join(root, "ncui")], check=True, stdout=subprocess.DEVNULL
    )
    from ncui.sim.server import SimServer
    from ncui.sim.world import World

    bare, ncui, remote = [], [], []
    with SimServer(World("k8s-market", seed=1, speed=60)) as sim:
        kinds = [(bare, (BARE,)), (ncui, (NCUI,)), (remote, (NCUI, sim.api_url, sim.token))]
        for i in range(args.runs):  # interleaved, and the order rotated: a run is slower right after a
            for out, argv in kinds[i % 3 :] + kinds[: i % 3]:  # heavy one exits, so none always follows another
                out.append(run(*argv))
    b_first = statistics.median(r["first-frame"] for r in bare)
    n_first = statistics.median(r["first-frame"] for r in ncui)
    n_live = statistics.median(r["live"] for r in ncui)
    print(f"runs: {args.runs} (median, ms, spawn to event, headless 80x24)")
    print(f"  bare Textual app   first frame {b_first:7.0f}")
    print(f"  ncui --demo        first frame {n_first:7.0f}   ratio {n_first / b_first:.2f}x  (target <= 1.10x)")
    n_whole = statistics.median(r.get("account-whole", float("nan")) for r in ncui)
    print(f"  ncui --demo        Account whole {n_whole:5.0f}   (its tables and chart, mounted after the first frame)")
    print(f"  ncui --demo        live data   {n_live:7.0f}   (includes importing and starting the box)")
    r_first = statistics.median(r["first-frame"] for r in remote)
    r_live = statistics.median(r["live"] for r in remote)
    print(f"  ncui --api (box running)  first frame {r_first:5.0f}   ratio {r_first / b_first:.2f}x")
    print(f"  ncui --api (box running)  live data   {r_live:5.0f}   (target <= 1000 ms)")
    for what, ok in (
        (f"first frame <= 1.10x a bare Textual app's (--demo {n_first / b_first:.2f}x)", n_first <= 1.10 * b_first),
        (f"first frame <= 1.10x a bare Textual app's (--api {r_first / b_first:.2f}x)", r_first <= 1.10 * b_first),
        (f"live data <= 1 s against a running box ({r_live:.0f} ms)", r_live <= 1000),
    ):
        print(f"# {'met ' if ok else 'MISS'} {what}")


if __name__ == "__main__":
    main()
