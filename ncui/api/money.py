"""The contract's price type: dollars on the wire, integer micro-credits in Python (see ``ncui.money``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

from ..money import MAX_DOLLARS, dollars_to_ucredits, ucredits_to_dollars, usd


def _wire_price(value: Any) -> int:
    """A price as the contract sends it: a JSON number of dollars (strings are refused)."""
    if isinstance(value, str):
        raise ValueError("must be a number of dollars, like 4.10, not a string")
    return dollars_to_ucredits(value)


# A price per GPU hour: dollars whenever it is given or dumped (``Model(price=usd(p))``,
# ``model_dump()`` and JSON alike), integer micro-credits when read as an attribute.
Price = Annotated[
    int,
    BeforeValidator(_wire_price),
    PlainSerializer(ucredits_to_dollars, return_type=float, when_used="always"),
    WithJsonSchema({"type": "number", "minimum": 0, "maximum": MAX_DOLLARS, "description": "US dollars per GPU hour"}),
]

__all__ = ["Price", "usd"]
