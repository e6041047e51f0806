"""An async Kubernetes client on httpx: list, watch, get, apply, delete, scale, pod logs, the service proxy.

It reads the kubeconfig the portal hands out (server URL, pinned certificate authority, the sign-in exec
plugin) and signs in the way kubectl does: it runs the plugin (``session.run_plugin``) and uses the
ExecCredential's token until it expires or the server answers 401. The token lives only in memory, as a
``SecretStr``: never logged, never in an exception, never in a repr.

Resources are plain dicts (the JSON the API server speaks). No Textual here.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import contextlib
import copy
import json
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import yaml
from pydantic import SecretStr

from ..api.client import BearerAuth, ResendOnHangup
from ..history import Recorder, kubectl_command
from ..textsafe import loads_clean
from . import session
from .errors import Gone, KubeError, NotSignedIn, clean_line
from .gate import SignInGate
from .linestream import Lines, LineStream, StreamFailed
from .status import parse_time

__all__ = ["KubeError", "Gone", "NotSignedIn", "ApplyResult", "KubeClient", "Kind", "KINDS", "kind_of"]

REFRESH_MARGIN = 30.0  # seconds before the credential's expiry at which the plugin is run again


# ---- kinds ----------------------------------------------------------------------------------------

from .kinds import KINDS, Kind, quantity  # noqa: E402  (KINDS and Kind re-exported: the client's kinds)


def kind_of(name: str) -> Kind:
    """A Kind by plural (``jobs``), singular or Kind name (``Job``)."""
    k = KINDS.get(name) or KINDS.get(name.lower()) or KINDS.get(name.lower() + "s")
    if k is None:
        k = next((x for x in KINDS.values() if x.kind.lower() == name.lower()), None)
    if k is None:
        raise ValueError(f"unknown kind {name!r}")
    return k


def _kind_of_doc(doc: dict[str, Any]) -> Kind:
    api, kind = doc.get("apiVersion"), doc.get("kind")
    for k in KINDS.values():
        if k.kind == kind and k.api_version == api:
            return k
    raise ValueError(f"the manifest's {kind or '?'} ({api or '?'}) is not a kind ncui applies")


# ---- apply helpers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApplyResult:
    kind: str  # the Kind: "Job", "Deployment", "Service", …
    name: str
    action: str  # "created" | "configured" | "unchanged" (the attempted action when error is set)
    error: str | None = None
    ref: str = ""  # kubectl's name: "job.batch/nanogpt"
    immutable: tuple[str, ...] = ()  # refused: the fields that cannot change once it exists (spec.template)

    def __str__(self) -> str:
        who = self.ref or f"{self.kind.lower()}/{self.name}"
        return f"{who} {self.action}" if self.error is None else f"{who}: {self.error}"


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def normalise(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy with every ``resources.limits/requests`` quantity as a string (``8`` → ``"8"``), as the API
    server stores them and the official clients require."""
    doc = copy.deepcopy(doc)

    def walk(o: Any) -> None:
        if isinstance(o, dict):
            res = o.get("resources")
            if isinstance(res, dict):
                for part in ("limits", "requests"):
                    if isinstance(res.get(part), dict):
                        res[part] = {k: quantity(v) for k, v in res[part].items()}
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(doc)
    return doc


def _subset(want: Any, have: Any) -> bool:
    """Does ``have`` already hold everything ``want`` says (server defaults may add more)?"""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and _subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return (
            isinstance(have, list)
            and len(want) == len(have)
            and all(_subset(a, b) for a, b in zip(want, have, strict=False))
        )
    if isinstance(want, (int, float)) and not isinstance(want, bool) and isinstance(have, str):
        return quantity(want) == have
    return bool(want == have)  # JSON values: a bool already (Any to mypy)


