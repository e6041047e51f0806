"""``ncui doctor``'s time: a real ``ncui doctor --json`` process against a real ``ncui sim``, from spawn to exit.

    PYTHONPATH=. .venv/bin/python bench/doctor.py [--runs 5] [--quick]

A figure, not a test (no target in issue 24): the median wall time, its spread, and the process's CPU (user + sys of
the child), with how much of it is the contract's comparison alone (the four documents fetched once, compared in
this process). A fresh HOME with the box's token (no ssh key: one warning).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.simproc import SimProcess  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="3 runs")
    args = ap.parse_args()
    runs = 3 if args.quick else max(1, args.runs)
    with SimProcess() as sim, tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        tok = home / ".config" / "nationalcompute" / "token"
        tok.parent.mkdir(parents=True)
        tok.write_text(sim.env["NC_TOKEN"])
        tok.chmod(0o600)
        env = {k: v for k, v in os.environ.items() if k not in ("NC_TOKEN", "SSH_AUTH_SOCK")}
        env.update(HOME=str(home), XDG_STATE_HOME=str(home / "state"), PYTHONPATH=str(ROOT))
        argv = [sys.executable, "-m", "ncui.cli", "doctor", "--json", "--api", sim.env["NC_API"]]
        argv += ["--access", sim.env["NC_ACCESS"]]
        walls, cpus, codes = [], [], set()
        for _ in range(runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
            codes.add(p.returncode)
        import httpx

        from ncui.doctor.contract import AREAS, compare, doc_path

        docs = {a: httpx.get(sim.env["NC_API"] + doc_path(a), timeout=30).json() for a in AREAS}
        t0 = time.perf_counter()
        compare(docs)
        contract_ms = (time.perf_counter() - t0) * 1000
    print(f"ncui doctor --json, {runs} runs against ncui sim (exit {sorted(codes)}):")
    ms = [w * 1000 for w in walls]
    print(f"  wall   median {statistics.median(ms):.0f} ms  (min {min(ms):.0f}, max {max(ms):.0f})")
    print(f"  CPU    median {statistics.median(cpus) * 1000:.0f} ms (user + sys of the process)")
    print(f"  the contract's comparison alone (in process, first call): {contract_ms:.0f} ms")
    try:
        print(f"# load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    except OSError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
