"""SIGTERM and SIGHUP: ncui ends as q does when no meter runs, through Textual's exit, with a backstop."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..app import NCApp

log = logging.getLogger("ncui")
SIGNAL_EXIT_GRACE_S = 5.0  # a SIGTERM or SIGHUP: seconds Textual gets to end before the process ends anyway


def catch_signals(app: NCApp) -> None:
    """SIGTERM (a kill, a supervisor) and SIGHUP (the terminal went away) end ncui as q does when no meter runs:
    through Textual's exit, which puts the terminal back (main screen, no mouse reporting, the cursor shown)
    and closes the demo's box and its folder. Nothing that stands is touched, and nothing is asked: the next
    start says what still stands. (Not under a test's Pilot: the test process keeps its own handlers.)"""
    if app.is_headless:
        return
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGHUP):
        try:
            loop.add_signal_handler(sig, on_signal, app, sig)
        except (NotImplementedError, RuntimeError, ValueError):  # (no such signal here, or not the main thread)
            continue


def on_signal(app: NCApp, sig: int) -> None:
    log.info("signal %s: exiting without changing anything", sig)
    if sig == signal.SIGHUP:
        # The terminal is gone: nothing is left to restore, and what is still written on the way out goes nowhere
        # (a write to the hung-up tty fails).
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.dup2(null, 2)
            os.close(null)
        except OSError:
            pass

    def hard_exit() -> None:
        # Textual's exit can stall on a terminal that went away (its writer thread's queue, seen here with a
        # hung-up pty): after a grace period the process ends anyway, its demo folder removed. Nothing that
        # stands is touched either way; state files are written atomically.
        if app.backend is not None:
            app.backend.remove_demo_home()
        os._exit(0)

    timer = threading.Timer(SIGNAL_EXIT_GRACE_S, hard_exit)
    timer.daemon = True
    timer.start()
    app.exit()
