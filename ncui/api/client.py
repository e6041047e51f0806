"""An async client for the National Compute API and its recipe catalog: one method per endpoint.

- The token is a ``SecretStr`` handed to an ``httpx.Auth``: it is never in a repr, a log line, an
  error message or a local variable of these frames.
- Idempotent GETs retry network errors, 429 and 5xx with ncui's one backoff (``backoff.backoff_delay``:
  exponential from ``backoff`` seconds, capped at ``backoff_cap``, equal jitter); PUT and POST never retry (a
  retried bid or declaration could act twice).
- Every failure is one of the typed errors of ``errors.py`` with a sentence a researcher can act on.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, SecretStr, TypeAdapter, ValidationError

from ..backoff import backoff_delay
from ..config import Endpoints, token_problem
from ..history import Recorder, curl_command
from ..money import fmt_price, usd
from ..textsafe import clean_json
from . import models as m
from .errors import (
    MalformedResponse,
    NCError,
    NetworkError,
    NotFound,
    ServerError,
    Unauthorized,
    error_from_response,
)

T = TypeVar("T", bound=BaseModel)

USER_AGENT = "ncui/0.1"
_RECIPES = TypeAdapter(list[m.Recipe])


@dataclass(frozen=True)
class Endpoint:
    """One request ncui makes to the service: its method and path (parameters in braces, as an OpenAPI document
    names them), the model its answer is read with (None: not JSON), and what it is, in words. The client sends
    only what ``ENDPOINTS`` declares (``NCClient._get``, ``_write``, ``_call`` take an Endpoint), so ``ncui doctor``
    checks the service's documents against the very requests ncui makes. ``contract`` False: the box's own route,
    which the service does not have."""

    name: str  # the NCClient method that makes it
    method: str
    path: str
    model: type[BaseModel] | None
    what: str
    contract: bool = True
    body: type[BaseModel] | None = None  # the model of the JSON body it sends (PUT, POST)

    def url_path(self, **params: str) -> str:
        return self.path.format(**{k: _seg(v) for k, v in params.items()})


ENDPOINTS: dict[str, Endpoint] = {
    e.name: e
    for e in (
        Endpoint("whoami", "GET", "/api/whoami", m.Whoami, "checking who you are"),
        Endpoint("billing_summary", "GET", "/api/billing/summary", m.BillingSummary, "reading the balance"),
        Endpoint("balance", "GET", "/api/billing/balance", m.Balance, "reading the balance and burn rate"),
        Endpoint("transactions", "GET", "/api/billing/transactions", m.Transactions, "reading transactions"),
        Endpoint("k8s_cluster", "GET", "/api/k8s/cluster", m.K8sCluster, "reading the cluster"),
        Endpoint("kubeconfig", "GET", "/api/k8s/cluster/kubeconfig", None, "fetching the kubeconfig"),
        Endpoint("bid", "GET", "/api/k8s/bid", m.Bid, "reading the limit price"),
        Endpoint("set_bid", "PUT", "/api/k8s/bid", m.Bid, "setting the limit price", body=m.BidRequest),
        Endpoint("ladder", "GET", "/api/k8s/market/ladder", m.Ladder, "reading the price-to-win ladder"),
        Endpoint("spend", "GET", "/api/k8s/market/spend", m.Spend, "reading the live market rate"),
        Endpoint("ticks", "GET", "/api/market/ticks", m.Ticks, "reading the market ticks"),
        Endpoint("vm_capacity", "GET", "/api/vm/capacity", m.VmCapacity, "reading VM capacity"),
        Endpoint(
            "set_vm_capacity",
            "PUT",
            "/api/vm/capacity",
            m.VmCapacity,
            "declaring VM capacity",
            body=m.VmCapacityRequest,
        ),
        Endpoint("ssh_keys", "GET", "/api/vm/orgs/{org_id}/ssh-keys", m.SshKeys, "listing ssh keys"),
        Endpoint(
            "add_ssh_key",
            "POST",
            "/api/vm/orgs/{org_id}/ssh-keys",
            m.SshKey,
            "registering the ssh key",
            body=m.SshKeyRequest,
        ),
        Endpoint(
            "research_status",
            "GET",
            "/_sim/research/status",
            m.ResearchStatus,
            "reading the research node's status",
            False,
        ),
        Endpoint("approve_device_in_box", "POST", "/device", None, "approving the sign-in in the box", False),
    )
}
_E = ENDPOINTS


class BearerAuth(httpx.Auth):
    """Adds the bearer header at send time; its repr never shows the token, and no local holds it (the NC
    token here, the cluster's session token in ``kube.client``)."""

    def __init__(self, token: SecretStr) -> None:
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = self.header().get_secret_value()
        yield request

    def header(self) -> SecretStr:
        """The Authorization header's value, still a secret (for a request not sent through httpx)."""
        return SecretStr("Bearer " + self._token.get_secret_value())

    def __repr__(self) -> str:
        return "<BearerAuth token=**********>"


class ServiceClock:
    """The service's now, read off the ``Date`` header of its answers (second resolution: taken at the middle of
    its second), and between answers moved on at the rate its clock was seen to run: 1 for the real service
    (within 10% is 1), 60 for a box at ``--speed 60``. ``now()`` is None before the first dated answer.

    The rate is the median of the slopes between answers at least ``SPAN`` wall seconds apart over the last
    ``WINDOW`` seconds, so one jump of the service's clock (a box advanced a day) moves the time, not the rate;
    a speed that changes is followed within half a window. A correction of under two of its seconds never
    moves the time back for the second the estimate takes to catch up (AGE would count 6s, 5s)."""

    WINDOW = 60.0
    SPAN = 5.0

    def __init__(self, wall: Callable[[], float] = time.monotonic) -> None:
        self._wall = wall
        self._seen: deque[tuple[float, float]] = deque()  # (wall monotonic, service epoch seconds)
        self._rate = 1.0
        self._shown = self._shown_at = 0.0  # the time last given, and when (wall)

    def observe(self, date: str | None) -> None:
        try:
            d = parsedate_to_datetime(date) if date else None
        except (TypeError, ValueError, IndexError, OverflowError):
            d = None
        if d is None:
            return
        t = (d if d.tzinfo else d.replace(tzinfo=timezone.utc)).timestamp() + 0.5
        w, seen = self._wall(), self._seen
        seen.append((w, t))
        while len(seen) > 2 and w - seen[0][0] > self.WINDOW:
            seen.popleft()
        slopes, i = [], 0
        for wj, tj in seen:
            while i + 1 < len(seen) and wj - seen[i + 1][0] >= self.SPAN:
                i += 1
            wi, ti = seen[i]
            if wj - wi >= self.SPAN:
                slopes.append((tj - ti) / (wj - wi))
        if slopes:
            rate = max(0.0, statistics.median(slopes))
            self._rate = 1.0 if abs(rate - 1.0) <= 0.1 else rate

    def now(self) -> datetime | None:
        if not self._seen:
            return None
        (w, t), now = self._seen[-1], self._wall()
        est = t + (now - w) * self._rate
        if self._shown - 2 * max(self._rate, 1.0) < est < self._shown and now - self._shown_at < 1.0:
            est = self._shown  # a small correction back: held a second, until the estimate caught up
        else:
            self._shown, self._shown_at = est, now
        return datetime.fromtimestamp(est, timezone.utc)


class ResendOnHangup(httpx.AsyncBaseTransport):
    """Sends an idempotent request (GET, HEAD, OPTIONS, PUT, DELETE) once more, on a new connection, when the one it
    went out on was closed before any answer came: a server (uvicorn after 5 idle seconds, a load balancer's idle
    cut) closing a kept-alive connection just as the next request arrives on it. Under load that request was lost
    now and then (an apply refused with "Server disconnected without sending a response"). As Go's transport does
    for kubectl; a POST or PATCH is never sent twice (it may have been acted on): its error is said. Failures after
    the answer began (a body cut short) are not this and are not retried here. Used by both API clients."""

    IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
    _HUNG_UP = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return await self._inner.handle_async_request(request)
        except self._HUNG_UP:
            if request.method not in self.IDEMPOTENT:
                raise
        return await self._inner.handle_async_request(request)  # (the pool dropped the closed connection)

    async def aclose(self) -> None:
        await self._inner.aclose()


class RecipeFile(BaseModel):
    """A catalog file as fetched, and which file the vendor rule settled on."""

    requested: str
    used: str
    url: str
    text: str
    note: str = ""  # e.g. "nanogpt-job-amd.yaml: 404, using nanogpt-job.yaml"


class NCClient:
    """``async with NCClient(endpoints, token) as nc: await nc.whoami()``."""

    def __init__(
        self,
        endpoints: Endpoints,
        token: SecretStr | None,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.25,
        backoff_cap: float = 4.0,
        transport: httpx.AsyncBaseTransport | None = None,
        rng: random.Random | None = None,
        history: Recorder | None = None,
    ) -> None:
        self.endpoints = endpoints
        self.history = history  # where each write is recorded as its curl (the backend's History; None: nowhere)
        self._retries = max(0, retries)
        self._backoff, self._backoff_cap = backoff, backoff_cap
        self._rng = rng or random.Random()
        self.clock = ServiceClock()  # the service's now, off its answers' Date (Backend.now outside the demo)
        # A value that cannot be a bearer token is never sent (httpx would refuse it as a LocalProtocolError,
        # read as "cannot reach"): every request says what is wrong with it instead (never the value).
        self._token_problem = token_problem(token) if token is not None else ""
        self._http = httpx.AsyncClient(
            auth=BearerAuth(token) if token is not None else None,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            transport=transport or ResendOnHangup(httpx.AsyncHTTPTransport()),
            follow_redirects=False,
            event_hooks={"response": [self._dated]},
        )

    async def __aenter__(self) -> NCClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    def __repr__(self) -> str:
        return f"<NCClient api={self.endpoints.api!r}>"

    async def _dated(self, resp: httpx.Response) -> None:
        self.clock.observe(resp.headers.get("date"))

    # ---- transport ------------------------------------------------------------------------------

    def _api(self, path: str) -> str:
        return self.endpoints.api.rstrip("/") + path

    async def _send(
        self,
        method: str,
        url: str,
        *,
        what: str,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        accept_404: bool = False,
        shown: str = "",
    ) -> httpx.Response:
        """Send once (PUT/POST) or with retries (GET); raise a typed error for anything but 2xx. A write is
        recorded in the history (``shown`` says what it does) as the curl of the request sent, ok or not."""
        if self._token_problem:
            raise Unauthorized(f"The token ncui was given is not a token: {self._token_problem}.")
        attempts = 1 + (self._retries if method == "GET" else 0)
        last: NCError | None = None
        request: httpx.Request | None = None
        ok = False
        try:
            for attempt in range(attempts):
                if attempt:
                    await asyncio.sleep(backoff_delay(attempt, self._backoff, self._backoff_cap, self._rng))
                request = self._http.build_request(method, url, params=params, json=json_body)
                try:
                    resp = await self._http.send(request)
                except httpx.TimeoutException:
                    last = NetworkError(f"National Compute did not answer in time while {what}.")
                    continue
                except httpx.TransportError as e:
                    last = NetworkError(
                        f"Cannot reach National Compute at {_origin(url)} while {what} ({type(e).__name__})."
                    )
                    continue
                if resp.status_code < 400 or (accept_404 and resp.status_code == 404):
                    ok = True
                    return resp
                err = error_from_response(resp.status_code, _json_or_none(resp), what=what)
                if isinstance(err, ServerError) or resp.status_code == 429:
                    last = err
                    continue
                raise err
            assert last is not None
            raise last
        finally:
            if method != "GET" and request is not None and self.history is not None:
                self.history.note("curl", _curl(request), shown or what, ok)

    async def _call(
        self,
        ep: Endpoint,
        *,
        what: str = "",
        params: dict[str, Any] | None = None,
        body: BaseModel | None = None,
        shown: str = "",
        accept_404: bool = False,
        path: dict[str, str] | None = None,
    ) -> httpx.Response:
        """Send the request ``ep`` declares (its path's parameters from ``path``)."""
        return await self._send(
            ep.method,
            self._api(ep.url_path(**(path or {}))),
            what=what or ep.what,
            params=_clean_params(params),
            json_body=body.model_dump(mode="json", exclude_none=True) if body is not None else None,
            shown=shown,
            accept_404=accept_404,
        )

    async def _get(
        self, ep: Endpoint, model: type[T], *, params: dict[str, Any] | None = None, path: dict[str, str] | None = None
    ) -> T:
        assert ep.model is model  # (the table's model is the one read: doctor compares that one)
        return _parse(await self._call(ep, params=params, path=path), model, ep.what)

    async def _write(
        self,
        ep: Endpoint,
        body: BaseModel,
        model: type[T],
        *,
        what: str,
        shown: str,
        params: dict[str, Any] | None = None,
        path: dict[str, str] | None = None,
    ) -> T:
        assert ep.model is model and type(body) is ep.body  # (doctor compares the table's models)
        resp = await self._call(ep, what=what, params=params, body=body, shown=shown, path=path)
        return _parse(resp, model, what)

    # ---- account and billing --------------------------------------------------------------------

    async def whoami(self) -> m.Whoami:
        return await self._get(_E["whoami"], m.Whoami)

    async def billing_summary(self) -> m.BillingSummary:
        return await self._get(_E["billing_summary"], m.BillingSummary)

    async def balance(self) -> m.Balance:
        return await self._get(_E["balance"], m.Balance)

    async def transactions(self, since: datetime | None = None) -> m.Transactions:
        return await self._get(_E["transactions"], m.Transactions, params={"since": since})

    # ---- kubernetes cluster and market ----------------------------------------------------------

    async def k8s_cluster(self, cluster: str | None = None) -> m.K8sCluster:
        return await self._get(_E["k8s_cluster"], m.K8sCluster, params={"cluster": cluster})

    async def kubeconfig(self, cluster: str) -> str:
        resp = await self._call(
            _E["kubeconfig"], what=f"fetching the kubeconfig of {cluster}", params={"cluster": cluster}
        )
        text = resp.text
        if "apiVersion" not in text or "clusters" not in text:
            raise MalformedResponse("The kubeconfig National Compute sent is not a kubeconfig.")
        return text

    async def bid(self, cluster: str | None = None) -> m.Bid:
        return await self._get(_E["bid"], m.Bid, params={"cluster": cluster})

    async def set_bid(self, max_price_per_gpu_hour: int, cluster: str | None = None) -> m.Bid:
        """Set the standing limit price (micro-credits per GPU hour); 0 withdraws it. Never retried."""
        # A Price field is given dollars (usd) and read as int micro-credits (its BeforeValidator converts);
        # mypy sees only the int.
        body = m.BidRequest(max_price_per_gpu_hour=usd(max_price_per_gpu_hour))  # type: ignore[arg-type]  # dollars in
        what = "withdrawing the limit price" if max_price_per_gpu_hour == 0 else "setting the limit price"
        on = f" on {cluster}" if cluster else ""
        shown = (
            f"withdraw the limit price{on}"
            if max_price_per_gpu_hour == 0
            else f"set the limit price to {fmt_price(max_price_per_gpu_hour)}{on}"
        )
        return await self._write(_E["set_bid"], body, m.Bid, what=what, shown=shown, params={"cluster": cluster})

    async def ladder(self, cluster: str | None = None) -> m.Ladder:
        return await self._get(_E["ladder"], m.Ladder, params={"cluster": cluster})

    async def spend(self, cluster: str | None = None) -> m.Spend:
        return await self._get(_E["spend"], m.Spend, params={"cluster": cluster})

    async def ticks(
        self, since: datetime | None = None, gpu_model: str | None = None, limit: int | None = None
    ) -> m.Ticks:
        return await self._get(_E["ticks"], m.Ticks, params={"since": since, "gpu_model": gpu_model, "limit": limit})

    # ---- VM capacity and ssh keys ---------------------------------------------------------------

    async def vm_capacity(self) -> m.VmCapacity:
        return await self._get(_E["vm_capacity"], m.VmCapacity)

    async def set_vm_capacity(self, max_gpus: int, max_price_per_gpu_hour: int, expected_version: int) -> m.VmCapacity:
        """Declare (or release, with ``max_gpus=0``) VM capacity. Never retried."""
        body = m.VmCapacityRequest(
            max_gpus=max_gpus,
            max_price_per_gpu_hour=usd(max_price_per_gpu_hour),  # type: ignore[arg-type]  # dollars in, as in set_bid
            expected_version=expected_version,
        )
        what = "releasing VM capacity" if max_gpus == 0 else "declaring VM capacity"
        shown = (
            "release the VM capacity (max_gpus 0, the same price)"
            if max_gpus == 0
            else f"declare VM capacity: {max_gpus} GPUs at up to {fmt_price(max_price_per_gpu_hour)}"
        )
        return await self._write(_E["set_vm_capacity"], body, m.VmCapacity, what=what, shown=shown)

    async def ssh_keys(self, org_id: str) -> m.SshKeys:
        return await self._get(_E["ssh_keys"], m.SshKeys, path={"org_id": org_id})

    async def add_ssh_key(self, org_id: str, name: str, public_key: str) -> m.SshKey:
        body = m.SshKeyRequest(name=name, public_key=public_key)
        return await self._write(
            _E["add_ssh_key"],
            body,
            m.SshKey,
            what="registering the ssh key",
            shown=f"register the ssh key {name} (for nodes granted later)",
            path={"org_id": org_id},
        )

    async def research_status(self) -> m.ResearchStatus:
        """The box's stand-in for Marshall's node status (``/_sim/research/status``). The service has no such
        route (the status lives inside a Marshall workspace): a 404 reads ``state="unavailable"``."""
        what = "reading the research node's status"
        resp = await self._call(_E["research_status"], accept_404=True)
        if resp.status_code == 404:
            return m.ResearchStatus(state="unavailable")
        return _parse(resp, m.ResearchStatus, what)

    async def approve_device_in_box(self, user_code: str) -> None:
        """The box only (``POST /device``, its sign-in page's Approve button): the demo does the human's
        browser step. The service has no such route; only the human approves there, in a browser."""
        await self._call(_E["approve_device_in_box"], params={"code": user_code})

    # ---- recipe catalog -------------------------------------------------------------------------

    async def catalog(self) -> list[m.Recipe]:
        what = "reading the recipe catalog"
        resp = await self._send("GET", self.endpoints.catalog_url, what=what)
        try:
            return _RECIPES.validate_python(_safe_json(resp, what))
        except ValidationError as e:
            raise _malformed(what, e) from None

    def catalog_file_url(self, filename: str) -> str:
        return self.endpoints.catalog_url + filename

    async def catalog_file(self, filename: str) -> str:
        resp = await self._send("GET", self.catalog_file_url(filename), what=f"fetching {filename}")
        return resp.text

    async def recipe_file(self, stem: str, vendor: str | None) -> RecipeFile:
        """The vendor rule: try ``<stem>-<vendor>.yaml``; a 404 means the default ``<stem>.yaml``.

        Raises NotFound when neither exists (a recipe not offered for this vendor).
        """
        default = f"{stem}.yaml"
        if vendor:
            variant = f"{stem}-{vendor}.yaml"
            url = self.catalog_file_url(variant)
            resp = await self._send("GET", url, what=f"fetching {variant}", accept_404=True)
            if resp.status_code != 404:
                return RecipeFile(requested=variant, used=variant, url=url, text=resp.text)
            note = f"{variant}: 404, using {default}"
        else:
            variant, note = default, ""
        url = self.catalog_file_url(default)
        resp = await self._send("GET", url, what=f"fetching {default}", accept_404=True)
        if resp.status_code == 404:
            raise NotFound(
                f"{stem} is not offered for {vendor or 'this'} GPUs: neither {variant} "
                f"nor {default} exists in the catalog.",
                status=404,
            )
        return RecipeFile(requested=variant, used=default, url=url, text=resp.text, note=note)


# ---- helpers ------------------------------------------------------------------------------------


def _curl(request: httpx.Request) -> str:
    """The one function that turns a request into its curl: the method, the URL and the body as they were
    sent (so the history cannot drift from the wire). Of its headers only Content-Type is read (the token is
    one of them)."""
    return curl_command(request.method, str(request.url), request.content, request.headers.get("content-type", ""))


def _parse(resp: httpx.Response, model: type[T], what: str) -> T:
    try:
        return model.model_validate(_safe_json(resp, what))
    except ValidationError as e:
        raise _malformed(what, e) from None


# The boundary: every string of an answer is made safe to show here (names, descriptions, org and user, …),
# once, so no screen shows a server's escape sequence. Descriptions may keep their line breaks.
_MULTILINE = frozenset({"description"})


def _safe_json(resp: httpx.Response, what: str) -> Any:
    try:
        doc = json.loads(resp.content)
    except ValueError:
        raise _malformed(what) from None
    return clean_json(doc, _MULTILINE)


def _malformed(what: str, e: ValidationError | None = None) -> MalformedResponse:
    """``e`` None: the body is not JSON."""
    errs = e.errors(include_url=False, include_input=False) if e is not None else [{"type": "json_invalid"}]
    first = errs[0] if errs else {}
    if first.get("type") == "json_invalid":
        why = "the body is not valid JSON (truncated?)"
    else:
        loc = ".".join(str(p) for p in first.get("loc", ())) or "body"
        why = f"{loc}: {first.get('msg', 'unexpected value')}"
    return MalformedResponse(f"National Compute sent an answer ncui cannot read while {what} ({why}).")


def _json_or_none(resp: httpx.Response) -> Any:
    try:
        return json.loads(resp.content)
    except ValueError:
        return None


def _clean_params(params: dict[str, Any] | None) -> dict[str, Any] | None:
    if not params:
        return None
    out: dict[str, Any] = {}
    for k, v in params.items():
        if v is None:
            continue
        out[k] = v.isoformat() if isinstance(v, datetime) else v
    return out or None


def _seg(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe="")


def _origin(url: str) -> str:
    u = httpx.URL(url)
    return f"{u.scheme}://{u.host}" + (f":{u.port}" if u.port else "")


__all__ = ["ENDPOINTS", "Endpoint", "NCClient", "RecipeFile", "NotFound", "BearerAuth", "ResendOnHangup"]
