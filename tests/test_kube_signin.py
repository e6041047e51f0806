"""kubectl's sign-in plugin: one link, background polling without a terminal, silent after approval,
a fresh link after an idle day or an expired code, and waiting with a terminal."""

from __future__ import annotations

import json
import os
import pty
import re
import stat
import subprocess
import sys

import httpx
import pytest

from ncui.kube import signin

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


def test_answers_that_are_not_what_the_contract_says_are_clear_failures(tmp_path, monkeypatch):
    """A device-code answer without its fields, an approval without a token, an error body that is not an
    object, a damaged cache file: a SigninError (kubectl shows "sign-in failed: ...") or nothing, no traceback."""

    def client(status: int, body: object) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(lambda req: httpx.Response(status, json=body)))

    with client(200, {}) as c, pytest.raises(signin.SigninError, match="no token"):
        signin.poll_once("http://api.invalid", "dc", c)
    with client(400, ["no"]) as c:
        assert signin.poll_once("http://api.invalid", "dc", c) == ("http-400", None)
    with client(400, {"error": "expired_token"}) as c:
        assert signin.poll_once("http://api.invalid", "dc", c) == ("expired_token", None)
    monkeypatch.setattr(signin, "_client", lambda: client(200, {"device_code": "dc"}))
    with pytest.raises(signin.SigninError, match="not a device code"):
        signin.request_code("http://api.invalid", "c")
    (tmp_path / "cred.json").write_text("[1, 2]")
    assert signin._read(tmp_path / "cred.json") is None
    monkeypatch.setenv("KUBERNETES_EXEC_INFO", "[]")
    assert signin._exec_info() == {}
