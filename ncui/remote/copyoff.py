"""Copy files and folders off a node over SFTP (the VM release's copy-off, a research node's results), with
progress in bytes over every item. No Textual here: the progress and the words are the caller's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .runner import SshRunner

__all__ = ["CopyOff", "copy_off"]


@dataclass
class CopyOff:
    """What a copy-off did: bytes copied, the paths made, and what failed (the remote item, or None when the
    destination could not be made, and the error)."""

    copied: int = 0
    done: list[Path] = field(default_factory=list)
    failed: list[tuple[str | None, Exception]] = field(default_factory=list)


async def copy_off(
    runner: SshRunner, remotes: list[str], dest: Path, progress: Callable[[int, int], None] | None = None
) -> CopyOff:
    """Copy ``remotes`` (files or folders) into ``dest``, in order; ``progress(done, total)`` in bytes of every
    item started. A dropped connection or a destination that cannot be made ends it (what was copied stays)."""
    from .runner import RemoteError

    out = CopyOff()
    last: list[int] = []  # bytes done as last told, over every item so far
    for remote in remotes:
        base = out.copied

        def told(done: int, total: int, base: int = base) -> None:
            last[:] = [base + done]
            if progress is not None:
                progress(base + done, base + total)

        try:
            await runner.connect()
            dest.mkdir(parents=True, exist_ok=True)
            await runner.copy_from(remote, dest, progress=told, recurse=True)
        except RemoteError as e:
            out.failed.append((remote, e))
            if not runner.connected:
                break
            continue
        except OSError as e:
            out.failed.append((None, e))
            break
        out.copied = last[0] if last else out.copied
        out.done.append(dest / Path(remote.rstrip("/")).name)
    return out
