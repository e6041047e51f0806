"""kubectl's sign-in: the device-code flow (``ncui.kube.signin`` asks for a code, the human approves it on the
``/device`` page, the plugin polls for the token) and the session check."""

from __future__ import annotations

import html
import json
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.concurrency import run_in_threadpool

from ..apiserver import Kube
from ..auth import POLL_INTERVAL
from .http import bearer


def mount(app: FastAPI, kube: Kube) -> None:
    """The device-code endpoints kubectl's sign-in plugin polls, and the page the human approves it on."""
    world = kube.world

    async def code(request: Request) -> Response:
        try:
            body = json.loads(await request.body() or b"{}")
        except json.JSONDecodeError:
            body = {}
        name = str((body or {}).get("cluster", ""))

        def make() -> Response:
            with world.lock:
                now = kube.tick()
                c = kube.cluster_for(name)
                if c is None:
                    return JSONResponse(
                        {
                            "error": "not-found",
                            "detail": f"No cluster named {name[:60]} in {world.main_org.spec.org_name}.",
                        },
                        404,
                    )
                dc = kube.auth.new_code(c.org.spec.key, name, now)
            base = str(request.base_url).rstrip("/")
            return JSONResponse(
                {
                    "device_code": dc.device_code,
                    "user_code": dc.user_code,
                    "verification_uri": f"{base}/device",
                    "verification_uri_complete": f"{base}/device?code={dc.user_code}",
                    "expires_in": int((dc.expires - dc.created).total_seconds()),
                    "interval": POLL_INTERVAL,
                }
            )

        return await run_in_threadpool(make)

    async def token(request: Request) -> Response:
        try:
            body = json.loads(await request.body() or b"{}")
        except json.JSONDecodeError:
            body = {}

        def poll() -> Response:
            with world.lock:
                now = kube.tick()
                verdict, tok = kube.auth.poll(str((body or {}).get("device_code", "")), now)
            if verdict == "ok":
                return JSONResponse({"access_token": tok, "token_type": "Bearer", "idle_timeout": 86400})
            return JSONResponse({"error": verdict}, 400)

        return await run_in_threadpool(poll)

    async def session(request: Request, cluster: str = "") -> Response:
        tok = bearer(request.headers)

        def check() -> Response:
            with world.lock:
                now = kube.tick()
                ok = bool(tok) and kube.auth.check(tok, cluster, now) is not None
            if ok:
                return JSONResponse({"cluster": cluster, "idle_timeout": 86400})
            return JSONResponse({"error": "unauthorized", "detail": "Sign in again."}, 401)

        return await run_in_threadpool(check)

    def page(title: str, body: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(
            f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
            f"</head><body style='font-family:sans-serif;max-width:40em;margin:3em auto'>"
            f"<h1>{html.escape(title)}</h1>{body}</body></html>",
            status_code=status,
        )

    async def device_get(request: Request, code: str = "") -> Response:
        def show() -> Response:
            with world.lock:
                kube.tick()
                dc = kube.auth.by_user_code(code) if code else None
                if dc is None:
                    return page(
                        "Sign in to kubectl",
                        "<form method=post><label>Code <input name=code></label> <button>Continue</button></form>",
                        200 if not code else 404,
                    )
                if kube.auth.expired(dc):
                    return page("This code has expired", "<p>Run kubectl again for a fresh link.</p>", 410)
                org = world.orgs[dc.org].spec.org_name
            return page(
                "Approve kubectl sign-in",
                f"<p>kubectl asks to sign in to cluster <b>{html.escape(dc.cluster)}</b> of "
                f"<b>{html.escape(org)}</b> as you. Code <code>{html.escape(dc.user_code)}</code>.</p>"
                f"<form method=post action='/device'><input type=hidden name=code "
                f"value='{html.escape(dc.user_code)}'><button>Approve</button></form>",
            )

        return await run_in_threadpool(show)

    async def device_post(request: Request) -> Response:
        raw = (await request.body()).decode("utf-8", "replace")
        form = parse_qs(raw)
        ucode = (form.get("code") or [request.query_params.get("code", "")])[0]

        def approve() -> Response:
            with world.lock:
                now = kube.tick()
                dc = kube.auth.by_user_code(ucode) if ucode else None
                if dc is None:
                    return page("Unknown code", "<p>No sign-in waits for that code.</p>", 404)
                verdict = kube.auth.approve(dc, now)
            if verdict == "expired":
                return page("This code has expired", "<p>Run kubectl again for a fresh link.</p>", 410)
            return page("Approved", "<p>kubectl is signed in. You can close this tab.</p>")

        return await run_in_threadpool(approve)

    app.add_api_route("/api/k8s/device/code", code, methods=["POST"], include_in_schema=False)
    app.add_api_route("/api/k8s/device/token", token, methods=["POST"], include_in_schema=False)
    app.add_api_route("/api/k8s/device/session", session, methods=["GET"], include_in_schema=False)
    app.add_api_route("/device", device_get, methods=["GET"], include_in_schema=False)
    app.add_api_route("/device", device_post, methods=["POST"], include_in_schema=False)
