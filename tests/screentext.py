"""A screen read as text, not as line breaks: ``joined(screen)``, the one way the tests match a phrase on a screen.

A phrase on screen may be wrapped anywhere: by the terminal (a tmux pane's lines at its width: a longer tmp path
moves "is readable" / "by others" onto two lines), and by a card inside its own borders. ``joined`` reads the
screen as a person does: each line cut at the border characters Textual and rich draw (box drawing ``│ ╭ ┤ ─``,
the blocks of ``tall``, ``wide``, ``outer``, ``thick``, ``hkey`` and ``vkey`` borders: ``▊ ▎ ▌ ▐ █ ▔ ▁ ▏ ▕``…);
the pieces that start at the same column on consecutive lines are one card's (or one column's) lines, joined in
order; the cards in reading order (by their first line, then left to right); whitespace collapsed to one space.
So ``"readable by others" in joined(screen)`` holds wherever the wrap falls, and a card beside another is not
read interleaved with it. (A word longer than its line, folded by the terminal, reads with a space in it; two
columns drawn side by side without a border between them are read line by line.)

Used by ``apphelp.screen_text`` (Pilot: everything on screen as one text) and ``tmuxterm.Tmux`` (``text()`` and
``until``: a real terminal's screen).
"""

from __future__ import annotations

import re

from rich.cells import cell_len

# Box drawing (U+2500–U+257F: ─ │ ┌ ╭ ┤ ═ ║ ╍ ╏ …) and the block elements borders and scrollbars are drawn with
# (U+2580–U+259F: ▀ ▁ ▄ █ ▊ ▌ ▎ ▏ ▐ ▔ ▕ ▗ ▛ …)
BORDERS = "".join(chr(c) for c in range(0x2500, 0x25A0))
_PIECE = re.compile(f"[^{re.escape(BORDERS)}]+")
# Whitespace as a screen has it: spaces and tabs between words, "\n" between lines. Not str.split's or
# str.splitlines' (they also take \r, \v, \f, \x1c–\x1e, \x85, U+2028): a control character on screen stays in the
# text, for a test of sanitising to find.
_SPACE = re.compile(r"[ \t]+")

__all__ = ["BORDERS", "joined"]


def joined(screen: str) -> str:
    """The words of ``screen`` (lines as a terminal or a card wraps them) as one line of text: borders out, each
    card's lines joined, whitespace collapsed."""
    runs: list[tuple[int, int, list[str]]] = []  # (first line, column, the words of each line) in the order found
    above: dict[int, list[str]] = {}  # column -> the run that had a piece there on the line above
    for y, line in enumerate(screen.split("\n")):
        here: dict[int, list[str]] = {}
        for m in _PIECE.finditer(line):
            words = _SPACE.sub(" ", m.group()).strip(" ")
            if not words:
                continue
            x = cell_len(line[: m.start()])  # (the column a person sees: a wide character takes two)
            run = above.get(x)
            if run is None:
                run = []
                runs.append((y, x, run))
            run.append(words)
            here[x] = run
        above = here
    runs.sort(key=lambda r: (r[0], r[1]))
    return " ".join(" ".join(words) for _, _, words in runs)
