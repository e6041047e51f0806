"""The benchmarks cannot rot: a tiny run of each prints its figures and one met/MISS line per target. Nothing
here asserts a time or a verdict (figures belong to bench/, and this machine is shared)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def bench(name: str, *args: str, timeout: float = 240) -> str:
    p = subprocess.run(
        [sys.executable, str(ROOT / "bench" / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Traceback" not in p.stdout + p.stderr, p.stdout[-3000:] + p.stderr[-3000:]
    return p.stdout


def verdicts(out: str) -> list[str]:
    return re.findall(r"^# (?:met |MISS) (.*)$", out, re.M)


def test_pods_bench_prints_its_figures():
    out = bench("pods.py", "--pods", "30", "--rate", "20", "--seconds", "2", "--repeat", "1", "--gap", "0.1")
    assert re.search(r"^ncui +CPU [\d.]+% \(stream alone; [\d.]+% with ↓ every", out, re.M), out  # both CPU figures
    assert re.search(r"^ncui +RSS [\d.]+ MB +frame p50 [\d.]+ p99 [\d.]+ ms \(\d+ frames\)", out, re.M), out
    assert re.search(r"key p50 [\d.]+ p99 [\d.]+ ms \((?!0 )\d+ presses\)", out), out  # keys were pressed and seen
    assert re.search(r"^kubectl +CPU [\d.]+%", out, re.M), out
    v = verdicts(out)
    assert len(v) == 4 and v[0].startswith("key latency") and v[1].startswith("frame p99"), out
    assert v[2].startswith("CPU on the same stream"), out


def test_soak_bench_prints_its_figures():
    out = bench(
        "soak.py", "--hours", "0.6", "--speed", "300", "--window", "1", "--quiet", "2", "--idle", "1", timeout=300
    )
    assert re.search(r"slope after warm-up [-+][\d.]+ MB per virtual hour; CPU [\d.]+ s per virtual hour", out), out
    m = re.search(r"log: ([\d,]+) lines followed over (\d+) pod\(s\): (\d+) lost, (\d+) repeated", out)
    assert m and int(m.group(1).replace(",", "")) > 0, out  # the log was followed and checked
    assert re.search(r"idle on Account: [\d.]+% of a core, [\d,]+ B/s", out), out
    v = verdicts(out)
    assert len(v) == 5 and v[0].startswith("0 crashes") and v[1].startswith("0 log lines"), out


def test_startup_bench_prints_its_figures():
    out = bench("startup.py", "--runs", "1")
    assert re.search(r"bare Textual app +first frame +\d+", out) and re.search(r"live data +\d+", out), out
    v = verdicts(out)
    assert len(v) == 3 and v[0].startswith("first frame <= 1.10x"), out


def test_signin_bench_prints_its_figures():
    out = bench("signin.py", "--runs", "1")
    for label in ("bytecode cached", "no bytecode"):  # (one run each: a difference of two times can be negative)
        assert re.search(rf"^plugin per kubectl call \({label}\): CPU -?[\d.]+ ms  wall -?[\d.]+ ms$", out, re.M), out
    assert re.search(r"^kubectl, token +CPU +[\d.]+ ms", out, re.M), out
