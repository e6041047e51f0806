"""A simulated Slurm login node: the guide's four commands (``prepare.sh``, ``sbatch``, ``squeue``, ``tail -F``)
and the rest a first job needs (``scancel``, ``scontrol show job``, ``sinfo``), on the box's clock.

``SlurmQueue`` is the cluster seen from its login node: a ``gpu`` partition of four 8-GPU nodes, two of them
busy with other users' long jobs, and the jobs submitted here. A job waits (``PENDING``, reason ``Priority``
then ``Resources``) a seeded minute or few, runs (``RUNNING``) and ends ``COMPLETED`` (``FAILED`` when the
script is not the catalog's ``nanogpt.sbatch``, or a command given to ``sbatch --wrap``: the box runs nothing
else; ``TIMEOUT`` at its time limit), or after ``scancel`` reads ``COMPLETING`` (``CG``) for a few seconds while
its processes stop, then ``CANCELLED`` (a pending one at once); ``scancel`` is silent about a job already ended
or forgotten, as Slurm's is. An ended job stays visible for ``MIN_JOB_AGE`` (Slurm's MinJobAge), then
``squeue -j`` says the id is invalid, as slurmctld does once it forgets a job.

The catalog's ``nanogpt.sbatch`` plays the same nanoGPT run as the clusters' pods (``profiles.nanogpt``) into
its ``--output`` file (``nanogpt-%j.out`` in the folder it was submitted from), through the node's container
machinery (``SimNode.sync`` writes the lines as the clock passes them). Texts and formats follow Slurm
22.05 (the version Debian 12 ships: what ../shared/TESTBED.md runs for real).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import cast

from ..catalog import file_bytes
from ..kube import profiles
from .node import COMMANDS, NOT_AVAILABLE, STOCK, Command, Container, NodeSpec, Shell, SimNode, Term

PARTITION = "gpu"
COMPUTE_NODES = 4
MIN_JOB_AGE = 300  # seconds an ended job stays in squeue's view
DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
SLURM_RELEASE = (22, 5, 8)
SBATCH = "nanogpt.sbatch"
COMPACT = {"PENDING": "PD", "RUNNING": "R", "COMPLETING": "CG", "COMPLETED": "CD", "CANCELLED": "CA", "FAILED": "F",
           "TIMEOUT": "TO"}  # fmt: skip
ACTIVE = ("PENDING", "RUNNING", "COMPLETING")  # what squeue shows without -t
COMPLETING_SECONDS = 5  # a cancelled running job reads COMPLETING (CG) while its processes stop, then CANCELLED
SIGTERM = 15  # what a job scancel stopped exits with (squeue --json's exit_code, scontrol's ExitCode=0:15)
WRAP_HEAD = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n"  # what sbatch makes of --wrap's command


def slurm_time(seconds: float) -> str:
    """Slurm's elapsed/limit form: M:SS, H:MM:SS, D-HH:MM:SS."""
    s = max(0, int(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    if d:
        return f"{d}-{h:02d}:{m:02d}:{s:02d}"
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def run_time(seconds: float) -> str:
    """scontrol's RunTime: always HH:MM:SS (D-HH:MM:SS past a day)."""
    d, s = divmod(max(0, int(seconds)), 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def parse_limit(text: str) -> int | None:
    """``--time``: minutes, M:S, H:M:S, D-H, D-H:M, D-H:M:S → seconds (None: not one of them)."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text.strip())
    if not m:
        return None
    d, a, b, c = (int(x) if x else None for x in m.groups())
    assert a is not None
    if d is not None:  # D-H[:M[:S]]
        return ((d * 24 + a) * 60 + (b or 0)) * 60 + (c or 0)
    if c is not None:
        return (a * 60 + (b or 0)) * 60 + c
    return a * 60 + b if b is not None else a * 60


def _iso(at: datetime | None) -> str:
    return "Unknown" if at is None else at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def _epoch(at: datetime | None) -> int:
    return 0 if at is None else int(at.timestamp())


@dataclass
class SlurmJob:
    id: int
    name: str
    user: str
    script: str  # the path as given to sbatch, resolved on the node ("" for a job of sbatch --wrap)
    workdir: PurePosixPath
    stdout: str  # the --output pattern, absolute (unexpanded, as Slurm keeps it)
    nodes: int
    time_limit: int  # seconds
    submitted: datetime
    priority_until: datetime  # reason Priority until then, Resources after
    start: datetime
    node: str
    plan: profiles.Plan
    lead: float = 0.0  # the plan's own lead-in before the job's first line (the pods' image pull), skipped here
    cancelled: datetime | None = None
    run: Container | None = None  # its output playing into ``stdout`` once it starts
    stdout_given: bool = True  # --output was given (else squeue --json's standard_output is "", as Slurm's)

    def ran(self) -> bool:
        """False for a job cancelled before it started: it never ran (no COMPLETING, no signal)."""
        return self.cancelled is None or self.cancelled >= self.start

    def natural_end(self) -> datetime:
        end = self.plan.end() or 0.0
        return min(self.start + timedelta(seconds=end - self.lead), self.start + timedelta(seconds=self.time_limit))

    def end(self, now: datetime) -> datetime | None:
        if self.cancelled is not None and self.cancelled <= now:
            return self.cancelled  # (a pending job cancelled: Slurm sets its start and end to then)
        e = self.natural_end()
        return e if e <= now else None

    def started(self, now: datetime) -> datetime | None:
        """When it started (None while PENDING); a pending job cancelled "started" when it was cancelled."""
        if not self.ran():
            return self.cancelled if self.cancelled is not None and self.cancelled <= now else None
        return self.start if now >= self.start else None

    def state(self, now: datetime) -> str:
        if self.cancelled is not None and self.cancelled <= now:
            completing = self.ran() and now < self.cancelled + timedelta(seconds=COMPLETING_SECONDS)
            return "COMPLETING" if completing else "CANCELLED"
        if now < self.start:
            return "PENDING"
        if now < self.natural_end():
            return "RUNNING"
        if self.start + timedelta(seconds=self.time_limit) <= self.natural_end():
            return "TIMEOUT"
        return "COMPLETED" if self.plan.exit_code == 0 else "FAILED"

    def reason(self, now: datetime) -> str:
        if self.state(now) != "PENDING":
            return "None"
        return "Priority" if now < self.priority_until else "Resources"

    def elapsed(self, now: datetime) -> float:
        if now < self.start or (self.cancelled is not None and self.cancelled < self.start):
            return 0.0
        return ((self.end(now) or now) - self.start).total_seconds()

    def nodelist(self, now: datetime) -> str:
        ran = now >= self.start and not (self.cancelled is not None and self.cancelled < self.start)
        return self.node if ran else ""

    def out_path(self) -> str:
        return expand(self.stdout, self)

    def gone(self, now: datetime) -> bool:
        """Forgotten by slurmctld (ended more than MIN_JOB_AGE ago)."""
        state = self.state(now)
        if state in ACTIVE:
            return False
        ended = self.cancelled if state == "CANCELLED" else self.natural_end()
        return ended is not None and (now - ended).total_seconds() > MIN_JOB_AGE

    def expected_end(self, now: datetime) -> datetime | None:
        """When it ended, or for a running job when its time limit ends it (what Slurm reports as EndTime)."""
        end = self.end(now)
        if end is None and self.state(now) == "RUNNING":
            end = self.start + timedelta(seconds=self.time_limit)
        return end

    def exit_status(self, now: datetime) -> tuple[int, int]:
        """(exit code, signal) as Slurm keeps them: a job scancel stopped while running was killed by SIGTERM."""
        state = self.state(now)
        if state in ("PENDING", "RUNNING", "COMPLETING", "COMPLETED") or (state == "CANCELLED" and not self.ran()):
            return 0, 0
        return (0, SIGTERM) if state == "CANCELLED" else (self.plan.exit_code, 0)

    def wait_status(self, now: datetime) -> int:
        """squeue --json's exit_code: the raw wait status (exit code 3: 768; killed by SIGTERM: 15)."""
        code, sig = self.exit_status(now)
        return code << 8 | sig


def expand(pattern: str, job: SlurmJob) -> str:
    """sbatch's filename pattern: %j job id, %x job name, %u user, %N node, %% a percent sign."""
    subs = {"j": str(job.id), "x": job.name, "u": job.user, "N": job.node, "A": str(job.id), "a": "4294967294"}
    return re.sub(r"%(%|[jxuNAa])", lambda m: "%" if m.group(1) == "%" else subs[m.group(1)], pattern)


class SlurmQueue:
    """The cluster's jobs, seen from its login node (only this login node submits to it)."""

    def __init__(self, cluster: str, node: SimNode) -> None:
        self.cluster, self.node = cluster, node
        self.compute = [f"{cluster}-gpu-{i:03d}" for i in range(1, COMPUTE_NODES + 1)]
        seed = node.spec.seed
        self._next = 4821 + int(hashlib.sha256(f"slurm:{seed}:{cluster}".encode()).hexdigest()[:4], 16) % 1000
        t0 = node.now()
        self.jobs: dict[int, SlurmJob] = {}
        for i, (user, name, hours) in enumerate((("ben", "llama-sft", 31.0), ("ivy", "diff-xl", 47.5))):
            jid, self._next = self._next, self._next + 1
            began = t0 - timedelta(hours=hours / 3)
            plan = profiles.Plan([(0, "running"), (hours * 3600, "succeeded")])
            self.jobs[jid] = SlurmJob(jid, name, user, f"/home/{user}/{name}.sbatch", PurePosixPath(f"/home/{user}"),
                                      f"/home/{user}/slurm-%j.out", 1, 2 * 86400, began, began, began,
                                      self.compute[i], plan)  # fmt: skip

    def now(self) -> datetime:
        return self.node.now()

    def visible(self) -> list[SlurmJob]:
        now = self.now()
        return [j for j in self.jobs.values() if not j.gone(now)]

    def submit(
        self, user: str, script: PurePosixPath | None, text: bytes, workdir: PurePosixPath, opts: dict[str, str]
    ) -> SlurmJob:
        """A job of the batch script ``script`` (None: the script sbatch --wrap made of a command, ``text``)."""
        jid, self._next = self._next, self._next + 1
        now = self.now()
        r = random.Random(f"sbatch:{self.node.spec.seed}:{self.cluster}:{jid}")
        wait = r.uniform(60, 240)  # seconds PENDING; the first part behind higher-priority jobs
        start = now + timedelta(seconds=round(wait))
        mine = sum(1 for j in self.jobs.values() if j.user == user)
        node = self.compute[2 + mine % (COMPUTE_NODES - 2)]
        name = opts.get("job-name") or (script.name if script is not None else "wrap")
        limit = parse_limit(opts["time"]) if "time" in opts else 3600
        out = opts.get("output") or "slurm-%j.out"
        out = str(workdir / out) if not out.startswith("/") else out
        nanogpt = text == (file_bytes(SBATCH) or b"\0")
        image = STOCK.get(self.node.spec.gpu_vendor, "")
        lead = 0.0
        if nanogpt:
            ctx = self.node.context(f"slurm-{jid}", image, ["bash", SBATCH], {}, gpus=8)
            plan = profiles.nanogpt(ctx)
            lead = plan.offset_of("running") or 0.0  # no image pull here: the job prints at once
            first = [
                (lead + 0.5, f"nanogpt: 8 GPUs on {node}, job {jid}"),
                (lead + 1.0, f"nanogpt: running in {image}"),
            ]
            plan = replace(plan, logs={"main": first + plan.logs.get("main", [])})
        else:
            what = script if script is not None else "the command given to --wrap"
            text_line = (
                f"slurm (National Compute in a box): this simulated cluster runs the catalog's {SBATCH} only; "
                f"{what} was not run"
            )
            plan = profiles.Plan([(0, "running"), (5, "failed")], 1, {"main": [(1.0, text_line)]})
        job = SlurmJob(jid, name, user, "" if script is None else str(script), workdir, out,
                       int(opts.get("nodes", "1")), limit or 3600, now, now + timedelta(seconds=round(wait * 0.4)),
                       start, node, plan, lead, stdout_given="output" in opts)  # fmt: skip
        self.jobs[jid] = job
        return job

    def sync(self) -> None:
        """Start the output of jobs whose start the clock passed (SimNode.sync then writes their lines)."""
        now = self.now()
        for j in self.jobs.values():
            if j.run is not None or j.start > now or j.user != self.node.spec.user:
                continue
            if j.cancelled is not None and j.cancelled < j.start:
                continue
            out = self.node.local(PurePosixPath(j.out_path()))
            if not self.node.inside(out.parent):
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            out.touch()
            started = j.start - timedelta(seconds=j.lead)
            workdir = self.node.local((PurePosixPath(j.script).parent if j.script else j.workdir) / "nanoGPT")
            c = Container(f"slurm-{j.id}", f"slurm-{j.id}", "", ["sbatch", j.script], started, j.plan, rm=True,
                          out=out, workdir=workdir, stop_at=j.cancelled)  # fmt: skip
            if j.start + timedelta(seconds=j.time_limit) < (c.ends() or now):
                c.stop_at = j.start + timedelta(seconds=j.time_limit)
            j.run = c
            self.node.containers[c.name] = c

    def cancel(self, job: SlurmJob) -> None:
        now = self.now()
        self.node.sync()  # what it wrote until now stays in its file
        job.cancelled = now
        if job.run is not None:
            job.run.stop_at = now


class LoginNode(SimNode):
    """The cluster's login node: its users' disks (only the human's home here) and the Slurm queue."""

    def __init__(self, spec: NodeSpec, root: Path, now, cluster: str) -> None:
        super().__init__(spec, root, now)
        self.docker = False
        self.queue = SlurmQueue(cluster, self)

    def sync(self) -> None:
        self.queue.sync()
        super().sync()


# ---- the commands -------------------------------------------------------------------------------


def _opts(args: list[str], spec: dict[str, str], flags: dict[str, str], err, prog: str) -> tuple[dict, list] | None:
    """Slurm's getopt: ``--long=V``, ``--long V``, ``-xV``, ``-x V``; ``spec`` maps option → key (takes a value),
    ``flags`` option → key (no value). Stops at the first word that is not an option. None: an error was said."""
    out: dict[str, str] = {}
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        a = args[i]
        key, eq, val = a.partition("=") if a.startswith("--") else (a[:2], "", a[2:])
        if key in flags and not (eq or (val and not a.startswith("--"))):
            out[flags[key]] = "1"
        elif key in spec:
            if not eq and not val:
                i += 1
                if i >= len(args):
                    err(f"{prog}: option '{key}' requires an argument\nTry \"{prog} --help\" for more information\n")
                    return None
                val = args[i]
            out[spec[key]] = val
        else:
            err(f"{prog}: unrecognized option '{a}'\nTry \"{prog} --help\" for more information\n")
            return None
        i += 1
    return out, args[i:]


SBATCH_VALUES = {
    "-N": "nodes", "--nodes": "nodes", "-J": "job-name", "--job-name": "job-name", "-o": "output",
    "--output": "output", "-e": "error", "--error": "error", "-t": "time", "--time": "time", "-p": "partition",
    "--partition": "partition", "--gpus-per-node": "gpus-per-node", "-G": "gpus", "--gpus": "gpus",
    "--ntasks-per-node": "ntasks-per-node", "-n": "ntasks", "--ntasks": "ntasks", "-c": "cpus-per-task",
    "--cpus-per-task": "cpus-per-task", "-D": "chdir", "--chdir": "chdir", "--mem": "mem", "-A": "account",
    "--account": "account", "-q": "qos", "--qos": "qos", "--mail-type": "mail-type", "--mail-user": "mail-user",
    "--wrap": "wrap",
}  # fmt: skip
SBATCH_FLAGS = {"--exclusive": "exclusive", "--parsable": "parsable", "-Q": "quiet", "--quiet": "quiet",
                "--requeue": "requeue", "--no-requeue": "no-requeue"}  # fmt: skip
SQUEUE_VALUES = {"-o": "format", "--format": "format", "-j": "jobs", "--jobs": "jobs", "-u": "user", "--user": "user",
                 "-t": "states", "--states": "states", "-p": "partition", "--partition": "partition", "-n": "name",
                 "--name": "name", "-w": "nodelist", "--nodelist": "nodelist"}  # fmt: skip
SQUEUE_FLAGS = {"--me": "me", "-h": "noheader", "--noheader": "noheader", "--json": "json", "-a": "all", "--all": "all",
                "-l": "long", "--long": "long"}  # fmt: skip
HEADERS = {
    "i": "JOBID", "j": "NAME", "T": "STATE", "t": "ST", "M": "TIME", "D": "NODES", "R": "NODELIST(REASON)",
    "N": "NODELIST", "u": "USER", "P": "PARTITION", "l": "TIME_LIMIT", "S": "START_TIME", "V": "SUBMIT_TIME",
    "r": "REASON", "Z": "WORK_DIR", "o": "COMMAND", "e": "END_TIME", "C": "CPUS", "b": "TRES_PER_NODE",
}  # fmt: skip
STATE_NAMES = {v: k for k, v in COMPACT.items()}


class LoginShell(Shell):
    """A session on the login node: the node's shell without docker or GPUs, plus Slurm's commands."""

    node: LoginNode

    def welcome(self) -> str:
        return (
            f"Welcome to {self.node.spec.name}, the login node of {self.node.queue.cluster} (a simulated Slurm "
            "cluster, National Compute in a box).\nCommands: sbatch, squeue, scancel, scontrol show job, sinfo, "
            "curl … | sh, tail, cat, ls, echo, exit.\n"
        )

    @property
    def queue(self) -> SlurmQueue:
        return self.node.queue

    def _prepare(self, term: Term) -> int:
        """What the catalog's prepare.sh does on a login node: ~/first-job with nanoGPT and nanogpt.sbatch."""
        node = self.node
        d = node.home / "first-job"
        nano = node.local(d / "nanoGPT")
        if (nano / "train.py").is_file():
            term.out(f"prepare: nanoGPT is already in {d}/nanoGPT\n")
        else:
            term.out(f"prepare: fetching nanoGPT into {d}/nanoGPT\n")
            (nano / "data" / "shakespeare_char").mkdir(parents=True, exist_ok=True)
            (nano / "train.py").write_text("# nanoGPT's train.py (karpathy/nanoGPT@master), as the box plays it\n")
            (nano / "README.md").write_text(
                "nanoGPT (karpathy/nanoGPT@master), as National Compute in a box plays it.\n"
            )
        text = nano / "data" / "shakespeare_char" / "input.txt"
        if not text.is_file():
            term.out("prepare: fetching the Shakespeare text\n")
            text.write_text("First Citizen:\nBefore we proceed any further, hear me speak.\n")
        term.out(f"prepare: writing {d}/{SBATCH}\n")
        node.local(d / SBATCH).write_bytes(file_bytes(SBATCH) or b"")
        term.out(
            "prepare: ready. Submit, then follow the log (it lands in the directory you submit from):\n"
            f"  sbatch --nodes=1 {d}/{SBATCH}\n  squeue --me\n  tail -F nanogpt-<jobid>.out\n"
        )
        return 0

    async def _sbatch(self, args: list[str], term: Term) -> int:
        parsed = _opts(args, SBATCH_VALUES, SBATCH_FLAGS, term.err, "sbatch")
        if parsed is None:
            return 1
        cli, rest = parsed
        path: PurePosixPath | None = None
        if "wrap" in cli:  # the command becomes the script, as sbatch writes it
            if rest:
                term.err("sbatch: error: Script arguments not permitted with --wrap option\n")
                return 1
            text = (WRAP_HEAD + cli["wrap"] + "\n").encode()
        elif not rest:
            term.err("sbatch: error: Batch script is empty!\n")  # what sbatch says with no script and no stdin
            return 1
        else:
            path = self._path(rest[0])
            p = self.node.local(path)
            if not p.is_file() or not self.node.inside(p):
                term.err(f"sbatch: error: Unable to open file {rest[0]}\n")
                return 1
            text = p.read_bytes()
        opts: dict[str, str] = {}
        for line in text.decode("utf-8", "replace").splitlines()[1:]:  # #SBATCH lines until the first command
            if line.strip() and not line.startswith("#"):
                break
            if line.startswith("#SBATCH"):
                got = _opts(line[7:].split(), SBATCH_VALUES, SBATCH_FLAGS, lambda _s: None, "sbatch")
                if got is not None:
                    opts.update(got[0])
        opts.update(cli)  # the command line wins over the script's lines
        if not text.startswith(b"#!"):
            term.err(
                "sbatch: error: This does not look like a batch script.  The first\nsbatch: error: line must start "
                "with #! followed by the path to an interpreter.\nsbatch: error: For instance: #!/bin/sh\n"
            )
            return 1
        if "time" in opts and not parse_limit(opts["time"]):
            term.err("sbatch: error: Invalid --time specification\n")
            return 1
        nodes = opts.get("nodes", "1")
        if not nodes.isdigit() or not 1 <= int(nodes) <= COMPUTE_NODES or opts.get("partition", PARTITION) != PARTITION:
            term.err("sbatch: error: Batch job submission failed: Requested node configuration is not available\n")
            return 1
        workdir = self._path(opts["chdir"]) if "chdir" in opts else self.cwd
        job = self.queue.submit(self.node.spec.user, path, text, workdir, opts)
        term.out(f"{job.id}\n" if "parsable" in opts else f"Submitted batch job {job.id}\n")
        return 0

    def _select(self, opts: dict[str, str], term: Term) -> list[SlurmJob] | None:
        jobs = self.queue.visible()
        if "jobs" in opts:
            want = {x for x in re.split(r"[,\s]+", opts["jobs"]) if x}
            if not all(x.isdigit() for x in want):
                term.err(f"squeue: error: Invalid job id: {opts['jobs']}\n")
                return None
            jobs = [j for j in jobs if str(j.id) in want]
            if not jobs:
                term.err("slurm_load_jobs error: Invalid job id specified\n")
                return None
        if "me" in opts:
            jobs = [j for j in jobs if j.user == self.node.spec.user]
        if "user" in opts:
            jobs = [j for j in jobs if j.user in opts["user"].split(",")]
        if "name" in opts:
            jobs = [j for j in jobs if j.name in opts["name"].split(",")]
        if "partition" in opts:
            jobs = [j for j in jobs if PARTITION in opts["partition"].split(",")]
        return sorted(jobs, key=lambda j: j.id)

    async def _squeue(self, args: list[str], term: Term) -> int:
        parsed = _opts(args, SQUEUE_VALUES, SQUEUE_FLAGS, term.err, "squeue")
        if parsed is None:
            return 1
        opts, rest = parsed
        if rest:
            term.err(
                f"squeue: error: Unrecognized option: {rest[0]}\nUsage: squeue [-A account] [--clusters names] …\n"
            )
            return 1
        jobs = self._select(opts, term)
        if jobs is None:
            return 1
        now = self.queue.now()
        if "json" in opts:
            term.out(json.dumps(self._json(jobs, now), indent=2) + "\n")
            return 0
        states = opts.get("states", "")
        if states.lower() == "all":
            pass
        elif states:
            want = {STATE_NAMES.get(s.upper(), s.upper()) for s in states.split(",")}
            jobs = [j for j in jobs if j.state(now) in want]
        else:
            jobs = [j for j in jobs if j.state(now) in ACTIVE]
        fmt = opts.get("format", DEFAULT_FORMAT)
        fields = re.findall(r"%(\.?)(\d*)([a-zA-Z])|([^%]+)", fmt)
        rows = [] if "noheader" in opts else [self._row(fields, None, now)]
        rows += [self._row(fields, j, now) for j in jobs]
        term.out("".join(r + "\n" for r in rows))
        return 0

    def _row(self, fields: list[tuple[str, str, str, str]], job: SlurmJob | None, now: datetime) -> str:
        out = ""
        for right, width, letter, literal in fields:
            if literal:
                out += literal
                continue
            text = HEADERS.get(letter, letter.upper()) if job is None else self._field(letter, job, now)
            if width:
                n = int(width)
                text = text[:n].rjust(n) if right else text[:n].ljust(n)
            out += text
        return out.rstrip() if job is None else out

    def _field(self, letter: str, j: SlurmJob, now: datetime) -> str:
        state = j.state(now)
        if letter == "R":
            return f"({j.reason(now)})" if state == "PENDING" else j.nodelist(now)
        values = {
            "i": str(j.id), "j": j.name, "T": state, "t": COMPACT.get(state, state[:2]),
            "M": slurm_time(j.elapsed(now)), "D": str(j.nodes), "N": j.nodelist(now), "u": j.user, "P": PARTITION,
            "l": slurm_time(j.time_limit), "S": _iso(j.started(now)) if j.started(now) else "N/A",
            "V": _iso(j.submitted), "r": j.reason(now), "Z": str(j.workdir), "o": j.script or "(null)",
            "e": _iso(j.expected_end(now)) if j.expected_end(now) else "N/A", "C": "1",
            "b": "gres:gpu:8",
        }  # fmt: skip
        return values.get(letter, "")

    def _json(self, jobs: list[SlurmJob], now: datetime) -> dict:
        """``squeue --json`` as Slurm 22.05 prints it (data_parser v0.0.38), with the fields a client reads."""
        major, minor, micro = SLURM_RELEASE
        return {
            "meta": {
                "plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
                "Slurm": {"version": {"major": major, "micro": micro, "minor": minor}, "release": "22.05.8"},
            },
            "errors": [],
            "jobs": [
                {
                    "account": "",
                    "batch_flag": True,
                    "cluster": self.queue.cluster,
                    "command": j.script,
                    "current_working_directory": str(j.workdir),
                    "eligible_time": _epoch(j.submitted),
                    "end_time": _epoch(j.expected_end(now)),  # a running job's: start + time limit (22.05)
                    "exit_code": j.wait_status(now),
                    "job_id": j.id,
                    "job_state": j.state(now),
                    "name": j.name,
                    "node_count": j.nodes,
                    "nodes": j.nodelist(now),
                    "partition": PARTITION,
                    "standard_error": "",
                    "standard_input": "/dev/null",
                    "standard_output": j.stdout if j.stdout_given else "",  # (scontrol's StdOut has the default)
                    "start_time": _epoch(j.started(now)),
                    "state_reason": j.reason(now),
                    "submit_time": _epoch(j.submitted),
                    "time_limit": j.time_limit // 60,
                    "tres_per_node": "gres:gpu:8",
                    "user_name": j.user,
                }
                for j in jobs
            ],
        }

    async def _scancel(self, args: list[str], term: Term) -> int:
        values = {"-n": "name", "--name": "name", "-u": "user", "--user": "user", "-t": "state", "--state": "state"}
        parsed = _opts(args, values, {"--me": "me", "-f": "full", "--full": "full"}, term.err, "scancel")
        if parsed is None:
            return 1
        opts, ids = parsed
        me = self.node.spec.user
        if not ids and not ({"name", "user", "me", "state"} & set(opts)):
            term.err("scancel: error: No job identification provided\n")
            return 1
        status = 0
        jobs = self.queue.visible()
        targets: list[SlurmJob] = []
        for word in ids:
            if not word.isdigit():
                term.err(f"scancel: error: Invalid job id {word}\n")
                return 1
            job = self.queue.jobs.get(int(word))
            if job is not None and not job.gone(self.queue.now()):  # (an id slurmctld forgot: silent, as scancel is)
                targets.append(job)
        if not ids:  # filters pick jobs still pending or running only
            now = self.queue.now()
            targets = [j for j in jobs if j.user == (opts.get("user") or me) and j.state(now) in ("PENDING", "RUNNING")]
        if "name" in opts:
            targets = [j for j in targets if j.name == opts["name"]]
        if "state" in opts:
            targets = [
                j
                for j in targets
                if j.state(self.queue.now()) == STATE_NAMES.get(opts["state"].upper(), opts["state"].upper())
            ]
        for job in targets:
            now = self.queue.now()
            if job.user != me:
                term.err(f"scancel: error: Kill job error on job id {job.id}: Access/permission denied\n")
                status = 1
            elif job.state(now) in ("PENDING", "RUNNING"):  # one already completing or completed: silent, rc 0
                self.queue.cancel(job)
        return status

    async def _scontrol(self, args: list[str], term: Term) -> int:
        if args[:2] not in (["show", "job"], ["show", "jobs"], ["show", "jobid"]) or len(args) > 3:
            term.err("scontrol: this simulated login node answers scontrol show job [ID] only\n")
            return NOT_AVAILABLE
        jobs = self.queue.visible()
        if len(args) == 3:
            jobs = [j for j in jobs if str(j.id) == args[2]]
            if not jobs:
                term.err("slurm_load_jobs error: Invalid job id specified\n")
                return 1
        now = self.queue.now()
        for j in sorted(jobs, key=lambda x: x.id):
            state, end, started = j.state(now), j.expected_end(now), j.started(now)
            code, sig = j.exit_status(now)
            out = j.out_path()
            term.out(
                f"JobId={j.id} JobName={j.name}\n"
                f"   UserId={j.user}(1000) GroupId={j.user}(1000) MCS_label=N/A\n"
                f"   JobState={state} Reason={j.reason(now)} Dependency=(null)\n"
                f"   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode={code}:{sig}\n"
                f"   RunTime={run_time(j.elapsed(now))} TimeLimit={run_time(j.time_limit)}\n"
                f"   SubmitTime={_iso(j.submitted)} EligibleTime={_iso(j.submitted)}\n"
                f"   StartTime={_iso(started)} EndTime={_iso(end)}\n"
                f"   Partition={PARTITION} AllocNode:Sid={self.node.spec.name}:4242\n"
                f"   NodeList={j.nodelist(now) or '(null)'}\n"
                f"   NumNodes={j.nodes} NumCPUs=1 NumTasks=1 CPUs/Task=1\n"
                f"   Command={j.script or '(null)'}\n   WorkDir={j.workdir}\n"
                f"   StdErr={out}\n   StdIn=/dev/null\n   StdOut={out}\n   TresPerNode=gres:gpu:8\n\n"
            )
        return 0

    async def _sinfo(self, args: list[str], term: Term) -> int:
        if args:
            term.err("sinfo: this simulated login node answers plain sinfo only\n")
            return NOT_AVAILABLE
        now = self.queue.now()
        busy = {j.node for j in self.queue.jobs.values() if j.state(now) == "RUNNING"}
        rows = [
            ("alloc", [n for n in self.queue.compute if n in busy]),
            ("idle", [n for n in self.queue.compute if n not in busy]),
        ]
        term.out("PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n")
        for state, nodes in rows:
            if nodes:
                term.out(
                    f"{PARTITION + '*':<9} {'up':>5} {'2-00:00:00':>10} {len(nodes):>6} {state:>6} {_hostlist(nodes)}\n"
                )
        return 0


def _hostlist(nodes: list[str]) -> str:
    """Slurm's compressed host list: plover-gpu-[001-002,004]."""
    if len(nodes) == 1:
        return nodes[0]
    prefix = nodes[0].rsplit("-", 1)[0]
    nums = [int(n.rsplit("-", 1)[1]) for n in nodes]
    parts: list[str] = []
    start = prev = nums[0]
    for n in [*nums[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(f"{start:03d}" if start == prev else f"{start:03d}-{prev:03d}")
        if n is not None:
            start = prev = n
    return f"{prefix}-[{','.join(parts)}]"


LoginShell.commands = {
    **{k: v for k, v in COMMANDS.items() if k not in ("docker", "nvidia-smi")},
    "sbatch": cast(Command, LoginShell._sbatch),
    "squeue": cast(Command, LoginShell._squeue),
    "scancel": cast(Command, LoginShell._scancel),
    "scontrol": cast(Command, LoginShell._scontrol),
    "sinfo": cast(Command, LoginShell._sinfo),
}
LoginShell.scripts = {"prepare.sh": LoginShell._prepare}  # type: ignore[dict-item]
