"""Paths and settings: where the token lives, the real service's origins, XDG state."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from pydantic import SecretStr as PydanticSecret


class SecretStr:
    """A secret that never shows itself: ``repr``/``str`` are masked, ``get_secret_value()`` reveals it.

    The same face as pydantic's ``SecretStr`` (which the client also accepts), without importing pydantic
    before the first frame.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "SecretStr('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


API_ORIGIN = "https://nationalcompute.com"
ACCESS_ORIGIN = "https://access.nationalcompute.com"


def token_path() -> Path:
    return Path(os.path.expanduser("~/.config/nationalcompute/token"))


def state_dir() -> Path:
    """ncui's XDG state directory: ``$XDG_STATE_HOME/ncui``, by default ``~/.local/state/ncui``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return Path(base) / "ncui"


def config_dir() -> Path:
    """ncui's XDG config directory (settings a person may edit): ``$XDG_CONFIG_HOME/ncui``, by default
    ``~/.config/ncui``."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "ncui"


def kube_dir() -> Path:
    """Where kubectl looks: ``~/.kube`` (the guide's ``~/.kube/<cluster>.yaml`` and ``~/.kube/config``)."""
    return Path(os.path.expanduser("~/.kube"))


WORKSPACE_ENV = "MARSHALL_WORKSPACE"  # ours: how a Marshall workspace marks the processes it starts


def in_workspace(env: Mapping[str, str] | None = None) -> bool:
    """Inside a Marshall workspace, whose daemon holds the credential (the guide: never ask for or mint a token
    there). The guide does not say how a program tells; ncui reads ``MARSHALL_WORKSPACE`` (set, not "0")."""
    v = (os.environ if env is None else env).get(WORKSPACE_ENV, "").strip()
    return bool(v) and v != "0"


WORKSPACE_NO_CREDENTIAL = (
    "Inside a Marshall workspace the daemon holds the credential, and it gave ncui none (no NC_TOKEN in this "
    "environment). ncui never asks for or mints a token here: start ncui from the workspace's own shell, "
    "where the daemon provides it. To try ncui without one: ncui --demo"
)
WORKSPACE_NOTE = "Marshall workspace: the daemon holds the credential; ncui never asks for or mints a token here."


def known_hosts_path() -> Path:
    """ncui's own known_hosts (OpenSSH format): the host keys of nodes the human accepted in ncui."""
    return state_dir() / "known_hosts"


@dataclass(frozen=True)
class TokenSource:
    """A token and where it came from. ``warning`` is set when the token file is too open."""

    token: SecretStr | None
    origin: str  # "NC_TOKEN", the file's path, or "" when none was found
    warning: str = ""


def token_problem(token: SecretStr | PydanticSecret) -> str:
    """Why ``token`` cannot be a bearer token ("" when it can): a token is printable ASCII with no whitespace
    inside. Says what is wrong, never the token or a piece of it."""
    value = token.get_secret_value()
    if not value:
        return "it is empty"
    if any(c.isspace() for c in value):
        return "it has whitespace inside (a token is one word)"
    if not all(" " < c <= "~" for c in value):
        return "it holds bytes that are not printable text (a binary file, or a non-ASCII character)"
    return ""


def _not_a_token(source: str, problem: str, fix: str) -> str:
    return f"{source} is not a token: {problem}. {fix}"


def load_token(env: Mapping[str, str] | None = None, path: Path | None = None) -> TokenSource:
    """The token from ``NC_TOKEN``, else ``~/.config/nationalcompute/token``.

    Like ssh with a private key, warn when the file can be read by group or others. A value that cannot be a
    token (``token_problem``) is no token: ``warning`` says which source holds what, never the value.
    """
    env = os.environ if env is None else env
    value = SecretStr((env.get("NC_TOKEN") or "").strip())  # never a plain local (a traceback shows locals)
    if value.get_secret_value():
        if problem := token_problem(value):
            fix = f"Set NC_TOKEN to the token itself, or unset it to use {path or token_path()}."
            return TokenSource(None, "NC_TOKEN", warning=_not_a_token("NC_TOKEN", problem, fix))
        return TokenSource(value, "NC_TOKEN")
    if in_workspace(env):  # the daemon holds the credential: what it gives ncui (NC_TOKEN), never the file
        return TokenSource(None, "workspace")
    path = path or token_path()
    try:
        st = path.stat()
        text = SecretStr(path.read_text(encoding="utf-8", errors="replace").strip())
    except FileNotFoundError:
        return TokenSource(None, "")
    except OSError as e:
        return TokenSource(None, str(path), warning=f"Cannot read {path}: {e.strerror or e}")
    warning = ""
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        warning = f"{path} is readable by others (mode {stat.S_IMODE(st.st_mode):04o}); run: chmod 600 {path}"
    if not text.get_secret_value():
        return TokenSource(None, str(path), warning=warning or f"{path} is empty")
    if problem := token_problem(text):
        fix = "Save the token from the console there (one line of text), or set NC_TOKEN."
        return TokenSource(None, str(path), warning=_not_a_token(str(path), problem, fix))
    return TokenSource(text, str(path), warning=warning)


@dataclass(frozen=True)
class Endpoints:
    """Where the API and the recipe catalog live (the real service, or a simulator)."""

    api: str = API_ORIGIN
    access: str = ACCESS_ORIGIN
    extra: dict = field(default_factory=dict)

    @property
    def catalog_url(self) -> str:
        return self.access.rstrip("/") + "/first-job/"


def first_run_message(token_path: str, warning: str = "", *, workspace: bool = False) -> str:
    if workspace:  # the daemon holds the credential: never a word asking for one
        return "\n".join(["Welcome to ncui.", "", WORKSPACE_NO_CREDENTIAL, "", "Press q to quit."])
    lines = [
        "Welcome to ncui.",
        "",
        "ncui needs your National Compute token to show your account, the market and your jobs.",
        "",
        f"  Save it to {token_path} (then: chmod 600 {token_path})",
        "  or set NC_TOKEN in the environment, and start ncui again.",
        "",
        "Inside a Marshall workspace the daemon holds the credential: never mint a token there.",
        "",
        "To try everything offline first, with a simulated National Compute:  ncui --demo",
        "",
        "Press q to quit.",
    ]
    if warning:
        lines[1:1] = ["", f"Note: {warning}"]
    return "\n".join(lines)
