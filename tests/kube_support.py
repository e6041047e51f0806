"""Real kubectl against the simulator: a kubeconfig from the API, a private discovery and sign-in cache."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

import httpx
import pytest

from ncui.kube import signin
from ncui.sim.kube import podlogs
from ncui.sim.server import SimServer

from .peers import PATHS, need_peer

KUBECTL = PATHS["kubectl"]  # (real kubectl: a test that runs it skips without it, fails in CI: tests/peers.py)


class Watcher:
    """A long-running kubectl (get -w, logs -f) whose output is collected by a thread."""

    def __init__(self, args: list[str], env: dict) -> None:
        self.proc = subprocess.Popen(
            [need_peer("kubectl"), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self.lines: list[str] = []
        self.err: list[str] = []
        self._t = threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True)
        self._e = threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True)
        self._t.start()
        self._e.start()

    @staticmethod
    def _read(stream, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def text(self) -> str:
        return "\n".join(self.lines)

    def wait(self, timeout: float = 20) -> int:
        rc = self.proc.wait(timeout)
        self._t.join(5)
        self._e.join(5)
        return rc

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._t.join(5)  # the readers end at EOF; then the pipes are closed here, not by the garbage collector
        self._e.join(5)  # (an unclosed pipe's ResourceWarning fails whichever test runs when it is collected)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


class KubeEnv:
    def __init__(self, sim: SimServer, cluster: str, tmp: Path) -> None:
        self.sim, self.world, self.cluster = sim, sim.world, cluster
        self.tmp = tmp
        self.headers = {"Authorization": f"Bearer {sim.token}"}
        r = httpx.get(f"{sim.api_url}/api/k8s/cluster/kubeconfig", params={"cluster": cluster}, headers=self.headers)
        r.raise_for_status()
        self.kubeconfig = tmp / "kubeconfig.yaml"
        self.kubeconfig.write_text(r.text)
        self.auth_cache = tmp / "auth"
        self.env = {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "KUBECACHEDIR": str(tmp / "kcache"),
            "NCUI_KUBE_CACHE": str(self.auth_cache),
            "PYTHONPATH": _pythonpath(),
            "HOME": str(tmp),
        }
        self.env.pop("KUBERNETES_EXEC_INFO", None)
        self.watchers: list[Watcher] = []

    # ---- sign-in ----------------------------------------------------------------------------

    def approve(self, link: str) -> httpx.Response:
        code = link.split("code=", 1)[1].strip()
        return httpx.post(f"{self.sim.api_url}/device", data={"code": code})

    def sign_in(self) -> None:
        """The device flow done by hand: request a code, approve it, cache the credential."""
        old = os.environ.get("NCUI_KUBE_CACHE")
        os.environ["NCUI_KUBE_CACHE"] = str(self.auth_cache)
        try:
            code = signin.request_code(self.sim.api_url, self.cluster)
            assert self.approve(code["verification_uri_complete"]).status_code == 200
            verdict, token = signin.poll_once(self.sim.api_url, code["device_code"])
            assert verdict == "ok" and token
            signin.save_credential(self.sim.api_url, self.cluster, token)
        finally:
            if old is None:
                os.environ.pop("NCUI_KUBE_CACHE", None)
            else:
                os.environ["NCUI_KUBE_CACHE"] = old

    def token(self) -> str:
        files = [p for p in self.auth_cache.glob("*.json") if not p.name.endswith(".pending.json")]
        return json.loads(files[0].read_text())["token"]

    def pending(self) -> dict | None:
        for p in self.auth_cache.glob("*.pending.json"):
            try:
                return json.loads(p.read_text())
            except FileNotFoundError:  # the sign-in finished between the listing and the read
                continue
        return None

    # ---- kubectl ------------------------------------------------------------------------------

    def kubectl(self, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        p = subprocess.run(
            [need_peer("kubectl"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
        if check and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
        return p

    def watch(self, *args: str) -> Watcher:
        w = Watcher(list(args), self.env)
        self.watchers.append(w)
        return w

    def file(self, name: str) -> str:
        return f"{self.sim.access_url}/first-job/{name}"

    def set_bid(self, usd: float) -> None:
        r = httpx.put(
            f"{self.sim.api_url}/api/k8s/bid",
            json={"max_price_per_gpu_hour": usd},
            headers=self.headers,
            params={"cluster": self.cluster},
        )
        r.raise_for_status()

    def sim_post(self, path: str, body: dict | None = None) -> httpx.Response:
        return httpx.post(f"{self.sim.api_url}{path}", json=body or {}, headers=self.headers)

    def advance_until(self, predicate, step: float = 60, max_steps: int = 200, what: str = ""):
        """Move the frozen clock ``step`` virtual seconds at a time until ``predicate()`` holds."""
        for _ in range(max_steps):
            v = predicate()
            if v:
                return v
            self.world.advance(step)
        raise AssertionError(f"never happened: {what or predicate}")

    # ---- reading the cluster directly (fast: no kubectl) ---------------------------------------

    def api(self, path: str) -> dict:
        r = httpx.get(
            f"{self.sim.kube_url}/k8s/{self.cluster}{path}",
            headers={"Authorization": f"Bearer {self.token()}"},
            verify=False,
        )
        r.raise_for_status()
        return r.json()

    def versions(self, path: str) -> dict[str, str]:
        """name → resourceVersion of what the box holds now (what a caught-up watcher has seen)."""
        return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in self.api(path)["items"]}

    def log_count(self, pod: str, container: str = "main") -> int:
        """How many lines the box has logged for a container so far, as the wire carries them (a text with a
        newline is two); read in-process: a log request would spend the log cuts a test set up."""
        with self.world.lock:
            c = self.sim.app.state.kube.clusters[self.cluster]
            run = next(r for r in c.runs.values() if r.name == pod)
            return sum(text.count("\n") + 1 for _, text in podlogs.log_lines(run, container, self.world.now()))

    def pod_statuses(self) -> dict[str, str]:
        """``STATUS READY`` of each pod, as the box's Table (what kubectl prints) says it."""
        from ncui.sim.kube.tables import pod_cells

        out = {}
        for p in self.api("/api/v1/namespaces/default/pods")["items"]:
            ready, status, _ = pod_cells(p, self.world.now())
            out[p["metadata"]["name"]] = f"{status} {ready}"
        return out

    def close(self) -> None:
        for w in self.watchers:
            w.stop()
        for p in self.auth_cache.glob("*.pending.json"):  # a background sign-in poller we started
            try:
                pid = json.loads(p.read_text()).get("poller")
                if pid:
                    os.kill(int(pid), signal.SIGTERM)
            except (OSError, ValueError):
                pass


