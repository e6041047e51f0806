"""kubectl sign-in: a device-code flow (link → a human approves → a bearer token) and the tokens it issues.

A code expires after 15 minutes of a person's time (``VirtualClock.human_elapsed``: real seconds plus the
clock's advances, never × speed; a person approves it); a token is refused after a virtual day without use
(one more approval). Tokens are only ever compared by hash and are never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

CODE_TTL = timedelta(minutes=15)
IDLE = timedelta(days=1)
POLL_INTERVAL = 0.3  # real seconds between polls (a loopback simulator)
USER_CODE_CHARS = "BCDFGHJKLMNPQRSTVWXZ"


@dataclass
class DeviceCode:
    device_code: str
    user_code: str
    org: str
    cluster: str
    created: datetime
    expires: datetime  # virtual time, as the service reports it
    approved: bool = False
    human_expires: float = float("inf")  # the clock's human_elapsed() when the code expires: what counts
    issued: bool = False


@dataclass
class Session:
    org: str
    cluster: str
    last_used: datetime


def _h(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Auth:
    def __init__(self, seed: int, human: Callable[[], float] = lambda: 0.0) -> None:
        self.human = human  # VirtualClock.human_elapsed: a sign-in link lasts CODE_TTL of a person's time
        self.codes: dict[str, DeviceCode] = {}  # device_code -> code
        self.sessions: dict[bytes, Session] = {}  # sha256(token) -> session
        self._rng = random.Random(f"device:{seed}")
        self._n = itertools.count(1)

    def new_code(self, org: str, cluster: str, now: datetime) -> DeviceCode:
        uc = "".join(self._rng.choice(USER_CODE_CHARS) for _ in range(8))
        dc = DeviceCode(
            secrets.token_urlsafe(24),
            f"{uc[:4]}-{uc[4:]}",
            org,
            cluster,
            now,
            now + CODE_TTL,
            human_expires=self.human() + CODE_TTL.total_seconds(),
        )
        self.codes[dc.device_code] = dc
        return dc

    def by_user_code(self, user_code: str) -> DeviceCode | None:
        uc = user_code.strip().upper().replace(" ", "")
        if len(uc) == 8 and "-" not in uc:
            uc = f"{uc[:4]}-{uc[4:]}"
        for dc in self.codes.values():
            if dc.user_code == uc:
                return dc
        return None

    def expired(self, dc: DeviceCode) -> bool:
        return self.human() >= dc.human_expires

    def approve(self, dc: DeviceCode, now: datetime) -> str:
        if self.expired(dc):
            return "expired"
        if dc.approved:
            return "already"
        dc.approved = True
        return "approved"

    def poll(self, device_code: str, now: datetime) -> tuple[str, str | None]:
        """("ok", token) | ("authorization_pending" | "expired_token" | "invalid_grant", None)."""
        dc = self.codes.get(device_code)
        if dc is None:
            return "invalid_grant", None
        if dc.approved and not dc.issued:
            dc.issued = True
            token = f"ncsk_{secrets.token_urlsafe(32)}"
            self.sessions[_h(token)] = Session(dc.org, dc.cluster, now)
            return "ok", token
        if dc.issued:
            return "invalid_grant", None
        if self.expired(dc):
            return "expired_token", None
        return "authorization_pending", None

    def revoke(self, cluster: str) -> int:
        """End every session of ``cluster`` (a sim control): its tokens are refused from now on."""
        gone = [h for h, s in self.sessions.items() if s.cluster == cluster]
        for h in gone:
            del self.sessions[h]
        return len(gone)

    def cluster_of(self, token: str) -> str | None:
        s = self.sessions.get(_h(token))
        return s.cluster if s else None

    def check(self, token: str, cluster: str, now: datetime) -> Session | None:
        """The session for a valid, not idle token of ``cluster`` (and mark it used)."""
        h = _h(token)
        s = None
        for k, v in self.sessions.items():
            if hmac.compare_digest(k, h):
                s = v
        if s is None or s.cluster != cluster:
            return None
        if now - s.last_used > IDLE:
            self.sessions.pop(h, None)
            return None
        s.last_used = max(s.last_used, now)
        return s
