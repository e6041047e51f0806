"""``ncui doctor``: know before the first real run whether this machine and the service are what ncui expects.

No Textual here. Each check is a ``Check``: one line with ✓ / ! / ✗, the reason and what to do. ``contract.py``
compares the service's OpenAPI documents and catalog with what ncui's own code reads (its models, its client's
table of requests, the enum values its code matches on); ``machine.py`` looks at this machine (token, kubectl,
ssh, the clock, the terminal, where state is kept); ``run.py`` fetches and puts them together.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

OK, WARN, FAIL = "ok", "warn", "fail"
MARK = {OK: "✓", WARN: "!", FAIL: "✗"}


@dataclass
class Check:
    """One line of the report. ``check``: a stable name (``token``, ``contract GET /api/whoami``, …); ``status``:
    ok | warn | fail; ``details``: what ``--verbose`` adds (fields the service added, values it lists)."""

    check: str
    status: str
    reason: str
    fix: str = ""
    details: list[str] = field(default_factory=list)


def exit_code(checks: list[Check], strict: bool = False) -> int:
    """0 when nothing failed (warnings allowed), 1 when anything did; ``strict``: a warning fails too."""
    bad = {FAIL, WARN} if strict else {FAIL}
    return 1 if any(c.status in bad for c in checks) else 0


def render_text(checks: list[Check], verbose: bool = False) -> str:
    from ..textsafe import clean

    lines = []
    for c in checks:
        line = f"{MARK[c.status]} {clean(c.check)}: {clean(c.reason)}"
        if c.fix and c.status != OK:
            line += f" → {clean(c.fix)}"
        lines.append(line)
        if verbose:
            lines += [f"    {clean(d)}" for d in c.details]
    fails = sum(c.status == FAIL for c in checks)
    warns = sum(c.status == WARN for c in checks)
    lines.append(
        "ncui doctor: "
        + ("no problems found" if not fails and not warns else f"{fails} problem(s), {warns} warning(s)")
        + ("" if verbose else " (--verbose for details)")
    )
    return "\n".join(lines)


def render_json(checks: list[Check]) -> str:
    """A list of ``{check, status, reason, fix, details}``: the stable shape for scripts and agents."""
    return json.dumps([asdict(c) for c in checks], indent=1, ensure_ascii=False)


__all__ = ["Check", "FAIL", "OK", "WARN", "exit_code", "render_json", "render_text"]