def _pythonpath() -> str:
    root = str(Path(__file__).resolve().parents[1])
    old = os.environ.get("PYTHONPATH")
    return root + (os.pathsep + old if old else "")


def statuses(lines: list[str], prefix: str = "") -> list[str]:
    """``STATUS READY`` of each ``kubectl get pods -w`` output line (of pods named ``prefix…``)."""
    out = []
    for line in lines:
        if not line.startswith(prefix):
            continue
        cols = line.split()
        if len(cols) >= 5 and cols[0] != "NAME" and re.match(r"^\d+/\d+$", cols[1]):
            out.append(f"{cols[2]} {cols[1]}")
    return out


def columns(out: str) -> dict[str, dict[str, str]]:
    """``kubectl get``'s table by NAME: each row's cells cut where the header's columns start (a cell may hold
    spaces: ``5 (5m ago)``; an empty one stays empty)."""
    lines = out.splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])] if lines else []
    names = lines[0].split() if lines else []
    rows = {}
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], None], strict=True)]
        rows[cells[0]] = dict(zip(names, cells, strict=True))
    return rows


def subsequence(want: list[str], got: list[str]) -> bool:
    it = iter(got)
    return all(any(w == g or g.startswith(w + " ") for g in it) for w in want)


@pytest.fixture
def kube_factory(sim_factory):
    envs: list[KubeEnv] = []

    def make(scenario: str = "k8s-market", cluster: str | None = None, signed_in: bool = True, **kw) -> KubeEnv:
        sim = sim_factory(scenario, **kw)
        name = cluster or sim.world.main_org.spec.clusters[0].name
        env = KubeEnv(sim, name, Path(tempfile.mkdtemp(prefix="ncui-kube-test-")))
        if signed_in:
            env.sign_in()
        envs.append(env)
        return env

    yield make
    for e in envs:
        e.close()
