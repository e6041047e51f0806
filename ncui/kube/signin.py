"""kubectl's sign-in: an exec credential plugin with a device-code flow.

    python -m ncui.kube.signin --api URL --cluster NAME

kubectl runs it before talking to the cluster. With a cached credential that the service still accepts
it prints an ``ExecCredential`` (the token) on stdout and nothing else. Otherwise it asks for a device
code and prints ONE sign-in link on stderr for the human to approve:

- with a terminal it waits, polling, until the link is approved (an expired code gets a fresh link);
- without one it exits non-zero at once while a background process keeps polling and caches the
  credential once approved, so the next kubectl call signs in silently.

An idle day ends the credential: the next call prints a link again. Credentials live under
``$NCUI_KUBE_CACHE`` or ``~/.cache/ncui/kube/`` (mode 600). The token is written nowhere else and
printed only inside the ExecCredential on stdout. No Textual here: kubectl runs this in a plain shell.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, TextIO

import httpx

BACKGROUND_MAX = 30 * 60.0  # real seconds a background poller keeps trying
TIMEOUT = 10.0
BACKGROUND_ENV = "NCUI_SIGNIN_BACKGROUND"  # "0": no background poller (see run)


class SigninError(Exception):
    pass


# ---- the cache ----------------------------------------------------------------------------------


def cache_dir() -> Path:
    d = os.environ.get("NCUI_KUBE_CACHE")
    return Path(d) if d else Path.home() / ".cache" / "ncui" / "kube"


def _stem(api: str, cluster: str) -> str:
    return f"{cluster}-{hashlib.sha256(api.rstrip('/').encode()).hexdigest()[:12]}"


def cred_path(api: str, cluster: str) -> Path:
    return cache_dir() / f"{_stem(api, cluster)}.json"


def pending_path(api: str, cluster: str) -> Path:
    return cache_dir() / f"{_stem(api, cluster)}.pending.json"


def _ensure_dir() -> Path:
    d = cache_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(d, 0o700)
    return d


def _write_private(path: Path, data: dict[str, Any]) -> None:
    _ensure_dir()
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _read(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it is missing, unreadable or not an object (a damaged file)."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


@contextlib.contextmanager
def _locked(api: str, cluster: str) -> Iterator[None]:
    _ensure_dir()
    fd = os.open(cache_dir() / f"{_stem(api, cluster)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# ---- the service --------------------------------------------------------------------------------


def _client() -> httpx.Client:
    return httpx.Client(timeout=TIMEOUT, trust_env=False)


def request_code(api: str, cluster: str) -> dict[str, Any]:
    with _client() as c:
        r = c.post(f"{api.rstrip('/')}/api/k8s/device/code", json={"cluster": cluster})
    if r.status_code == 404:
        raise SigninError(f"no cluster named {cluster} in your organization")
    if r.status_code != 200:
        raise SigninError(f"the sign-in service answered HTTP {r.status_code}")
    code = _json_object(r)
    if code is None or not all(k in code for k in ("device_code", "user_code", "verification_uri_complete")):
        raise SigninError("the sign-in service's answer is not a device code")
    return code


def poll_once(api: str, device_code: str, client: httpx.Client | None = None) -> tuple[str, str | None]:
    """("ok", token) | ("authorization_pending" | "expired_token" | "invalid_grant" | ..., None). A loop passes
    its one ``client``: a new one each second costs a tenth of a core (it loads the CA bundle)."""
    if client is None:
        with _client() as c:
            return poll_once(api, device_code, c)
    r = client.post(f"{api.rstrip('/')}/api/k8s/device/token", json={"device_code": device_code})
    body = _json_object(r)
    if r.status_code == 200:
        token = body.get("access_token") if body is not None else None
        if not isinstance(token, str) or not token:
            raise SigninError("the sign-in service approved the code but sent no token")
        return "ok", token
    return str((body or {}).get("error", f"http-{r.status_code}")), None


def _json_object(r: httpx.Response) -> dict[str, Any] | None:
    """The response's JSON object; None when the body is not JSON or not an object."""
    try:
        doc = r.json()
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def session_ok(api: str, cluster: str, token: str) -> bool:
    """Does the service still accept the cached token (not idle for a day)?"""
    with _client() as c:
        r = c.get(
            f"{api.rstrip('/')}/api/k8s/device/session",
            params={"cluster": cluster},
            headers={"Authorization": f"Bearer {token}"},
        )
    if r.status_code == 401:
        return False
    if r.status_code != 200:
        raise SigninError(f"the sign-in service answered HTTP {r.status_code}")
    return True


