"""Which sign-in plugin ncui runs: a kubeconfig's exec plugin is a command the service chose. No Textual here.

The kubeconfig fetched by token names the command kubectl (and ncui) runs to sign in. A hostile or
intercepted answer could name any command, so ncui runs one without asking only when it is one of the two
shared/CONTRACT.md names, exactly, with no environment of its own:

- National Compute's ``nc-signin get-token --cluster NAME [--api URL]`` (``URL``: the service ncui talks to);
- the box's ``<the running Python> -m ncui.kube.signin --api URL --cluster NAME``.

Any other command is the human's to allow: ncui shows it with its arguments (sanitised) and asks before its
first run; the answer is remembered per service, cluster and command (its arguments and environment: a changed
command is asked again) in ``$XDG_STATE_HOME/ncui/sign-in-plugins.json`` (``statefile``: versioned JSON,
written atomically; a digest of the command as the key, so a value the environment carries is not kept).

The human's own policy comes first: ``~/.kube/kuberc`` (or ``$KUBERC``; ``KUBERC=off`` turns it off), the
kubectl.config.k8s.io/v1beta1 ``Preference`` of Kubernetes 1.35 (the kubectl here is older and would not
enforce it, so ncui reads it itself):

- ``credentialPluginPolicy``: ``""`` or absent or ``AllowAll`` → no restriction (ncui's own rule stands);
  ``DenyAll`` → no plugin runs, not even the two known ones; ``Allowlist`` → only a plugin that an entry of
  ``credentialPluginAllowlist`` matches may run (and then ncui's own rule still applies);
- an entry ``{name: ...}`` matches when ``exec.LookPath`` of the entry's name and of the plugin's command
  give the same string (a basename is looked up on PATH, a path is taken as it is); a failed lookup is no
  match. An entry without a name, an allowlist under another policy, or another policy value is a
  misconfiguration, as kubectl has it: ncui then runs no plugin and says why.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from .. import statefile
from ..textsafe import clean, unsafe
from .kubeconfig import shown as shown_path
from .session import ExecSpec

VERSION = 1
NC_SIGNIN = "nc-signin"
POLICIES = ("", "AllowAll", "DenyAll", "Allowlist")
SHOWN_MAX = 3000  # characters of a command shown in a question (more is said, never cut silently)

__all__ = ["Kuberc", "Verdict", "known", "read_kuberc", "judge", "remember", "shown", "answers_path"]


def answers_path() -> Path:
    from ..config import state_dir

    return state_dir() / "sign-in-plugins.json"


# ---- the two known plugins ------------------------------------------------------------------------------


def known(spec: ExecSpec, api: str, cluster: str) -> str | None:
    """The name of the known plugin ``spec`` is ("nc-signin" or "ncui"), exactly as CONTRACT.md names it for the
    service at ``api`` and ``cluster``; None for any other command (or any environment of its own)."""
    if spec.env:
        return None
    a, args = api.rstrip("/"), list(spec.args)
    if spec.command == NC_SIGNIN and args in (
        ["get-token", "--cluster", cluster],
        ["get-token", "--cluster", cluster, "--api", a],
    ):
        return "nc-signin"
    if spec.command == sys.executable and args == ["-m", "ncui.kube.signin", "--api", a, "--cluster", cluster]:
        return "ncui"
    return None


# ---- the human's kuberc ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kuberc:
    """The credential-plugin part of the human's kuberc: ``policy`` (one of POLICIES), the allowlist's names,
    or ``error`` (a misconfiguration: no plugin runs)."""

    path: Path
    policy: str = ""
    names: tuple[str, ...] = ()
    error: str = ""

    @property
    def where(self) -> str:
        return shown_path(self.path)


def kuberc_path() -> Path | None:
    """kubectl's: ``$KUBERC`` when set (``off``: none), else ``~/.kube/kuberc``."""
    env = os.environ.get("KUBERC", "")
    if env == "off":
        return None
    if env:
        return Path(env)
    from ..config import kube_dir

    return kube_dir() / "kuberc"


def read_kuberc(path: Path | None = None) -> Kuberc | None:
    """The kuberc's credential plugin policy; None when there is no kuberc."""
    path = path or kuberc_path()
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        return Kuberc(path, error=f"cannot be read ({getattr(e, 'strerror', None) or type(e).__name__})")
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as e:
        return Kuberc(path, error=f"is not YAML ({type(e).__name__})")
    pref = next((d for d in docs if isinstance(d, dict) and d.get("kind") == "Preference"), None)
    if pref is None:
        if any(not isinstance(d, dict) for d in docs):
            return Kuberc(path, error="is not a kuberc (its top level is not a mapping)")
        return Kuberc(path)
    policy, allow = pref.get("credentialPluginPolicy"), pref.get("credentialPluginAllowlist")
    if policy is None:
        policy = ""
    if not isinstance(policy, str) or policy not in POLICIES:
        return Kuberc(
            path,
            error=f"sets credentialPluginPolicy to {clean(str(policy))[:40]!r}, not AllowAll, DenyAll or Allowlist",
        )
    if allow is not None and policy != "Allowlist":
        return Kuberc(
            path, policy, error="has a credentialPluginAllowlist but its credentialPluginPolicy is not Allowlist"
        )
    names: list[str] = []
    if policy == "Allowlist":
        if not isinstance(allow, list):
            return Kuberc(
                path, policy, error="sets credentialPluginPolicy: Allowlist without a credentialPluginAllowlist list"
            )
        for entry in allow:
            name = entry.get("name") if isinstance(entry, dict) else None
            if not isinstance(name, str) or not name:
                return Kuberc(path, policy, error="has a credentialPluginAllowlist entry without a name")
            names.append(name)
    return Kuberc(path, policy, tuple(names))


