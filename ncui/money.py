"""Money: integer micro-credits everywhere, dollars only at the edges. No pydantic, no Textual.

1,000,000 micro-credits = $1. Balances travel as integers (``*_ucredits``); prices per GPU hour travel
as dollar numbers on the wire (``max_price_per_gpu_hour: 4.1``) and are held as integer micro-credits
in Python (``ncui.api.money.Price``), so every sum and comparison is exact.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Any

UCREDITS_PER_DOLLAR = 1_000_000
CENT = 10_000  # micro-credits
MAX_DOLLARS = 1_000_000  # the contract's bound on a price (and our bound on any amount typed)


def dollars_to_ucredits(value: Any) -> int:
    """Parse a dollar amount as the wire or a program gives it (a number, or a Decimal-syntax string) into
    integer micro-credits. What a person types goes through ``parse_dollars`` instead.

    Raises ValueError with a human sentence for anything that is not a finite, non-negative amount.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError("must be a number of dollars, like 4.10")
    if isinstance(value, int):
        d = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("must be a finite number of dollars")
        d = Decimal(repr(value))
    elif isinstance(value, (str, Decimal)):
        text = str(value).strip()
        try:
            d = Decimal(text)
        except InvalidOperation:
            raise ValueError(f"{str(value)[:40]!r} is not a number of dollars, like 4.10") from None
        if not d.is_finite():
            raise ValueError("must be a finite number of dollars")
    else:
        raise ValueError("must be a number of dollars, like 4.10")
    if d < 0:
        raise ValueError("cannot be negative")
    if d > MAX_DOLLARS:
        raise ValueError("is implausibly large (over $1,000,000)")
    return int((d * UCREDITS_PER_DOLLAR).to_integral_value(rounding=ROUND_HALF_EVEN))


# What a person may type for money: ASCII digits, at most one '.', an optional leading '$'. Nothing else is
# read another way: '4,10' is not $410, '3_5' is not $35, '٤' is not 4, and 1e3, inf and nan are not prices.
_TYPED = re.compile(r"\$?([0-9]+)(?:\.([0-9]+))?")
_HOW = "type dollars and cents, like 4.10"


def parse_dollars(text: str, *, keep: int | None = None) -> int:
    """What a person typed for an amount of dollars, read strictly, as integer micro-credits.

    Cents are the precision: more decimals are refused (never rounded into another number), except a
    ``keep`` amount (a standing limit set elsewhere, e.g. $4.105) typed exactly, which is that amount.
    Raises ValueError with a sentence that says what to type.
    """
    t = text.strip()
    shown = repr(t if len(t) <= 20 else t[:20] + "…")
    m = _TYPED.fullmatch(t)
    if m is None:
        if t.startswith("-") and _TYPED.fullmatch(t[1:]):
            raise ValueError(f"cannot be negative: {_HOW}")
        if any(ch in t for ch in ",_'’ "):
            raise ValueError(f"{shown}: no thousands separators or spaces; {_HOW}")
        if any(ch.isdigit() and not ch.isascii() for ch in t):
            raise ValueError(f"{shown}: only the digits 0-9; {_HOW}")
        raise ValueError(f"{shown} is not an amount of dollars: {_HOW} (digits 0-9, one '.', optional $)")
    whole, frac = m.group(1).lstrip("0") or "0", m.group(2) or ""
    big = f"{shown} is implausibly large (over {fmt_usd(MAX_DOLLARS * UCREDITS_PER_DOLLAR, cents=False)})"
    if len(whole) > len(str(MAX_DOLLARS)):  # before any arithmetic on a 10 kB paste of digits
        raise ValueError(big)
    value = int(whole) * UCREDITS_PER_DOLLAR + int(frac[:6].ljust(6, "0"))
    if len(frac) > 2 and not (len(frac) <= 6 and keep is not None and value == keep):
        raise ValueError(f"{shown} has more than two decimals: {_HOW}")
    if value > MAX_DOLLARS * UCREDITS_PER_DOLLAR:
        raise ValueError(big)
    return value


def dollars_text(ucredits: int) -> str:
    """Micro-credits as the plain text ``parse_dollars`` reads back to the same amount: ``4.10``, ``4.105``."""
    return f"{_exact(ucredits):f}"


def _exact(ucredits: int) -> Decimal:
    """Exact dollars: two places when a whole cent, else as many as it takes (at most six)."""
    d = Decimal(ucredits) / UCREDITS_PER_DOLLAR
    return d.quantize(Decimal("0.01")) if ucredits % CENT == 0 else d.normalize()


def ucredits_to_dollars(ucredits: int) -> float:
    """Dollars as a float: the wire form of a price (a JSON number, exact to the micro-credit) and a chart's
    value. (Python divides two ints correctly rounded: the float nearest the exact quotient, as through Decimal.)"""
    return ucredits / UCREDITS_PER_DOLLAR


def usd(ucredits: int) -> Decimal:
    """Micro-credits as exact dollars: what a ``Price`` field is constructed from."""
    return Decimal(ucredits) / UCREDITS_PER_DOLLAR


def fmt_usd(ucredits: int | None, *, cents: bool = True, sign: bool = False, exact: bool = False) -> str:
    """Format micro-credits as dollars: ``$1,234.56`` (or ``-$3.20``); ``—`` for None.

    Rounds half-even to the cent; ``cents=False`` rounds to whole dollars. ``exact=True`` never rounds: an
    amount finer than cents shows every digit it has (``$4.105``), as a price or a ceiling must.
    """
    if ucredits is None:
        return "—"
    if exact:
        d = _exact(ucredits)
        body = f"{abs(d):,f}"
    else:
        d = Decimal(ucredits) / UCREDITS_PER_DOLLAR
        q = Decimal("0.01") if cents else Decimal("1")
        d = d.quantize(q, rounding=ROUND_HALF_EVEN)
        body = f"{abs(d):,.2f}" if cents else f"{abs(d):,.0f}"
    neg = d < 0
    prefix = "-" if neg else ("+" if sign and d > 0 else "")
    return f"{prefix}${body}"


def fmt_price(ucredits_per_gpu_hour: int | None) -> str:
    """A price per GPU hour, exactly: ``$4.10/GPU-h``, and ``$4.105/GPU-h`` for a limit set finer than cents
    (never rounded into another number)."""
    if ucredits_per_gpu_hour is None:
        return "—"
    return f"{fmt_usd(ucredits_per_gpu_hour, exact=True)}/GPU-h"


def cost_ucredits(price_per_gpu_hour: int, gpus: int, hours: float | int) -> int:
    """price × GPUs × hours, in micro-credits, rounded half-even (exact for whole hours)."""
    exact = Decimal(price_per_gpu_hour) * gpus * Decimal(str(hours))
    return int(exact.to_integral_value(rounding=ROUND_HALF_EVEN))
