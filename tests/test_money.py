"""Money is integer micro-credits; dollars only at the edges, and input is refused with a reason."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ncui.api import models as m
from ncui.money import cost_ucredits, dollars_text, dollars_to_ucredits, fmt_price, fmt_usd, parse_dollars, usd


@pytest.mark.parametrize(
    "text,uc",
    [
        ("4.10", 4_100_000),
        ("4.1", 4_100_000),
        (" 5 ", 5_000_000),
        (0.1, 100_000),
        (3, 3_000_000),
        ("1000", 1_000_000_000),
    ],
)
def test_parse(text, uc):
    assert dollars_to_ucredits(text) == uc


# ---- what a person types: strict, cents, refused with what to type ------------------------------------

TYPED = re.compile(r"\$?[0-9]+(\.[0-9]{1,2})?")


@pytest.mark.parametrize(
    "text,uc",
    [
        ("4.10", 4_100_000),
        ("$4.1", 4_100_000),
        (" 5 ", 5_000_000),
        ("0.05", 50_000),
        ("1000000", 1_000_000_000_000),
        ("007", 7_000_000),
    ],
)
def test_typed_dollars(text, uc):
    assert parse_dollars(text) == uc


@pytest.mark.parametrize(
    "bad,why",
    [
        ("4.105", "more than two decimals: type dollars and cents, like 4.10"),
        ("4,10", "no thousands separators"),
        ("1,000", "no thousands separators"),
        ("3_5", "no thousands separators"),
        ("٤", "only the digits 0-9"),
        ("4.1٠", "only the digits 0-9"),
        ("1e3", "is not an amount of dollars"),
        ("inf", "is not an amount of dollars"),
        ("nan", "is not an amount of dollars"),
        ("-1", "cannot be negative"),
        ("abc", "is not an amount of dollars"),
        ("4.", "is not an amount of dollars"),
        ("+4", "not an amount"),
        ("1000000.01", "implausibly large"),
        ("9" * 10_000, "implausibly large"),
        ("0x10", "not an amount"),
    ],
)
def test_typed_dollars_refused_with_what_to_type(bad, why):
    with pytest.raises(ValueError) as ei:
        parse_dollars(bad)
    assert why in str(ei.value) and ("type dollars and cents, like 4.10" in str(ei.value) or "large" in why)
    assert len(str(ei.value)) < 120  # a 10 kB paste is not echoed back


def test_a_standing_limit_finer_than_cents_is_kept_only_exactly():
    assert parse_dollars("4.105", keep=4_105_000) == 4_105_000  # as it stands
    assert parse_dollars("4.10", keep=4_105_000) == 4_100_000  # or cents
    with pytest.raises(ValueError, match="more than two decimals"):
        parse_dollars("4.106", keep=4_105_000)  # never another sub-cent figure
    with pytest.raises(ValueError, match="more than two decimals"):
        parse_dollars("4.105", keep=4_100_000)


@given(st.text(alphabet=st.sampled_from("0123456789.$,_-+e ٤x\n"), max_size=12) | st.text(max_size=12))
def test_typed_dollars_grammar(text):
    """Accepted iff it is ASCII digits, at most two decimals, an optional $, and at most $1,000,000."""
    try:
        value = parse_dollars(text)
    except ValueError as e:
        assert str(e)
        t = text.strip()
        assert not TYPED.fullmatch(t) or float(t.lstrip("$")) > 1_000_000
        return
    assert TYPED.fullmatch(text.strip())
    assert value == round(float(text.strip().lstrip("$")) * 1_000_000) and 0 <= value <= 10**12


@given(st.integers(min_value=0, max_value=10**12))
def test_shown_amounts_read_back_exactly(uc):
    """The text shown for an amount (prefill, header, confirmation) reads back to that amount, never another."""
    assert parse_dollars(dollars_text(uc), keep=uc) == uc
    assert parse_dollars(fmt_price(uc).removesuffix("/GPU-h").replace(",", ""), keep=uc) == uc
    if uc % 10_000 == 0:  # whole cents: read back without any standing limit
        assert parse_dollars(dollars_text(uc)) == uc


@pytest.mark.parametrize(
    "bad,why",
    [
        ("abc", "not a number"),
        (-1, "negative"),
        ("-0.5", "negative"),
        (float("nan"), "finite"),
        ("inf", "finite"),
        (True, "number"),
        (None, "number"),
        ("1e12", "implausibly"),
    ],
)
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
    assert fmt_price(4_105_000) == "$4.105/GPU-h"  # a limit finer than cents is shown exactly, never $4.10
    assert fmt_usd(1_234_567_891, exact=True) == "$1,234.567891"
    assert dollars_text(4_105_000) == "4.105" and dollars_text(4_100_000) == "4.10"


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
    who = m.Whoami.model_validate(
        {
            "user": {"id": "u", "email": "e"},
            "org_id": "o",
            "org_name": "n",
            "org_kind": "research",
            "clusters": [],
            "new_field": 1,
        }
    )
    assert who.org_name == "n"


def test_a_top_up_shown_always_covers():
    from ncui.formatting import plan_sentence

    # 8 GPUs × $4.105 × 2 h = $65.68 exactly; with $65.675 held, $0.005 is short: the top-up shown is a cent
    sentence, short = plan_sentence(8, 4_105_000, 65_675_000, True)
    assert short == 5_000 and "top up $0.01 on" in sentence
    sentence, short = plan_sentence(8, 4_105_000, 65_665_000, True)  # $0.015 short: $0.02, never $0.01
    assert short == 15_000 and "top up $0.02 on" in sentence


def test_a_clipped_sentence_ends_at_a_word():
    from ncui.formatting import clip_words

    said = "Not signed in to halcyon: its kubeconfig was not saved and no context was added."
    assert clip_words(said, 200) == said
    cut = clip_words(said, 60)
    assert len(cut) <= 60 and cut.endswith("…") and said.startswith(cut[:-1])
    assert cut[:-1].split()[-1] in said.split()  # the last word kept is whole ("and", not "and n")
    assert clip_words("x" * 100, 10) == "x" * 9 + "…"  # one word longer than the room is cut inside it
