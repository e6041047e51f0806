"""The spending limit: the most the human lets the meter charge, for this session or until a date. No peer
enforces one, so ncui does: it warns at 80% and at 100% withdraws what still spends (after a last warning
the human can cancel). Plain Python (no Textual): the rules, what counts, and the file that remembers it.

What counts against it: the ``charge`` transactions the meter recorded after the limit was set
(``GET /api/billing/transactions``). The meter assesses about every ten minutes, so each charge covers the
minutes before it: the count moves in steps, and what runs now lands with the next assessment. Top-ups and
refunds do not count (a top-up does not undo spending).

What it stops at 100% (``stops``): on a market Kubernetes cluster the limit price (no new nodes; a node
running a job stays, billed, until the job ends) and, only when the human chose it when setting the limit,
the runs that hold GPU nodes (their Jobs and Deployments, as Workloads' x stops them); on a VM cluster the
capacity (billing stops, the nodes go with their disks); elsewhere nothing (ncui only warns).

Remembered in ``$XDG_STATE_HOME/ncui/limits.json`` (never the token), one limit per API origin and
organization (file version 2 adds ``stop_runs``; a version 1 file is read with it off). A session limit
lasts until ncui quits with nothing standing (or the human clears it): a lost terminal or a crash keeps it,
and the next start goes on counting from when it was set.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from . import statefile
from .money import fmt_usd

if TYPE_CHECKING:
    from .api import models as m
    from .store import Slice, Store

log = logging.getLogger("ncui.limits")

WARN_PERCENT = 80  # warn at this share of the limit; act at 100
COUNTDOWN_S = 15.0  # the last warning before ncui withdraws: real seconds, Esc cancels
PAGE = 100  # the transactions one read returns (the contract's default page): a full page may miss older ones
FILE_VERSION = 2
OLDER_VERSIONS = (1,)  # still read: a version 1 limit has no stop_runs (off)

Level = Literal["ok", "warn", "reached", "kept", "expired", "unknown"]


@dataclass(frozen=True)
class Limit:
    """A spending limit as the human set it."""

    amount: int  # micro-credits
    set_at: datetime  # the service's clock when set: the meter's charges after this count
    until: datetime | None = None  # None: for this session
    kept: bool = False  # reached, and the human cancelled the withdrawal: kept by them
    stop_runs: bool = False  # at 100% also stop the runs that hold GPU nodes (chosen when set)

    def scope(self) -> str:
        return scope_words(self.until)

    def to_json(self) -> dict[str, Any]:
        return {
            "amount_ucredits": self.amount,
            "set_at": self.set_at.isoformat(),
            "until": self.until.isoformat() if self.until else None,
            "kept": self.kept,
            "stop_runs": self.stop_runs,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Limit:
        amount = d["amount_ucredits"]
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
            raise ValueError("amount_ucredits must be a positive integer")
        until = d.get("until")
        return cls(
            amount,
            _aware(datetime.fromisoformat(d["set_at"])),
            _aware(datetime.fromisoformat(until)) if until else None,
            bool(d.get("kept", False)),
            d.get("stop_runs") is True,
        )


@dataclass(frozen=True)
class LimitState:
    """Where the spending stands against the limit now."""

    limit: Limit
    level: Level
    spent: int | None  # micro-credits charged since set; None when unknown
    percent: int | None  # of the limit, floored
    partial: bool = False  # a full page of transactions: older charges may be missing ("at least")
    problem: str | None = None  # why the count is stale or unknown (Slice.staleness)

    def sentence(self) -> str:
        """One line for the Lease screen: what the limit is, what counts, where it stands."""
        lim = self.limit
        head = f"{fmt_usd(lim.amount)} {lim.scope()}"
        if self.level == "expired":
            return f"{head}: expired, no longer enforced."
        if self.spent is None:
            return f"{head}: charged since {lim.set_at:%H:%M} unknown ({self.problem or 'not read yet'})."
        counted = f"{'at least ' if self.partial else ''}{fmt_usd(self.spent)} charged since {lim.set_at:%H:%M}"
        tail = {
            "ok": "",
            "warn": f" — over {WARN_PERCENT}%",
            "reached": " — reached",
            "kept": " — reached, kept by you",
            "unknown": "",
        }.get(self.level, "")
        return f"{head}: {counted} ({self.percent}%){tail}."


def _aware(t: datetime) -> datetime:
    return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)


def charged_since(transactions: Iterable[m.Transaction], since: datetime) -> tuple[int, bool]:
    """What the meter charged after ``since`` (µcredits, positive), and whether the list may be missing older
    charges (a full page whose oldest entry is still after ``since``)."""
    txs = list(transactions)
    total = sum(-(t.amount_ucredits or 0) for t in txs if t.kind == "charge" and _aware(t.at) > since)
    partial = len(txs) >= PAGE and min(_aware(t.at) for t in txs) > since
    return max(0, total), partial


def unread_charge(transactions: Iterable[m.Transaction], since: datetime) -> str:
    """Why a charge after ``since`` has no amount ncui could read (the service's answer left it out or retyped
    it): a count with it missing is unknown, never a smaller figure ("" when every charge was read)."""
    return next(
        (t.unknown("amount_ucredits") for t in transactions if t.amount_ucredits is None and _aware(t.at) > since),
        "",
    )


def evaluate(limit: Limit, transactions: Slice, now: datetime, store_now: float | None = None) -> LimitState:
    """The limit against the transactions slice at the service's ``now``. Never "nothing spent" for a count
    that could not be read: unknown (or the last count, with the reason) instead."""
    if limit.until is not None and now >= limit.until:
        return LimitState(limit, "expired", None, None)
    problem = transactions.staleness(store_now)
    if transactions.value is None:
        return LimitState(limit, "unknown", None, None, problem=problem)
    if why := unread_charge(transactions.value, limit.set_at):
        return LimitState(limit, "unknown", None, None, problem=why)
    spent, partial = charged_since(transactions.value, limit.set_at)
    percent = spent * 100 // limit.amount
    level: Level = "ok"
    if spent >= limit.amount:
        level = "kept" if limit.kept else "reached"
    elif percent >= WARN_PERCENT:
        level = "warn"
    return LimitState(limit, level, spent, percent, partial, problem)


def scope_words(until: datetime | None) -> str:
    """How long a limit lasts, as the human typed it: a day typed ("2027-01-01") reads as that day, through its
    end (never "until 2027-01-02 00:00", which reads like another date); a minute typed, as that minute."""
    if until is None:
        return "for this session"
    if (until.hour, until.minute, until.second) == (0, 0, 0):
        return f"through {until - timedelta(days=1):%Y-%m-%d} (UTC)"
    return f"until {until:%Y-%m-%d %H:%M} UTC"


def parse_until(text: str, now: datetime) -> datetime | None:
    """The end of a limit as typed: blank is this session (None); ``YYYY-MM-DD`` is the end of that day,
    ``YYYY-MM-DD HH:MM`` that minute, both UTC. Raises ValueError with what to type."""
    t = text.strip()
    if not t:
        return None
    how = "type a date as YYYY-MM-DD (or YYYY-MM-DD HH:MM, UTC), or leave it blank for this session"
    m = re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[ T]([0-9]{2}):([0-9]{2}))?", t)
    if m is None:
        raise ValueError(f"{t[:20]!r} is not a date: {how}")
    y, mo, d, hh, mm = m.groups()
    try:
        if hh is None:
            end = datetime(int(y), int(mo), int(d), tzinfo=timezone.utc) + timedelta(days=1)
        else:
            end = datetime(int(y), int(mo), int(d), int(hh), int(mm), tzinfo=timezone.utc)
    except ValueError:
        raise ValueError(f"{t!r} is not a real date: {how}") from None
    except OverflowError:  # the day after 9999-12-31
        raise ValueError(f"{t!r} is past the last day ncui can count to: type an earlier date") from None
    if end <= now:
        raise ValueError(f"{t!r} has already passed (it is {now:%Y-%m-%d %H:%M} UTC now)")
    return end


Kind = Literal["market", "vm", "none"]


def limit_kind(store: Store) -> Kind:
    """What a spending limit can stop on the active cluster: a market Kubernetes cluster's limit price (and runs),
    a VM cluster's capacity, or nothing (a fixed or Slurm cluster, a public-research organization)."""
    ref, info = store.meta.get("cluster"), store.value("cluster")
    if ref is not None and ref.kind == "vm":
        return "vm"
    if ref is not None and ref.kind == "kubernetes" and (info is None or info.name != ref.name or info.market):
        return "market"
    return "none"


