"""The real ``kubectl port-forward`` against the box (WebSocket + SPDY/3.1), and the guide's curl through it."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess

import pytest
from kubernetes import client, config
from kubernetes.stream import portforward
from websocket import WebSocketBadStatusException, create_connection

from .conftest import wait_for
from .kube_support import KubeEnv, Watcher

INKLING = {"model": "thinkingmachines/Inkling", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1024}


def _forward(k: KubeEnv, target: str) -> tuple[Watcher, int]:
    """``kubectl port-forward TARGET :8000`` (a free local port, the one kubectl prints)."""
    w = k.watch("--context", k.cluster, "port-forward", target, ":8000")
    line = wait_for(
        lambda: next((x for x in w.lines if x.startswith("Forwarding from 127.0.0.1:")), None) or w.proc.poll(),
        20,
        what=f"kubectl port-forward {target}: {w.lines} {w.err}",
    )
    assert isinstance(line, str), (w.lines, w.err)
    m = re.search(r"127\.0\.0\.1:(\d+) -> 8000", line)
    assert m, line
    return w, int(m.group(1))


def _curl(port: int, body: dict, *more: str) -> subprocess.CompletedProcess:
    """The guide's request, as it prints it."""
    return subprocess.run(
        ["curl", "-s", *more, "-m", "20", f"localhost:{port}/v1/chat/completions"]
        + ["-H", "content-type: application/json", "-d", json.dumps(body)],
        capture_output=True,
        text=True,
        timeout=30,
    )


def _http(sock: socket.socket, body: dict) -> None:
    data = json.dumps(body).encode()
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(data)}\r\n\r\n".encode()
        + data
    )