def _deletions(old: Any, new: Any) -> dict[str, Any]:
    """The merge-patch nulls for fields the last apply set and this one dropped (kubectl's three-way rule)."""
    out: dict[str, Any] = {}
    if isinstance(old, dict) and isinstance(new, dict):
        for k, v in old.items():
            if k not in new:
                out[k] = None
            elif isinstance(v, dict) and isinstance(new[k], dict):
                sub = _deletions(v, new[k])
                if sub:
                    out[k] = sub
    return out


def _deep_merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _deep_merge(out[k], v) if isinstance(out.get(k), dict) and isinstance(v, dict) else v
    return out


# ---- the client ------------------------------------------------------------------------------------


def _ssl_context(cluster: dict[str, Any]) -> ssl.SSLContext | bool:
    if cluster.get("insecure-skip-tls-verify"):
        return False
    data = cluster.get("certificate-authority-data")
    if data:
        return ssl.create_default_context(cadata=base64.b64decode(data).decode("ascii"))
    path = cluster.get("certificate-authority")
    if path:
        return ssl.create_default_context(cafile=path)
    return ssl.create_default_context()


class KubeClient:
    """``kc = KubeClient.from_kubeconfig(text)``; ``await kc.list("pods")``; ``await kc.aclose()``."""

    def __init__(
        self,
        server: str,
        exec_spec: session.ExecSpec | None,
        *,
        verify: ssl.SSLContext | bool = True,
        namespace: str = "default",
        timeout: float = 15.0,
        history: Recorder | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self.history = history  # where its deletes, scales and restarts are recorded (the backend's; None: nowhere)
        self.namespace = namespace
        self._spec = exec_spec
        self._token: SecretStr | None = None
        self._expires: float = 0.0  # time.time() at which the credential expires
        self._generation = 0  # bumps on every new credential
        self._lock = asyncio.Lock()
        self.gate = SignInGate()  # closed while the cluster refuses the sign-in and a link waits for approval
        self.kubeconfig: str | None = None  # the kubeconfig it was built from (from_kubeconfig)
        self.context = ""  # its context's name (the cluster's): what the history's kubectl lines name
        self.plugin_runs = 0  # how often the sign-in plugin ran (tests and the status line)
        self._timeout = timeout
        self._verify = verify
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout),
            trust_env=False,
            transport=ResendOnHangup(
                httpx.AsyncHTTPTransport(
                    verify=verify,
                    trust_env=False,
                    limits=httpx.Limits(max_connections=50, max_keepalive_connections=10),
                )
            ),
        )

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str, context: str | None = None, **kw: Any) -> KubeClient:
        try:
            doc = yaml.safe_load(kubeconfig) or {}
            name = context or doc.get("current-context")
            ctx = next(c["context"] for c in doc.get("contexts") or [] if c.get("name") == name)
            cluster = next(c["cluster"] for c in doc.get("clusters") or [] if c.get("name") == ctx.get("cluster"))
            server = str(cluster["server"])
        except (yaml.YAMLError, StopIteration, KeyError, TypeError, AttributeError) as e:
            raise ValueError(
                f"the kubeconfig names no cluster for context {context or '(current)'} ({type(e).__name__})"
            ) from None
        spec = session.exec_spec(kubeconfig, name)
        client = cls(server, spec, verify=_ssl_context(cluster), namespace=ctx.get("namespace") or "default", **kw)
        client.kubeconfig = kubeconfig  # what it was built from: a changed one means the cluster moved
        client.context = str(name or "")
        return client

    def __repr__(self) -> str:
        return f"KubeClient(server={self.server!r}, signed_in={self._token is not None})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    # ---- credentials ------------------------------------------------------------------------------

    async def _credential(self, stale_generation: int | None = None, check: bool = False) -> tuple[BearerAuth, int]:
        """The bearer token (as an ``httpx.Auth``: no plain string of it in any frame here) and its generation;
        runs the plugin when there is none, it expired, or the server refused generation ``stale_generation``.
        Without a credential it closes the gate; while the gate is closed after a sign-in that held, only
        ``check`` (a sign-in flow polling for the approval) runs the plugin: any other caller is told at once
        (watchers and followers then wait on the gate)."""
        async with self._lock:
            if (
                self._token is not None
                and time.time() < self._expires - REFRESH_MARGIN  # fresh
                and stale_generation != self._generation
            ):
                return BearerAuth(self._token), self._generation
            if not self.gate.is_open and not check and self._generation:
                raise NotSignedIn(self.gate.link, self.gate.reason)
            if self._spec is None:
                self.gate.close(None, "the kubeconfig has no sign-in plugin")
                raise NotSignedIn(None, "the kubeconfig has no sign-in plugin")
            self.plugin_runs += 1
            res = await session.run_plugin(self._spec)
            if not res.signed_in or res.token is None:
                self._token = None
                link = res.link or self.gate.link  # the plugin prints a link once per caller: keep the one given
                if not link:  # no link at all: the plugin failed (it says why)
                    why = res.message[:200] or "the sign-in plugin gave no credential and no link"
                elif check and not self.gate.is_open:
                    why = ""  # still waiting: the reason given stands
                elif self._generation == 0:
                    why = "not signed in yet"
                elif stale_generation is not None and not check:  # an idle day, a revoked token
                    why = (
                        "the cluster no longer accepts the sign-in (it answered 401: a day idle ends it, "
                        "or a revocation)"
                    )
                else:
                    why = "the sign-in expired"
                self.gate.close(link, why)
                raise NotSignedIn(link, res.message)
            self._token = res.token
            try:
                self._expires = parse_time(res.expires).timestamp() if res.expires else time.time() + 600
            except ValueError:
                self._expires = time.time() + 600
            self._generation += 1
            self.gate.open()
            return BearerAuth(self._token), self._generation

    def forget_credential(self) -> None:
        """Drop the in-memory token (the next request runs the plugin again)."""
        self._token = None

    async def check_sign_in(self) -> session.SigninResult:
        """Run the sign-in plugin now, even while the gate is closed: signed in (the gate opens), or not with
        the link to approve. Never the token."""
        try:
            await self._credential(self._generation, check=True)
        except NotSignedIn as e:
            return session.SigninResult(False, e.link, e.message)
        return session.SigninResult(True)

    async def server_version(self) -> dict[str, Any]:
        """``GET /version``, without signing in (a cluster tells anyone its version, as ``kubectl version`` reads
        it): ``{"major": "1", "minor": "32", "gitVersion": …}``. KubeError when it cannot be read."""
        url = self.server + "/version"
        try:
            r = await self._http.get(url)
        except httpx.HTTPError as e:
            raise self._unreachable(e, url) from None
        if r.status_code >= 400:
            raise self._error(r)
        try:
            doc = r.json()
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            raise KubeError(r.status_code, "Malformed", "the cluster's /version is not JSON")
        return doc

    async def probe(self) -> None:
        """One small request: does the cluster still accept the sign-in? (A 401 closes the gate.)"""
        r = await self._request("GET", "/api")
        if r.status_code >= 400:
            raise self._error(r)

    # ---- requests ---------------------------------------------------------------------------------

    def _path(self, kind: str, namespace: str | None, name: str | None = None, sub: str = "") -> str:
        k = kind_of(kind)
        p = k.base
        if k.namespaced:
            p += f"/namespaces/{quote(namespace or self.namespace, safe='')}"
        p += f"/{k.plural}"
        if name is not None:
            p += f"/{quote(name, safe='')}"
        if sub:
            p += f"/{sub}"
        return p

    @staticmethod
    def _error(r: httpx.Response, body: bytes | None = None) -> KubeError:
        return KubeClient._status_error(r.status_code, r.reason_phrase, body if body is not None else r.content)

    @staticmethod
    def _status_error(status: int, phrase: str, raw: bytes) -> KubeError:
        reason, message, immutable = phrase or "Error", "", []
        try:
            doc = json.loads(raw)
            if isinstance(doc, dict):
                reason = str(doc.get("reason") or reason)
                message = str(doc.get("message") or doc.get("detail") or "")
                details = doc.get("details")
                causes = details.get("causes") if isinstance(details, dict) else None
                for c in causes if isinstance(causes, list) else []:  # (422 Invalid: one a field)
                    if isinstance(c, dict) and str(c.get("message", "")).endswith("field is immutable"):
                        immutable.append(str(c.get("field") or "?"))
        except ValueError:
            message = raw[:500].decode("utf-8", "replace")
        if not message:
            message = f"HTTP {status}"
        if status == 410:
            return Gone(status, reason, message)
        return KubeError(status, reason, message, tuple(immutable))

    @staticmethod
    def _unreachable(e: Exception, url: str) -> KubeError:
        host = httpx.URL(url).netloc.decode("ascii", "replace")
        return KubeError(None, "Unreachable", f"{host} ({type(e).__name__}: {clean_line(str(e), 200) or 'no answer'})")

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        content_type: str | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        url = self.server + path
        stale = None
        for attempt in range(2):
            auth, gen = await self._credential(stale)
            headers = {"Accept": "application/json"}
            if content_type:
                headers["Content-Type"] = content_type
            try:
                r = await self._http.request(
                    method,
                    url,
                    params=params,
                    json=json_body,
                    content=content,
                    headers=headers,
                    auth=auth,
                    timeout=timeout or self._timeout,
                )
            except httpx.HTTPError as e:
                raise self._unreachable(e, url) from None
            if r.status_code == 401 and attempt == 0:
                stale = gen
                continue
            return r
        return r

    async def _json(self, method: str, path: str, ok_404: bool = False, **kw: Any) -> dict[str, Any] | None:
        r = await self._request(method, path, **kw)
        if r.status_code == 404 and ok_404:
            return None
        if r.status_code >= 400:
            raise self._error(r)
        try:
            doc = r.json()
        except ValueError:
            raise KubeError(r.status_code, "BadResponse", "the cluster's answer is not JSON") from None
        if not isinstance(doc, dict):  # every answer read here is an object (a resource, a list, a Scale)
            raise KubeError(r.status_code, "BadResponse", "the cluster's answer is not a JSON object")
        return doc

    async def _line_batches(
        self, path: str, params: dict[str, Any], read_timeout: float | None
    ) -> AsyncGenerator[builtins.list[str], None]:
        """A streamed GET's lines (no newline), in batches as they arrive; the first batch is empty: the stream is
        open. Not through httpx: a fast log's lines, or a big cluster's hundred watch events a second, would pay
        its layers (httpcore, anyio, h11) for every read (linestream.py; bench/logs.py, bench/pods.py)."""
        url = self.server + path + ("?" + urlencode(params) if params else "")
        stale = None
        for attempt in range(2):
            auth, gen = await self._credential(stale)
            try:  # the header stays a secret down to the bytes written (linestream)
                stream, head = await LineStream.open(
                    url, {"Authorization": auth.header()}, self._verify, connect_timeout=self._timeout
                )
            except StreamFailed as e:
                raise self._unreachable(e, url) from None
            if head.status == 401 and attempt == 0:
                stale = gen
                continue
            if head.status >= 400:
                raise self._status_error(head.status, head.reason, head.body)
            break
        try:
            yield Lines()
            async for batch in stream.batches(read_timeout=read_timeout):
                yield batch
        except (StreamFailed, asyncio.TimeoutError) as e:
            raise self._unreachable(e, self.server) from None
        finally:
            stream.close()

    # ---- reads ------------------------------------------------------------------------------------

    async def list(
        self, kind: str, namespace: str = "default", label_selector: str | None = None
    ) -> tuple[builtins.list[dict[str, Any]], str]:  # builtins: `list` here is the method
        k = kind_of(kind)
        params = {"labelSelector": label_selector} if label_selector else None
        doc = await self._json("GET", self._path(kind, namespace), params=params) or {}
        items = doc.get("items") or []
        for o in items:
            o.setdefault("apiVersion", k.api_version)
            o.setdefault("kind", k.kind)
        return items, str((doc.get("metadata") or {}).get("resourceVersion", ""))

    async def get(self, kind: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
        return await self._json("GET", self._path(kind, namespace, name), ok_404=True)

    async def watch(
        self,
        kind: str,
        resource_version: str,
        namespace: str = "default",
        timeout_seconds: int | None = None,
        label_selector: str | None = None,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Events after ``resource_version``: (``ADDED|MODIFIED|DELETED``, object), every string of it made safe to
        show (textsafe). Raises ``Gone`` on 410."""
        params: dict[str, Any] = {"watch": "true", "resourceVersion": resource_version, "allowWatchBookmarks": "false"}
        if timeout_seconds is not None:
            params["timeoutSeconds"] = int(timeout_seconds)
        if label_selector:
            params["labelSelector"] = label_selector
        read = None if timeout_seconds is None else timeout_seconds + 30.0
        batches = self._line_batches(self._path(kind, namespace), params, read)
        try:
            async for batch in batches:
                for line in batch:
                    if not line.strip():
                        continue
                    try:
                        ev = loads_clean(line)  # (a hundred whole pods a second on a big cluster: walked if need be)
                    except ValueError:
                        raise KubeError(None, "BadResponse", "the watch stream sent a line that is not JSON") from None
                    typ, obj = ev.get("type"), ev.get("object") or {}
                    if typ == "ERROR":
                        code = obj.get("code")
                        causes = (obj.get("details") or {}).get("causes") or []
                        too_large = any(c.get("reason") == "ResourceVersionTooLarge" for c in causes)
                        cls = Gone if code == 410 or too_large else KubeError
                        raise cls(code, str(obj.get("reason") or "Error"), str(obj.get("message") or "watch error"))
                    if typ in ("ADDED", "MODIFIED", "DELETED"):
                        yield typ, obj
        finally:
            await batches.aclose()

    # ---- writes -----------------------------------------------------------------------------------

    async def apply(
        self, docs: builtins.list[dict[str, Any]], namespace: str = "default", *, dry_run: bool = False
    ) -> builtins.list[ApplyResult]:
        """kubectl apply, one document at a time: create, configure (merge patch), or leave unchanged.
        Stops at the first refusal (its message in ``error``) and returns what was done so far. ``dry_run``:
        what the cluster would answer, nothing stored (``kubectl apply --dry-run=server``)."""
        params = {"fieldManager": "ncui", **({"dryRun": "All"} if dry_run else {})}
        out: list[ApplyResult] = []
        for raw in docs:
            if not raw:
                continue
            name = str(((raw.get("metadata") or {}).get("name")) or "")
            try:
                k = _kind_of_doc(raw)
            except ValueError as e:
                out.append(ApplyResult(str(raw.get("kind") or "?"), name, "created", str(e)))
                break
            doc = normalise(raw)
            doc.pop("status", None)
            meta = doc.setdefault("metadata", {})
            ns = (meta.get("namespace") or namespace) if k.namespaced else None
            if k.namespaced:
                meta["namespace"] = ns
            last = json.dumps(doc, sort_keys=True, separators=(",", ":"))
            meta.setdefault("annotations", {})[LAST_APPLIED] = last
            action = "created"
            try:
                cur = await self.get(k.plural, name, ns or "default") if name else None
                if cur is None:
                    await self._json("POST", self._path(k.plural, ns), params=params, json_body=doc)
                else:
                    action = "configured"
                    cur_ann = (cur.get("metadata") or {}).get("annotations") or {}
                    if cur_ann.get(LAST_APPLIED) == last and _subset(doc, cur):
                        action = "unchanged"
                    else:
                        try:
                            old = json.loads(cur_ann.get(LAST_APPLIED) or "{}")
                        except ValueError:
                            old = {}
                        patch = _deep_merge(_deletions(old, doc), doc)
                        await self._json(
                            "PATCH",
                            self._path(k.plural, ns, name),
                            params=params,
                            content=json.dumps(patch).encode(),
                            content_type="application/merge-patch+json",
                        )
            except NotSignedIn:
                raise
            except KubeError as e:
                out.append(ApplyResult(k.kind, name, action, e.brief, f"{k.ref}/{name}", e.immutable))
                break
            out.append(ApplyResult(k.kind, name, action, None, f"{k.ref}/{name}"))
        return out

    def _noted(self, what: str, ok: bool, *args: str) -> None:
        """A change, in the history as the kubectl line that makes it (``kubectl --context <cluster> …``)."""
        if self.history is not None:
            self.history.note("kubectl", kubectl_command(self.context or "<cluster>", *args), what, ok)

    async def delete(
        self, kind: str, name: str, namespace: str = "default", propagation: str = "Background", *, noted: bool = True
    ) -> bool:
        """Delete; False when it was already gone. ``noted=False``: the caller records the command it stands for
        (Stop's ``kubectl delete -f <file>``: ``History.stopped``)."""
        k = kind_of(kind).kind.lower()
        ns = [] if namespace == "default" else ["-n", namespace]
        ok = False
        try:
            r = await self._request(
                "DELETE",
                self._path(kind, namespace, name),
                params={"propagationPolicy": propagation},
                json_body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation},
            )
            if r.status_code == 404:
                ok = True
                return False
            if r.status_code >= 400:
                raise self._error(r)
            ok = True
            return True
        finally:
            if noted:
                self._noted(f"delete {k}/{name}", ok, "delete", k, name, *ns)

    async def _merge_patch(self, path: str, patch: dict[str, Any], manager: str | None = None) -> dict[str, Any]:
        """A JSON merge patch (``kubectl patch --type merge``); the object as it is now (``{}`` if none came)."""
        params = {"fieldManager": manager} if manager else None
        body = json.dumps(patch).encode()
        return (
            await self._json("PATCH", path, params=params, content=body, content_type="application/merge-patch+json")
            or {}
        )

    async def scale(self, kind: str, name: str, replicas: int, namespace: str = "default") -> dict[str, Any]:
        """Set a Deployment's (or ReplicaSet's) replicas through its scale subresource; returns the Scale."""
        if replicas < 0:
            raise ValueError("replicas cannot be negative")
        k = kind_of(kind).kind.lower()
        ns = [] if namespace == "default" else ["-n", namespace]
        ok = False
        try:
            out = await self._merge_patch(
                self._path(kind, namespace, name, "scale"), {"spec": {"replicas": int(replicas)}}
            )
            ok = True
            return out
        finally:
            self._noted(
                f"scale {k}/{name} to {replicas}", ok, "scale", f"{k}/{name}", f"--replicas={int(replicas)}", *ns
            )

    async def rollout_restart(self, name: str, at: str, namespace: str = "default") -> dict[str, Any]:
        """``kubectl rollout restart deploy/NAME``: stamp the pod template (``kubectl.kubernetes.io/restartedAt``,
        ``at`` an RFC 3339 time), so the Deployment replaces its pods with new ones."""
        patch = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": at}}}}}
        ns = [] if namespace == "default" else ["-n", namespace]
        ok = False
        try:
            out = await self._merge_patch(self._path("deployments", namespace, name), patch, "kubectl-rollout")
            ok = True
            return out
        finally:  # (deploy/NAME: as the guide writes it, and the restart question shows it)
            self._noted(f"restart deployment/{name} (rollout)", ok, "rollout", "restart", f"deploy/{name}", *ns)

    # ---- logs -------------------------------------------------------------------------------------

    async def pod_log_batches(
        self,
        pod: str,
        container: str | None = None,
        *,
        follow: bool = True,
        timestamps: bool = True,
        since_time: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
        namespace: str = "default",
    ) -> AsyncGenerator[builtins.list[str], None]:
        """The pod's log as lists of raw lines (no newline), as they arrive: cheap at hundreds of thousands
        of lines a second. Splits on ``\\n`` only (a ``\\r`` stays inside its line). The first list is
        empty: it says the stream is open."""
        params: dict[str, Any] = {}
        if container:
            params["container"] = container
        if follow:
            params["follow"] = "true"
        if timestamps:
            params["timestamps"] = "true"
        if since_time:
            params["sinceTime"] = since_time
        if tail_lines is not None:
            params["tailLines"] = int(tail_lines)
        if previous:
            params["previous"] = "true"
        batches = self._line_batches(self._path("pods", namespace, pod, "log"), params, None if follow else 60.0)
        try:  # (the first, empty: open; a follow stream may stay quiet for a long time, and that is no drop)
            async for batch in batches:
                yield batch
        finally:
            await batches.aclose()

    async def pod_logs(
        self,
        pod: str,
        container: str | None = None,
        *,
        follow: bool = True,
        timestamps: bool = True,
        since_time: str | None = None,
        tail_lines: int | None = None,
        previous: bool = False,
        namespace: str = "default",
    ) -> AsyncIterator[str]:
        """The pod's log, one raw line (no newline) at a time."""
        async for batch in self.pod_log_batches(
            pod,
            container,
            follow=follow,
            timestamps=timestamps,
            since_time=since_time,
            tail_lines=tail_lines,
            previous=previous,
            namespace=namespace,
        ):
            for line in batch:
                yield line

    # ---- the service proxy ------------------------------------------------------------------------

    async def proxy(
        self,
        service: str,
        port: int | str,
        path: str,
        *,
        method: str = "POST",
        json: Any = None,
        namespace: str = "default",
        timeout: float = 120,
    ) -> dict[str, Any]:
        """A request to a Service through the API server's proxy (what ``kubectl port-forward`` + curl do)."""
        p = self._path("services", namespace, f"{service}:{port}") + "/proxy/" + path.lstrip("/")
        r = await self._request(method, p, json_body=json, timeout=timeout)
        if r.status_code >= 400:
            err = self._error(r)
            if err.message.startswith("HTTP "):
                err = KubeError(r.status_code, err.reason, r.text[:500] or err.message)
            raise err
        try:
            out = r.json()
        except ValueError:
            return {"text": r.text}
        return out if isinstance(out, dict) else {"value": out}

    @contextlib.asynccontextmanager
    async def proxy_stream(
        self,
        service: str,
        port: int | str,
        path: str,
        json: Any,
        *,
        namespace: str = "default",
        timeout: float = 300,
    ) -> AsyncIterator[httpx.Response]:
        """A POST to a Service through the proxy whose answer is read as it streams (Server-Sent Events):
        ``async with kc.proxy_stream(...) as r: async for line in r.aiter_lines()``. Any status is handed to
        the caller (an endpoint's error body is its to read); a 401 runs the sign-in once, as ``_request``."""
        url = self.server + self._path("services", namespace, f"{service}:{port}") + "/proxy/" + path.lstrip("/")
        stale = None
        for attempt in range(2):
            auth, gen = await self._credential(stale)
            req = self._http.build_request(
                "POST",
                url,
                json=json,
                headers={"Accept": "text/event-stream, application/json"},
                timeout=httpx.Timeout(self._timeout, read=timeout),
            )
            try:
                r = await self._http.send(req, stream=True, auth=auth)
            except httpx.HTTPError as e:
                raise self._unreachable(e, url) from None
            if r.status_code == 401 and attempt == 0:
                await r.aclose()
                stale = gen
                continue
            try:
                yield r
            finally:
                await r.aclose()
            return
