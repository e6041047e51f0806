"""tests/screentext.py: a phrase on screen is found wherever the terminal or a card wraps it, borders and all."""

from __future__ import annotations

import io

from rich.console import Console
from rich.panel import Panel

from .screentext import joined

# The failure that made the helper (tests/test_terminal.py in CI: a longer tmp path moved the wrap): the warning
# in a round card beside another card, "is readable" and "by others" on two lines of a 120-column terminal.
CARDS = """\
 ncui Halcyon Lab · halcyon (kubernetes, H100-SXM-80GB, market)  ● live
╭──────────────────────────────────────────╮ ╭─────────────────────╮
│ /home/runner/work/ncui/ncui/tmp/pytest-o │ │ Runway   no burn    │
│ f-runner/pytest-0/test_a_token_0/token   │ │ First job (one node │
│ is readable                              │ │ , 2 h cover)        │
│ by others (mode 0644); run: chmod 600    │ ╰─────────────────────╯
╰──────────────────────────────────────────╯
  kubectl  press s to sign in
"""

# The notification as tmux captures it: each line of the toast after its ▌, a chart's frame drawn beside it
TOAST = """\
▌ /tmp/pytest-of-ci/pytest-12/test_a_token_file_readable_by_0/.config/nationalcompute/token is readable  │ ⢕⢕ balance $│
▌ by others (mode 0644); run: chmod 600                                                                  │             │
▌ /tmp/pytest-of-ci/pytest-12/test_a_token_file_readable_by_0/.config/nationalcompute/token              │             │
"""


def test_a_phrase_split_across_lines_and_card_borders_is_found():
    assert not any("readable by others" in line for line in CARDS.splitlines())  # split on the screen
    text = joined(CARDS)
    assert "token is readable by others (mode 0644); run: chmod 600" in text, text
    # the card beside it is read on its own, after the first, not interleaved line by line
    assert "Runway no burn First job (one node , 2 h cover)" in text, text
    assert text.startswith("ncui Halcyon Lab · halcyon (kubernetes, H100-SXM-80GB, market) ● live /home/runner")
    assert text.endswith("kubectl press s to sign in")
    assert not set(text) & set("│╭╮╰╯─"), text  # no border is read as a word


def test_a_toast_wrapped_by_the_terminal_reads_as_one_sentence():
    text = joined(TOAST)
    assert "token is readable by others (mode 0644); run: chmod 600 /tmp/" in text, text
    assert text.endswith("/token ⢕⢕ balance $"), (
        text
    )  # what is drawn beside the toast, after a border, is read after it


def test_a_rich_panel_wrapped_at_its_width_reads_as_text():
    console = Console(width=30, file=io.StringIO(), record=True, color_system=None)
    console.print(Panel("Spending limit $50.00 through 2027-01-01 (UTC), kept by you", title="Lease"))
    drawn = console.export_text()
    assert "(UTC), kept" not in drawn.replace("\n", " ")  # the wrap and the border lie inside the phrase
    assert "Lease Spending limit $50.00 through 2027-01-01 (UTC), kept by you" in joined(drawn), drawn


def test_textuals_borders_are_cut_and_what_is_not_a_border_stays():
    tall = "  Image   ▊▔▔▔▔▔▔▔▔▔▔▔▎\n          ▊  ghcr.io/x ▎\n          ▊▁▁▁▁▁▁▁▁▁▁▁▎\n"
    assert joined(tall) == "Image ghcr.io/x"
    assert joined("┏━━━━━━┓\n┃ heavy ┃\n┗━━━━━━┛\n██ thick █\n") == "heavy thick"
    # whitespace collapses; control characters (str.split would drop \x85 and \x1c) stay, for sanitising tests
    assert joined("a\x85b  \t c\x1c\n  d  ") == "a\x85b c\x1c d"
    assert joined("") == "" and joined("\n\n") == ""
