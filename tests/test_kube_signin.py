"""kubectl's sign-in plugin: one link, background polling without a terminal, silent after approval,
a fresh link after an idle day or an expired code, and waiting with a terminal."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import pty
import re
import socket
import ssl
import stat
import subprocess
import sys
import threading

import pytest

from ncui.kube import signin
from ncui.sim.kube.tls import self_signed

from .conftest import wait_for

LINK = re.compile(r"(http://\S+/device\?code=[A-Z]{4}-[A-Z]{4})")


def test_no_terminal_one_link_background_poll_then_silent(kube_factory):
    k = kube_factory("k8s-market", signed_in=False)
    p = k.kubectl("get", "nodes", check=False)
    assert p.returncode != 0
    links = LINK.findall(p.stderr)
    assert len(links) == 1, p.stderr  # ONE link, although kubectl retried the plugin
    pend = k.pending()
    assert pend and pend["poller"]  # a background process polls meanwhile
    again = k.kubectl("get", "nodes", check=False)
    assert LINK.findall(again.stderr) == links  # the same link while it is pending
    assert k.approve(links[0]).status_code == 200
    wait_for(
        lambda: any(not p.name.endswith(".pending.json") for p in k.auth_cache.glob("*.json")),
        15,
        what="the background poller caches the credential",
    )
    ok = k.kubectl("get", "nodes")
    assert "halcyon-cpu-worker-0" in ok.stdout and ok.stderr == ""  # silent
    cred = next(p for p in k.auth_cache.glob("*.json") if not p.name.endswith(".pending.json"))
    assert stat.S_IMODE(cred.stat().st_mode) == 0o600
    token = k.token()
    assert token not in ok.stdout + ok.stderr + p.stderr
    # an idle (virtual) day: the next call prints a link again
    k.world.advance(25 * 3600)
    p = k.kubectl("get", "nodes", check=False)
    assert p.returncode != 0 and len(LINK.findall(p.stderr)) == 1 and LINK.findall(p.stderr) != links


def test_expired_code_gives_a_fresh_link(kube_factory):
    k = kube_factory("k8s-market", signed_in=False)
    first = LINK.findall(k.kubectl("get", "nodes", check=False).stderr)
    k.world.advance(16 * 60)  # a device code lives 15 minutes of a person's time (an advance counts)
    wait_for(lambda: (k.pending() or {}).get("state") == "expired_token", 15, what="the poller sees the expiry")
    second = LINK.findall(k.kubectl("get", "nodes", check=False).stderr)
    assert len(first) == len(second) == 1 and first != second
    assert k.approve(first[0]).status_code == 410  # the old page says it expired


def test_with_a_terminal_it_waits_until_approved(kube_factory):
    k = kube_factory("k8s-market", signed_in=False)
    master, slave = pty.openpty()
    env = {
        **k.env,
        "KUBERNETES_EXEC_INFO": json.dumps(
            {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "spec": {"interactive": True}}
        ),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "ncui.kube.signin", "--api", k.sim.api_url, "--cluster", k.cluster],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    os.close(slave)
    try:
        # approve only once the link was printed (a human cannot approve a link they have not seen)
        link = wait_for(
            lambda: (k.pending() or {}).get("printed_for") and k.pending()["link"], 15, what="the printed link"
        )
        assert proc.poll() is None  # still waiting, no background poller
        assert not (k.pending() or {}).get("poller")
        assert k.approve(link).status_code == 200
        out, err = proc.communicate(timeout=15)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    assert LINK.findall(err) == [link]
    cred = json.loads(out)
    assert cred["kind"] == "ExecCredential" and cred["status"]["token"]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", cred["status"]["expirationTimestamp"])


def test_a_sign_in_link_lasts_a_persons_minutes_whatever_the_demo_speed():
    # At 60x the market's 15 minutes pass in 15 s: a person opening a browser would see every link expire.
    from datetime import datetime, timezone

    from ncui.sim.clock import VirtualClock
    from ncui.sim.kube.auth import CODE_TTL, Auth

    clock = VirtualClock(datetime(2026, 11, 2, tzinfo=timezone.utc), speed=1e6)
    auth = Auth(1, clock.human_elapsed)
    dc = auth.new_code("halcyon", "halcyon", clock.now())
    t0 = clock.elapsed()
    wait_for(
        lambda: clock.elapsed() - t0 >= 2 * CODE_TTL.total_seconds(),
        5,
        interval=0.001,
        what="the market's clock running past the TTL",
    )
    assert auth.poll(dc.device_code, clock.now()) == ("authorization_pending", None)  # …the link still stands
    assert auth.approve(dc, clock.now()) == "approved"
    late = auth.new_code("halcyon", "halcyon", clock.now())
    clock.advance(CODE_TTL.total_seconds() + 1)  # a test (or a person) letting 15 minutes pass
    assert auth.poll(late.device_code, clock.now()) == ("expired_token", None)
    assert auth.approve(late, clock.now()) == "expired"


class Answers:
    """A real HTTP/1.1 server on loopback (kept-alive connections, as the service's) answering every request with
    what it is told to: answers no box would give. ``seen``: (method, path, the client's port) of each request."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.status, self.body, self.hang_up = 200, b"{}", False
        self.seen: list[tuple[str, str, int]] = []
        answers = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                answers.seen.append((self.command, self.path, self.client_address[1]))
                self.send_response(answers.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answers.body)))
                self.end_headers()
                self.wfile.write(answers.body)
                self.wfile.flush()
                if answers.hang_up:  # closed without a word, as a server does to an idle kept-alive connection
                    self.close_connection = True

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def shutdown_request(self, request: object) -> None:
                super().shutdown_request(request)  # type: ignore[arg-type]
                answers.closed += 1

        self.closed = 0  # connections closed by the server
        self.server = Server(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def answer(self, status: int, body: object) -> None:
        self.status, self.body = status, body if isinstance(body, bytes) else json.dumps(body).encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(5)


@pytest.fixture
def answers():
    a = Answers()
    yield a
    a.close()


@pytest.fixture
def refusing():
    """A loopback address where nothing listens (a port held, never listened on): every connect is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


def test_answers_that_are_not_what_the_contract_says_are_clear_failures(tmp_path, monkeypatch, answers):
    """A device-code answer without its fields, an approval without a token, an error body that is not an
    object, a damaged cache file: a SigninError (kubectl shows "sign-in failed: ...") or nothing, no traceback."""
    answers.answer(200, {})
    with pytest.raises(signin.SigninError, match="no token"):
        signin.poll_once(answers.url, "dc")
    answers.answer(400, ["no"])
    assert signin.poll_once(answers.url, "dc") == ("http-400", None)
    answers.answer(400, {"error": "expired_token"})
    assert signin.poll_once(answers.url, "dc") == ("expired_token", None)
    answers.answer(502, b"<html>Bad gateway</html>")  # not JSON at all
    assert signin.poll_once(answers.url, "dc") == ("http-502", None)
    answers.answer(200, {"device_code": "dc"})
    with pytest.raises(signin.SigninError, match="not a device code"):
        signin.request_code(answers.url, "c")
    answers.answer(500, {})
    with pytest.raises(signin.SigninError, match="answered HTTP 500"):
        signin.request_code(answers.url, "c")
    assert [(m, p) for m, p, _ in answers.seen[-2:]] == [("POST", "/api/k8s/device/code")] * 2
    (tmp_path / "cred.json").write_text("[1, 2]")
    assert signin._read(tmp_path / "cred.json") is None
    monkeypatch.setenv("KUBERNETES_EXEC_INFO", "[]")
    assert signin._exec_info() == {}


def test_a_polling_loop_keeps_one_connection_and_no_proxy_from_the_environment(monkeypatch, answers, refusing):
    """The loop's polls go on one kept-alive connection (not a connection, or a TLS handshake, each second), a new
    one once the service closed it; a proxy named in the environment is not used (httpx had trust_env=False)."""
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(var, refusing)
    answers.answer(400, {"error": "authorization_pending"})
    with contextlib.closing(signin.Service(answers.url)) as service:
        for _ in range(3):
            assert signin.poll_once(answers.url, "dc", service) == ("authorization_pending", None)
        answers.hang_up = True
        assert signin.poll_once(answers.url, "dc", service) == ("authorization_pending", None)
        answers.hang_up = False
        wait_for(lambda: answers.closed == 1, 5, what="the server closing the connection")
        assert signin.poll_once(answers.url, "dc", service) == ("authorization_pending", None)
    ports = [port for _, _, port in answers.seen]
    assert len(ports) == 5 and len(set(ports[:4])) == 1 and ports[4] != ports[0], ports
    assert {p for _, p, _ in answers.seen} == {"/api/k8s/device/token"}


def test_an_unreachable_service_is_one_line_and_the_poller_gives_up_after_five(tmp_path, monkeypatch, capsys, refusing):
    monkeypatch.setenv("NCUI_KUBE_CACHE", str(tmp_path / "auth"))
    signin.save_credential(refusing, "c", "tok-never-shown")
    assert signin.main(["--api", refusing, "--cluster", "c"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"sign-in failed: cannot reach {refusing} (ConnectionRefusedError)\n"
    assert signin.main([f"--api={refusing}", "--cluster", "c"]) == 1  # another spelling: read by argparse
    assert capsys.readouterr().err == err
    with pytest.raises(SystemExit):  # argparse's usage and error
        signin.main(["--cluster", "c"])
    assert "the following arguments are required: --api" in capsys.readouterr().err
    assert signin.main(["--api", "ftp://example.org", "--cluster", "c"]) == 1
    assert capsys.readouterr().err == "sign-in failed: ftp://example.org is not an http:// or https:// address\n"
    # the background poller: five failed polls in a row end it, the pending code left as it was
    pend = {"state": "pending", "device_code": "dc", "poller": None, "interval": 1.0}
    signin._write_private(signin._pending_file(refusing, "c"), pend)
    naps: list[float] = []
    monkeypatch.setattr(signin.time, "sleep", naps.append)
    with contextlib.closing(signin.Service(refusing)) as service:
        assert signin._poll_until(refusing, "c", signin.time.monotonic() + 60, service) == 1
    assert naps == [1, 1, 1, 1]  # a second between the five tries
    assert signin._read(signin._pending_file(refusing, "c")) == pend


def test_https_is_verified_with_one_context_per_process(tmp_path, monkeypatch):
    cert, key = self_signed("127.0.0.1")
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    a = Answers(tls)
    try:
        a.answer(200, {"access_token": "t0k"})
        with pytest.raises(signin.Unreachable, match="^SSLCertVerificationError$"):  # a certificate no CA signed
            signin.poll_once(a.url, "dc")
        assert signin._tls() is signin._tls()  # (the CA bundle loaded once)
        trusting = ssl.create_default_context(cadata=cert.decode())
        monkeypatch.setattr(signin, "_tls", lambda: trusting)
        assert signin.poll_once(a.url, "dc") == ("ok", "t0k")
    finally:
        a.close()


def test_the_plugin_imports_no_httpx_textual_or_pydantic():
    """kubectl runs it before every command: httpx alone was ~100 ms of CPU each time. Nor what only the sign-in
    itself needs (argparse for other command lines, subprocess for the poller)."""
    code = (
        "import sys, ncui.kube.signin\n"
        "print(sorted(m for m, v in sys.modules.items() if v is not None and m.split('.')[0] in "
        "{'httpx', 'httpcore', 'textual', 'pydantic', 'rich', 'yaml', 'argparse', 'subprocess'}))"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "[]", p.stdout
