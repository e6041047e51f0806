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

import contextlib
import fcntl
import functools
import hashlib
import http.client
import json
import os
import select
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode, urlsplit

from .. import __version__

# kubectl runs this before every command, and most calls take the cached-credential path (the cache read, one GET,
# the answer printed): what that path does not use is imported where it is used (argparse, subprocess, pathlib,
# typing: a few ms of CPU each, every kubectl call; httpx was ~100 ms), and the TLS context (the CA bundle loaded) is
# made at the first https request. http.client, that path's one request, brings socket, ssl and email along.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import ssl
    from pathlib import Path
    from typing import Any, TextIO

BACKGROUND_MAX = 30 * 60.0  # real seconds a background poller keeps trying
TIMEOUT = 10.0
BACKGROUND_ENV = "NCUI_SIGNIN_BACKGROUND"  # "0": no background poller (see run)


class SigninError(Exception):
    pass


# ---- the cache ----------------------------------------------------------------------------------


def cache_dir() -> str:
    return os.environ.get("NCUI_KUBE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "ncui", "kube")


def _stem(api: str, cluster: str) -> str:
    return f"{cluster}-{hashlib.sha256(api.rstrip('/').encode()).hexdigest()[:12]}"


def _cred_file(api: str, cluster: str) -> str:
    return os.path.join(cache_dir(), f"{_stem(api, cluster)}.json")


def _pending_file(api: str, cluster: str) -> str:
    return os.path.join(cache_dir(), f"{_stem(api, cluster)}.pending.json")


def cred_path(api: str, cluster: str) -> Path:
    """Where the credential for ``cluster`` at ``api`` is cached (the app asks whether there is one)."""
    from pathlib import Path

    return Path(_cred_file(api, cluster))


def _ensure_dir() -> str:
    d = cache_dir()
    os.makedirs(d, mode=0o700, exist_ok=True)
    with contextlib.suppress(OSError):
        os.chmod(d, 0o700)
    return d


def _write_private(path: str, data: dict[str, Any]) -> None:
    _ensure_dir()
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _read(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when it is missing, unreadable or not an object (a damaged file)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)


@contextlib.contextmanager
def _locked(api: str, cluster: str) -> Iterator[None]:
    _ensure_dir()
    fd = os.open(os.path.join(cache_dir(), f"{_stem(api, cluster)}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# ---- the service --------------------------------------------------------------------------------


class Unreachable(Exception):
    """The service could not be reached, or its answer was cut: refused, timed out, hung up, TLS. ``str()`` is the
    kind (the standard library's name for it), never the request's text: its headers hold the token."""


@functools.cache
def _tls() -> ssl.SSLContext:
    """This process's one TLS context, made at its first https request (loading the CA bundle is most of a
    request's CPU): Mozilla's bundle (certifi), as httpx verified with, else the system's."""
    import ssl

    try:
        import certifi
    except ImportError:
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class Service:
    """The sign-in service at ``api`` over one HTTP/1.1 connection, kept alive between a polling loop's requests
    (no new connection, or TLS handshake, each second) and opened anew when the service closed it meanwhile.
    http.client reads no proxy from the environment; TIMEOUT bounds the connect and each read."""

    def __init__(self, api: str) -> None:
        try:
            u = urlsplit(api.rstrip("/"))
        except ValueError:
            u = None
        if u is None or u.scheme not in ("http", "https") or not u.netloc:
            raise SigninError(f"{api} is not an http:// or https:// address")
        self._https, self._netloc, self._base = u.scheme == "https", u.netloc, u.path
        self._conn: http.client.HTTPConnection | None = None

    def request(
        self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None, token: str | None = None
    ) -> tuple[int, bytes]:
        """(status, body) of ``method`` ``path`` (under the API's own path); ``body``, when given, goes as JSON,
        ``token`` as the bearer. Raises Unreachable."""
        target = self._base + path + (f"?{urlencode(query)}" if query else "")
        headers = {"Accept": "application/json", "User-Agent": f"ncui/{__version__} (kubectl sign-in)"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        try:
            conn = self._connection()
            conn.request(method, target, data, headers)
            r = conn.getresponse()
            status, content = r.status, r.read()
            if r.will_close:
                self.close()
        except (OSError, http.client.HTTPException, ValueError) as e:  # (ValueError: a header http.client refuses)
            self.close()
            raise Unreachable(type(e).__name__) from None  # (not chained: a traceback would show the request)
        return status, content

    def _connection(self) -> http.client.HTTPConnection:
        sock = self._conn.sock if self._conn is not None else None
        if sock is not None and select.select([sock], [], [], 0)[0]:  # closed by the service while idle
            self.close()
        if self._conn is None:
            if self._https:
                self._conn = http.client.HTTPSConnection(self._netloc, timeout=TIMEOUT, context=_tls())
            else:
                self._conn = http.client.HTTPConnection(self._netloc, timeout=TIMEOUT)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def request_code(api: str, cluster: str) -> dict[str, Any]:
    with contextlib.closing(Service(api)) as s:
        status, body = s.request("POST", "/api/k8s/device/code", {"cluster": cluster})
    if status == 404:
        raise SigninError(f"no cluster named {cluster} in your organization")
    if status != 200:
        raise SigninError(f"the sign-in service answered HTTP {status}")
    code = _json_object(body)
    if code is None or not all(k in code for k in ("device_code", "user_code", "verification_uri_complete")):
        raise SigninError("the sign-in service's answer is not a device code")
    return code


def poll_once(api: str, device_code: str, service: Service | None = None) -> tuple[str, str | None]:
    """("ok", token) | ("authorization_pending" | "expired_token" | "invalid_grant" | ..., None). A loop passes
    its one ``service`` (one connection for all its polls)."""
    if service is None:
        with contextlib.closing(Service(api)) as s:
            return poll_once(api, device_code, s)
    status, content = service.request("POST", "/api/k8s/device/token", {"device_code": device_code})
    body = _json_object(content)
    if status == 200:
        token = body.get("access_token") if body is not None else None
        if not isinstance(token, str) or not token:
            raise SigninError("the sign-in service approved the code but sent no token")
        return "ok", token
    return str((body or {}).get("error", f"http-{status}")), None


def _json_object(content: bytes) -> dict[str, Any] | None:
    """The answer's JSON object; None when the body is not JSON or not an object."""
    try:
        doc = json.loads(content)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def session_ok(api: str, cluster: str, token: str) -> bool:
    """Does the service still accept the cached token (not idle for a day)?"""
    with contextlib.closing(Service(api)) as s:
        status, _ = s.request("GET", "/api/k8s/device/session", query={"cluster": cluster}, token=token)
    if status == 401:
        return False
    if status != 200:
        raise SigninError(f"the sign-in service answered HTTP {status}")
    return True


def save_credential(api: str, cluster: str, token: str) -> None:
    _write_private(_cred_file(api, cluster), {"api": api, "cluster": cluster, "token": token, "saved_at": time.time()})


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
    import subprocess

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
    pend = _read(_pending_file(api, cluster))
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
    _write_private(_pending_file(api, cluster), pend)
    return pend, True


def run(api: str, cluster: str) -> int:
    info = _exec_info()
    api_version = info.get("apiVersion") or "client.authentication.k8s.io/v1"
    cred = _read(_cred_file(api, cluster))
    if cred and cred.get("token"):
        if session_ok(api, cluster, cred["token"]):
            print(exec_credential(cred["token"], api_version))
            return 0
        _unlink(_cred_file(api, cluster))
    interactive = _interactive(info)
    # NCUI_SIGNIN_BACKGROUND=0: a one-shot caller (ncui report) leaves no poller behind; its next run, or any
    # kubectl call, polls the pending code itself first and so finds the approval without one
    background = os.environ.get(BACKGROUND_ENV) != "0"
    while True:
        with _locked(api, cluster):
            cred = _read(_cred_file(api, cluster))  # a background poller may have finished meanwhile
            if cred and cred.get("token"):
                print(exec_credential(cred["token"], api_version))
                return 0
            pend, _ = _pending(api, cluster)
            verdict, token = poll_once(api, pend["device_code"])
            if verdict == "ok" and token:
                return _approved(api, cluster, token, api_version)
            if verdict != "authorization_pending":  # expired or spent: a fresh code, a fresh link
                _unlink(_pending_file(api, cluster))
                pend, _ = _pending(api, cluster)
            caller = os.getppid()
            first = caller not in pend["printed_for"]
            if first:  # one link per kubectl call, however often it retries
                _say(_link_message(cluster, pend["link"]))
                pend["printed_for"] = (pend["printed_for"] + [caller])[-20:]
            if not interactive and background and not _alive(pend.get("poller")):
                pend["poller"] = _start_poller(api, cluster)
            _write_private(_pending_file(api, cluster), pend)
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
        with contextlib.closing(Service(api)) as service:
            while True:
                time.sleep(max(0.1, pend.get("interval", 1)))
                verdict, token = poll_once(api, code_now, service)
                if verdict == "ok" and token:
                    with _locked(api, cluster):
                        return _approved(api, cluster, token, api_version)
                if verdict != "authorization_pending":
                    cred = _read(_cred_file(api, cluster))
                    if cred and cred.get("token"):  # another process got it
                        print(exec_credential(cred["token"], api_version))
                        return 0
                    _say("That sign-in link expired; here is a fresh one.")
                    with _locked(api, cluster):
                        p = _read(_pending_file(api, cluster))
                        if p and p.get("device_code") == code_now:
                            _unlink(_pending_file(api, cluster))
                    break  # back to the top: a new code and its link


def _approved(api: str, cluster: str, token: str, api_version: str) -> int:
    """An approved sign-in (the lock held): cache its credential, drop its pending code, hand it to kubectl."""
    save_credential(api, cluster, token)
    _unlink(_pending_file(api, cluster))
    print(exec_credential(token, api_version))
    return 0


def poll_background(api: str, cluster: str) -> int:
    """Keep polling the pending code; cache the credential once approved. Exits on any verdict."""
    deadline = time.monotonic() + BACKGROUND_MAX
    with contextlib.closing(Service(api)) as service:
        return _poll_until(api, cluster, deadline, service)


def _poll_until(api: str, cluster: str, deadline: float, service: Service) -> int:
    failures = 0
    while time.monotonic() < deadline:
        pend = _read(_pending_file(api, cluster))
        if pend is None or pend.get("state") != "pending" or pend.get("poller") not in (None, os.getpid()):
            return 0
        try:
            verdict, token = poll_once(api, pend["device_code"], service)
            failures = 0
        except Unreachable:
            failures += 1
            if failures >= 5:
                return 1
            time.sleep(1)
            continue
        if verdict == "ok" and token:
            with _locked(api, cluster):
                save_credential(api, cluster, token)
                p = _read(_pending_file(api, cluster))
                if p and p.get("device_code") == pend["device_code"]:
                    _unlink(_pending_file(api, cluster))
            return 0
        if verdict != "authorization_pending":
            with _locked(api, cluster):
                p = _read(_pending_file(api, cluster))
                if p and p.get("device_code") == pend["device_code"]:
                    p["state"] = verdict
                    _write_private(_pending_file(api, cluster), p)
            return 0
        time.sleep(max(0.1, float(pend.get("interval", 1))))
    return 1


def _arguments(argv: list[str]) -> tuple[str, str, bool]:
    """(api, cluster, poll). The two command lines this plugin is run with (the kubeconfig's, the poller's) are
    read as they stand: argparse would cost kubectl's every call a few ms more (it and shutil imported, a help
    formatter built). Any other goes through argparse: its usage, --help, errors."""
    if len(argv) in (4, 5) and argv[0] == "--api" and argv[2] == "--cluster" and argv[4:] in ([], ["--poll"]):
        if not argv[1].startswith("-") and not argv[3].startswith("-"):
            return argv[1], argv[3], len(argv) == 5
    import argparse

    p = argparse.ArgumentParser(prog="python -m ncui.kube.signin", description=__doc__.split("\n\n")[0])
    p.add_argument("--api", required=True, help="National Compute's API origin")
    p.add_argument("--cluster", required=True, help="the cluster's name")
    p.add_argument("--poll", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    return args.api, args.cluster, args.poll


def main(argv: list[str] | None = None) -> int:
    api, cluster, poll = _arguments(sys.argv[1:] if argv is None else argv)
    try:
        if poll:
            return poll_background(api, cluster)
        return run(api, cluster)
    except SigninError as e:
        _say(f"sign-in failed: {e}")
        return 1
    except Unreachable as e:
        _say(f"sign-in failed: cannot reach {api} ({e})")
        return 1


if __name__ == "__main__":
    sys.exit(main())
