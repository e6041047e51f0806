"""Run the kubeconfig's sign-in plugin the way kubectl does, without a terminal, and read its answer.

The plugin prints an ExecCredential on stdout when signed in (never shown, never logged: it holds the
token), or one sign-in link on stderr for the human to approve. No Textual here.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass, field

import yaml
from pydantic import SecretStr

from ..backoff import within
from ..textsafe import clean

URL = re.compile(r"https?://[^\s\"'<>]+")


@dataclass(frozen=True)
class ExecSpec:
    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    api_version: str


@dataclass(frozen=True)
class SigninResult:
    signed_in: bool
    link: str | None = None
    message: str = ""  # what the plugin said on stderr, cleaned (it never holds the token)
    # The ExecCredential's token (masked in every repr) and its expirationTimestamp, when signed in.
    token: SecretStr | None = field(default=None, repr=False, compare=False)
    expires: str | None = None


def exec_spec(kubeconfig: str, context: str | None = None) -> ExecSpec:
    """The exec plugin of the kubeconfig's context (the current one by default)."""
    try:
        doc = yaml.safe_load(kubeconfig) or {}
        name = context or doc.get("current-context")
        ctx = next(c["context"] for c in doc.get("contexts", []) if c.get("name") == name)
        user = next(u["user"] for u in doc.get("users", []) if u.get("name") == ctx.get("user"))
        ex = user["exec"]
        env = tuple((e["name"], str(e["value"])) for e in ex.get("env") or ())
        return ExecSpec(
            str(ex["command"]),
            tuple(str(a) for a in ex.get("args") or ()),
            env,
            str(ex.get("apiVersion") or "client.authentication.k8s.io/v1"),
        )
    except (yaml.YAMLError, StopIteration, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"the kubeconfig has no sign-in plugin for its context ({type(e).__name__})") from None


async def run_plugin(spec: ExecSpec, timeout: float = 30.0) -> SigninResult:
    """Run the plugin once, as kubectl does with no terminal (``interactive: false``)."""
    info = {"apiVersion": spec.api_version, "kind": "ExecCredential", "spec": {"interactive": False}}
    env = {**os.environ, **dict(spec.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    try:
        proc = await asyncio.create_subprocess_exec(
            spec.command,
            *spec.args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
    except OSError as e:
        return SigninResult(False, message=f"cannot run the sign-in plugin {spec.command}: {e.strerror or e}")
    try:
        out, err = await within(proc.communicate(), timeout)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        return SigninResult(False, message="the sign-in plugin did not answer in time")
    except asyncio.CancelledError:  # the app is closing: leave no plugin behind, and no transport to be
        if proc.returncode is None:  # collected after the loop closed ("Event loop is closed" in its __del__)
            proc.kill()
        try:
            await within(proc.wait(), 5)
        finally:
            transport = getattr(proc, "_transport", None)
            if transport is not None:
                transport.close()
        raise
    cred = _credential(out) if proc.returncode == 0 else None
    del out  # the token, from here on, only as a SecretStr
    text = clean(err.decode("utf-8", "replace"), multiline=True)
    m = URL.search(text)
    if cred is None:
        return SigninResult(False, m.group(0).rstrip(".,;)") if m else None, text.strip())
    return SigninResult(True, m.group(0).rstrip(".,;)") if m else None, text.strip(), token=cred[0], expires=cred[1])


def _credential(out: bytes) -> tuple[SecretStr, str | None] | None:
    """The ExecCredential's token (a SecretStr at once) and expirationTimestamp, when it carries a token."""
    try:
        status = json.loads(out)
        status = status.get("status") if status.get("kind") == "ExecCredential" else None
        if not isinstance(status, dict) or not status.get("token"):
            return None
        exp = status.get("expirationTimestamp")
        return SecretStr(str(status.pop("token"))), str(exp) if exp else None
    except (ValueError, AttributeError):
        return None
