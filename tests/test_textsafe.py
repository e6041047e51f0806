"""textsafe: nothing from outside can drive the terminal — every C0/C1 control and bidi control gone, escape
sequences removed whole, printable text intact; and every path of server text goes through it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ncui.api.errors import error_from_response
from ncui.kube.client import KubeError
from ncui.kube.logs import clean_line
from ncui.textsafe import clean, clean_json, loads_clean

BIDI = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)]
CONTROLS = [chr(c) for c in range(0x00, 0xA0) if c < 0x20 or c >= 0x7F]  # C0, DEL, C1
FORBIDDEN = set(CONTROLS + BIDI)
# Every code point U+0000–U+009F plus the bidi set, each alone between printable text.
EVERY = [chr(c) for c in range(0x00, 0xA0)] + BIDI


def _safe(text: str, *, newlines: bool = False) -> bool:
    return not (set(text) & (FORBIDDEN - ({"\n"} if newlines else set())))


@pytest.mark.parametrize("ch", EVERY, ids=[f"U+{ord(c):04X}" for c in EVERY])
def test_every_code_point_of_c0_c1_and_bidi(ch):
    for multiline in (False, True):
        out = clean(f"ab{ch}cd", multiline=multiline)
        assert _safe(out, newlines=multiline), (ch, out)
        if ch >= " " and ch not in FORBIDDEN:  # printable ASCII stays as it was
            assert out == f"ab{ch}cd"
        elif ch == "\t":
            assert out == "ab    cd"
        elif ch in "\n\r":
            assert out == ("ab\ncd" if multiline and ch == "\n" else "abcd" if multiline else "ab cd")
        else:  # a control: gone; what follows it may be eaten only by a sequence it starts, never the text before
            assert out.startswith("ab") and out in ("abcd", "abd", "ab")
    # the log's own form keeps a tab (the pane expands it), and is as safe
    assert _safe(clean_line(f"ab{ch}cd").replace("\t", ""))


SEQUENCES = [
    ("\x1b[1;31m", "CSI"),
    ("\x9b1;31m", "8-bit CSI"),
    ("\x1b[?1049h", "CSI private"),
    ("\x1b]0;evil title\x07", "OSC BEL"),
    ("\x1b]8;;http://x\x1b\\", "OSC ST"),
    ("\x9d0;evil\x9c", "8-bit OSC"),
    ("\x1bPqdcs body\x1b\\", "DCS"),
    ("\x90qdcs body\x9c", "8-bit DCS"),
    ("\x1b_apc body\x1b\\", "APC"),
    ("\x9fapc body\x9c", "8-bit APC"),
    ("\x1b^pm body\x1b\\", "PM"),
    ("\x9epm\x9c", "8-bit PM"),
    ("\x1bXsos\x1b\\", "SOS"),
    ("\x98sos\x9c", "8-bit SOS"),
    ("\x1bc", "RIS"),
    ("\x1b(B", "charset"),
    ("\x1b7", "save cursor"),
    ("\x8d", "RI"),
    ("\x85", "NEL"),
]


@pytest.mark.parametrize("seq,name", SEQUENCES, ids=[n for _, n in SEQUENCES])
def test_a_sequence_is_removed_whole(seq, name):
    assert clean(f"before {seq}after") == "before after"
    assert clean(f"before {seq}after", multiline=True) == "before after"
    assert clean_line(f"before {seq}after") == "before after"


def test_unterminated_strings_end_at_the_line_and_lines_survive():
    assert clean("ok \x1b]0;title never ends") == "ok "
    assert clean("one \x9d0;title\ntwo", multiline=True) == "one \ntwo"  # a string never eats the next line
    assert clean("a\r\nb\rc", multiline=True) == "a\nbc"


printable = st.text(st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="".join(BIDI)))
anything = st.lists(
    st.one_of(
        st.characters(blacklist_categories=("Cs",)),
        st.sampled_from(EVERY),
        st.sampled_from(["\x1b[", "\x1b]", "\x1bP", "\x1b\\", "\x07", "\x9c"]),
    )
).map("".join)


@settings(max_examples=300, deadline=None)
@given(printable)
def test_printable_text_survives_intact(text):
    assert clean(text) == text and clean(text, multiline=True) == text and clean_line(text) == text


@settings(max_examples=500, deadline=None)
@given(anything)
def test_nothing_forbidden_survives_any_text(text):
    assert _safe(clean(text)) and _safe(clean(text, multiline=True), newlines=True)
    assert _safe(clean_line(text).replace("\t", ""))


def test_clean_json_cleans_every_string_and_keeps_line_breaks_where_asked():
    doc = {
        "org_name": "Evil\u202eCorp\x1b]0;t\x07",
        "n": 3,
        "items": [{"description": "l1\nl2\x9b2J", "x": None}],
        "k\x85": "v",
    }
    assert clean_json(doc, frozenset({"description"})) == {
        "org_name": "EvilCorp",
        "n": 3,
        "items": [{"description": "l1\nl2", "x": None}],
        "k": "v",
    }


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(anything, st.one_of(anything, st.lists(anything, max_size=3)), max_size=4), st.booleans())
def test_loads_clean_is_clean_json_of_the_document_however_it_was_written(doc, ascii_only):
    """The watch's fast path (skip the walk when the text cannot hold anything to clean) cleans what the walk
    would: escaped (\\u001b, \\t) or written raw (a C1 or bidi character with ensure_ascii off)."""
    import json

    text = json.dumps(doc, ensure_ascii=ascii_only)
    assert loads_clean(text) == clean_json(json.loads(text))


def test_loads_clean_leaves_a_clean_document_as_decoded():
    text = '{"metadata": {"name": "nanogpt-x2k4z", "annotations": {"a": "{\\"b\\": \\"c\\"}"}}, "n": 1}'
    assert loads_clean(text) == {"metadata": {"name": "nanogpt-x2k4z", "annotations": {"a": '{"b": "c"}'}}, "n": 1}
    assert loads_clean('{"m": "a\\u001b[2Jb\\tc", "k\\u0085": "\\u202ex"}') == {"m": "ab    c", "k": "x"}


def test_loads_clean_takes_what_json_takes_where_orjson_refuses():
    """The fast decoder refuses NaN and a lone surrogate; json takes them, and so does loads_clean (a lone surrogate
    is no control: kept, as json.loads keeps it). What neither takes is a ValueError."""
    import math

    assert math.isnan(loads_clean('{"a": NaN}')["a"])
    assert loads_clean('["\\ud800x"]') == ["\ud800x"]
    with pytest.raises(ValueError):
        loads_clean('{"a": ')


def test_errors_of_both_apis_are_clean():
    e = error_from_response(422, {"error": "invalid", "detail": "bad\x9d0;x\x9c \u202eeman \x1b[2Jvalue"}, what="x")
    assert _safe(str(e)) and "bad eman value" in str(e)
    k = KubeError(422, "In\x1b[8mvalid\u202e", "spec\x90q\x9c is \u2066wrong\x85\nhere")
    assert _safe(str(k)) and k.message == "spec is wrong here" and k.reason == "Invalid"
