"""``ncui doctor``'s one pass: fetch the four OpenAPI documents and the catalog (no token), ask who the token is,
read the cluster's version and the organization's keys, look at this machine; the checks in the order shown."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import httpx

from . import FAIL, OK, WARN, Check
from .contract import AREAS, FIX_DRIFT, compare, doc_path
from .machine import (
    TOKEN_FIX,
    keys_check,
    kubectl_check,
    kubectl_client_version,
    ssh_checks,
    state_check,
    terminal_checks,
    token_check,
)

if TYPE_CHECKING:
    from ..api.client import NCClient
    from ..config import Endpoints

VENDOR = "<vendor>"


async def _fetch_docs(http: httpx.AsyncClient, api: str) -> tuple[dict[str, dict | str], str | None]:
    """area → the document (or why not), and the first Date header seen."""

    async def one(area: str) -> tuple[str, dict | str, str | None]:
        url = api.rstrip("/") + doc_path(area)
        try:
            r = await http.get(url)
        except httpx.HTTPError as e:
            return area, f"cannot reach {url} ({type(e).__name__})", None
        date = r.headers.get("date")
        if r.status_code != 200:
            return area, f"{url} answered {r.status_code}", date
        try:
            doc = r.json()
        except ValueError:
            return area, f"{url} is not JSON", date
        return area, doc if isinstance(doc, dict) else f"{url} is not an OpenAPI document", date

    got = await asyncio.gather(*(one(a) for a in AREAS))
    return {a: d for a, d, _ in got}, next((date for _, _, date in got if date), None)


async def _catalog(http: httpx.AsyncClient, nc: NCClient) -> list[Check]:
    """Every recipe the catalog offers reads as ncui's model, and still has its files (the vendor rule as ncui
    applies it: ``NCClient.recipe_file``)."""
    from pydantic import ValidationError

    from ..api import models as m
    from ..api.errors import NCError, NotFound

    url = nc.endpoints.catalog_url
    try:
        r = await http.get(url)
        raw = r.json() if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as e:
        return [Check("catalog", FAIL, f"cannot read {url} ({type(e).__name__})", "check --access and the network")]
    if not isinstance(raw, list):
        return [Check("catalog", FAIL, f"{url} is not the recipe list ncui reads", FIX_DRIFT)]
    checks: list[Check] = []
    recipes: list[m.Recipe] = []
    added: set[str] = set()
    for i, item in enumerate(raw):
        name = item.get("name") if isinstance(item, dict) else None
        try:
            recipes.append(m.Recipe.model_validate(item))
        except ValidationError as e:
            err = e.errors(include_url=False, include_input=False)[0]
            loc = ".".join(str(p) for p in err.get("loc", ())) or "body"
            checks.append(
                Check(f"catalog {name or f'#{i}'}", FAIL, f"{loc}: {err.get('msg')}; ncui cannot offer it", FIX_DRIFT)
            )
            continue
        added |= set(item) - set(m.Recipe.model_fields)
    sem = asyncio.Semaphore(8)

    async def have(fetch: Any) -> str:
        async with sem:
            try:
                await fetch
                return ""
            except NotFound as e:
                return str(e)
            except NCError as e:
                return str(e)

    wants: list[tuple[str, str, Any]] = []  # (recipe, file, its fetch)
    for rec in recipes:
        if rec.default_file and not rec.steps:  # (with steps, its stem is a step's: fetched by the vendor rule)
            wants.append((rec.name, rec.default_file, nc.catalog_file(rec.default_file)))
        for s in rec.steps:
            if VENDOR in s.file:
                vendors: list[str | None] = list(rec.vendor_variants) or [None]
                for v in vendors:
                    wants.append((rec.name, s.file.replace(VENDOR, v or "?"), nc.recipe_file(s.stem, v)))
            elif s.file:
                wants.append((rec.name, s.file, nc.catalog_file(s.file)))
    said = await asyncio.gather(*(have(f) for _, _, f in wants))
    files = len(wants)
    for rec in recipes:
        gone = [f"{name}: {why}" for (r, name, _), why in zip(wants, said, strict=True) if why and r == rec.name]
        if gone:
            checks.append(
                Check(f"catalog {rec.name}", FAIL, "; ".join(gone) + f"; ncui cannot offer {rec.name}", FIX_DRIFT)
            )
    if not any(c.status == FAIL for c in checks):
        checks.append(
            Check(
                "catalog",
                OK,
                f"{len(recipes)} recipes, their {files} files present",
                details=[f"the catalog added the field {a}" for a in sorted(added)],
            )
        )
    return checks


async def _account(nc: NCClient | None, kubectl: str | None) -> list[Check]:
    """whoami (200 or 401, said plainly; ``nc`` None: no token, not asked); the first Kubernetes cluster's version
    for kubectl; a VM cluster's registered keys."""
    from ..api.errors import MalformedResponse, NCError, Unauthorized
    from ..kube.client import KubeClient
    from ..kube.errors import KubeError
    from ..remote.keys import local_keys

    checks: list[Check] = []
    who = None
    if nc is not None:
        try:
            who = await nc.whoami()
            checks.append(Check("sign-in", OK, f"GET /api/whoami: 200, {who.user.email} of {who.org_said}"))
        except Unauthorized:
            checks.append(
                Check(
                    "sign-in",
                    FAIL,
                    "GET /api/whoami: 401, the service does not accept this token (expired, revoked or mistyped)",
                    "make a new token in the console and save it to ~/.config/nationalcompute/token (chmod 600)",
                )
            )
        except NCError as e:
            fix = FIX_DRIFT if isinstance(e, MalformedResponse) else "check --api and the network"
            checks.append(Check("sign-in", FAIL, f"GET /api/whoami: {e}", fix))
    clusters = who.clusters if who is not None else []
    k8s = next((c.name for c in clusters if c.kind == "kubernetes"), None)
    vm = next((c.name for c in clusters if c.kind == "vm"), None)
    server: dict | str | None = None
    if k8s and kubectl and nc is not None:
        try:
            kc = KubeClient.from_kubeconfig(await nc.kubeconfig(k8s), history=None)  # (reads only)
            try:
                server = await kc.server_version()
            finally:
                await kc.aclose()
        except (NCError, KubeError, ValueError) as e:
            server = str(e)
    client = await asyncio.to_thread(kubectl_client_version, kubectl) if kubectl else None
    checks.append(kubectl_check(kubectl, client, server, k8s))
    checks += ssh_checks()
    keys = await local_keys()
    registered: set[str] | None = None
    if vm and who is not None and nc is not None:
        try:
            got = (await nc.ssh_keys(who.org_id)).keys
            # a fingerprint not sent: which keys are registered is unknown (never "not registered")
            registered = {k.fingerprint for k in got if k.fingerprint} if all(k.fingerprint for k in got) else None
        except NCError:
            registered = None
    checks.append(keys_check(keys, registered, vm))
    return checks


