"""The box's money: integer micro-credits held everywhere, dollars only at its edges. One home in ``sim/``.

The box is an oracle independent of ncui's client (it never imports ``ncui.money``), so it has these few
conversions of its own: every dollar figure the box writes in words (admission refusals, the scheduler's
reasons, the market's floor), every price it puts on the wire (exact ``Decimal`` dollars for the contract's
``Price`` fields) and every dollar amount it reads (a scenario's balance, a sim top-up) goes through here.
1,000,000 micro-credits = $1.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

USD = 1_000_000  # micro-credits in a dollar
CENT = 10_000  # micro-credits in a cent


def usd(ucredits: int) -> str:
    """``$1,234.56``: micro-credits to the cent, rounded half-even, from the integer (no float on the way). A
    negative amount reads ``$-1.50``, as the box has always written it."""
    cents, rest = divmod(abs(ucredits), CENT)
    if rest * 2 > CENT or (rest * 2 == CENT and cents % 2):
        cents += 1
    sign = "-" if ucredits < 0 else ""
    return f"${sign}{cents // 100:,}.{cents % 100:02d}"


def dollars(ucredits: int) -> Decimal:
    """Micro-credits as exact dollars: what the contract's ``Price`` fields are built from."""
    return Decimal(ucredits) / USD


def ucredits(dollars: float | int) -> int:
    """A dollar amount (a scenario's balance, a top-up's ``usd``) as micro-credits, exactly: ``4.10`` is
    4,100,000, not the 4,099,999 that ``int(4.10 * 1e6)`` gives."""
    d = Decimal(dollars) if isinstance(dollars, int) else Decimal(repr(float(dollars)))
    return int((d * USD).to_integral_value(rounding=ROUND_HALF_EVEN))


def to_cent(ucredits: float) -> int:
    """A modelled amount (the market's bidders drift in floats) rounded to a whole cent, in micro-credits."""
    return int(round(ucredits / CENT)) * CENT
