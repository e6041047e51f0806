"""Money is integer micro-credits; dollars only at the edges, and input is refused with a reason."""

from __future__ import annotations

import pytest

from ncui.api import models as m
from ncui.money import cost_ucredits, dollars_to_ucredits, fmt_price, fmt_usd, usd


@pytest.mark.parametrize("text,uc", [("4.10", 4_100_000), ("$4.1", 4_100_000), (" 5 ", 5_000_000),
                                     (0.1, 100_000), (3, 3_000_000), ("1,000", 1_000_000_000)])
def test_parse(text, uc):
    assert dollars_to_ucredits(text) == uc


@pytest.mark.parametrize("bad,why", [("abc", "not a number"), (-1, "negative"), ("-0.5", "negative"),
                                     (float("nan"), "finite"), ("inf", "finite"), (True, "number"),
                                     (None, "number"), ("1e12", "implausibly")])
def test_refuse(bad, why):
    with pytest.raises(ValueError) as ei:
        dollars_to_ucredits(bad)
    assert why in str(ei.value)


def test_format():
    assert fmt_usd(42_100_000) == "$42.10"
    assert fmt_usd(-3_200_000) == "-$3.20"
    assert fmt_usd(1_234_567_890) == "$1,234.57"
    assert fmt_usd(None) == "—"
    assert fmt_price(4_100_000) == "$4.10/GPU-h"


def test_the_seeds_arithmetic():
    # 8 GPUs × $5.00 × 2 h = $80.00
    assert cost_ucredits(5_000_000, 8, 2) == 80_000_000
    assert fmt_usd(cost_ucredits(5_000_000, 8, 2)) == "$80.00"


def test_price_is_dollars_on_the_wire_and_micro_credits_in_python():
    bid = m.BidRequest.model_validate_json('{"max_price_per_gpu_hour": 4.1}')
    assert bid.max_price_per_gpu_hour == 4_100_000
    assert bid.model_dump_json() == '{"max_price_per_gpu_hour":4.1}'
    assert m.BidRequest(max_price_per_gpu_hour=usd(3_333_333)).max_price_per_gpu_hour == 3_333_333
    with pytest.raises(ValueError):
        m.BidRequest.model_validate_json('{"max_price_per_gpu_hour": "4.1"}')  # the contract sends numbers


def test_unknown_fields_are_accepted():
    who = m.Whoami.model_validate({"user": {"id": "u", "email": "e"}, "org_id": "o", "org_name": "n",
                                   "org_kind": "research", "clusters": [], "new_field": 1})
    assert who.org_name == "n"
