"""A simulated GPU node behind an ssh session: a tiny command interpreter, never a command on the host.

``SimNode`` is one node's life: its scratch folder (the node's ``/``; the user's home is ``/home/<user>``
in it; SFTP serves it), its containers and the files they write, all driven by the box's clock. A
``Shell`` runs one session's command lines on it: ``nvidia-smi [-L]``, ``docker run/ps/logs/rm``,
``curl -fsSL <the box's starter> | sh``, ``tail [-F] [-n N]``, ``cat``, ``ls``, ``echo``, ``df -h`` and a
few more, in ``;``/``&&`` sequences. Anything else says "not available on this simulated node" (127).

The stock PyTorch image (the one the catalog's ``nanogpt-job*.yaml`` use) plays the box's nanoGPT run
(``profiles.nanogpt``, the same plan the Kubernetes pods play); any other image plays ``profiles.generic``
(it says the box does not run images and echoes the command), as the box's pods do.
"""

from __future__ import annotations

import asyncio
import fnmatch
import hashlib
import re
import shlex
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import ClassVar

from ..catalog import file_bytes
from ..kube import profiles

FOLLOW_EVERY = 0.1  # real seconds between looks at the clock while following
NOT_AVAILABLE = 127
STARTER = "nanogpt-node.sh"
TIME_BOX = 3600


def _stock_images() -> dict[str, str]:
    """vendor -> the stock PyTorch image, read off the catalog's Train recipe (one idea, one place)."""
    out = {}
    for name, vendor in (("nanogpt-job-nvidia.yaml", "nvidia"), ("nanogpt-job.yaml", "amd")):
        m = re.search(rb"^\s*image:\s*(\S+)", file_bytes(name) or b"", re.M)
        if m:
            out[vendor] = m.group(1).decode()
    return out


STOCK = _stock_images()
GPU_NAMES = {"H100-SXM-80GB": "NVIDIA H100 80GB HBM3", "MI300X": "AMD Instinct MI300X"}


def stamp(at: datetime) -> str:
    """Docker's ``--timestamps`` form: RFC 3339 with nanoseconds, in UTC."""
    return at.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


def parse_since(text: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", text.replace("Z", "+00:00")))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def _ago(seconds: float) -> str:
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s} seconds"
    if s < 3600:
        return "About a minute" if s < 120 else f"{s // 60} minutes"
    return "About an hour" if s < 7200 else f"{s // 3600} hours"


@dataclass
class NodeSpec:
    """What the box knows of a node at grant: who may log in and what hardware it plays."""

    name: str  # the allocation id, also the node's hostname
    ip: str
    user: str
    gpus: int
    gpu_model: str
    gpu_vendor: str
    seed: int
    fingerprints: frozenset[str]  # SHA256 fingerprints of the authorised keys (installed at grant)


@dataclass
class Container:
    id: str
    name: str
    image: str
    command: list[str]
    started: datetime
    plan: profiles.Plan
    rm: bool = False
    out: Path | None = None  # the run's output goes to this file (the starter), not to docker logs
    written: int = 0  # lines of the plan already in ``out``
    removed: bool = False
    workdir: Path | None = None  # where train.py runs (its checkpoints): ``out``'s folder/nanoGPT unless set
    stop_at: datetime | None = None  # stopped then (a Slurm job cancelled or out of time): nothing after it

    def ends(self) -> datetime | None:
        end = self.plan.end()
        at = None if end is None else self.started + timedelta(seconds=end)
        return self.stop_at if self.stop_at is not None and (at is None or self.stop_at < at) else at

    def running(self, now: datetime) -> bool:
        end = self.ends()
        return not self.removed and (end is None or now < end)

    def lines(self, until: datetime) -> list[tuple[datetime, str]]:
        out = []
        if self.stop_at is not None and self.stop_at < until:
            until = self.stop_at
        for off, text in self.plan.logs.get("main", []):
            at = self.started + timedelta(seconds=off)
            if at > until:
                break
            out.extend((at, part) for part in text.split("\n"))
        return out


