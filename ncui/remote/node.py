"""A VM node or a research node over a ``Runner``: the starter, ``docker run`` / ``rm -f``, following a log.

Every command line is built by a pure function (``starter_command``, ``docker_run_command``, ``stop_command``,
``logs_command``, ``tail_command``) with ``shlex.quote`` on every part, so what the human typed (an image, a
command with quotes, ``$``, ``;`` or newlines) reaches the node's shell as one word each: the command is one
``sh -c`` argument. Names and images are checked first (``BadInput``, a sentence) so nothing reads as an option.

The followers are ``logfollow.FollowCore`` over ssh: ``ContainerLogFollower`` runs ``docker logs -f -t NAME``
and after a dropped connection resumes with ``--since <last timestamp>``, the core skipping what it already
delivered; ``FileFollower`` runs ``tail -F FILE`` and resumes with ``-n +<lines delivered + 1>``.
No Textual here.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict

from ..logfollow import FollowCore, FollowOptions
from ..textsafe import clean
from .runner import (
    AuthFailed,
    CommandFailed,
    HostKeyChanged,
    HostKeyUnknown,
    RemoteError,
    Result,
    Runner,
    run_noted,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "BadInput",
    "ContainerLogFollower",
    "curl_sh_command",
    "head_command",
    "DockerRunOptions",
    "FileFollower",
    "NODE_LOG",
    "docker_containers",
    "docker_ps",
    "docker_run",
    "docker_run_argv",
    "docker_run_command",
    "logs_command",
    "start_starter",
    "starter_command",
    "stop",
    "stop_command",
    "tail_command",
]

STARTER = "first-job/nanogpt-node.sh"  # under the access origin (the guide's research-node line)
NODE_LOG = "~/first-job/nanogpt.out"  # where the starter's run writes its log
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")  # Docker's rule for a container name
_IMAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/:@+-]{0,254}")  # registry/name:tag@digest, never an option
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_URL = re.compile(r"https?://[^\s'\"`$;|&<>\\]+")


class BadInput(ValueError):
    """What the human gave cannot be sent as it is; ``str(e)`` says why in a sentence."""


def _q(word: str) -> str:
    return shlex.quote(word)


def _check_name(name: str) -> str:
    if not _NAME.fullmatch(name or ""):
        raise BadInput(
            f"{name!r} cannot name a container: use letters, digits, '_', '.' and '-', starting with a letter or digit."
        )
    return name


def curl_sh_command(access_url: str, script: str) -> str:
    """``curl -fsSL <access>/<script> | sh``: how the guide runs a script of the access origin on a node."""
    url = access_url.rstrip("/") + "/" + script
    if not _URL.fullmatch(url):
        raise BadInput(f"{access_url!r} is not an http(s) address ncui can hand to curl on the node.")
    return f"curl -fsSL {_q(url)} | sh"


def starter_command(access_url: str) -> str:
    """``curl -fsSL <access>/first-job/nanogpt-node.sh | sh``: the guide's research-node line (a VM node's too)."""
    return curl_sh_command(access_url, STARTER)


async def start_starter(runner: Runner, access_url: str, *, timeout: float | None = 600.0) -> Result:
    """Run the starter on the node (it starts the run detached and returns); a failure is ``CommandFailed``."""
    return await run_noted(
        runner, starter_command(access_url), "run the guide's starter (nanoGPT, detached)", timeout=timeout
    )


class DockerRunOptions(TypedDict, total=False):
    """How the container runs, beside its image, command and name (``docker_run_argv``'s keywords)."""

    gpus_all: bool  # --gpus all (the default)
    env: Mapping[str, str]  # -e K=V each
    volumes: Sequence[str]  # -v host-path:container-path each
    detach: bool  # -d (the default)
    docker: str  # the program ("docker")


def docker_run_argv(image: str, command: str, name: str, **opts: Unpack[DockerRunOptions]) -> list[str]:
    """The words of ``docker run -d --name NAME --gpus all [-e K=V] [-v A:B] IMAGE sh -c COMMAND``.
    An empty command runs the image's own entrypoint and command."""
    _check_name(name)
    if not _IMAGE.fullmatch(image or ""):
        raise BadInput(f"{image!r} is not a container image name (like pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime).")
    argv = [opts.get("docker", "docker"), "run"] + (["-d"] if opts.get("detach", True) else []) + ["--name", name]
    if opts.get("gpus_all", True):
        argv += ["--gpus", "all"]
    for key, value in opts.get("env", {}).items():
        if not _ENV.fullmatch(key):
            raise BadInput(f"{key!r} cannot name an environment variable: use letters, digits and '_'.")
        argv += ["-e", f"{key}={value}"]
    for vol in opts.get("volumes", ()):
        if not vol or vol.startswith("-") or ":" not in vol:
            raise BadInput(f"{vol!r} is not a volume as docker takes it (host-path:container-path).")
        argv += ["-v", vol]
    argv.append(image)
    if command.strip():
        argv += ["sh", "-c", command]
    return argv


def docker_run_command(image: str, command: str, name: str, **opts: Unpack[DockerRunOptions]) -> str:
    """``docker_run_argv`` as one shell command line, every word quoted."""
    return " ".join(map(_q, docker_run_argv(image, command, name, **opts)))


async def docker_run(
    runner: Runner,
    image: str,
    command: str,
    name: str,
    *,
    timeout: float | None = 900.0,
    **opts: Unpack[DockerRunOptions],
) -> str:
    """Start the container (detached unless ``detach=False``); its id as docker printed it (its last line).
    ``CommandFailed`` when docker refuses (a name in use, an image that cannot be pulled): its message carries
    docker's words."""
    res = await run_noted(
        runner, docker_run_command(image, command, name, **opts), f"start {name} ({image})", timeout=timeout
    )
    lines = [x.strip() for x in res.stdout.splitlines() if x.strip()]
    return lines[-1] if lines else ""


def stop_command(name: str, docker: str = "docker") -> str:
    return " ".join(map(_q, [docker, "rm", "-f", _check_name(name)]))


async def stop(runner: Runner, name: str) -> Result:
    """``docker rm -f NAME``: the container stops and is removed (its log with it)."""
    return await run_noted(runner, stop_command(name), f"stop {name} (docker rm -f)", timeout=120.0)


def docker_containers(text: str) -> dict[str, tuple[str, str]]:
    """``docker ps [-a]``'s table → {name: (image, status)} (cleaned), by the header's column positions (STATUS
    runs to PORTS or NAMES: ``Up 5 minutes``, ``Exited (0) 2 minutes ago``); {} when unreadable."""
    lines = text.splitlines()
    if not lines or "IMAGE" not in lines[0] or "NAMES" not in lines[0]:
        return {}
    head = lines[0]
    image_at, command_at = head.index("IMAGE"), head.find("COMMAND")
    status_at, names_at = head.find("STATUS"), head.index("NAMES")
    status_end = head.find("PORTS") if head.find("PORTS") > status_at else names_at
    out = {}
    for line in lines[1:]:
        words = line.split()
        if len(words) >= 2:
            image = line[image_at:command_at].strip() if command_at > image_at else words[1]
            status = line[status_at:status_end].strip() if status_at >= 0 else ""
            out[clean(words[-1])] = (clean(image.split()[0] if image else ""), clean(status))
    return out


def docker_ps(text: str) -> dict[str, str]:
    """``docker ps``'s table → {name: image} (cleaned); {} when unreadable."""
    return {name: image for name, (image, _) in docker_containers(text).items()}


def head_command(lines: int, *, path: str | None = None, container: str | None = None) -> str:
    """The first ``lines`` lines of a log, read once (never followed): ``cat PATH | head -n N`` (the starter's
    file), or ``docker logs NAME | head -n N`` (a container's)."""
    n = max(1, int(lines))
    if path is not None:
        return f"cat {_path(path)} | head -n {n}"
    return " ".join(map(_q, ["docker", "logs", _check_name(container or "")])) + f" | head -n {n}"


def logs_command(name: str, since: str | None = None, docker: str = "docker", tail: int | None = None) -> str:
    """``docker logs -f -t [--since TIMESTAMP | --tail N] NAME`` (``--since`` keeps lines at or after it)."""
    if since:
        window = ["--since", since]
    else:
        window = ["--tail", str(max(0, int(tail)))] if tail is not None else []
    return " ".join(map(_q, [docker, "logs", "-f", "-t", *window, _check_name(name)]))


def _path(path: str) -> str:
    """A path quoted for the shell, with a leading ``~/`` left for the shell to expand."""
    if path.startswith("~/"):
        return "~/" + _q(path[2:])
    return _q(path)


def tail_command(path: str, from_line: int = 1, poll: float | None = None) -> str:
    """``tail -n +N -F [-s POLL] PATH``: the file from its line ``from_line`` on, following it by name."""
    poll_part = f" -s {poll:g}" if poll else ""
    return f"tail -n +{max(1, int(from_line))} -F{poll_part} {_path(path)}"


class _RemoteFollower(FollowCore):
    """A log followed by a command over a runner, run again after a drop (the subclass says how to resume)."""

    timed = True
    merge_stderr = True  # the command's stderr is part of the log (a container's log has both)

    def __init__(self, runner: Runner, **opts: Unpack[FollowOptions]) -> None:
        super().__init__(**opts)
        self.runner = runner
        self.failed = False  # stopped for good: a host key or the keys need the human

    def _command(self, resume: bool) -> str:
        raise NotImplementedError

    def _clean_end(self) -> str | None:
        """Why a command that ended with status 0 means the log is complete (None: run it again)."""
        return None

    async def run(self) -> None:
        self._start()
        failures = 0
        try:
            while not self._stopped:
                cmd = self._command(self._resume_point())
                self.streams += 1
                got = False
                try:
                    gen = self.runner.follow(cmd, merge_stderr=self.merge_stderr)
                    try:
                        self._say("following")
                        async for raw in gen:
                            if raw and not got:
                                got, failures, self.error = True, 0, None
                            self._deliver(raw, timed=self.timed)
                    finally:
                        await gen.aclose()
                    reason = self._clean_end()
                    if reason is not None:
                        self._end(reason)
                        return
                except (HostKeyChanged, HostKeyUnknown, AuthFailed) as e:
                    self.error, self.failed = str(e), True  # retrying cannot help: the human must act
                    self._say("failed")
                    return
                except CommandFailed as e:
                    self._end(str(e))
                    return
                except RemoteError as e:  # dropped, refused, unreachable: connect again and resume
                    self.error = str(e)
                self._say("resuming")
                failures += 1
                await self._sleep(failures)
        except asyncio.CancelledError:
            if not self._stopped:
                raise
        finally:
            self._finish()


class ContainerLogFollower(_RemoteFollower):
    """``f = ContainerLogFollower(runner, "nanogpt", on_lines=pane.write_batch)``; ``await f.run()``;
    ``f.stop()``. Ends when ``docker logs -f`` ends by itself (the container stopped; every line is in)."""

    def __init__(
        self,
        runner: Runner,
        name: str,
        *,
        docker: str = "docker",
        tail_lines: int | None = None,
        **opts: Unpack[FollowOptions],
    ) -> None:
        super().__init__(runner, **opts)
        self.name, self.docker, self.tail_lines = _check_name(name), docker, tail_lines

    def _command(self, resume: bool) -> str:
        """The first stream from the start (or its last ``tail_lines``); a resumed one from the last timestamp."""
        return logs_command(
            self.name, self._last_ts if resume else None, self.docker, None if resume else self.tail_lines
        )

    def _clean_end(self) -> str | None:
        return "the container stopped"


class FileFollower(_RemoteFollower):
    """``tail -F`` of a file on the node (the research node's ``~/first-job/nanogpt.out``), resumed by line
    count after a drop. Runs until stopped. ``poll``: tail's ``-s`` (GNU tail), for a file not there yet."""

    timed = False
    # tail's own words ("cannot open …", "has appeared") are not the file's lines: in the log they would be
    # shown as the run's output and counted, and the resumption by line count would skip as many real lines.
    merge_stderr = False

    def __init__(
        self, runner: Runner, path: str = NODE_LOG, *, poll: float | None = None, **opts: Unpack[FollowOptions]
    ) -> None:
        super().__init__(runner, **opts)
        self.path, self.poll = path, poll

    def _command(self, resume: bool) -> str:
        return tail_command(self.path, self.total + 1, self.poll)
