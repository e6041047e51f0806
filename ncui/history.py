"""What ncui changed, as the commands a person would type: the history behind ``h`` and ``ncui history``.

Every action that changes something records one ``Entry``: the equivalent command (``curl`` with the API path,
method and JSON body; ``kubectl --context <cluster> …``; ``ssh … '<command>'``), a sentence of what it did,
and whether it worked. People learn the real tools from it, and can do the same by hand.

- Where it is recorded: at the one place each action happens, never in a screen. The National Compute client
  records every write it sends, its ``curl`` built from the very request it sent (``api.client._curl``); the
  Kubernetes client records its deletes, scales and rollout restarts; the apply flow records each file it
  applied (``applied``), and Stop the guide's delete commands it stands for (``stopped``); the remote layer
  records what it runs on a node or a login node (``remote.runner.run_noted``) and the first ssh connection;
  the sign-in flow its approval.
- Told, not reached for: the backend makes the service's History once it knows the endpoints
  (``Backend.history``) and hands it to the clients it builds; ``NCClient``, ``KubeClient``, ``SshRunner`` and
  ``LocalRunner`` take it as ``history=`` (a ``Recorder``: ``note`` and ``with_kubeconfig``), and record nothing
  without one (the lower layers' own tests, ``ncui sim``, the command line's reads). The App and its flows use
  the same object (``Flow.history``).
- The token never: a curl names ``$NC_TOKEN``, and ``record`` replaces anything after a ``Bearer`` that is
  not ``$NC_TOKEN`` before it is written (a belt to the braces: nothing builds such a line).
- Persisted as JSON lines in ``state_dir()/history.jsonl`` (mode 600): each entry one ``write`` on an
  ``O_APPEND`` descriptor under an exclusive ``flock``, so two ncui processes append whole lines, never
  interleaved. A line that cannot be read (a crash mid-write, an edit by hand) is skipped and said
  (``Read.problems``), never a crash. Entries carry their API origin: each service (and each demo box) has its
  own history in the one file.

Plain Python: no Textual here. Text in an entry may come from a server (object names): the screen and the
command line pass it through ``textsafe.clean`` before a terminal shows it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import shlex
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, cast, get_args

if TYPE_CHECKING:
    from .kube.client import ApplyResult
    from .recipes import Plan, PlanStep

log = logging.getLogger("ncui.history")

Kind = Literal["curl", "kubectl", "ssh", "scp", "shell"]
KINDS: tuple[str, ...] = get_args(Kind)
TOKEN_VAR = "$NC_TOKEN"
FILE_NAME = "history.jsonl"
# Anything after "Bearer " that is not $NC_TOKEN: never written (nothing ncui builds has it; this is the belt).
_BEARER = re.compile(r"(Bearer\s+)(?!\$NC_TOKEN\b)[^\s\"']+")


def history_path() -> Path:
    from .config import state_dir

    return state_dir() / FILE_NAME


def origin_of(api: str) -> str:
    """The key a history is kept under: the API origin as ncui was given it, without a trailing slash."""
    return api.strip().rstrip("/")


def _scrub(text: str) -> str:
    return _BEARER.sub(lambda m: m.group(1) + TOKEN_VAR, text)


# ---- an entry ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    at: datetime  # when it was done (UTC, on the service's clock: the box's in the demo, as the Report's dates)
    origin: str  # the API origin (origin_of)
    kind: Kind  # the program the command runs
    command: str  # one line a person can type
    what: str  # what it did, in a sentence's words
    ok: bool  # whether it worked

    def to_json(self) -> dict[str, object]:
        return {
            "at": self.at.isoformat(timespec="seconds"),
            "origin": self.origin,
            "kind": self.kind,
            "command": self.command,
            "what": self.what,
            "ok": self.ok,
        }

    @classmethod
    def from_json(cls, doc: object) -> Entry:
        """Raises ValueError (its message says what is wrong) for anything but an entry."""
        if not isinstance(doc, dict):
            raise ValueError("not an object")
        try:
            at = datetime.fromisoformat(str(doc["at"]))
            kind, command, what, ok = doc["kind"], doc["command"], doc.get("what", ""), doc["ok"]
            origin = doc["origin"]
        except KeyError as e:
            raise ValueError(f"no {e.args[0]!r}") from None
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        if not all(isinstance(v, str) for v in (command, what, origin)) or not isinstance(ok, bool):
            raise ValueError("a field of the wrong type")
        if at.tzinfo is None:
            at = at.replace(tzinfo=timezone.utc)
        return cls(at, origin, cast("Kind", kind), command, what, ok)

    def comment(self) -> str:
        """``# 2026-11-02 10:02:11 UTC — set the limit price … (failed)``: when (UTC, as the Report says) and what."""
        when = self.at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"# {when} — {self.what}" + ("" if self.ok else " (failed)")


