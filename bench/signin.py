"""The kubectl sign-in plugin's cost per kubectl call, with a cached credential (the common case).

    PYTHONPATH=. .venv/bin/python bench/signin.py [--runs 20] [--quick]

kubectl runs ``python -m ncui.kube.signin --api URL --cluster NAME`` before every command; with a cached credential
the plugin checks it with the service (one GET) and prints the ExecCredential. A separate ``ncui sim`` process
serves the cluster (bench/harness.py's Box, signed in as a person would be). Measured, each a fresh process, the
three in rotated order (this machine is shared), CPU (user + system, wait4: a process and the children it waited
for) and wall time, medians:

- the plugin alone, run as kubectl runs it;
- ``kubectl get nodes`` with the box's kubeconfig (the plugin inside);
- ``kubectl get nodes`` with the same token written into the kubeconfig (no plugin): the difference is what the
  plugin costs each kubectl call.

Twice: with Python's bytecode cached (as an installed ncui runs: a private PYTHONPYCACHEPREFIX, warmed first), and
without (PYTHONDONTWRITEBYTECODE=1, as an editable checkout under that setting runs: ncui's modules compiled on
every call). No target (issue 23 asks for the figure): it prints figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.harness import KUBECTL, Box  # noqa: E402


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU ms, wall ms) of one run of ``cmd``, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return cpu, wall


def token_kubeconfig(box: Box) -> Path:
    """The box's kubeconfig with the cached token in place of the exec plugin."""
    cache = Path(box.env["NCUI_KUBE_CACHE"])
    cred = next(p for p in cache.glob("*.json") if not p.name.endswith(".pending.json"))
    token = json.loads(cred.read_text())["token"]
    doc = yaml.safe_load(box.kubeconfig.read_text())
    for u in doc["users"]:
        u["user"] = {"token": token}
    path = box.tmp / "kubeconfig-token.yaml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(doc, f)
    return path


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="5 runs of each")
    args = ap.parse_args(argv)
    runs = 5 if args.quick else args.runs
    with tempfile.TemporaryDirectory(prefix="ncui-bench-signin-") as d:
        tmp = Path(d)
        box = Box(tmp)
        try:
            plugin = [sys.executable, "-m", "ncui.kube.signin", "--api", box.api, "--cluster", box.cluster]
            get = [KUBECTL, "get", "nodes", "-o", "name"]
            with_token = {**box.env, "KUBECONFIG": str(token_kubeconfig(box))}
            cached = {**box.env, "PYTHONPYCACHEPREFIX": str(tmp / "pycache")}
            cached.pop("PYTHONDONTWRITEBYTECODE", None)
            fresh = {**box.env, "PYTHONDONTWRITEBYTECODE": "1"}
            fresh.pop("PYTHONPYCACHEPREFIX", None)
            print(f"# {runs} runs of each, rotated; load average {os.getloadavg()[0]:.1f}")
            for label, env in (("bytecode cached", cached), ("no bytecode", fresh)):
                cases = {
                    "plugin alone": (plugin, env),
                    "kubectl, plugin": (get, env),
                    "kubectl, token": (get, with_token),
                }
                for cmd, e in cases.values():  # warm-up: bytecode written, kubectl's discovery cache filled
                    timed(cmd, e)
                got: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
                names = list(cases)
                for i in range(runs):
                    for name in names[i % 3 :] + names[: i % 3]:
                        got[name].append(timed(*cases[name]))
                cpu = {k: statistics.median(c for c, _ in v) for k, v in got.items()}
                wall = {k: statistics.median(w for _, w in v) for k, v in got.items()}
                print(f"## {label}")
                for k in names:
                    print(f"{k:<18} CPU {cpu[k]:6.1f} ms  wall {wall[k]:6.1f} ms")
                print(
                    f"plugin per kubectl call ({label}): CPU {cpu['kubectl, plugin'] - cpu['kubectl, token']:.1f} ms"
                    f"  wall {wall['kubectl, plugin'] - wall['kubectl, token']:.1f} ms"
                )
            print(f"# load average {os.getloadavg()[0]:.1f} at the end")
        finally:
            box.stop()


if __name__ == "__main__":
    main()
