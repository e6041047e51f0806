"""The log file (issue 22, item 6): a failed worker's full traceback in $XDG_STATE_HOME/ncui/ncui.log (mode 600,
rotated), never the token or a header value; the toast says where; the palette's "Last error" shows it all."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys

import pytest

from ncui import logfile
from ncui.cli import _log_to_file, build_parser
from ncui.screens.modals import ResultsModal

from .apphelp import app_for, loaded, until


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    yield tmp_path / "state" / "ncui"
    logfile.unconfigure()


TOKEN = "nc_live_9f8e7d6c5b4a39281706f5e4"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (f"the API said no to {TOKEN}", "the API said no to [redacted]"),
        (f"url https://x/api?token={TOKEN}&a=1", "url https://x/api?token=[redacted]"),
        (repr(f"a\\{TOKEN}"), repr("a\\")[:-1] + "[redacted]'"),  # its repr-escaped form too
        ("Authorization: Bearer eyJhbGciOi.J9x-_y", "Authorization: [redacted]"),
        (
            "sent {'Authorization': 'Basic dXNlcjpwYXNz', 'Accept': 'x'}",
            "sent {'Authorization': '[redacted]', 'Accept': 'x'}",
        ),
        ("retry with bearer abcdef0123 later", "retry with bearer [redacted] later"),
        ("X-Api-Key=k-123456, then", "X-Api-Key=[redacted], then"),
        ('"Cookie": "session=abc; csrf=def"', '"Cookie": "[redacted]"'),
        (
            "request Headers({'host': 'nc.example', 'x-trace': 'abc'})",
            "request Headers({'host': '[redacted]', 'x-trace': '[redacted]'})",
        ),
        ('headers={"Content-Type": "application/json"}', 'headers={"Content-Type": "[redacted]"}'),
        ("the token is empty; Basic auth refused", "the token is empty; Basic auth refused"),  # words stay words
    ],
)
def test_redact_removes_the_token_and_header_values(text, kept):
    assert logfile.redact(text, [TOKEN]) == kept
    assert TOKEN not in logfile.redact(text, [TOKEN])


def test_the_log_file_is_private_and_rotated(state):
    handler = logfile.configure(secrets=lambda: [TOKEN])
    assert handler is not None
    path = state / "ncui.log"
    log = logging.getLogger("ncui.test")
    log.info("not written: the level is WARNING")
    log.warning("a warning carrying %s", TOKEN)
    handler.flush()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(state.stat().st_mode) == 0o700
    text = path.read_text()
    assert "WARNING ncui.test: a warning carrying [redacted]" in text and "not written" not in text
    assert TOKEN not in text
    for i in range(int(logfile.MAX_BYTES * (logfile.BACKUPS + 1) / 1000) + 10):  # past every backup
        log.error("line %d %s", i, "x" * 1000)
    handler.flush()
    names = sorted(p.name for p in state.iterdir())
    assert names == ["ncui.log", "ncui.log.1", "ncui.log.2", "ncui.log.3"], names
    for p in state.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        assert p.stat().st_size <= logfile.MAX_BYTES
    assert logfile.where().endswith("/ncui/ncui.log")


def test_a_loose_log_file_is_made_private(state):
    state.mkdir(parents=True)
    (state / "ncui.log").write_text("an old line\n")
    os.chmod(state / "ncui.log", 0o644)
    assert logfile.configure() is not None
    assert stat.S_IMODE((state / "ncui.log").stat().st_mode) == 0o600


def test_debug_raises_the_level_and_configuring_is_the_command_lines(state):
    _log_to_file(build_parser().parse_args(["--debug"]), None)
    logging.getLogger("ncui.test").debug("a debug line")
    _log_to_file(build_parser().parse_args([]), None)  # once: a second call replaces the first
    logging.getLogger("ncui.test").debug("not this one")
    assert len([h for h in logging.getLogger("ncui").handlers if isinstance(h, logging.FileHandler)]) == 1
    text = (state / "ncui.log").read_text()
    assert "DEBUG ncui.test: a debug line" in text and "not this one" not in text
    # importing ncui configures nothing (Textual's logging and the root logger untouched)
    code = (
        "import logging, ncui.app, ncui.cli; "
        "print(len(logging.getLogger('ncui').handlers), len(logging.getLogger().handlers), "
        "len(logging.getLogger('textual').handlers))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "0", "0"], out


async def test_a_failed_workers_traceback_is_in_the_log_and_its_token_is_not(sim, state):
    app = app_for(sim)
    token = sim.token
    logfile.configure(secrets=app.backend.secrets)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: loaded(app, "balance"))

        async def read_the_cluster() -> None:
            credential = token  # the token in a local variable, and in the exception's words
            raise ValueError(f"the answer had no cluster (sent Authorization: Bearer {credential})")

        app.ui.start(read_the_cluster, name="read-cluster")
        await until(pilot, lambda: any("(read-cluster)" in n.message for n in app._notifications), what="the toast")
        (said,) = [n.message for n in app._notifications if "(read-cluster)" in n.message]
        assert "ValueError: the answer had no cluster" in said and token not in said
        assert "The full error: Ctrl-P, Last error; also in " in said and said.endswith("/ncui/ncui.log.")

        app.action_last_error()
        await until(pilot, lambda: isinstance(app.screen, ResultsModal), what="the details view")
        body = str(app.screen.body)
        assert "Traceback (most recent call last)" in body and "in read_the_cluster" in body
        assert "ValueError: the answer had no cluster" in body and token not in body
        app.screen.dismiss(None)

    for h in logging.getLogger("ncui").handlers:
        h.flush()
    text = (state / "ncui.log").read_text()
    assert "ERROR ncui: worker read-cluster failed" in text
    assert "Traceback (most recent call last)" in text and "in read_the_cluster" in text
    assert 'raise ValueError(f"the answer had no cluster' in text  # the source line, as Python prints it
    assert "ValueError: the answer had no cluster (sent Authorization: [redacted])" in text
    assert token not in text
    assert stat.S_IMODE((state / "ncui.log").stat().st_mode) == 0o600


async def test_last_error_before_any_says_so(sim):
    app = app_for(sim)
    async with app.run_test(size=(100, 30)) as pilot:
        app.action_last_error()
        await until(pilot, lambda: any("No error so far" in n.message for n in app._notifications), what="the toast")
        assert not isinstance(app.screen, ResultsModal)
