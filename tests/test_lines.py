"""The one line-splitting rule of the follows (``ncui/lines.py``)."""

from __future__ import annotations

from ncui.lines import LineSplitter


def test_reads_become_whole_lines_across_cuts():
    split = LineSplitter()
    assert split.feed(b"iter 1: loss 2.5\niter 2") == ["iter 1: loss 2.5"]
    assert split.feed(b": loss") == []  # no newline yet: nothing
    assert split.feed(b" 2.4\r\niter 3\n") == ["iter 2: loss 2.4", "iter 3"]  # \r\n loses its \r
    assert split.end() == []  # ended on a newline: no last line


def test_a_character_cut_between_reads_is_whole_and_the_last_line_comes_at_the_end():
    split = LineSplitter()
    word = "é✓".encode()
    assert split.feed(b"a" + word[:1]) == []
    assert split.feed(word[1:] + b"\n\xffz") == ["aé✓"]
    assert split.end() == ["\ufffdz"]  # undecodable: U+FFFD; no newline at the end: still a line
    assert split.end() == []


def test_a_lone_carriage_return_inside_a_line_stays():
    split = LineSplitter()
    assert split.feed(b"10%\r20%\r\n") == ["10%\r20%"]
