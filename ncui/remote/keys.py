"""The human's ssh public keys: the ``~/.ssh/*.pub`` files and the agent's keys, with OpenSSH's SHA256
fingerprints, to register one for a VM cluster (keys install on future grants only). Public halves only:
a private key is never read here. No Textual.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LocalKey", "fingerprint", "local_keys", "agent_keys", "file_keys"]

KEY_TYPES = (
    "ssh-ed25519",
    "ssh-rsa",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)


@dataclass(frozen=True)
class LocalKey:
    """One public key the human holds: where it is (a file's path, or "agent"), its line and fingerprint."""

    source: str  # "~/.ssh/id_ed25519.pub" or "agent"
    public_key: str  # "ssh-ed25519 AAAA… comment"
    fingerprint: str  # "SHA256:…"
    comment: str = ""

    @property
    def kind(self) -> str:
        return self.public_key.split(None, 1)[0]

    def label(self) -> str:
        return f"{self.kind} {self.fingerprint} {self.comment or self.source}".strip()


def fingerprint(public_key: str) -> str:
    """OpenSSH's ``SHA256:…`` fingerprint of a public key line. ValueError with a sentence when it is not one."""
    parts = public_key.strip().split()
    if len(parts) < 2 or parts[0] not in KEY_TYPES:
        raise ValueError("not an OpenSSH public key line (like 'ssh-ed25519 AAAA… you@host')")
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the key's base64 part is not valid") from None
    n = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else -1
    if n <= 0 or blob[4 : 4 + n].decode("ascii", "replace") != parts[0]:
        raise ValueError("the key's data does not match its type")
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def file_keys(ssh_dir: Path | None = None) -> list[LocalKey]:
    """The ``*.pub`` files of ``~/.ssh`` that hold one valid public key line each (others are skipped)."""
    folder = ssh_dir or Path(os.path.expanduser("~/.ssh"))
    out: list[LocalKey] = []
    try:
        paths = sorted(folder.glob("*.pub"))
    except OSError:
        return out
    for path in paths:
        try:
            line = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[0]
            fp = fingerprint(line)
        except (OSError, IndexError, ValueError):
            continue
        parts = line.split(None, 2)
        shown = str(path).replace(os.path.expanduser("~"), "~", 1)
        out.append(
            LocalKey(
                shown,
                " ".join(parts[:2]) + (f" {parts[2]}" if len(parts) > 2 else ""),
                fp,
                parts[2] if len(parts) > 2 else "",
            )
        )
    return out


async def agent_keys(timeout: float = 3.0) -> list[LocalKey]:
    """The ssh agent's keys (``SSH_AUTH_SOCK``), when an agent answers in time; [] when there is none."""
    import asyncio

    from ..backoff import within

    if not os.environ.get("SSH_AUTH_SOCK"):
        return []
    import asyncssh  # imported when first needed (~160 ms)

    async def read() -> list[tuple[bytes, bytes]]:
        agent = await asyncssh.connect_agent()
        try:
            return [(k.public_data, k.get_comment_bytes() or b"") for k in await agent.get_keys()]
        finally:
            agent.close()

    try:
        pairs = await within(read(), timeout)
    except (OSError, asyncssh.Error, asyncio.TimeoutError):
        return []
    out: list[LocalKey] = []
    for blob, comment in pairs:
        n = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else 0
        kind = blob[4 : 4 + n].decode("ascii", "replace")
        text = comment.decode("utf-8", "replace")
        line = f"{kind} {base64.b64encode(blob).decode()}" + (f" {text}" if text else "")
        try:
            out.append(LocalKey("agent", line, fingerprint(line), text))
        except ValueError:  # a certificate or a kind we do not register: skip it
            continue
    return out


async def local_keys() -> list[LocalKey]:
    """Every public key the human holds, files first, each fingerprint once."""
    seen: set[str] = set()
    out: list[LocalKey] = []
    for k in [*file_keys(), *await agent_keys()]:
        if k.fingerprint not in seen:
            seen.add(k.fingerprint)
            out.append(k)
    return out