@dataclass(frozen=True)
class Read:
    """What a history file holds for an origin (oldest first), and the lines that could not be read."""

    entries: tuple[Entry, ...] = ()
    problems: tuple[str, ...] = ()
    origins: dict[str, int] = field(default_factory=dict)  # every origin in the file, with its count


@contextlib.contextmanager
def _locked(path: Path, flags: int, lock: int) -> Iterator[int]:
    fd = os.open(path, flags | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, lock)
        yield fd
    finally:
        os.close(fd)  # (closing releases the lock)


def read_file(path: Path, origin: str | None) -> Read:
    """The entries of ``origin`` (every origin when None), oldest first. A missing file is an empty history; a
    file that cannot be read at all is one problem."""
    try:
        with _locked(path, os.O_RDONLY, fcntl.LOCK_SH) as fd, os.fdopen(os.dup(fd), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return Read()
    except OSError as e:
        return Read(problems=(f"Cannot read {path}: {e.strerror or e}.",))
    entries: list[Entry] = []
    problems: list[str] = []
    origins: dict[str, int] = {}
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            entry = Entry.from_json(json.loads(raw))
        except (ValueError, UnicodeDecodeError) as err:  # (json's errors are ValueErrors)
            why = str(err).splitlines()[0][:80] if str(err) else type(err).__name__
            problems.append(f"{path.name} line {n} is not a history entry ({why}): skipped.")
            continue
        origins[entry.origin] = origins.get(entry.origin, 0) + 1
        if origin is None or entry.origin == origin:
            entries.append(entry)
    return Read(tuple(entries), tuple(problems), origins)


class Recorder(Protocol):
    """What a client is given to record into (a ``History``; None where nothing is recorded: the lower layers'
    own tests, ``ncui sim``, the command line's reads). The backend makes the History once it knows the service
    and hands it to the clients it builds: none of them reaches for a global."""

    def note(self, kind: Kind, command: str, what: str, ok: bool) -> Entry | None:
        """Record one change as its command, never raising."""
        ...

    def with_kubeconfig(self, command: str) -> str:
        """A ``kubectl --context C …`` line as it works when typed (``KUBECONFIG=<C's file>`` first when needed)."""
        ...


class History:
    """One service's history: ``History(origin).record("kubectl", line, "stop job/nanogpt", True)``.

    ``record`` never raises: a history that cannot be written (a read-only home, a full disk) is logged, kept
    in memory for this session (``session``) and said by ``write_error``; the action it records stands."""

    def __init__(self, origin: str, path: Path | None = None, clock: Callable[[], datetime] | None = None) -> None:
        self.origin = origin_of(origin)
        self.path = path or history_path()
        self.clock = clock  # the service's now (Backend.now: the box's in the demo); None: the wall clock
        self.session: list[Entry] = []  # what this process recorded, oldest first
        self.write_error = ""
        # a cluster whose context is not in ~/.kube/config (the merge declined, or not asked yet) → its file as a
        # person writes it (~/.kube/halcyon.yaml); said by the sign-in flow (kubeconfig_for)
        self.kubeconfigs: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"History(origin={self.origin!r}, path={str(self.path)!r})"

    def record(self, kind: Kind, command: str, what: str, ok: bool) -> Entry:
        entry = Entry(self._now(), self.origin, kind, _scrub(" ".join(command.splitlines())), _scrub(what), ok)
        self.session.append(entry)
        line = (json.dumps(entry.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with _locked(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, fcntl.LOCK_EX) as fd:
                if os.fstat(fd).st_mode & 0o077:  # made by hand, or by an older ncui: ours alone
                    os.fchmod(fd, 0o600)
                view = memoryview(line)
                while view:  # one write in practice; a short write goes on under the lock
                    view = view[os.write(fd, view) :]
            self.write_error = ""
        except OSError as e:
            self.write_error = f"Cannot write {self.path}: {e.strerror or e}."
            log.warning("%s", self.write_error)
        return entry

    def _now(self) -> datetime:
        """When: on the clock the Report dates by (one clock in the demo, whose box may run 60x), else the wall's."""
        if self.clock is not None:
            try:
                return self.clock().astimezone(timezone.utc)
            except Exception:  # a clock that cannot say: the entry still stands
                log.exception("the history's clock")
        return datetime.now(timezone.utc)

    def read(self, origin: str | None = "") -> Read:
        """This origin's entries (``origin=""``), another's, or every origin's (None). When the file could not
        be written, this session's entries are added to what it holds."""
        want = self.origin if origin == "" else origin
        read = read_file(self.path, want)
        if not self.write_error:
            return read
        have = set(read.entries)
        extra = tuple(e for e in self.session if e not in have and (want is None or e.origin == want))
        return Read(read.entries + extra, read.problems + (self.write_error,), read.origins)

    # ---- what the flows and the clients record (they are given this History: no module global) ----------

    def note(self, kind: Kind, command: str, what: str, ok: bool) -> Entry | None:
        """Record, never raising. A kubectl line for a cluster whose context is not in ~/.kube/config
        (``kubeconfig_for``) is recorded as ``KUBECONFIG=<its file> kubectl …``."""
        try:
            return self.record(kind, self.with_kubeconfig(command) if kind == "kubectl" else command, what, ok)
        except Exception:  # the action it records stands whatever happens here
            log.exception("recording %r", what)
            return None

    def kubeconfig_for(self, cluster: str, path: str) -> None:
        """``cluster``'s context is only in ``path`` (``""``: it is in ~/.kube/config, or no file was written): its
        kubectl lines then read ``KUBECONFIG=<path> kubectl --context <cluster> …``, which works as typed, where
        ``kubectl --context <cluster> …`` alone finds no such context."""
        if path:
            self.kubeconfigs[cluster] = path
        else:
            self.kubeconfigs.pop(cluster, None)

    def with_kubeconfig(self, command: str) -> str:
        """``kubectl --context C …`` with ``KUBECONFIG=<C's file>`` before it when C's context is only there."""
        return with_kubeconfig_of(self.kubeconfigs, command)

    def with_kubeconfigs(self, text: str) -> str:
        """Every ``kubectl --context C`` inside ``text`` (a sentence that names commands) as ``with_kubeconfig``
        gives it: ``KUBECONFIG=<C's file> kubectl --context C …`` where C's context is only in that file (one that
        already names its file is left as it is)."""
        if not self.kubeconfigs:
            return text

        def one(m: re.Match[str]) -> str:
            return m.group(0) if m.group(1) else self.with_kubeconfig(m.group(0))

        return re.sub(r"(KUBECONFIG=\S+ )?kubectl --context \S+", one, text)

    def applied(self, cluster: str, plan: Plan, results: Sequence[ApplyResult]) -> None:
        """The apply flow's results as the guide's ``kubectl --context <cluster> apply -f <file>``, one per file
        (``applied_step``). Files after a refusal were not sent: not recorded."""
        done = list(results)
        for step in (s for s in plan.steps if not s.optional):
            mine, done = done[: len(step.docs)], done[len(step.docs) :]
            if not mine:
                break
            self.applied_step(cluster, plan.title, step, mine)

    def applied_step(self, cluster: str, title: str, step: PlanStep, results: Sequence[ApplyResult]) -> None:
        """One file applied (its URL; Something else's manifest saved first) as ``kubectl --context <cluster>
        apply -f <file>``: ok when every object of the file was applied."""
        source = step.url
        if not source:
            try:
                source = str(save_manifest(step.file, step.text))
            except OSError as e:
                log.warning("cannot keep %s: %s", step.file, e)
                source = step.file
        ok = len(results) == len(step.docs) and all(r.error is None for r in results)
        what = f"apply {title}: " + ", ".join(str(r) for r in results)
        self.note("kubectl", kubectl_command(cluster, "apply", "-f", source), what, ok)

    def stopped(
        self, title: str, commands: Sequence[str], deleted: Sequence[str], failed: Collection[str] = ()
    ) -> None:
        """A Stop as the guide's commands it stands for (``kubectl --context <cluster> delete -f <file>``, ``…
        delete job NAME``), one line each with the objects it removed, ok when none of them failed: one change, the
        lines the Stop question showed. ``deleted`` holds kubectl's TYPE/NAME of each object deleted, ``failed``
        those the cluster refused. An object goes to the command that names it (``delete job a b``), else to the
        first ``delete -f``; a command that removed nothing (its objects were gone already) is not recorded."""
        if not commands:
            return
        owned: dict[str, list[str]] = {c: [] for c in commands}
        by_file = next((c for c in commands if " -f " in f" {c} "), commands[0])
        for ref in deleted:
            kind, _, name = ref.partition("/")
            named = next((c for c in commands if f" delete {kind} " in c and name in shlex.split(c)), None)
            owned[named or by_file].append(ref)
        for command, refs in owned.items():
            if refs:
                bad = [r for r in refs if r in failed]
                what = f"stop {title}: delete " + ", ".join(refs) + (f" ({', '.join(bad)} refused)" if bad else "")
                self.note("kubectl", command, what, not bad)


# ---- no module global: the clients and the flows are given the History (issue 22) -----------------------


def with_kubeconfig_of(kubeconfigs: dict[str, str], command: str) -> str:
    """``kubectl --context C …`` with ``KUBECONFIG=<C's file>`` before it when ``kubeconfigs`` has C's file."""
    words = command.split(" ", 3)
    if len(words) >= 3 and words[:2] == ["kubectl", "--context"]:
        path = kubeconfigs.get(shlex.split(words[2])[0] if words[2] else "")
        if path:
            # (~/ left unquoted: the shell expands it after KUBECONFIG=)
            value = "~/" + shlex.quote(path[2:]) if path.startswith("~/") else shlex.quote(path)
            return f"KUBECONFIG={value} {command}"
    return command


# ---- the commands --------------------------------------------------------------------------------


def join(argv: Sequence[str]) -> str:
    """Words as one shell line, each quoted where the shell would otherwise read it."""
    return " ".join(shlex.quote(str(w)) for w in argv)


def curl_command(method: str, url: str, body: bytes = b"", content_type: str = "") -> str:
    """The curl that sends this request: method, the URL as sent (query included), the body as sent, the token
    as ``$NC_TOKEN`` (in double quotes: the shell expands it; never its value)."""
    line = f'curl -fsS -X {shlex.quote(method.upper())} -H "Authorization: Bearer {TOKEN_VAR}"'
    if body:
        if content_type:
            line += " -H " + shlex.quote(f"Content-Type: {content_type}")
        line += " --data-raw " + shlex.quote(body.decode("utf-8", "replace"))
    return line + " " + shlex.quote(url)


def kubectl_command(context: str, *args: str) -> str:
    """``kubectl --context <cluster> …``: the guide names the context on every call."""
    return join(["kubectl", "--context", context, *args])


def save_manifest(name: str, text: str) -> Path:
    """A manifest that has no URL (Something else's Job), kept where ``kubectl apply -f`` can find it again:
    ``state_dir()/manifests/<name>`` (mode 600). Raises OSError."""
    from .config import state_dir

    folder = state_dir() / "manifests"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / Path(name).name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    return path


__all__ = [
    "Entry",
    "History",
    "Kind",
    "Read",
    "curl_command",
    "history_path",
    "join",
    "kubectl_command",
    "origin_of",
    "read_file",
    "save_manifest",
    "with_kubeconfig_of",
]