def stops(kind: Kind, stop_runs: bool) -> str:
    """What ncui does at 100%, in one sentence (the question that sets the limit, Lease, the last warning)."""
    if kind == "vm":
        return "At 100% ncui releases your VM capacity: billing stops, and every node is destroyed with its disk."
    if kind == "none":
        return "At 100% ncui only warns: nothing here is withdrawn or stopped."
    if stop_runs:
        return (
            "At 100% ncui withdraws your limit price (no new nodes) and stops your runs on GPU nodes (their Jobs "
            "and Deployments; the shared volume keeps what they wrote); billing ends when the idle nodes go back, "
            "a few minutes later."
        )
    return (
        "At 100% ncui withdraws your limit price: no new nodes. A run on a node you hold goes on, billed, until "
        "it ends (you did not choose to stop runs)."
    )


LIMIT_SLICE = "spend_limit"  # the Limit in force (or None): the header and Lease redraw on it


def limit_state(store: Store) -> LimitState | None:
    """The spending limit in force and where spending stands against it, or None when none is set."""
    limit = store.value(LIMIT_SLICE)
    now = store.meta.get("service_now")
    if limit is None or now is None:
        return None
    state: LimitState = evaluate(limit, store.get("transactions"), now(), store.now())
    return state


def spent_since_start(store: Store) -> tuple[int | None, bool, datetime | None]:
    """What the meter charged since ncui started (charge transactions after it connected), whether older
    charges may be missing, and the start (the service's clock); None when not read."""
    start, txs = store.meta.get("session_start"), store.value("transactions")
    if start is None or txs is None or unread_charge(txs, start):
        return None, False, start
    spent, partial = charged_since(txs, start)
    return spent, partial, start