def save_credential(api: str, cluster: str, token: str) -> None:
    _write_private(cred_path(api, cluster), {"api": api, "cluster": cluster, "token": token, "saved_at": time.time()})


# ---- output -------------------------------------------------------------------------------------


def exec_credential(token: str, api_version: str) -> str:
    exp = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(minutes=10)
    return json.dumps(
        {
            "apiVersion": api_version,
            "kind": "ExecCredential",
            "spec": {"interactive": False},
            "status": {"token": token, "expirationTimestamp": exp.strftime("%Y-%m-%dT%H:%M:%SZ")},
        }
    )


def _exec_info() -> dict[str, Any]:
    try:
        info = json.loads(os.environ.get("KUBERNETES_EXEC_INFO", "") or "{}")
    except ValueError:
        return {}
    return info if isinstance(info, dict) else {}


def _interactive(info: dict[str, Any]) -> bool:
    spec = info.get("spec") or {}
    if "interactive" in spec:
        return bool(spec["interactive"]) and sys.stdin is not None and _isatty(sys.stdin)
    return sys.stdin is not None and _isatty(sys.stdin)


def _isatty(f: TextIO) -> bool:
    try:
        return f.isatty()
    except (ValueError, OSError):
        return False


def _say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _link_message(cluster: str, link: str) -> str:
    return f"To sign in to cluster {cluster}, open this link and approve it:\n\n    {link}\n"


