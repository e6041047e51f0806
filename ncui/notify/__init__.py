"""Notifications for the moments a researcher waits for (issue 25): a node joined, the first loss line, READY 1/1,
a job succeeded or failed, a reclaim, a sign-in link waiting, the spending limit at 80% and 100%, a research node
assigned. No Textual here: the App wires it (``ncui/app.py``), the bytes go out through ``screens/desktop.py``.

Every moment is said in the app (a toast, as ncui always did). It also goes to the desktop, through the terminal
(``escape.py``: OSC 99 / 777 / 9 or the bell), while the terminal is not focused, when its kind is on in
``$XDG_CONFIG_HOME/ncui/notify.json`` (all on by default) and ncui was not started with ``--quiet``.
A moment is raised from the one place ncui learns it (``moments.py`` for what the store shows; the flows for the
sign-in link, the spending limit and the first loss line), once: the raiser knows what changed.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Severity = Literal["information", "warning", "error"]

# Each kind, in the order the settings show them, with what it is for.
KINDS: dict[str, str] = {
    "node": "a node granted or joined (a Kubernetes node Ready, a VM node active)",
    "loss": "the first loss line of a run",
    "ready": "a serve READY 1/1",
    "job": "a job succeeded or failed (Kubernetes Job, Slurm job)",
    "reclaim": "a node or allocation reclaimed",
    "signin": "a sign-in link waiting for you",
    "limit": "the spending limit at 80% and at 100%",
    "research": "the public research node assigned",
}
FILE = "notify.json"


@dataclass(frozen=True)
class Moment:
    """One moment: its kind (``KINDS``), a short title and a sentence (both may carry a server's words: cleaned
    before the terminal, in the app and in the escape builder)."""

    kind: str
    title: str
    body: str
    severity: Severity = "information"


def settings_path() -> Path:
    from ..config import config_dir

    return config_dir() / FILE


@dataclass(frozen=True)
class Settings:
    """Which kinds go to the desktop (all by default); ``problem``: why the file was not used, said once."""

    on: Mapping[str, bool] = field(default_factory=lambda: dict.fromkeys(KINDS, True))
    problem: str = ""

    def enabled(self, kind: str) -> bool:
        return bool(self.on.get(kind, True))

    def toggled(self, kind: str) -> Settings:
        return Settings({**self.on, kind: not self.enabled(kind)})

    def to_json(self) -> dict[str, object]:
        return {"desktop": {k: self.enabled(k) for k in KINDS}}


def load(path: Path | None = None) -> Settings:
    """The settings file, or the defaults (all on) when there is none; a file that cannot be read or is not
    ``{"desktop": {kind: true|false, …}}`` gives the defaults and a ``problem`` sentence, never an exception."""
    path = path or settings_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        return Settings()
    except (OSError, UnicodeDecodeError) as e:
        return Settings(problem=f"{path} could not be read ({e.__class__.__name__}): every kind is on.")
    try:
        doc = json.loads(text)
    except ValueError as e:
        return Settings(problem=f"{path} is not JSON ({e}): every kind is on until it is fixed.")
    desktop = doc.get("desktop") if isinstance(doc, dict) else None
    if not isinstance(desktop, dict):
        return Settings(problem=f'{path} needs {{"desktop": {{"node": true, …}}}}: every kind is on until it is fixed.')
    on = dict.fromkeys(KINDS, True)
    bad = []
    for k, v in desktop.items():
        if k in KINDS and isinstance(v, bool):
            on[k] = v
        else:
            bad.append(str(k)[:40])
    problem = (
        f"{path}: {', '.join(bad)} not understood (kinds: {', '.join(KINDS)}; each true or false): left on."
        if bad
        else ""
    )
    return Settings(on, problem)


def save(settings: Settings, path: Path | None = None) -> None:
    """Write the settings atomically (a temporary file beside it, then a rename). Raises OSError."""
    path = path or settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".notify.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(settings.to_json(), f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class Notifier:
    """Where every moment goes: ``say(moment)`` in the app, always; ``write(text)`` to the terminal (the
    desktop) only when ``desktop_now()`` (the terminal is not focused), not ``quiet`` and its kind is on.
    ``protocol()`` is asked at the first desktop notification and kept (inside tmux it asks tmux)."""

    def __init__(
        self,
        settings: Settings,
        *,
        say: Callable[[Moment], None],
        write: Callable[[str], None],
        desktop_now: Callable[[], bool],
        protocol: Callable[[], str],
        quiet: bool = False,
        tmux: bool = False,
    ) -> None:
        self.settings = settings
        self.quiet = quiet
        self._say, self._write, self._desktop_now, self._protocol = say, write, desktop_now, protocol
        self._proto: str | None = None
        self.tmux = tmux
        self.sent = 0  # desktop notifications written (each one its own kitty id)

    def protocol(self) -> str:
        if self._proto is None:
            self._proto = self._protocol()
        return self._proto

    def moment(self, m: Moment, *, in_app: bool = True) -> None:
        """``m`` happened: said in the app (unless the caller said it: ``in_app=False``), and on the desktop when
        it should be."""
        if in_app:
            self._say(m)
        if self.quiet or not self.settings.enabled(m.kind) or not self._desktop_now():
            return
        from .escape import sequence

        proto = self.protocol()
        self.sent += 1
        self._write(sequence(proto, m.title, m.body, tmux=self.tmux and proto != "bell", ident=self.sent))  # type: ignore[arg-type]


__all__ = ["KINDS", "Moment", "Notifier", "Settings", "load", "save", "settings_path"]
