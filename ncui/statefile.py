"""ncui's small state files: versioned JSON under ``config.state_dir()``, written atomically. No Textual here.

    data = statefile.read(path, VERSION)              # {} when missing; a bad file is set aside, never a crash
    statefile.update(path, VERSION, lambda d: {...})  # read, change, write, under the file's lock

Every file is ``{"version": N, ...}``. Writes go to a temporary file in the same folder, then ``os.replace``
(a crash, a full disk or a second ncui never leaves half a file), mode 600 in a folder of mode 700; ``update``
holds an exclusive ``flock`` on ``.<name>.lock`` from the read to the replace, so two ncui processes changing
the same file at once both land. A file that is not JSON, cannot be read, or was written by another version
is set aside as ``<name>.bad-<UTC time>`` (kept, for the human to look at) and reading goes on from nothing
(a caller that still reads an older version names it in ``older``: that file is returned as it is, for the
caller to read its missing fields as their defaults, and the next write gives it the current version):
the reason is logged and kept in ``notices()`` for the app and the command line to say. The token is never
written here: callers store names, prices and times, and a test greps the folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

log = logging.getLogger("ncui.statefile")

_notices: list[str] = []


def notices() -> list[str]:
    """What was set aside since the last call (sentences), emptied by the call."""
    out = list(_notices)
    _notices.clear()
    return out


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else a new empty one (a part of a file that is not what it should be)."""
    return value if isinstance(value, dict) else {}


def _set_aside(path: Path, why: str, lost: str = "") -> None:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    bad = path.with_name(f"{path.name}.bad-{stamp}")
    try:
        os.replace(path, bad)
        said = f"{path} {why}: set aside as {bad.name}, and ncui starts it afresh{lost}."
    except OSError as e:
        said = f"{path} {why}, and could not be set aside ({e.strerror or e}): ncui goes on without it{lost}."
    log.warning("%s", said)
    _notices.append(said)


def read(path: Path, version: int, older: tuple[int, ...] = (), lost: str = "") -> dict[str, Any]:
    """The file's content (a dict with ``version``), or {} when it does not exist or was set aside (``lost``, when
    given, ends the notice: what no longer holds). A file of a version in ``older`` is read as it is (the caller
    reads what it lacks as the defaults)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as e:
        _set_aside(path, f"cannot be read ({e.strerror or e})", lost)
        return {}
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        _set_aside(path, "is not valid JSON (broken or cut short)", lost)
        return {}
    if not isinstance(data, dict):
        _set_aside(path, "is not a JSON object", lost)
        return {}
    if data.get("version") != version and not (data.get("version") in older and type(data["version"]) is int):
        found = data.get("version")
        newer = isinstance(found, int) and not isinstance(found, bool) and found > version
        _set_aside(
            path,
            f"was written by {'a newer' if newer else 'another'} ncui (file version {str(found)[:20]}; this one "
            f"reads version {version})",
            lost,
        )
        return {}
    return data


def write(path: Path, version: int, data: dict[str, Any]) -> None:
    """Replace the file with ``data`` (``version`` set) atomically, mode 600. Raises OSError when the folder
    cannot be written (the caller says so)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    body = json.dumps({**data, "version": version}, indent=1, sort_keys=True) + "\n"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)  # (an older tmp of ours may have had another mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path.with_name(f".{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (closing releases the lock)


def update(
    path: Path,
    version: int,
    change: Callable[[dict[str, Any]], dict[str, Any]],
    older: tuple[int, ...] = (),
    lost: str = "",
) -> dict[str, Any]:
    """Read, ``change(data)`` → the new data, write (as ``version``); under the file's lock (another ncui waits).
    Returns what was written. Raises OSError when the folder cannot be written."""
    with _locked(path):
        new = change(read(path, version, older, lost))
        write(path, version, new)
        return new


__all__ = ["read", "write", "update", "notices", "obj"]