# ---- remembered across restarts ------------------------------------------------------------------


def limits_path() -> Path:
    from .config import state_dir

    return state_dir() / "limits.json"


# A limits file set aside takes the spending limits it held with it: said in its notice, not left to be guessed.
LOST = ": no spending limit it held counts now (b on Lease sets one again)"


def key_for(api: str, org_id: str) -> str:
    """One limit per service and organization (the meter charges the organization)."""
    return f"{api.rstrip('/')}|{org_id}"


def _read(path: Path) -> dict[str, Any]:
    # a broken file is set aside and said, never a crash
    limits = statefile.read(path, FILE_VERSION, OLDER_VERSIONS, LOST).get("limits")
    return limits if isinstance(limits, dict) else {}


def load(key: str, path: Path | None = None) -> Limit | None:
    entry = _read(path or limits_path()).get(key)
    if not isinstance(entry, dict):
        return None
    try:
        return Limit.from_json(entry)
    except (KeyError, TypeError, ValueError) as e:
        log.warning("ignoring a spending limit that cannot be read: %s", e)
        return None


def save(key: str, limit: Limit | None, path: Path | None = None) -> None:
    """Write (or, with None, forget) this key's limit; other keys stay (statefile: atomic, locked, mode 600).
    Raises OSError when the state directory cannot be written (the caller says so)."""

    def change(data: dict[str, Any]) -> dict[str, Any]:
        limits = statefile.obj(data.get("limits"))
        if limit is None:
            limits.pop(key, None)
        else:
            limits[key] = limit.to_json()
        return {"limits": limits}

    statefile.update(path or limits_path(), FILE_VERSION, change, OLDER_VERSIONS, LOST)


def kept(limit: Limit) -> Limit:
    return replace(limit, kept=True)


__all__ = [
    "Limit",
    "LimitState",
    "WARN_PERCENT",
    "COUNTDOWN_S",
    "charged_since",
    "unread_charge",
    "evaluate",
    "parse_until",
    "scope_words",
    "load",
    "save",
    "key_for",
    "limits_path",
    "kept",
    "LIMIT_SLICE",
    "limit_kind",
    "stops",
    "limit_state",
    "spent_since_start",
]
