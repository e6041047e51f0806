"""Money: integer micro-credits everywhere, dollars only at the edges. No pydantic, no Textual.

1,000,000 micro-credits = $1. Balances travel as integers (``*_ucredits``); prices per GPU hour travel
as dollar numbers on the wire (``max_price_per_gpu_hour: 4.1``) and are held as integer micro-credits
in Python (``ncui.api.money.Price``), so every sum and comparison is exact.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation, ROUND_HALF_EVEN
from typing import Any

UCREDITS_PER_DOLLAR = 1_000_000


def dollars_to_ucredits(value: Any) -> int:
    """Parse a dollar amount (number or numeric string) into integer micro-credits.

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
        text = str(value).strip().lstrip("$").replace(",", "").strip()
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
    if d > 1_000_000:
        raise ValueError("is implausibly large (over $1,000,000)")
    return int((d * UCREDITS_PER_DOLLAR).to_integral_value(rounding=ROUND_HALF_EVEN))


def ucredits_to_dollars(ucredits: int) -> float:
    """The wire form of a price: dollars as a JSON number (exact to the micro-credit)."""
    return float(Decimal(ucredits) / UCREDITS_PER_DOLLAR)


def usd(ucredits: int) -> Decimal:
    """Micro-credits as exact dollars: what a ``Price`` field is constructed from."""
    return Decimal(ucredits) / UCREDITS_PER_DOLLAR


def fmt_usd(ucredits: int | None, *, cents: bool = True, sign: bool = False) -> str:
    """Format micro-credits as dollars: ``$1,234.56`` (or ``-$3.20``); ``—`` for None.

    Rounds half-even to the cent; ``cents=False`` rounds to whole dollars.
    """
    if ucredits is None:
        return "—"
    d = Decimal(ucredits) / UCREDITS_PER_DOLLAR
    q = Decimal("0.01") if cents else Decimal("1")
    d = d.quantize(q, rounding=ROUND_HALF_EVEN)
    neg = d < 0
    body = f"{abs(d):,.2f}" if cents else f"{abs(d):,.0f}"
    prefix = "-" if neg else ("+" if sign and d > 0 else "")
    return f"{prefix}${body}"


def fmt_price(ucredits_per_gpu_hour: int | None) -> str:
    """A price per GPU hour, e.g. ``$4.10/GPU-h``."""
    if ucredits_per_gpu_hour is None:
        return "—"
    return f"{fmt_usd(ucredits_per_gpu_hour)}/GPU-h"


def cost_ucredits(price_per_gpu_hour: int, gpus: int, hours: float | int) -> int:
    """price × GPUs × hours, in micro-credits, rounded half-even (exact for whole hours)."""
    exact = Decimal(price_per_gpu_hour) * gpus * Decimal(str(hours))
    return int(exact.to_integral_value(rounding=ROUND_HALF_EVEN))

