"""A Slurm cluster through its login node, over any ``Runner`` (ssh, or here on the login node): the guide's
four commands and what ncui needs around them.

``await prepare(r, access)`` runs ``curl -fsSL <access>/first-job/prepare.sh | sh`` when
``~/first-job/nanogpt.sbatch`` is missing; ``job_id = await submit(r)`` is ``sbatch --nodes=1
~/first-job/nanogpt.sbatch``; ``await jobs(r)`` is ``squeue --me`` (``--json`` where Slurm has it, else a
``-o`` line) as ``SlurmJob``s; ``explain(job)`` says the state and a PENDING reason in plain words;
``await cancel(r, job_id)`` is ``scancel``; ``output_path(job)`` is where its log is (``nanogpt-<id>.out``
in the folder it was submitted from, or the ``StdOut`` Slurm reports) and ``output_follower(r, path)`` follows
it with ``tail -F``, resuming after a drop with nothing lost or repeated (``node.FileFollower``).

The sign in (``check_certificate``): the human's ssh user certificate for the cluster (``slurm-login``
refreshes one valid 24 hours), found as OpenSSH finds it (``ssh -G``: CertificateFile, or IdentityFile with
``-cert.pub``) and read with ``ssh-keygen -L``; when it is missing or expired, ``signin_steps`` are the guide's
two steps. Every word built from input is quoted; what Slurm says is returned as it came (the caller cleans
it for the screen with ``textsafe``), what this module writes in its own sentences is cleaned here.
No Textual here.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backoff import within
from ..textsafe import clean
from .node import BadInput, FileFollower, _path, _q, curl_sh_command
from .runner import CommandFailed, RemoteError, Result, Runner, run_noted

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..logfollow import FollowOptions

__all__ = [
    "CertCheck",
    "FORMAT",
    "PREPARE",
    "STARTER_SBATCH",
    "SlurmError",
    "SlurmJob",
    "cancel",
    "cancel_command",
    "check_certificate",
    "explain",
    "find_output",
    "job",
    "jobs",
    "jobs_command",
    "output_follower",
    "output_path",
    "parse_format",
    "parse_json",
    "parse_keygen",
    "parse_show_job",
    "parse_submitted",
    "prepare",
    "prepare_command",
    "prepared",
    "show_job",
    "setup_command",
    "signin_command",
    "signin_steps",
    "submit",
    "submit_command",
]

PREPARE = "first-job/prepare.sh"  # under the access origin
STARTER_SBATCH = "~/first-job/nanogpt.sbatch"  # what prepare.sh writes
# squeue's -o line: every field but the name is free of "|", and the name is last (split at most 8 times).
FORMAT = "%i|%T|%r|%M|%D|%N|%u|%Z|%j"
_JOB_ID = re.compile(r"\d+(?:_\d+)?")
_SUBMITTED = re.compile(r"Submitted batch job (\d+)")
ACTIVE = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING"})


class SlurmError(RemoteError):
    """Slurm answered something ncui cannot read; ``str(e)`` is a sentence."""


@dataclass(frozen=True)
class SlurmJob:
    """One job as ``squeue`` shows it. ``elapsed`` as squeue writes it (``1:02:03``); ``stdout``: the
    ``--output`` Slurm holds (may carry ``%j``; "" when this Slurm did not say); ``workdir``: where it was
    submitted from ("" when unknown); ``start``/``end``: its start and end (seconds since the epoch, by the
    cluster's clock; None when not said)."""

    id: str
    name: str
    state: str  # PENDING, RUNNING, COMPLETING, …
    reason: str = ""  # squeue's reason ("None" while nothing holds it)
    elapsed: str = "0:00"
    nodes: int = 0
    nodelist: str = ""
    user: str = ""
    workdir: str = ""
    stdout: str = ""
    start: float | None = None
    end: float | None = None  # when it ended (squeue --json's end_time, once it left the active states)

    @property
    def pending(self) -> bool:
        return self.state == "PENDING"

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"

    @property
    def active(self) -> bool:
        """Still in the queue or on a node (squeue lists it)."""
        return self.state in ACTIVE


def _check_id(job_id: str | int) -> str:
    text = str(job_id).strip()
    if not _JOB_ID.fullmatch(text):
        raise BadInput(f"{clean(text)!r} is not a Slurm job id (a number, like 1234).")
    return text


# ---- prepare and submit -----------------------------------------------------------------------------


def prepare_command(access_url: str) -> str:
    """``curl -fsSL <access>/first-job/prepare.sh | sh``: the guide's first line on the login node."""
    return curl_sh_command(access_url, PREPARE)


async def prepared(runner: Runner, script: str = STARTER_SBATCH) -> bool:
    """Whether the starter's batch script is already there (``ls`` finds it)."""
    return (await runner.run(f"ls {_path(script)}", timeout=60.0)).ok


async def prepare(runner: Runner, access_url: str, *, timeout: float | None = 600.0) -> Result | None:
    """Run ``prepare.sh`` when ``~/first-job`` lacks the batch script (None: it was there, nothing ran).
    A failure is ``CommandFailed`` with prepare.sh's last words."""
    if await prepared(runner):
        return None
    return await run_noted(
        runner, prepare_command(access_url), "prepare ~/first-job (the guide's prepare.sh)", timeout=timeout
    )


def submit_command(script: str = STARTER_SBATCH, nodes: int = 1) -> str:
    """``sbatch --nodes=N SCRIPT`` (a leading ``~/`` left for the login node's shell)."""
    if not isinstance(nodes, int) or not 1 <= nodes <= 100_000:
        raise BadInput(f"{nodes!r} is not a number of nodes (1 or more).")
    if not script or script.startswith("-"):
        raise BadInput(f"{clean(script)!r} is not a batch script's path.")
    return f"sbatch --nodes={nodes} {_path(script)}"


def parse_submitted(text: str) -> str:
    """The job id in sbatch's ``Submitted batch job N`` (``… on cluster C`` too); ``SlurmError`` when absent."""
    m = _SUBMITTED.search(text)
    if m is None:
        said = clean(text.strip().splitlines()[-1] if text.strip() else "nothing")
        raise SlurmError(f"sbatch did not say which job it submitted (it said: {said[:120]}).")
    return m.group(1)


async def submit(runner: Runner, script: str = STARTER_SBATCH, nodes: int = 1) -> str:
    """Submit the batch script; its job id. ``CommandFailed`` carries sbatch's refusal."""
    res = await run_noted(
        runner,
        submit_command(script, nodes),
        f"submit {script} ({nodes} node{'s' if nodes != 1 else ''})",
        timeout=120.0,
    )
    return parse_submitted(res.stdout)


# ---- the queue --------------------------------------------------------------------------------------


def jobs_command(*, me: bool = True, ids: list[str] | None = None, as_json: bool = True) -> str:
    """``squeue [--me] [-j ID,…] --json`` or ``squeue … -h -o FORMAT``."""
    words = ["squeue"] + (["--me"] if me else [])
    if ids:
        words += ["-j", ",".join(map(_check_id, ids))]
    words += ["--json"] if as_json else ["-h", "-o", FORMAT]
    return " ".join(map(_q, words))


def elapsed_text(seconds: float) -> str:
    """Seconds as squeue writes a time: ``M:SS``, ``H:MM:SS``, ``D-HH:MM:SS``."""
    s = max(0, int(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _value(v: Any) -> Any:
    """A field of squeue's JSON in any of its versions: 23.02+ wraps numbers as {set, infinite, number} and
    states as lists."""
    if isinstance(v, dict) and "number" in v:
        return v["number"] if v.get("set", True) and not v.get("infinite", False) else None
    if isinstance(v, list):
        return v[0] if v else ""
    return v


def parse_json(text: str, now: float | None = None) -> list[SlurmJob]:
    """``squeue --json`` → jobs. ``now``: the time ``elapsed`` is counted to for a running job (this
    machine's clock unless given). ``SlurmError`` when it is not squeue's JSON."""
    try:
        doc = json.loads(text)
        raw = doc["jobs"]
        if not isinstance(raw, list):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise SlurmError("squeue --json answered something that is not squeue's JSON.") from None
    now = time.time() if now is None else now
    out = []
    for j in raw:
        if not isinstance(j, dict) or _value(j.get("job_id")) is None:
            continue
        state = str(_value(j.get("job_state")) or "")
        start = _value(j.get("start_time"))
        started = isinstance(start, (int, float)) and start > 0 and state not in ("PENDING", "")
        secs = 0.0
        end = _value(j.get("end_time"))
        ended = state not in ACTIVE and state != "" and isinstance(end, (int, float)) and end > 0
        if started:
            stop = end if ended else now
            secs = stop - float(start)
        out.append(
            SlurmJob(
                id=str(_value(j["job_id"])),
                name=str(_value(j.get("name")) or ""),
                state=state,
                reason=str(_value(j.get("state_reason")) or ""),
                elapsed=elapsed_text(secs),
                nodes=int(_value(j.get("node_count")) or 0),
                nodelist=str(_value(j.get("nodes")) or ""),
                user=str(_value(j.get("user_name")) or ""),
                workdir=str(_value(j.get("current_working_directory")) or ""),
                stdout=str(_value(j.get("standard_output")) or ""),
                start=float(start) if started else None,
                end=float(end) if ended else None,
            )
        )
    return out


def parse_format(text: str) -> list[SlurmJob]:
    """``squeue -h -o FORMAT`` lines → jobs (a line that does not read as one is skipped)."""
    out = []
    for line in text.splitlines():
        parts = line.split("|", 8)
        if len(parts) != 9 or not _JOB_ID.fullmatch(parts[0].strip()):
            continue
        jid, state, reason, elapsed, nodes, nodelist, user, workdir, name = (p.strip() for p in parts)
        out.append(
            SlurmJob(
                id=jid,
                name=name,
                state=state,
                reason=reason,
                elapsed=elapsed or "0:00",
                nodes=int(nodes) if nodes.isdigit() else 0,
                nodelist="" if nodelist.startswith("(") else nodelist,
                user=user,
                workdir="" if workdir in ("(null)", "N/A") else workdir,
            )
        )
    return out


# Runners whose Slurm has no --json (asked once per runner).
_NO_JSON: weakref.WeakSet[Any] = weakref.WeakSet()


def _json_refused(e: CommandFailed) -> bool:
    said = e.stderr.lower()
    return any(w in said for w in ("unrecognized option", "invalid option", "unknown option", "not supported"))


async def jobs(
    runner: Runner,
    *,
    me: bool = True,
    ids: list[str] | None = None,
    now: float | None = None,
    finished: bool = False,
) -> list[SlurmJob]:
    """The jobs ``squeue`` lists (the human's own with ``me``; only ``ids`` when given), oldest first.
    ``--json`` where this Slurm has it (``now``: see ``parse_json``), else the ``-o`` line. Like squeue's
    own listing, only jobs still queued or running, unless ``finished``: then also the ended jobs Slurm still
    remembers (``--json`` lists them for a few minutes; the ``-o`` line never does)."""
    if runner not in _NO_JSON:
        try:
            res = await runner.run(jobs_command(me=me, ids=ids), check=True, timeout=60.0)
            found = [j for j in parse_json(res.stdout, now) if finished or j.active]
            if ids:
                found = [j for j in found if j.id in ids]
            return sorted(found, key=lambda j: int(j.id.split("_")[0]))
        except CommandFailed as e:
            if ids and "invalid job id" in e.stderr.lower():
                return []
            if not _json_refused(e):
                raise
        except SlurmError:
            pass
        _NO_JSON.add(runner)
    try:
        res = await runner.run(jobs_command(me=me, ids=ids, as_json=False), check=True, timeout=60.0)
    except CommandFailed as e:
        if ids and "invalid job id" in e.stderr.lower():
            return []  # squeue -j of a job it no longer knows
        raise
    return sorted(parse_format(res.stdout), key=lambda j: int(j.id.split("_")[0]))


async def job(runner: Runner, job_id: str | int, *, now: float | None = None) -> SlurmJob | None:
    """One job as squeue lists it, ended or not while Slurm remembers it (None: Slurm no longer lists it)."""
    jid = _check_id(job_id)
    found = [j for j in await jobs(runner, me=False, ids=[jid], now=now, finished=True) if j.id == jid]
    return found[0] if found else None


# What a PENDING job waits for, in plain words (squeue's reason → a sentence).
REASONS: Mapping[str, str] = {
    "None": "just submitted: the scheduler has not looked at it yet",
    "Resources": "waiting for nodes: the nodes it asks for are busy with other jobs, and it starts when they free up",
    "Priority": "waiting its turn: jobs ahead of it in the queue go first",
    "ReqNodeNotAvail": "a node it needs is not available (down, drained or reserved): it waits until it is back",
    "NodeDown": "a node it needs is down: it waits until the node is back",
    "BeginTime": "waiting for the start time it was given",
    "Dependency": "waiting for another job it depends on to finish",
    "DependencyNeverSatisfied": "it depends on a job that failed, so it will never start: cancel it",
    "JobHeldUser": "held by you: release it with scontrol release",
    "JobHeldAdmin": "held by the cluster's administrators",
    "PartitionDown": "its partition is down: it waits until the administrators bring it up",
    "PartitionInactive": "its partition is not accepting jobs to run now",
    "PartitionNodeLimit": "it asks for more nodes than its partition allows",
    "PartitionTimeLimit": "it asks for more time than its partition allows",
    "Reservation": "waiting for its reservation to start",
    "Licenses": "waiting for a license it needs",
    "BadConstraints": "no node matches what it asks for: cancel it and ask for less",
    "InvalidAccount": "its account is not valid here",
    "InvalidQOS": "its quality of service is not valid here",
    "launch failed requeued held": "its start failed and it was held: ask the administrators",
    "Cleaning": "waiting for a node to finish cleaning up after an earlier job",
    "Prolog": "its node is running the cluster's start-up script",
}
_LIMITS = re.compile(r"^(Assoc|QOS)\w*(Limit|Grp\w*|Max\w*)")
STATES: Mapping[str, str] = {
    "RUNNING": "running",
    "CONFIGURING": "starting on its nodes",
    "COMPLETING": "finishing",
    "COMPLETED": "finished",
    "CANCELLED": "cancelled",
    "FAILED": "failed",
    "TIMEOUT": "stopped at its time limit",
    "NODE_FAIL": "stopped: a node failed",
    "OUT_OF_MEMORY": "stopped: out of memory",
    "PREEMPTED": "preempted by another job",
    "SUSPENDED": "suspended",
    "REQUEUED": "requeued",
}


def explain(job: SlurmJob) -> str:
    """The job's state in plain words: a PENDING reason explained, where a running job runs and for how long."""
    reason = clean(job.reason)
    if job.pending:
        said = REASONS.get(job.reason)
        if said is None and _LIMITS.match(job.reason):
            said = f"held by a limit of your account or its quality of service ({reason}): it starts when it allows"
        return f"Pending: {said or 'Slurm says ' + (reason or 'nothing')}."
    what = STATES.get(job.state, clean(job.state).lower() or "in an unknown state")
    if job.state in ("RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED"):
        where = f" on {clean(job.nodelist)}" if job.nodelist else ""
        return f"{what.capitalize()}{where} for {clean(job.elapsed)}."
    tail = f" ({reason})" if reason and reason != "None" else ""
    return f"{what.capitalize()}{tail}."


def cancel_command(job_id: str | int) -> str:
    return f"scancel {_check_id(job_id)}"


async def cancel(runner: Runner, job_id: str | int) -> Result:
    """``scancel ID``: the job leaves the queue (a running one is stopped). ``CommandFailed`` when refused."""
    return await run_noted(runner, cancel_command(job_id), f"cancel Slurm job {job_id}", timeout=60.0)


# ---- the job's log ----------------------------------------------------------------------------------


def _expand(pattern: str, job: SlurmJob) -> str:
    """Slurm's filename pattern (``%j``, ``%x``, ``%u``, ``%N``, ``%%``; ``%A``/``%a`` of an array) for a job."""
    base, _, task = job.id.partition("_")
    subs = {"j": job.id if not task else base, "J": job.id, "x": job.name, "u": job.user, "A": base, "a": task}
    subs |= {"N": job.nodelist.split(",")[0], "n": "0", "s": "batch", "t": "0", "%": "%"}
    return re.sub(r"%(?:\d*)([jJxuAaNnst%])", lambda m: subs.get(m.group(1), m.group(0)), pattern)


def output_path(job: SlurmJob) -> str:
    """Where the job writes its log: the ``--output`` Slurm reported, in the folder it was submitted from
    when relative; else the starter's ``nanogpt-<id>.out`` there (or in the home folder)."""
    path = _expand(job.stdout, job) if job.stdout else f"nanogpt-{job.id}.out"
    if path.startswith(("/", "~/")):
        return path
    return f"{job.workdir.rstrip('/')}/{path}" if job.workdir else path


def parse_show_job(text: str) -> dict[str, str]:
    """``scontrol show job ID`` → its ``Key=Value`` fields (a value runs to the next `` Key=``)."""
    fields: dict[str, str] = {}
    for m in re.finditer(r"(?:^|\s)([A-Za-z][\w/:]*)=(.*?)(?=\s+[A-Za-z][\w/:]*=|\s*$)", text, re.M):
        fields.setdefault(m.group(1), m.group(2).strip())
    return fields


async def show_job(runner: Runner, job_id: str | int) -> dict[str, str]:
    """``scontrol show job ID``'s fields ({} when Slurm no longer knows the job)."""
    res = await runner.run(f"scontrol show job {_check_id(job_id)}", timeout=60.0)
    return parse_show_job(res.stdout) if res.ok else {}


async def find_output(runner: Runner, job: SlurmJob) -> str:
    """``output_path`` when squeue said where; else ``scontrol show job``'s ``StdOut`` (already expanded)."""
    if job.stdout:
        return output_path(job)
    out = (await show_job(runner, job.id)).get("StdOut", "")
    return out if out and out != "(null)" else output_path(job)


def output_follower(
    runner: Runner, path: str, *, poll: float | None = 0.5, **opts: Unpack[FollowOptions]
) -> FileFollower:
    """``tail -F`` of the job's log (``path`` from ``output_path``/``find_output``), resumed by line count
    after a dropped connection. ``await f.run()`` until ``f.stop()``; lines go to ``on_lines``."""
    return FileFollower(runner, path, poll=poll, **opts)


# ---- the sign in ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CertCheck:
    """Is the human signed in to the cluster: ``ok``; ``state`` one of valid, missing, expired, not-yet-valid;
    the certificate's ``path`` and ``valid_before`` (UTC) when there is one; ``message``: a sentence, the
    guide's two steps when not signed in."""

    ok: bool
    state: str
    message: str
    path: Path | None = None
    valid_before: datetime | None = None
    cluster: str = ""  # (a valid one: its sentence is said again at ``at(now)``)
    steps: str = ""
    ends: datetime | None = None  # when it ends by the clock ``at`` is given (None: ``valid_before``)

    def on_clock(self, judged: datetime, now: datetime) -> CertCheck:
        """This check (judged at ``judged``, the clock the certificate's dates are in) with its end on another
        clock whose time then was ``now``: the service's, which a box may run 60x from another start."""
        if self.valid_before is None:
            return self
        return replace(self, ends=now + (self.valid_before - judged))

    def at(self, now: datetime) -> CertCheck:
        """This check as of ``now`` (the service's clock, ticking): a valid certificate's time left counted down,
        and one whose end has passed by that clock said expired (until the next check reads it again)."""
        end = self.ends or self.valid_before
        if self.state != "valid" or end is None:
            return self
        if now >= end:
            return _expired(self.cluster, end, self.steps, self.path)
        return replace(self, message=_valid(self.cluster, end, now))


def _valid(cluster: str, before: datetime | None, now: datetime) -> str:
    left = "no end" if before is None else _left(before - now)
    until = "" if before is None else f" until {before.strftime('%H:%M UTC')}"
    return f"Signed in to {clean(cluster)}: certificate valid{until} ({left} left)."


def _expired(cluster: str, before: datetime, steps: str, path: Path | None) -> CertCheck:
    when = before.strftime("%Y-%m-%d %H:%M UTC")
    return CertCheck(False, "expired", f"Your certificate for {clean(cluster)} expired {when}. {steps}", path, before)


def setup_command(cluster: str, access_url: str = "https://access.nationalcompute.com") -> str:
    """The guide's setup script, run with the cluster's name."""
    return f"curl -fsSL {_q(access_url.rstrip('/') + '/setup.sh')} | sh -s -- {_q(cluster)}"


def signin_command(cluster: str, access_url: str = "https://access.nationalcompute.com") -> str:
    """The sign-in as one line, for the history: the setup script, then ``slurm-login``."""
    return f"{setup_command(cluster, access_url)} && slurm-login"


def signin_steps(cluster: str, access_url: str = "https://access.nationalcompute.com") -> str:
    """The guide's two steps, on the human's own machine: the setup script with the cluster name, then
    ``slurm-login`` (a certificate valid 24 hours)."""
    setup = setup_command(cluster, access_url)
    return (  # one step a line, the command on its own (a narrow column wraps it, never the steps into each other)
        f"Sign in to {clean(cluster)} on this machine:\n"
        f" 1. run the setup script with the cluster's name:\n    {setup}\n"
        " 2. run slurm-login (it refreshes your ssh certificate for 24 hours).\n"
        "ncui checks again by itself."
    )


_STAMP = r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)"


def _utc(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp).replace(tzinfo=timezone.utc)


def parse_keygen(text: str) -> tuple[bool, datetime | None, datetime | None] | None:
    """``ssh-keygen -L -f CERT`` run with ``TZ=UTC`` → (a user certificate, valid from, valid before; None
    for no bound), or None when it is not a certificate's listing."""
    kind = re.search(r"^\s*Type:\s*\S+ (user|host) certificate", text, re.M)
    valid = re.search(r"^\s*Valid:\s*(.+)$", text, re.M)
    if kind is None or valid is None:
        return None
    v = valid.group(1).strip()
    after = before = None
    if m := re.fullmatch(rf"from {_STAMP} to (?:{_STAMP}|forever)", v):
        after, before = _utc(m.group(1)), _utc(m.group(2)) if m.group(2) else None
    elif m := re.fullmatch(rf"before {_STAMP}", v):
        before = _utc(m.group(1))
    elif m := re.fullmatch(rf"after {_STAMP}", v):
        after = _utc(m.group(1))
    elif v != "forever":
        return None
    return kind.group(1) == "user", after, before


async def _output(*argv: str, env: Mapping[str, str] | None = None) -> str | None:
    """A local program's stdout (None when it is missing or fails)."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
        )
    except OSError:
        return None
    try:
        out, _ = await within(proc.communicate(), 15)
    except (asyncio.TimeoutError, TimeoutError):
        await _reap(proc)
        return None
    except asyncio.CancelledError:  # the app quit mid-check: ended, reaped and its pipes closed now, never left
        await _reap(proc)  # to the collector after the loop closed ("Event loop is closed" in a __del__)
        raise
    return out.decode("utf-8", "replace") if proc.returncode == 0 else None


async def _reap(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.kill()
    try:
        await within(asyncio.shield(proc.wait()), 5)
    except (asyncio.TimeoutError, TimeoutError, asyncio.CancelledError):
        pass
    finally:
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()


async def certificate_files(host: str, ssh_config: Path | None = None) -> list[Path]:
    """The certificates OpenSSH would offer to ``host``: its CertificateFile lines, then ``<IdentityFile>-cert.pub``
    for each identity (``ssh -G``; the default identities when ``ssh`` is not here). Those that exist."""
    if host.startswith("-"):
        return []
    cfg = ["-F", str(ssh_config)] if ssh_config is not None else []
    text = await _output("ssh", "-G", *cfg, host) or ""
    certs, idents = [], []
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "certificatefile":
            certs.append(value)
        elif key == "identityfile":
            idents.append(value)
    if not text:
        idents = [f"~/.ssh/id_{k}" for k in ("rsa", "ecdsa", "ecdsa_sk", "ed25519", "ed25519_sk")]
    seen, out = set(), []
    for p in [*certs, *(f"{i}-cert.pub" for i in idents)]:
        path = Path(os.path.expanduser(p))
        if path not in seen and path.is_file():
            seen.add(path)
            out.append(path)
    return out


async def check_certificate(
    cluster: str,
    *,
    host: str | None = None,
    ssh_config: Path | None = None,
    access_url: str = "https://access.nationalcompute.com",
    now: datetime | None = None,
) -> CertCheck:
    """Whether the human holds a user certificate for the cluster's login node (``host``: its ssh name,
    the cluster's name by default) that is valid ``now``; the best one found wins."""
    now = now or datetime.now(timezone.utc)
    steps = signin_steps(cluster, access_url)
    best: CertCheck | None = None
    for path in await certificate_files(host or cluster, ssh_config):
        text = await _output("ssh-keygen", "-L", "-f", str(path), env={"TZ": "UTC"})
        info = parse_keygen(text or "")
        if info is None or not info[0]:
            continue
        _, after, before = info
        if after is not None and now < after:
            check = CertCheck(False, "not-yet-valid", f"Your certificate is not valid yet. {steps}", path, before)
        elif before is not None and now >= before:
            check = _expired(cluster, before, steps, path)
        else:
            check = CertCheck(True, "valid", _valid(cluster, before, now), path, before, cluster, steps)
        if best is None or _rank(check) > _rank(best):
            best = check
    if best is None:
        return CertCheck(False, "missing", f"There is no ssh certificate for {clean(cluster)} here yet. {steps}")
    return best


def _rank(c: CertCheck) -> tuple[bool, float]:
    return c.ok, c.valid_before.timestamp() if c.valid_before else float("inf")


def _left(delta: timedelta) -> str:
    mins = max(0, int(delta.total_seconds() // 60))
    h, m = divmod(mins, 60)
    return f"{h} h {m:02d} min" if h else f"{m} min"