async def diagnose(endpoints: Endpoints) -> list[Check]:
    from ..api.client import USER_AGENT, NCClient
    from ..config import load_token
    from .machine import clock_check

    token, have = token_check()
    kubectl = shutil.which("kubectl")

    async def service() -> tuple[list[Check], tuple[dict[str, dict | str], str | None]]:
        async with httpx.AsyncClient(timeout=15, headers={"User-Agent": USER_AGENT}, follow_redirects=False) as http:
            anon = NCClient(endpoints, None, timeout=15, retries=1, history=None)  # (doctor only reads)
            try:
                return await asyncio.gather(_catalog(http, anon), _fetch_docs(http, endpoints.api))
            finally:
                await anon.aclose()

    async def account() -> list[Check]:
        if not have:  # (no sign-in to check: the machine still is)
            return [Check("sign-in", WARN, "not checked: no token", TOKEN_FIX), *await _account(None, kubectl)]
        nc = NCClient(endpoints, load_token().token, timeout=15, retries=1, history=None)  # type: ignore[arg-type]  # config's
        try:
            return await _account(nc, kubectl)
        finally:
            await nc.aclose()

    (catalog, (docs, date)), mine = await asyncio.gather(service(), account())
    checks = [token, mine[0], *compare(docs), *catalog, *mine[1:]]
    checks.append(clock_check(date, datetime.now(timezone.utc)))
    checks += terminal_checks(os.environ, terminal_size(os.environ))
    checks.append(state_check())
    return checks


def terminal_size(env: Mapping[str, str]) -> tuple[int, int] | None:
    """The terminal's size as a program run there sees it: COLUMNS and LINES when set, else the terminal of
    stdout, stderr or stdin (``ncui doctor --json > out`` in a terminal still reads it); None: no terminal."""
    try:
        return int(env["COLUMNS"]), int(env["LINES"])
    except (KeyError, ValueError):
        pass
    for fd in (1, 2, 0):
        try:
            size = os.get_terminal_size(fd)
        except OSError:
            continue
        return size.columns, size.lines
    return None


def run(endpoints: Endpoints, *, as_json: bool, strict: bool, verbose: bool) -> int:
    from . import exit_code, render_json, render_text

    checks = asyncio.run(diagnose(endpoints))
    print(render_json(checks) if as_json else render_text(checks, verbose=verbose))
    return exit_code(checks, strict)


__all__ = ["diagnose", "run"]
