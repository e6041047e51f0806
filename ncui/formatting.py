"""Small, exact formatting for people: ages, runways, rates, plans. No Textual."""

from __future__ import annotations

import os
from datetime import datetime

from .money import CENT, cost_ucredits, fmt_price, fmt_usd

COVER_HOURS = 2  # a Kubernetes job is refused unless the balance covers two hours at the ceiling


def fmt_age(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h}h {m}m" if m else f"{h}h"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def fmt_rate(ucredits_per_hour: int | None) -> str:
    return "—" if ucredits_per_hour is None else f"{fmt_usd(ucredits_per_hour)}/h"


def runway_hours(balance: int, burn_per_hour: int) -> float | None:
    if burn_per_hour <= 0:
        return None
    return max(0.0, balance / burn_per_hour)


def fmt_runway(balance: int | None, burn_per_hour: int | None) -> str:
    if balance is None or burn_per_hour is None:
        return "—"
    if burn_per_hour <= 0:
        return "no burn"
    h = runway_hours(balance, burn_per_hour) or 0.0
    if h < 1:
        return f"{int(h * 60)} min"
    if h < 48:
        return f"{h:.1f} h"
    return f"{h / 24:.1f} days"


def fmt_clock(t: datetime | None) -> str:
    return "—" if t is None else t.strftime("%H:%M")


def plan_sentence(
    gpus: int, ceiling: int, balance: int, purchases: bool, *, hours: int = COVER_HOURS
) -> tuple[str, int]:
    """The guide's money check as a sentence, and the top-up needed (0 when covered).

    "8 GPUs × $5.00 × 2 h = $80.00; you have $42.10; top up $37.90 on the console's Billing page"
    """
    need = cost_ucredits(ceiling, gpus, hours)
    head = f"{gpus} GPUs × {fmt_usd(ceiling, exact=True)} × {hours} h = {fmt_usd(need, exact=True)}"
    if balance >= need:
        return f"{head}; you have {fmt_usd(balance)}: covered.", 0
    short = need - balance
    return f"{head}; you have {fmt_usd(balance)}; {topup_words(short, purchases)}.", short


def topup_words(short: int, purchases: bool) -> str:
    """What to do about ``short`` µcredits missing: "top up $37.90 on the console's Billing page"."""
    topup = fmt_usd(-(-short // CENT) * CENT)  # up to the cent: a top-up of the figure shown always covers
    return (
        "top up " + topup + " on the console's Billing page"
        if purchases
        else "ask your organization's admin to add " + topup + " (this account cannot buy credits)"
    )


__all__ = [
    "fmt_age",
    "fmt_rate",
    "fmt_runway",
    "fmt_clock",
    "plan_sentence",
    "topup_words",
    "fmt_price",
    "fmt_usd",
    "runway_hours",
    "COVER_HOURS",
]


def short_names(names: list[str], width: int) -> dict[str, str]:
    """Each name as it fits in ``width`` cells, told apart from the others: a name that fits stays whole; a
    longer one drops the prefix it shares (at a ``-``) with another name for "…", then, still too long, keeps
    its start and its last part (a pod's random suffix) around a "…" in the middle. So three pods of one recipe,
    ``finance-analyst-tune-x7k2p``, ``finance-analyst-launcher-5f6d7c9b8-q2w4r`` and
    ``finance-analyst-5f6d7c9b8-z9y8x``, read ``…tune-x7k2p``, ``…launcher…q2w4r``, ``finance-a…z9y8x`` at 15,
    not ``finance-analyst`` three times."""
    out: dict[str, str] = {}
    for name in names:
        if len(name) <= width or width < 5:
            out[name] = name
            continue
        shared = 0  # the longest prefix, up to and including a "-", this name shares with another
        for other in names:
            if other == name:
                continue
            n = len(os.path.commonprefix([name, other]))
            cut = name.rfind("-", 0, n) + 1
            shared = max(shared, cut)
        rest = name[shared:]
        word = rest.split("-", 1)[0]  # what follows the shared prefix: a name ("tune"), or a pod's hash
        shown = "…" + rest if shared and "-" in rest and not any(c.isdigit() for c in word) else name
        if len(shown) > width:
            tail = shown.rsplit("-", 1)[-1] if "-" in shown else ""
            tail = tail if 0 < len(tail) <= width // 2 else shown[-(width // 3) :]
            head = shown[: width - 1 - len(tail)]
            base, dash, part = head.rpartition("-")
            if dash and base.strip("…") and any(c.isdigit() for c in part):  # no stub of a hash before the "…"
                head = base
            shown = head + "…" + tail
        out[name] = shown
    return out


def clip_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with "…" when cut (a word alone longer than
    ``limit`` is cut inside it): never mid-word where a space was near."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    cut = head.rfind(" ")
    return (head[:cut] if cut > limit // 2 else head).rstrip(" ,;:") + "…"