class SimNode:
    """One granted node: its disk (a temp folder, deleted with it) and containers at the box's clock."""

    def __init__(self, spec: NodeSpec, root: Path, now: Callable[[], datetime]) -> None:
        self.spec, self.root, self.now = spec, root, now
        self.home = PurePosixPath("/home") / spec.user
        self.local(self.home).mkdir(parents=True, exist_ok=True)
        self.containers: dict[str, Container] = {}
        self._n = 0
        self.docker = True  # False: docker is "missing" on this node (a sim control), as the guide's starter checks

    # ---- the disk -----------------------------------------------------------------------------

    def local(self, path: PurePosixPath | str) -> Path:
        """The host path of a node path (absolute on the node); never outside the scratch folder."""
        parts = [p for p in PurePosixPath("/", path).parts[1:] if p not in ("", ".")]
        norm: list[str] = []
        for p in parts:
            if p == "..":
                if norm:
                    norm.pop()
            else:
                norm.append(p)
        return self.root.joinpath(*norm)

    def inside(self, p: Path) -> bool:
        try:
            return p.resolve().is_relative_to(self.root.resolve())
        except OSError:
            return False

    def destroy(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- containers ---------------------------------------------------------------------------

    def sync(self) -> None:
        """Write what the containers printed by now into the files they write (the starter's log)."""
        now = self.now()
        for c in self.containers.values():
            if c.out is None:
                continue
            lines = c.lines(now)
            new = lines[c.written :]
            if not new or not self.inside(c.out.parent):
                continue
            c.out.parent.mkdir(parents=True, exist_ok=True)
            with c.out.open("a", encoding="utf-8") as f:
                for _at, text in new:
                    f.write(text + "\n")
                    if text.startswith("saving checkpoint to "):
                        ck = (c.workdir or c.out.parent / "nanoGPT") / text.split()[-1] / "ckpt.pt"
                        ck.parent.mkdir(parents=True, exist_ok=True)
                        ck.write_text(f"simulated nanoGPT checkpoint (National Compute in a box), {_at}\n")
            c.written = len(lines)
            if not c.running(now) and c.rm:
                c.removed = True
        for name in [n for n, c in self.containers.items() if c.removed]:
            del self.containers[name]

    def context(self, name: str, image: str, command: list[str], env: dict[str, str], gpus: int | None = None):
        """What a run's plan is made from (``profiles``): seeded by the node, the run's name and its number."""
        self._n += 1
        return profiles.Context(
            seed=self.spec.seed,
            pod=f"{self.spec.name}/{name}/{self._n}",
            node=self.spec.name,
            gpus=self.spec.gpus if gpus is None else gpus,
            vendor=self.spec.gpu_vendor,
            gpu_model=self.spec.gpu_model,
            attempt=0,
            shared_at=lambda _flag: None,
            local=set(),
            warm=lambda _engine: False,
            env=env,
            image=image,
            command=command,
            defective=None,
            backend_ready_at=None,
        )

    def start_container(
        self, name: str | None, image: str, command: list[str], env: dict[str, str], rm: bool, out: Path | None
    ) -> Container:
        name = name or f"sim_{self._n + 1}"
        ctx = self.context(name, image, command, env)
        cid = hashlib.sha256(f"{self.spec.name}:{name}:{self._n}".encode()).hexdigest()
        stock = image in STOCK.values()
        plan = profiles.nanogpt(ctx) if stock else profiles.generic(ctx, ["main"])
        c = Container(cid, name, image, command, self.now(), plan, rm=rm, out=out)
        self.containers[name] = c
        return c


# ---- the shell ----------------------------------------------------------------------------------


@dataclass
class Term:
    """How a command talks to its session: ``out``/``err`` write text; ``stopped`` is set on Ctrl-C or close."""

    out: Callable[[str], None]
    err: Callable[[str], None]
    stopped: asyncio.Event = field(default_factory=asyncio.Event)
    drain: Callable[[], Awaitable[None]] | None = None


class Shell:
    """One session's interpreter: ``await shell.run(line, term)`` → exit status.

    ``commands`` (name → method) and ``scripts`` (a catalog file run by ``curl -fsSL <access>/first-job/<file> | sh``
    → method) are what this kind of host understands; a kind of host extends them (``slurm.LoginShell``).
    """

    commands: ClassVar[dict[str, Command]]
    scripts: ClassVar[dict[str, Callable[[Shell, Term], int]]]

    def __init__(self, node: SimNode) -> None:
        self.node = node
        self.cwd = node.home
        self.exited: int | None = None  # ``exit`` was run (interactive sessions end)
        self.last = 0  # the exit status of the last command run (sh's ``$?``), across the session's lines

    # ---- parsing ------------------------------------------------------------------------------

    def _expand(self, word: str) -> str:
        home = str(self.node.home)
        word = word.replace("${HOME}", home).replace("$HOME", home).replace("$USER", self.node.spec.user)
        word = word.replace("${?}", str(self.last)).replace("$?", str(self.last))
        if word == "~" or word.startswith("~/"):
            word = home + word[1:]
        return word

    def welcome(self) -> str:
        """What an interactive session (with a pty) prints first."""
        spec = self.node.spec
        return (
            f"Welcome to {spec.name}, a simulated {spec.gpu_model} node (National Compute in a box).\n"
            "Commands: nvidia-smi, docker run/ps/logs/rm, curl … | sh, tail, cat, ls, echo, df -h, exit.\n"
        )

    def _glob(self, word: str) -> list[str]:
        """sh's pathname expansion in one folder (``tail -F nanogpt-*.out``); no match leaves the word as is."""
        if not any(c in word for c in "*?["):
            return [word]
        folder, _, pat = word.rpartition("/")
        base = self.node.local(self._path(folder or "."))
        if not base.is_dir() or not self.node.inside(base):
            return [word]
        hits = sorted(e.name for e in base.iterdir() if fnmatch.fnmatchcase(e.name, pat) and not e.name.startswith("."))
        return [f"{folder}/{h}" if folder else h for h in hits] or [word]

    def _path(self, word: str) -> PurePosixPath:
        return PurePosixPath(self.cwd, word)  # an absolute word replaces cwd

    async def run(self, line: str, term: Term) -> int:
        try:
            lex = shlex.shlex(line, posix=True, punctuation_chars=";&|>")
            lex.whitespace_split = True
            lex.commenters = "#"
            tokens = list(lex)
        except ValueError as e:
            term.err(f"sh: syntax error: {e}\n")
            self.last = 2
            return 2
        status, op = 0, ";"
        chunk: list[str] = []
        for tok in [*tokens, ";"]:
            if tok not in (";", "&&", "||", "&", "|;"):
                chunk.append(tok)
                continue
            if tok == "&":
                term.err("sh: background jobs (&) are not available on this simulated node: use docker run -d\n")
                self.last = 2
                return 2
            if chunk and (op == ";" or (op == "&&" and status == 0) or (op == "||" and status != 0)):
                status = self.last = await self._pipeline(chunk, term)
                if self.exited is not None:
                    return self.exited
            chunk, op = [], tok
        return status

    async def _pipeline(self, words: list[str], term: Term) -> int:
        stages: list[list[str]] = [[]]
        for w in words:
            if w == "|":
                stages.append([])
            else:
                stages[-1].extend(self._glob(self._expand(w)))
        if any(not s for s in stages):
            term.err("sh: syntax error near '|'\n")
            return 2
        if len(stages) == 2 and stages[0][0] == "curl" and stages[1][0] in ("sh", "bash"):
            if stages[1][1:] == [">", "/dev/null"]:  # the script's chatter discarded
                term = Term(lambda _s: None, term.err, term.stopped, term.drain)
            return await self._curl(stages[0][1:], term, pipe_to_sh=True)
        if len(stages) > 1:  # simple filters over the whole output of the first command
            buf: list[str] = []
            for f in stages[1:]:
                if f[0] not in FILTERS:
                    term.err(f"{f[0]}: not available on this simulated node\n")
                    return NOT_AVAILABLE
            status = await self._simple(stages[0], Term(buf.append, term.err, term.stopped, term.drain))
            text = "".join(buf)
            for f in stages[1:]:
                text, status = FILTERS[f[0]](f[1:], text, term.err)
            term.out(text)
            return status
        return await self._simple(stages[0], term)

    async def _simple(self, argv: list[str], term: Term) -> int:
        """One command, with an optional ``> FILE`` or ``>> FILE`` at its end."""
        target, append = None, False
        for i, w in enumerate(argv):
            if w.startswith(">"):
                if w not in (">", ">>") or i != len(argv) - 2:
                    term.err(
                        f"sh: {w}: only '> FILE' and '>> FILE' redirections are available on this simulated node\n"
                    )
                    return 2
                argv, target, append = argv[:i], argv[i + 1], w == ">>"
                break
        fn = self.commands.get(argv[0]) if argv else None
        if fn is None:
            term.err(f"{argv[0] if argv else '>'}: not available on this simulated node\n")
            return NOT_AVAILABLE
        self.node.sync()
        if target is None:
            return await fn(self, argv[1:], term)
        if target == "/dev/null":
            return await fn(self, argv[1:], Term(lambda _s: None, term.err, term.stopped, term.drain))
        p = self.node.local(self._path(target))
        if not p.parent.is_dir() or not self.node.inside(p.parent) or p.is_dir():
            term.err(f"sh: cannot create {target}: No such file or directory\n")
            return 2
        buf: list[str] = []
        status = await fn(self, argv[1:], Term(buf.append, term.err, term.stopped, term.drain))
        with p.open("a" if append else "w", encoding="utf-8") as f:
            f.write("".join(buf))
        return status

    # ---- commands -----------------------------------------------------------------------------

    async def _echo(self, args: list[str], term: Term) -> int:
        nl = "\n"
        if args and args[0] == "-n":
            args, nl = args[1:], ""
        term.out(" ".join(args) + nl)
        return 0

    async def _true(self, args: list[str], term: Term) -> int:
        return 0

    async def _false(self, args: list[str], term: Term) -> int:
        return 1

    async def _exit(self, args: list[str], term: Term) -> int:
        try:
            self.exited = int(args[0]) & 255 if args else 0
        except ValueError:
            term.err(f"sh: exit: {args[0]}: numeric argument required\n")
            self.exited = 2
        return self.exited

    async def _pwd(self, args: list[str], term: Term) -> int:
        term.out(f"{self.cwd}\n")
        return 0

    async def _cd(self, args: list[str], term: Term) -> int:
        target = self._path(args[0]) if args else self.node.home
        if not self.node.local(target).is_dir():
            term.err(f"sh: cd: {args[0]}: No such file or directory\n")
            return 1
        self.cwd = PurePosixPath("/", *[p for p in self.node.local(target).relative_to(self.node.root).parts])
        return 0

    async def _clear(self, args: list[str], term: Term) -> int:
        term.out("\x1b[H\x1b[2J")
        return 0

    async def _whoami(self, args: list[str], term: Term) -> int:
        term.out(f"{self.node.spec.user}\n")
        return 0

    async def _hostname(self, args: list[str], term: Term) -> int:
        term.out(f"{self.node.spec.name}\n")
        return 0

    async def _df(self, args: list[str], term: Term) -> int:
        term.out(
            "Filesystem      Size  Used Avail Use% Mounted on\n"
            "/dev/nvme0n1p1  3.5T  412G  3.1T  12% /\n"
            "tmpfs           1.0T     0  1.0T   0% /dev/shm\n"
        )
        return 0

    async def _nvidia_smi(self, args: list[str], term: Term) -> int:
        spec = self.node.spec
        if spec.gpu_vendor != "nvidia":
            term.err("nvidia-smi: not available on this simulated node (its GPUs are not NVIDIA's)\n")
            return NOT_AVAILABLE
        name = GPU_NAMES.get(spec.gpu_model, f"NVIDIA {spec.gpu_model}")
        if args in (["-L"], ["--list-gpus"]):
            for i in range(spec.gpus):
                uuid = hashlib.sha256(f"{spec.name}:{i}".encode()).hexdigest()
                u = f"{uuid[:8]}-{uuid[8:12]}-{uuid[12:16]}-{uuid[16:20]}-{uuid[20:32]}"
                term.out(f"GPU {i}: {name} (UUID: GPU-{u})\n")
            return 0
        if args:
            term.err("nvidia-smi: this simulated node answers nvidia-smi and nvidia-smi -L only\n")
            return 2
        busy = any(c.running(self.node.now()) and c.image in STOCK.values() for c in self.node.containers.values())
        now = self.node.now().strftime("%a %b %d %H:%M:%S %Y")
        rows = [
            now,
            "+-----------------------------------------------------------------------------------------+",
            "| NVIDIA-SMI 550.127.05             Driver Version: 550.127.05     CUDA Version: 12.4     |",
            "|-----------------------------------------+------------------------+----------------------+",
            "| GPU  Name                               | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
            "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
            "|=========================================+========================+======================|",
        ]
        for i in range(spec.gpus):
            mem, util, pwr = ("31245MiB", "97%", "612W") if busy else ("1MiB", "0%", "71W")
            rows += [
                f"| {i:>3}  {name[:34]:<34} |   00000000:{0x18 + i * 0x10:02X}:00.0 Off |                    0 |",
                f"| N/A   {'61C' if busy else '32C'}    P0  {pwr:>14} /  700W | {mem:>10} /  81559MiB | "
                f"{util:>7}      Default |",
                "+-----------------------------------------+------------------------+----------------------+",
            ]
        term.out("\n".join(rows) + "\n")
        return 0

    async def _ls(self, args: list[str], term: Term) -> int:
        flags = "".join(a[1:] for a in args if a.startswith("-"))
        paths = [a for a in args if not a.startswith("-")] or ["."]
        status = 0
        for word in paths:
            p = self.node.local(self._path(word))
            if not p.exists() or not self.node.inside(p):
                term.err(f"ls: cannot access '{word}': No such file or directory\n")
                status = 2
                continue
            entries = sorted(p.iterdir(), key=lambda x: x.name) if p.is_dir() else [p]
            if "a" not in flags:
                entries = [e for e in entries if not e.name.startswith(".")]
            if len(paths) > 1 and p.is_dir():
                term.out(f"{word}:\n")
            for e in entries:
                label = e.name if p.is_dir() else word
                if "l" in flags:
                    st = e.stat()
                    mode = "drwxr-xr-x" if e.is_dir() else "-rw-r--r--"
                    when = datetime.fromtimestamp(st.st_mtime, timezone.utc).strftime("%b %d %H:%M")
                    u = self.node.spec.user
                    term.out(f"{mode} 1 {u} {u} {st.st_size:>8} {when} {label}\n")
                else:
                    term.out(label + "\n")
        return status

    async def _cat(self, args: list[str], term: Term) -> int:
        status = 0
        for word in args:
            p = self.node.local(self._path(word))
            if not p.is_file() or not self.node.inside(p):
                what = "Is a directory" if p.is_dir() else "No such file or directory"
                term.err(f"cat: {word}: {what}\n")
                status = 1
                continue
            term.out(p.read_text("utf-8", "replace"))
        return status

    async def _tail(self, args: list[str], term: Term) -> int:
        n, start, follow, files = 10, 0, False, []  # the last n lines, or from line ``start`` (-n +N) on
        it = iter(args)
        for a in it:
            if a in ("-F", "-f", "--follow", "--follow=name", "--retry"):
                follow = True
            elif a in ("-s", "--sleep-interval"):
                next(it, "")
            elif a in ("-n", "--lines") or re.fullmatch(r"-n\+?\d+|--lines=\+?\d+|-\d+", a):
                v = next(it, "") if a in ("-n", "--lines") else re.sub(r"^(-n|--lines=|-)", "", a)
                if not re.fullmatch(r"\+?\d+", v):
                    term.err(f"tail: invalid number of lines: '{v}'\n")
                    return 1
                n, start = (0, int(v[1:])) if v.startswith("+") else (int(v), 0)
            elif a.startswith("-") and a != "-":
                term.err(f"tail: option {a} is not available on this simulated node\n")
                return 1
            else:
                files.append(a)
        if len(files) != 1:
            term.err("tail: give one file (this simulated node follows one file at a time)\n")
            return 1
        p = self.node.local(self._path(files[0]))
        pos = 0
        if p.is_file() and self.node.inside(p):
            data = p.read_bytes()
            lines = data.splitlines(keepends=True)
            shown = lines[max(0, start - 1) :] if start else (lines[-n:] if n else [])
            term.out(b"".join(shown).decode("utf-8", "replace"))
            pos = len(data)
        else:
            term.err(f"tail: cannot open '{files[0]}' for reading: No such file or directory\n")
            if not follow:
                return 1
        while follow:
            if await self._wait(term):
                return 130
            self.node.sync()
            if not p.is_file():
                continue
            size = p.stat().st_size
            if size < pos:
                term.err(f"tail: {files[0]}: file truncated\n")
                pos = 0
            if size > pos:
                with p.open("rb") as f:
                    f.seek(pos)
                    chunk = f.read(size - pos)
                cut = chunk.rfind(b"\n") + 1  # whole lines only
                if cut:
                    term.out(chunk[:cut].decode("utf-8", "replace"))
                    pos += cut
        return 0

    async def _wait(self, term: Term) -> bool:
        """Sleep one follow interval; True when the session asked to stop."""
        if term.drain is not None:
            await term.drain()
        try:
            await asyncio.wait_for(term.stopped.wait(), FOLLOW_EVERY)
        except asyncio.TimeoutError:
            return False
        return True

    # ---- curl | sh ----------------------------------------------------------------------------

    async def _curl(self, args: list[str], term: Term, pipe_to_sh: bool = False) -> int:
        url, out_file = None, None
        it = iter(args)
        for a in it:
            if a in ("-o", "--output"):
                out_file = next(it, None)
            elif a in ("--retry", "-H", "--header", "--max-time", "-m"):
                next(it, None)
            elif a.startswith("-"):
                continue  # -f -s -S -L and friends: how it fetches does not matter here
            else:
                url = a
        if url is None:
            term.err("curl: no URL specified\n")
            return 2
        m = re.fullmatch(r"https?://[^/\s]+(?:/[^\s?#]*)?/first-job/([A-Za-z0-9._-]+)", url)
        data = file_bytes(m.group(1)) if m else None
        if data is None:
            term.err(
                f"curl: (6) the simulated node reaches only the box's recipe catalog (…/first-job/<file>), not {url}\n"
            )
            return 6 if m is None else 22
        if not pipe_to_sh:
            if out_file is None:
                term.out(data.decode("utf-8", "replace"))
                return 0
            p = self.node.local(self._path(out_file))
            if not self.node.inside(p.parent):
                term.err(f"curl: (23) Failure writing output to destination {out_file}\n")
                return 23
            p.write_bytes(data)
            return 0
        script = self.scripts.get(m.group(1)) if m else None
        if script is None:
            term.err(f"sh: this simulated host runs only the box's {', '.join(sorted(self.scripts))} with curl | sh\n")
            return NOT_AVAILABLE
        return script(self, term)

    def _starter(self, term: Term) -> int:
        """What nanogpt-node.sh does, in the node's terms: fetch under ~/first-job, docker run -d nanogpt."""
        node = self.node
        image = STOCK.get(node.spec.gpu_vendor)
        if not node.docker:  # the guide: "when docker is missing from the node it says so and stops"
            term.err(
                "nanogpt-node: docker is not installed on this node, so nothing was started. Install docker "
                "(with the GPU container runtime) or run the job another way.\n"
            )
            return 1
        if image is None or not node.spec.gpus:
            term.err("nanogpt-node: no NVIDIA or AMD GPU found on this node\n")
            return 1
        d = node.home / "first-job"
        old = node.containers.get("nanogpt")
        if old is not None and old.running(node.now()):
            term.out(
                f"nanogpt-node: a nanogpt container is already running: follow it with tail -F {d}/nanogpt.out, "
                "stop it with docker rm -f nanogpt\n"
            )
            return 0
        node.containers.pop("nanogpt", None)
        if not node.local(d / "nanoGPT").is_dir():
            term.out(f"nanogpt-node: fetching nanoGPT into {d}/nanoGPT\n")
            node.local(d / "nanoGPT").mkdir(parents=True, exist_ok=True)
            node.local(d / "nanoGPT" / "README.md").write_text(
                "nanoGPT (karpathy/nanoGPT@master), as National Compute in a box plays it.\n"
            )
        term.out(f"nanogpt-node: pulling {image} (the first start takes several minutes)\n")
        term.out(
            f"nanogpt-node: starting nanoGPT on {node.spec.gpus} GPUs in {image}, time-boxed to {TIME_BOX} seconds\n"
        )
        out = node.local(d / "nanogpt.out")
        out.write_text("")
        node.start_container("nanogpt", image, ["bash", "-c", "torchrun … train.py"], {}, False, out)
        term.out(
            f"nanogpt-node: started container nanogpt. Follow: tail -F {d}/nanogpt.out   "
            "Stop early: docker rm -f nanogpt\n"
        )
        return 0

    # ---- docker -------------------------------------------------------------------------------

    async def _docker(self, args: list[str], term: Term) -> int:
        if not self.node.docker:
            term.err("sh: 1: docker: not found\n")
            return NOT_AVAILABLE
        if not args:
            term.err("docker: give a command: run, ps, logs, rm\n")
            return 1
        sub, rest = args[0], args[1:]
        if sub in ("--version", "version", "-v"):
            term.out("Docker version 27.3.1, build ce12230 (National Compute in a box)\n")
            return 0
        fn = {"run": self._docker_run, "ps": self._docker_ps, "logs": self._docker_logs, "rm": self._docker_rm}
        if sub == "container" and rest and rest[0] in ("ls", "list"):
            sub, rest = "ps", rest[1:]
        if sub not in fn:
            term.err(f"docker {sub}: not available on this simulated node\n")
            return NOT_AVAILABLE
        return await fn[sub](rest, term)

    VALUE_OPTS = {
        "--gpus", "--name", "-v", "--volume", "-e", "--env", "-w", "--workdir", "--ipc", "--device", "--group-add",
        "--security-opt", "--shm-size", "-p", "--publish", "--entrypoint", "-u", "--user", "--network", "--env-file",
        "--ulimit", "--runtime", "--platform", "--pull", "--label", "-l", "--mount", "--memory", "-m", "--cpus",
    }  # fmt: skip
    FLAG_OPTS = {"-d", "--detach", "--rm", "-i", "--interactive", "-t", "--tty", "-it", "-ti", "-dit", "--init",
                 "--privileged"}  # fmt: skip

    async def _docker_run(self, args: list[str], term: Term) -> int:
        opts: dict[str, list[str]] = {}
        flags: set[str] = set()
        i = 0
        while i < len(args) and args[i].startswith("-"):
            a = args[i]
            key, eq, val = a.partition("=")
            if key in self.VALUE_OPTS:
                if not eq:
                    i += 1
                    if i >= len(args):
                        term.err(f"docker: flag needs an argument: {key}\n")
                        return 125
                    val = args[i]
                opts.setdefault(key, []).append(val)
            elif a in self.FLAG_OPTS:
                flags.update("-" + ch for ch in a[1:]) if not a.startswith("--") else flags.add(a)
            else:
                term.err(f"docker: unknown flag: {key}\nSee 'docker run --help'.\n")
                return 125
            i += 1
        if i >= len(args):
            term.err("docker: \"docker run\" requires at least 1 argument.\nSee 'docker run --help'.\n")
            return 125
        image, command = args[i], args[i + 1 :]
        name = (opts.get("--name") or [None])[-1]
        if name is not None and not re.fullmatch(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*", name):
            term.err(f"docker: Error response from daemon: Invalid container name ({name}).\n")
            return 125
        old = self.node.containers.get(name or "")
        if old is not None:
            term.err(
                f'docker: Error response from daemon: Conflict. The container name "/{name}" is already in use by '
                f'container "{old.id}". You have to remove (or rename) that container to be able to reuse that name.\n'
            )
            return 125
        env = dict(e.partition("=")[::2] for e in opts.get("-e", []) + opts.get("--env", []))
        c = self.node.start_container(name, image, command, env, "--rm" in flags, None)
        if "-d" in flags or "--detach" in flags:
            term.out(c.id + "\n")
            return 0
        return 130 if await self._follow(c, 0, False, term) else 0

    async def _docker_ps(self, args: list[str], term: Term) -> int:
        all_ = any(a in ("-a", "--all") for a in args)
        quiet = any(a in ("-q", "--quiet", "-aq", "-qa") for a in args)
        all_ = all_ or any(a in ("-aq", "-qa") for a in args)
        now = self.node.now()
        rows = [c for c in self.node.containers.values() if all_ or c.running(now)]
        if quiet:
            term.out("".join(c.id[:12] + "\n" for c in rows))
            return 0
        term.out(f"{'CONTAINER ID':<15}{'IMAGE':<48}{'COMMAND':<24}{'CREATED':<20}{'STATUS':<26}NAMES\n")
        for c in rows:
            cmd = '"' + " ".join(c.command)[:20] + '…"' if c.command else '""'
            created = _ago((now - c.started).total_seconds()) + " ago"
            end = c.ends()
            if c.running(now):
                status = "Up " + _ago((now - c.started).total_seconds())
            else:
                status = f"Exited ({c.plan.exit_code}) " + _ago((now - (end or now)).total_seconds()) + " ago"
            term.out(f"{c.id[:12]:<15}{c.image[:46]:<48}{cmd:<24}{created:<20}{status:<26}{c.name}\n")
        return 0

    async def _docker_rm(self, args: list[str], term: Term) -> int:
        force = any(a in ("-f", "--force") for a in args)
        names = [a for a in args if not a.startswith("-")]
        if not names:
            term.err('docker: "docker rm" requires at least 1 argument.\n')
            return 1
        status = 0
        for n in names:
            c = self._find(n)
            if c is None:
                term.err(f"Error response from daemon: No such container: {n}\n")
                status = 1
            elif c.running(self.node.now()) and not force:
                term.err(
                    f'Error response from daemon: cannot remove container "/{c.name}": container is running: '
                    "stop the container before removing or force remove\n"
                )
                status = 1
            else:
                self.node.sync()  # what it wrote before it stopped stays in its file
                c.removed = True
                self.node.containers.pop(c.name, None)
                term.out(n + "\n")
        return status

    def _find(self, ref: str) -> Container | None:
        c = self.node.containers.get(ref)
        if c is None and len(ref) >= 3:
            c = next((x for x in self.node.containers.values() if x.id.startswith(ref)), None)
        return c

    async def _docker_logs(self, args: list[str], term: Term) -> int:
        follow = stamps = False
        since: datetime | None = None
        tail: int | None = None
        names = []
        it = iter(args)
        for a in it:
            key, eq, val = a.partition("=")
            if a in ("-f", "--follow"):
                follow = True
            elif a in ("-t", "--timestamps"):
                stamps = True
            elif a in ("-ft", "-tf"):
                follow = stamps = True
            elif key in ("--since", "--tail", "-n"):
                val = val if eq else next(it, "")
                if key == "--since":
                    since = parse_since(val)
                    if since is None:
                        term.err(f'invalid value for "since": {val!r}: give an RFC 3339 time\n')
                        return 1
                elif val != "all":
                    if not val.isdigit():
                        term.err(f'invalid value for "tail": {val!r}\n')
                        return 1
                    tail = int(val)
            elif a.startswith("-"):
                term.err(f"docker logs: option {a} is not available on this simulated node\n")
                return 1
            else:
                names.append(a)
        if len(names) != 1:
            term.err('docker: "docker logs" requires exactly 1 argument.\n')
            return 1
        c = self._find(names[0])
        if c is None:
            term.err(f"Error response from daemon: No such container: {names[0]}\n")
            return 1
        now = self.node.now()
        lines = [] if c.out is not None else c.lines(now)
        if since is not None:
            lines = [x for x in lines if x[0] >= since]
        if tail is not None:
            lines = lines[-tail:] if tail else []
        self._print(lines, stamps, term)
        if not follow:
            return 0
        seen = len([] if c.out is not None else c.lines(now))
        return 130 if await self._follow(c, seen, stamps, term) else 0

    def _print(self, lines: list[tuple[datetime, str]], stamps: bool, term: Term) -> None:
        if lines:
            term.out("".join((f"{stamp(at)} {t}\n" if stamps else t + "\n") for at, t in lines))

    async def _follow(self, c: Container, seen: int, stamps: bool, term: Term) -> bool:
        """Print ``c``'s lines after the first ``seen`` as the clock passes them, until it ends or is removed
        (as ``docker logs -f`` does); True when the session asked to stop (Ctrl-C, closed)."""
        while True:
            now = self.node.now()
            lines = [] if c.out is not None else c.lines(now)
            self._print(lines[seen:], stamps, term)
            seen = max(seen, len(lines))
            if not c.running(now) or c.removed:
                if c.rm:
                    self.node.containers.pop(c.name, None)
                return False
            if await self._wait(term):
                return True


Command = Callable[[Shell, list[str], Term], Awaitable[int]]
COMMANDS: dict[str, Command] = {
    "echo": Shell._echo,
    "true": Shell._true,
    "false": Shell._false,
    ":": Shell._true,
    "exit": Shell._exit,
    "logout": Shell._exit,
    "pwd": Shell._pwd,
    "cd": Shell._cd,
    "whoami": Shell._whoami,
    "clear": Shell._clear,
    "hostname": Shell._hostname,
    "df": Shell._df,
    "nvidia-smi": Shell._nvidia_smi,
    "ls": Shell._ls,
    "cat": Shell._cat,
    "tail": Shell._tail,
    "curl": Shell._curl,
    "docker": Shell._docker,
}
Shell.commands = COMMANDS
Shell.scripts = {STARTER: Shell._starter}


# ---- filters after a pipe (over the whole output of the command before them) --------------------


def _count(args: list[str], default: int = 10) -> int | None:
    n = default
    it = iter(args)
    for a in it:
        v = next(it, "") if a in ("-n", "--lines") else a.removeprefix("--lines=").removeprefix("-n").lstrip("-")
        if not v.isdigit():
            return None
        n = int(v)
    return n


def _head(args: list[str], text: str, err: Callable[[str], None]) -> tuple[str, int]:
    n = _count(args)
    if n is None:
        err("head: give -n N\n")
        return "", 1
    return "".join(text.splitlines(keepends=True)[:n]), 0


def _tail_filter(args: list[str], text: str, err: Callable[[str], None]) -> tuple[str, int]:
    n = _count(args)
    if n is None:
        err("tail: give -n N (after a pipe tail does not follow)\n")
        return "", 1
    return "".join(text.splitlines(keepends=True)[-n:] if n else []), 0


def _grep(args: list[str], text: str, err: Callable[[str], None]) -> tuple[str, int]:
    flags = "".join(a[1:] for a in args if a.startswith("-") and len(a) > 1)
    words = [a for a in args if not a.startswith("-") or len(a) == 1]
    if len(words) != 1 or set(flags) - set("cvEiFq"):
        err("grep: give one pattern (options -c -v -i -E -F -q)\n")
        return "", 2
    try:
        pat = re.compile(re.escape(words[0]) if "F" in flags else words[0], re.I if "i" in flags else 0)
    except re.error as e:
        err(f"grep: bad pattern: {e}\n")
        return "", 2
    hits = [ln for ln in text.splitlines(keepends=True) if bool(pat.search(ln)) != ("v" in flags)]
    status = 0 if hits else 1
    if "q" in flags:
        return "", status
    return (f"{len(hits)}\n" if "c" in flags else "".join(hits)), status


def _wc(args: list[str], text: str, err: Callable[[str], None]) -> tuple[str, int]:
    counts = {"-l": text.count("\n"), "-w": len(text.split()), "-c": len(text.encode())}
    if any(a not in counts for a in args):
        err("wc: options -l -w -c only\n")
        return "", 1
    return " ".join(str(counts[a]) for a in (args or ["-l", "-w", "-c"])) + "\n", 0


Filter = Callable[[list[str], str, Callable[[str], None]], tuple[str, int]]
FILTERS: dict[str, Filter] = {"head": _head, "tail": _tail_filter, "grep": _grep, "wc": _wc}
