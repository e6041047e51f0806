"""The bytes of a desktop notification, by terminal (no Textual, no I/O but the one tmux question).

``protocol(env, passthrough)`` picks how this terminal is told: OSC 99 (kitty), OSC 777 ``notify`` (VTE terminals,
foot, urxvt), OSC 9 (iTerm2, WezTerm, Windows Terminal), else the bell: by the variables each terminal sets, those
that a tmux started in it keeps too (tmux sets its own ``TERM_PROGRAM``). Inside tmux a sequence reaches the outer
terminal only through tmux's passthrough (``ESC P tmux; … ESC \\``, each ESC inside doubled), which tmux forwards
only when its ``allow-passthrough`` option is on (or ``all``): else the bell, which tmux passes on by itself.

``sequence(protocol, title, body, tmux=)`` builds the bytes. Title and body are cleaned (``textsafe.clean``) and
then every control character left is refused (C0, DEL, C1: ESC, BEL and ST among them), so no text from a server
can end the OSC early or start a sequence of its own.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping
from typing import Literal

from ..textsafe import clean

Protocol = Literal["osc99", "osc777", "osc9", "bell"]
PROTOCOLS: tuple[Protocol, ...] = ("osc99", "osc777", "osc9", "bell")

ESC, BEL, ST = "\x1b", "\x07", "\x1b\\"
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # C0 (ESC, BEL among them), DEL, C1 (the 8-bit ST, OSC, CSI…)
TITLE_MAX, BODY_MAX = 80, 240  # a desktop notification shows a line or two; the rest is in the app


def safe(text: str, limit: int) -> str:
    """``text`` as one line fit for inside an OSC: cleaned (textsafe), then any control character still there
    removed (the builder's own belt), at most ``limit`` characters."""
    text = _CONTROL.sub("", clean(text))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tmux_passthrough(run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> bool:
    """tmux forwards a passthrough sequence to the outer terminal: ``tmux show -gv allow-passthrough`` says on or
    all (tmux 3.3+; an older tmux, or no answer, is a no)."""
    try:
        res = run(["tmux", "show", "-gv", "allow-passthrough"], capture_output=True, text=True, timeout=2)
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0 and res.stdout.strip() in ("on", "all")


def protocol(env: Mapping[str, str], passthrough: Callable[[], bool] = tmux_passthrough) -> Protocol:
    """How this terminal shows a desktop notification, from its environment (``passthrough`` is asked only
    inside tmux)."""
    term, program = env.get("TERM", ""), env.get("TERM_PROGRAM", "")
    if env.get("KITTY_WINDOW_ID") or term == "xterm-kitty":
        found: Protocol = "osc99"
    elif (
        program in ("iTerm.app", "WezTerm")
        or env.get("LC_TERMINAL") == "iTerm2"
        or env.get("WT_SESSION")
        or env.get("WEZTERM_PANE")  # (WezTerm's own: inside tmux, TERM_PROGRAM says tmux)
    ):
        found = "osc9"
    elif env.get("VTE_VERSION") or term.startswith(("foot", "rxvt")):
        found = "osc777"
    else:
        found = "bell"
    if env.get("TMUX") and found != "bell" and not passthrough():
        return "bell"
    return found


def wrap_tmux(seq: str) -> str:
    """``seq`` through tmux's passthrough: ``ESC P tmux;`` then ``seq`` with each ESC doubled, then ST."""
    return f"{ESC}Ptmux;{seq.replace(ESC, ESC + ESC)}{ST}"


def sequence(proto: Protocol, title: str, body: str, *, tmux: bool = False, ident: int = 1) -> str:
    """The bytes that show ``title`` and ``body`` as a desktop notification (the bell: a BEL alone)."""
    if proto == "bell":
        return BEL
    t, b = safe(title, TITLE_MAX), safe(body, BODY_MAX)
    if proto == "osc99":  # kitty: the title, then (d=1: done) the body, one notification by its id
        seq = f"{ESC}]99;i={ident}:d=0:p=title;{t}{ST}{ESC}]99;i={ident}:d=1:p=body;{b}{ST}"
    elif proto == "osc777":  # the fields are split at ';'
        seq = f"{ESC}]777;notify;{t.replace(';', ',')};{b.replace(';', ',')}{ST}"
    else:  # OSC 9: one text (iTerm2 reads a number first as a progress report: never begins with a digit here)
        seq = f"{ESC}]9;{t}: {b}{BEL}"
    return wrap_tmux(seq) if tmux else seq
