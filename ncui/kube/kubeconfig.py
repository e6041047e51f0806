"""The kubeconfig where the human's own kubectl finds it, as the guide's Connect step leaves it. No Textual.

The guide's manual path writes the portal's kubeconfig to ``~/.kube/<cluster>.yaml``; its setup script also
merges a ``<cluster>`` context into ``~/.kube/config``. ncui does the first whenever it fetches a cluster's
kubeconfig, and the second only when the human said yes (asked once per cluster; the answer is kept in
ncui's state dir, never in the kubeconfig). Neither file holds a secret: the kubeconfig's user signs in
through the exec plugin, whose credential lives in the plugin's own cache.

- ``<cluster>.yaml`` is written mode 600 (the folder 700 when ncui makes it), atomically, and only when it
  changed;
- ``config`` is read, the ``<cluster>`` cluster, user and context entries added or replaced, every other
  entry and key kept as it was, ``current-context`` set only when there was none; then written atomically
  (mode 600 when created, else the mode it had), under kubectl's own lock file (``config.lock``). A config
  that is not a kubeconfig ncui can read is left alone and said so.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")  # a cluster name that is safe as a file name


class KubeconfigError(Exception):
    """A kubeconfig ncui could not write or merge, in a sentence (the human's files are left as they were)."""


def shown(path: Path) -> str:
    """A path as a person writes it: ``~/.kube/halcyon.yaml`` under the home."""
    home = os.path.expanduser("~")
    s = str(path)
    return "~" + s[len(home) :] if home not in ("", "/") and (s == home or s.startswith(home + "/")) else s


def write_private(path: Path, text: str, mode: int = 0o600) -> None:
    """Write ``text`` atomically (a temporary file beside it, then a rename) with ``mode``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _doc(text: str, what: str) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise KubeconfigError(f"{what} is not YAML ({type(e).__name__})") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise KubeconfigError(f"{what} is not a kubeconfig (its top level is not a mapping)")
    return doc


def _named(doc: dict[str, Any], section: str, name: str) -> dict[str, Any] | None:
    for entry in doc.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return None


@dataclass(frozen=True)
class KubeHome:
    """Where the kubeconfigs go (``folder``: ``~/.kube``, or the demo's stand-in) and where the human's
    answers to "add a context to config?" are kept (``answers``: a JSON file in ncui's state dir)."""

    folder: Path
    answers: Path

    @classmethod
    def default(cls) -> KubeHome:
        from ..config import kube_dir, state_dir

        return cls(kube_dir(), state_dir() / "kube-contexts.json")

    @property
    def config(self) -> Path:
        return self.folder / "config"

    def cluster_file(self, cluster: str) -> Path:
        if not SAFE_NAME.match(cluster):
            raise KubeconfigError(f"the cluster's name {cluster[:40]!r} cannot be a file name")
        return self.folder / f"{cluster}.yaml"

    def _folder(self) -> None:
        try:
            if not self.folder.is_dir():
                self.folder.mkdir(parents=True, mode=0o700)
        except OSError as e:
            raise KubeconfigError(f"cannot make {shown(self.folder)}: {e.strerror or e}") from None

    # ---- ~/.kube/<cluster>.yaml ----------------------------------------------------------------------

    def save(self, cluster: str, text: str) -> Path:
        """Write the portal's kubeconfig to ``<folder>/<cluster>.yaml`` (mode 600) when it changed."""
        path = self.cluster_file(cluster)
        self._folder()
        try:
            if path.is_file() and path.read_text(encoding="utf-8") == text:
                if path.stat().st_mode & 0o077:
                    os.chmod(path, 0o600)
                return path
            write_private(path, text)
        except OSError as e:
            raise KubeconfigError(f"cannot write {shown(path)}: {e.strerror or e}") from None
        return path

    # ---- the <cluster> context in ~/.kube/config ----------------------------------------------------

    def entries(self, cluster: str, text: str) -> dict[str, dict[str, Any]]:
        """The cluster, user and context entries of the portal's kubeconfig for context ``cluster``."""
        doc = _doc(text, "the kubeconfig National Compute sent")
        ctx = _named(doc, "contexts", cluster) or _named(doc, "contexts", str(doc.get("current-context") or ""))
        inner = (ctx or {}).get("context") or {}
        c, u = _named(doc, "clusters", str(inner.get("cluster", ""))), _named(doc, "users", str(inner.get("user", "")))
        if ctx is None or c is None or u is None:
            raise KubeconfigError("the kubeconfig National Compute sent names no complete context")
        return {"clusters": c, "users": u, "contexts": {**ctx, "name": cluster}}

    def merged(self, cluster: str, text: str) -> bool:
        """Whether ``config`` already holds the ``cluster`` context exactly as the portal's kubeconfig has it."""
        try:
            doc = _doc(self.config.read_text(encoding="utf-8"), shown(self.config))
            want = self.entries(cluster, text)
        except (OSError, KubeconfigError):
            return False
        return all(_named(doc, section, str(e["name"])) == e for section, e in want.items())

    def merge(self, cluster: str, text: str) -> str:
        """Add or update the ``cluster`` context (and its cluster and user) in ``config``; every other entry
        stays. Returns "added", "updated" or "unchanged"."""
        want = self.entries(cluster, text)
        self._folder()
        target = self.config.resolve() if self.config.is_symlink() else self.config  # a linked config stays linked
        lock = target.with_name(target.name + ".lock")  # kubectl's own lock: never two writers at once
        try:
            fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise KubeconfigError(
                f"{shown(lock)} exists: another kubectl is changing {shown(self.config)} (or one stopped halfway: "
                "remove the lock file if no kubectl runs)"
            ) from None
        except OSError as e:
            raise KubeconfigError(f"cannot lock {shown(self.config)}: {e.strerror or e}") from None
        os.close(fd)
        try:
            return self._merge_locked(target, want)
        finally:
            with contextlib.suppress(OSError):
                lock.unlink()

    def _merge_locked(self, target: Path, want: dict[str, dict[str, Any]]) -> str:
        try:
            st = target.stat()
            text, mode = target.read_text(encoding="utf-8"), st.st_mode & 0o777
        except FileNotFoundError:
            text, mode = "", 0o600
        except OSError as e:
            raise KubeconfigError(f"cannot read {shown(self.config)}: {e.strerror or e}") from None
        doc = _doc(text, shown(self.config))
        for section in ("clusters", "users", "contexts"):
            if not isinstance(doc.get(section) or [], list):
                raise KubeconfigError(f"{shown(self.config)} is not a kubeconfig ncui can change ({section})")
        verdict = "added" if _named(doc, "contexts", str(want["contexts"]["name"])) is None else "updated"
        changed = False
        for section, entry in want.items():
            items: list[Any] = list(doc.get(section) or [])
            at = next((i for i, e in enumerate(items) if isinstance(e, dict) and e.get("name") == entry["name"]), None)
            if at is None:
                items.append(entry)
                changed = True
            elif items[at] != entry:
                items[at] = entry
                changed = True
            doc[section] = items
        if not doc.get("current-context"):
            doc["current-context"] = want["contexts"]["name"]
            changed = True
        if not changed:
            return "unchanged"
        doc.setdefault("apiVersion", "v1")
        doc.setdefault("kind", "Config")
        try:
            write_private(target, yaml.safe_dump(doc, sort_keys=False), mode)
        except OSError as e:
            raise KubeconfigError(f"cannot write {shown(self.config)}: {e.strerror or e}") from None
        return verdict

    # ---- the human's answer, per cluster ------------------------------------------------------------

    def _answers(self) -> dict[str, Any]:
        try:
            data = json.loads(self.answers.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def answer(self, api: str, cluster: str) -> bool | None:
        """What the human answered for ``cluster`` of the service at ``api``: True, False, or None (never asked)."""
        got = (self._answers().get(api.rstrip("/")) or {}).get(cluster)
        return got if isinstance(got, bool) else None

    def remember(self, api: str, cluster: str, yes: bool) -> None:
        data = self._answers()
        per_api = data.get(api.rstrip("/"))
        data[api.rstrip("/")] = {**(per_api if isinstance(per_api, dict) else {}), cluster: yes}
        try:
            self.answers.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            write_private(self.answers, json.dumps(data, indent=1, sort_keys=True) + "\n")
        except OSError as e:
            raise KubeconfigError(f"cannot remember the answer in {shown(self.answers)}: {e.strerror or e}") from None