def _answer(sock: socket.socket, status: int = 200) -> dict:
    """One HTTP/1.1 JSON answer with a content-length, read off a kept-alive connection."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        assert chunk, buf
        buf += chunk
    head, _, rest = buf.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), head
    n = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
    while len(rest) < n:
        chunk = sock.recv(65536)
        assert chunk
        rest += chunk
    return json.loads(rest[:n])


def _stop(w: Watcher) -> int:
    """Ctrl-C, as a person at the terminal."""
    w.proc.send_signal(signal.SIGINT)
    return w.wait(15)


@pytest.mark.peers("curl")
def test_port_forward_svc_pod_deploy_to_the_engine(kube_factory, monkeypatch):
    k = kube_factory("k8s-market")
    kube = k.sim.app.state.kube
    k.set_bid(5.0)
    k.kubectl("apply", "-f", k.file("inkling-weights-to-shared-nvidia.yaml"))
    k.kubectl("apply", "-f", k.file("inkling-serve-nvidia.yaml"))

    def engine_pod(status: str) -> str | None:
        return next(
            (n for n, v in k.pod_statuses().items() if n.startswith("inkling-") and "weights" not in n and v == status),
            None,
        )

    # a pod that is not running: kubectl's own refusal, read off the pod's phase the box reports
    pending = k.advance_until(lambda: engine_pod("Pending 0/1") or engine_pod("SchedulingGated 0/1"), step=30)
    p = k.kubectl("--context", k.cluster, "port-forward", f"pod/{pending}", "8000", check=False)
    assert p.returncode == 1
    assert "unable to forward port because pod is not running. Current status=Pending" in p.stderr, p.stderr
    # the box refuses it too (a kubectl that raced the pod's phase), with a Status kubectl prints
    url = f"{k.sim.kube_url.replace('https', 'wss')}/k8s/{k.cluster}/api/v1/namespaces/default/pods/{pending}"
    with pytest.raises(WebSocketBadStatusException) as exc:
        create_connection(
            url + "/portforward?ports=8000",
            header=[f"Authorization: Bearer {k.token()}"],
            subprotocols=["SPDY/3.1+portforward.k8s.io"],
            sslopt={"cert_reqs": 0},
        )
    status = json.loads(exc.value.resp_body)
    assert exc.value.status_code == 400 and status["kind"] == "Status"
    assert status["message"] == f"pod {pending} does not have a host assigned"  # the API server's words

    # running, engine still loading (READY 0/1): the forward opens, the connection is refused as the kubelet says
    loading = k.advance_until(lambda: engine_pod("Running 0/1"), step=60, what="Running 0/1")
    w, port = _forward(k, f"pod/{loading}")
    assert _curl(port, INKLING).stdout == ""  # the connection drops without an answer
    assert w.wait(15) == 1  # kubectl gives up on the forward, as it does against a real cluster
    err = "\n".join(w.err)
    assert "error forwarding port 8000 to pod " + loading in err and "connection refused" in err, err
    assert "lost connection to pod" in err

    # READY 1/1: the guide's port-forward svc/inkling, then its curl, answered by the engine
    k.advance_until(lambda: engine_pod("Running 1/1"), step=120, what="Running 1/1")
    w, port = _forward(k, "svc/inkling")
    r = _curl(port, INKLING)
    assert r.returncode == 0, r.stderr
    msg = json.loads(r.stdout)["choices"][0]["message"]
    assert msg["content"] and msg["reasoning_content"]  # Inkling's reasoning arrives in its own field
    assert "POST /v1/chat/completions HTTP/1.1" in k.kubectl("logs", "deploy/inkling", "-c", "main").stdout
    # a streamed answer (Server-Sent Events) comes through as the engine sends it
    r = _curl(port, {**INKLING, "stream": True}, "-N")
    events = [x[6:] for x in r.stdout.splitlines() if x.startswith("data: ")]
    assert len(events) > 3 and events[-1] == "[DONE]", r.stdout[-300:]
    assert json.loads(events[0])["object"] == "chat.completion.chunk"
    # two connections at once over the one forward, each kept alive for a second request
    a, b = socket.create_connection(("127.0.0.1", port), 10), socket.create_connection(("127.0.0.1", port), 10)
    with a, b:
        for s in (a, b):
            s.settimeout(20)
        _http(b, INKLING)
        _http(a, {**INKLING, "model": "nope"})
        assert _answer(a, 404)["message"] == "The model `nope` does not exist."
        assert _answer(b)["object"] == "chat.completion"
        wait_for(lambda: kube.forwards == 1, 5, what="one port-forward session")
        _http(a, INKLING)
        assert _answer(a)["object"] == "chat.completion"
    wait_for(lambda: sum("Handling connection for" in x for x in w.lines) == 4, 10, what=f"{w.lines}")
    # Ctrl-C ends kubectl cleanly, and the box's side of the session with it
    assert _stop(w) == 0, w.err
    assert not [x for x in w.err if x.startswith("E")], w.err
    wait_for(lambda: kube.forwards == 0, 10, what="the box's session to end")

    # pod/… and deploy/… go to the same engine
    for target in (f"pod/{engine_pod('Running 1/1')}", "deploy/inkling"):
        w, port = _forward(k, target)
        r = _curl(port, INKLING)
        assert r.returncode == 0 and json.loads(r.stdout)["model"] == "thinkingmachines/Inkling", (target, r)
        assert _stop(w) == 0, (target, w.err)
    wait_for(lambda: kube.forwards == 0, 10, what="every session to end")

    # the official Python client's port-forward (the WebSocket channel protocol): one connection per port
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(k.auth_cache))
    api = config.new_client_from_config(config_file=str(k.kubeconfig))
    v1 = client.CoreV1Api(api)
    pf = portforward(v1.connect_get_namespaced_pod_portforward, engine_pod("Running 1/1"), "default", ports="8000")
    s = pf.socket(8000)
    s.settimeout(20)
    _http(s, INKLING)
    assert _answer(s)["choices"][0]["message"]["reasoning_content"]
    s.close()
    wait_for(lambda: kube.forwards == 0, 10, what="the Python client's session to end")
    # nothing listens on 9000: the refusal arrives on the port's error channel and the connection closes
    pf = portforward(v1.connect_get_namespaced_pod_portforward, engine_pod("Running 1/1"), "default", ports="9000")
    s = pf.socket(9000)
    s.settimeout(20)
    assert s.recv(100) == b""
    assert "nothing listens on port 9000" in pf.error(9000) and "connection refused" in pf.error(9000)
    s.close()
    wait_for(lambda: kube.forwards == 0, 10, what="the refused session to end")
    api.close()


def test_a_port_forward_ends_when_its_pod_is_deleted(kube_factory):
    """The box kept a port-forward open after its pod was gone, until the next connection failed; as the kubelet's
    stream ends with the pod's sandbox, kubectl now exits ("lost connection to pod") once the pod is deleted."""
    k = kube_factory("k8s-market")
    kube = k.sim.app.state.kube
    k.kubectl("run", "hello", "--image=busybox", "--", "sleep", "3600")
    k.advance_until(lambda: k.pod_statuses().get("hello") == "Running 1/1", step=15, what="hello runs")
    w, _ = _forward(k, "pod/hello")
    wait_for(lambda: kube.forwards == 1, 10, what="the box's session")
    k.kubectl("delete", "pod", "hello", "--wait=false")
    assert w.proc.poll() is None  # Terminating: its sandbox is still there (30 s of grace)
    k.world.advance(31)
    assert "NotFound" in k.kubectl("get", "pod", "hello", check=False).stderr
    assert w.wait(15) == 1  # with no connection made through it
    assert "lost connection to pod" in "\n".join(w.err), w.err
    wait_for(lambda: kube.forwards == 0, 10, what="the box's session to end")