# ---- the flow -----------------------------------------------------------------------------------


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def _start_poller(api: str, cluster: str) -> int:
    p = subprocess.Popen(
        [sys.executable, "-m", "ncui.kube.signin", "--api", api, "--cluster", cluster, "--poll"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )
    return p.pid


def _pending(api: str, cluster: str) -> tuple[dict[str, Any], bool]:
    """The current device code (a fresh one when there is none or it expired), and whether it is new."""
    pend = _read(pending_path(api, cluster))
    if pend is not None and pend.get("state") == "pending":
        return pend, False
    code = request_code(api, cluster)
    pend = {
        "state": "pending",
        "device_code": code["device_code"],
        "user_code": code["user_code"],
        "link": code["verification_uri_complete"],
        "interval": float(code.get("interval", 1)),
        "printed_for": [],
        "poller": None,
    }
    _write_private(pending_path(api, cluster), pend)
    return pend, True


def run(api: str, cluster: str) -> int:
    info = _exec_info()
    api_version = info.get("apiVersion") or "client.authentication.k8s.io/v1"
    cred = _read(cred_path(api, cluster))
    if cred and cred.get("token"):
        if session_ok(api, cluster, cred["token"]):
            print(exec_credential(cred["token"], api_version))
            return 0
        with contextlib.suppress(OSError):
            cred_path(api, cluster).unlink()
    interactive = _interactive(info)
    # NCUI_SIGNIN_BACKGROUND=0: a one-shot caller (ncui report) leaves no poller behind; its next run, or any
    # kubectl call, polls the pending code itself first and so finds the approval without one
    background = os.environ.get(BACKGROUND_ENV) != "0"
    while True:
        with _locked(api, cluster):
            cred = _read(cred_path(api, cluster))  # a background poller may have finished meanwhile
            if cred and cred.get("token"):
                print(exec_credential(cred["token"], api_version))
                return 0
            pend, _ = _pending(api, cluster)
            verdict, token = poll_once(api, pend["device_code"])
            if verdict == "ok" and token:
                return _approved(api, cluster, token, api_version)
            if verdict != "authorization_pending":  # expired or spent: a fresh code, a fresh link
                with contextlib.suppress(OSError):
                    pending_path(api, cluster).unlink()
                pend, _ = _pending(api, cluster)
            caller = os.getppid()
            first = caller not in pend["printed_for"]
            if first:  # one link per kubectl call, however often it retries
                _say(_link_message(cluster, pend["link"]))
                pend["printed_for"] = (pend["printed_for"] + [caller])[-20:]
            if not interactive and background and not _alive(pend.get("poller")):
                pend["poller"] = _start_poller(api, cluster)
            _write_private(pending_path(api, cluster), pend)
        if not interactive:
            if first:
                _say(
                    "No terminal here: sign-in goes on in the background; run kubectl again once the link is approved."
                    if background
                    else "No terminal here: run this again once the link is approved."
                )
            return 1
        _say("Waiting for approval…")
        code_now = pend["device_code"]
        with _client() as poller:
            while True:
                time.sleep(max(0.1, pend.get("interval", 1)))
                verdict, token = poll_once(api, code_now, poller)
                if verdict == "ok" and token:
                    with _locked(api, cluster):
                        return _approved(api, cluster, token, api_version)
                if verdict != "authorization_pending":
                    cred = _read(cred_path(api, cluster))
                    if cred and cred.get("token"):  # another process got it
                        print(exec_credential(cred["token"], api_version))
                        return 0
                    _say("That sign-in link expired; here is a fresh one.")
                    with _locked(api, cluster):
                        p = _read(pending_path(api, cluster))
                        if p and p.get("device_code") == code_now:
                            pending_path(api, cluster).unlink()
                    break  # back to the top: a new code and its link


def _approved(api: str, cluster: str, token: str, api_version: str) -> int:
    """An approved sign-in (the lock held): cache its credential, drop its pending code, hand it to kubectl."""
    save_credential(api, cluster, token)
    with contextlib.suppress(OSError):
        pending_path(api, cluster).unlink()
    print(exec_credential(token, api_version))
    return 0


def poll_background(api: str, cluster: str) -> int:
    """Keep polling the pending code; cache the credential once approved. Exits on any verdict."""
    deadline = time.monotonic() + BACKGROUND_MAX
    with _client() as c:
        return _poll_until(api, cluster, deadline, c)


def _poll_until(api: str, cluster: str, deadline: float, client: httpx.Client) -> int:
    failures = 0
    while time.monotonic() < deadline:
        pend = _read(pending_path(api, cluster))
        if pend is None or pend.get("state") != "pending" or pend.get("poller") not in (None, os.getpid()):
            return 0
        try:
            verdict, token = poll_once(api, pend["device_code"], client)
            failures = 0
        except httpx.HTTPError:
            failures += 1
            if failures >= 5:
                return 1
            time.sleep(1)
            continue
        if verdict == "ok" and token:
            with _locked(api, cluster):
                save_credential(api, cluster, token)
                p = _read(pending_path(api, cluster))
                if p and p.get("device_code") == pend["device_code"]:
                    pending_path(api, cluster).unlink()
            return 0
        if verdict != "authorization_pending":
            with _locked(api, cluster):
                p = _read(pending_path(api, cluster))
                if p and p.get("device_code") == pend["device_code"]:
                    p["state"] = verdict
                    _write_private(pending_path(api, cluster), p)
            return 0
        time.sleep(max(0.1, float(pend.get("interval", 1))))
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ncui.kube.signin", description=__doc__.split("\n\n")[0])
    p.add_argument("--api", required=True, help="National Compute's API origin")
    p.add_argument("--cluster", required=True, help="the cluster's name")
    p.add_argument("--poll", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    try:
        if args.poll:
            return poll_background(args.api, args.cluster)
        return run(args.api, args.cluster)
    except SigninError as e:
        _say(f"sign-in failed: {e}")
        return 1
    except httpx.HTTPError as e:
        _say(f"sign-in failed: cannot reach {args.api} ({type(e).__name__})")
        return 1


if __name__ == "__main__":
    sys.exit(main())