def look_path(name: str) -> str | None:
    """Go's ``exec.LookPath``: a name with a slash is taken as it is when it is an executable file; a basename is
    found on PATH (a relative result, from a ``.`` in PATH, is refused as Go refuses it); None when not found."""
    if not name:
        return None
    if "/" in name:
        return name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    found = shutil.which(name)
    return found if found is not None and os.path.isabs(found) else None


def allowlisted(kuberc: Kuberc, command: str) -> bool:
    mine = look_path(command)
    return mine is not None and any(look_path(n) == mine for n in kuberc.names)


# ---- what the human sees --------------------------------------------------------------------------------


def _parts(spec: ExecSpec) -> list[str]:
    return [f"{k}={v}" for k, v in spec.env] + [spec.command, *spec.args]


def shown(spec: ExecSpec) -> str:
    """The command as a shell line (its environment first), every part sanitised (textsafe); a very long one is
    cut with the number of characters left out said."""
    line = shlex.join(clean(p) for p in _parts(spec))
    if len(line) > SHOWN_MAX:
        line = line[:SHOWN_MAX] + f" … ({len(line) - SHOWN_MAX} more characters not shown)"
    return line


def had_controls(spec: ExecSpec) -> bool:
    """Whether any part held a control character or an escape (stripped from what ``shown`` says)."""
    return any(unsafe(p) is not None or "\t" in p for p in _parts(spec))


# ---- the human's answers --------------------------------------------------------------------------------


def _key(spec: ExecSpec) -> str:
    canon = json.dumps([spec.command, list(spec.args), [list(e) for e in spec.env]], ensure_ascii=False)
    return hashlib.sha256(canon.encode("utf-8", "surrogatepass")).hexdigest()


def answer(api: str, cluster: str, spec: ExecSpec, path: Path | None = None) -> bool | None:
    """What the human answered for this command on ``cluster`` of the service at ``api``; None: never asked."""
    data = statefile.read(path or answers_path(), VERSION)
    got = statefile.obj(statefile.obj(statefile.obj(data.get("answers")).get(api.rstrip("/"))).get(cluster)).get(
        _key(spec)
    )
    yes = statefile.obj(got).get("yes")
    return yes if isinstance(yes, bool) else None


def remember(api: str, cluster: str, spec: ExecSpec, yes: bool, path: Path | None = None) -> None:
    """Keep the answer (raises OSError when the state dir cannot be written)."""

    def change(data: dict[str, Any]) -> dict[str, Any]:
        answers = statefile.obj(data.get("answers"))
        per_api = statefile.obj(answers.get(api.rstrip("/")))
        per_cluster = statefile.obj(per_api.get(cluster))
        per_cluster[_key(spec)] = {
            "yes": yes,
            "command": shlex.join(clean(p) for p in [spec.command, *spec.args])[:SHOWN_MAX],
            "env": [k for k, _ in spec.env],  # (names only: a value may be a secret)
            "at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        per_api[cluster] = per_cluster
        answers[api.rstrip("/")] = per_api
        return {**data, "answers": answers}

    statefile.update(path or answers_path(), VERSION, change)


# ---- the verdict ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """``action``: "run" (known, or the human said yes), "ask" (never asked), or "refuse" with ``reason``, a
    sentence that says who refused it."""

    action: str
    reason: str = ""
    known: str | None = None
    by_kuberc: bool = False
    short: str = ""  # the refusal in a few words (Account's kubectl line)


def judge(
    spec: ExecSpec,
    api: str,
    cluster: str,
    *,
    ask_again: bool = False,
    kuberc: Kuberc | None | bool = True,
    path: Path | None = None,
) -> Verdict:
    """Whether ncui may run ``spec`` for ``cluster`` of the service at ``api``. ``ask_again``: a remembered no is
    asked again (the human asked to sign in). ``kuberc``: True reads the human's; None: none."""
    rc = read_kuberc() if kuberc is True else kuberc if isinstance(kuberc, Kuberc) else None
    line = shown(spec)
    if rc is not None and rc.error:
        return Verdict(
            "refuse",
            f"Your kuberc ({rc.where}) {rc.error}: ncui runs no sign-in plugin until it is fixed, so it did not "
            f"run {cluster}'s: {line}",
            by_kuberc=True,
            short="your kuberc is misconfigured: no plugin runs",
        )
    if rc is not None and rc.policy == "DenyAll":
        return Verdict(
            "refuse",
            f"Your kuberc ({rc.where}) sets credentialPluginPolicy: DenyAll, so ncui runs no sign-in plugin; it did "
            f"not run {cluster}'s: {line}",
            by_kuberc=True,
            short="your kuberc denies every sign-in plugin (DenyAll)",
        )
    if rc is not None and rc.policy == "Allowlist" and not allowlisted(rc, spec.command):
        names = ", ".join(clean(n) for n in rc.names) or "none"
        return Verdict(
            "refuse",
            f"Your kuberc ({rc.where}) sets credentialPluginPolicy: Allowlist and its credentialPluginAllowlist "
            f"({names}) does not name {clean(spec.command)}, so ncui did not run {cluster}'s sign-in plugin: {line}",
            by_kuberc=True,
            short="your kuberc's Allowlist does not name its plugin",
        )
    which = known(spec, api, cluster)
    if which is not None:
        return Verdict("run", known=which)
    said = answer(api, cluster, spec, path)
    if said is True:
        return Verdict("run")
    if said is False and not ask_again:
        return Verdict(
            "refuse",
            f"You said no to {cluster}'s sign-in command before, so ncui did not run it (s signs in and asks "
            f"again): {line}",
            short="you said no to its sign-in command (s asks again)",
        )
    return Verdict("ask")
