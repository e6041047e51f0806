"""ncui's log file: errors and failed workers in full, in ``$XDG_STATE_HOME/ncui/ncui.log``. No Textual here.

While the app runs, Textual owns the terminal and stderr goes nowhere: what ncui logs (a worker that failed, a
poller's unexpected error, a connect that failed, each with its traceback) is written here instead, so that a
failure said on screen in a sentence has its full text behind it. ``configure`` is called once by the command
line (``cli.py``) before the app starts, never on import; it touches only the ``ncui`` logger (Textual's own
logging, the root logger and the box's web server's are left as they are).

- The file is mode 600 (its folder 700), rotated at 1 MB with three old files kept (``ncui.log.1`` … ``.3``).
- Level WARNING; ``ncui --debug`` makes it DEBUG.
- Never a token or a header value: every record passes ``Redact`` before it is written — the backend's token
  (the demo box's too, once it started) wherever it appears, an ``Authorization``/``Bearer``/``Basic`` value,
  the value of a header that carries a credential (``Cookie``, ``X-Api-Key``, ``…-Token``, ``…Secret…``) and
  every value of a header mapping (``Headers({...})``, ``headers={...}``); then cleaned for a terminal
  (textsafe: the file is read with ``cat`` and ``tail``).
- ``Failure`` is a failed worker's full text for the screen (the palette's "Last error"): redacted the same way.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from .config import state_dir
from .textsafe import clean

__all__ = ["Failure", "Redact", "configure", "log_path", "redact", "shown", "where"]

LOG_NAME = "ncui.log"
MAX_BYTES = 1_000_000
BACKUPS = 3
LOGGER = "ncui"
REDACTED = "[redacted]"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

Secrets = Callable[[], Iterable[str]]

# A header whose value is a credential, by its name (case-insensitive).
_SECRET_HEADER = (
    r"(?:proxy-)?authorization|(?:set-)?cookie|x-api-key|api-key|x-amz-security-token"
    r"|[\w-]*token|[\w-]*secret[\w-]*|[\w-]*password|[\w-]*signature"
)
# "Authorization: Bearer x", "authorization=…" (to the end of the line, a comma or a closing bracket)
_NAMED_BARE = rf"(?i)(?<![\w-])((?:{_SECRET_HEADER})[ \t]*[:=][ \t]*)(?!['\"\s]|\[redacted\])[^\n,'\"}})\]]+"
# "'authorization': 'Bearer x'", "\"X-Api-Key\": \"…\"", "token = '…'"
_NAMED_QUOTED = rf"(?i)((?<![\w-])['\"]?(?:{_SECRET_HEADER})['\"]?[ \t]*[:=][ \t]*)(['\"])(?:(?!\2)[^\n])*\2"
# an auth scheme's credential anywhere: "Bearer eyJ…", "Basic dXNlcjpw…" (8 characters or more, with a digit, a
# symbol or both cases: not a word of prose, "Basic authentication")
_SCHEME = r"(?i)\b(bearer|basic)([ \t]+)(?=[A-Za-z0-9._~+/=-]{8})(?-i:(?![a-z]+\b)(?![A-Z]+\b))[A-Za-z0-9._~+/=-]+"
# every value of a header mapping: Headers({'a': 'b'}), headers={'a': 'b'}, "headers": {"a": "b"}, [('a', 'b')]
_HEADERS = r"(?i)(headers['\"]?[ \t]*[=:(][ \t]*\(?[ \t]*)(\{[^{}\n]*\}|\[[^\[\]\n]*\])"
_PAIR = r"""(['"][^'"\n]*['"][ \t]*[:,][ \t]*)(['"])(?:(?!\2)[^\n])*\2"""


@functools.cache
def _compiled() -> tuple[re.Pattern[str], ...]:
    """The patterns above, compiled on the first redaction (not on import: ncui imports this before its first
    frame)."""
    return tuple(re.compile(p) for p in (_HEADERS, _PAIR, _NAMED_QUOTED, _NAMED_BARE, _SCHEME))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with each secret (as itself, repr-escaped, JSON-escaped and URL-quoted) and every header value
    above replaced by ``[redacted]``. Never shows a piece of what it removes."""
    headers, pair, named_quoted, named_bare, scheme = _compiled()
    text = headers.sub(lambda m: m.group(1) + pair.sub(rf"\1\2{REDACTED}\2", m.group(2)), text)
    text = named_quoted.sub(rf"\1\2{REDACTED}\2", text)
    text = named_bare.sub(rf"\1{REDACTED}", text)
    forms: set[str] = set()
    for s in secrets:
        if s:
            forms.update({s, repr(s)[1:-1], json.dumps(s)[1:-1], quote(s, safe=""), quote(s)})
    for s in sorted(forms, key=len, reverse=True):  # the longest first: a form holding another goes whole
        text = text.replace(s, REDACTED)
    return scheme.sub(rf"\1\2{REDACTED}", text)


class Redact(logging.Filter):
    """On the log file's handler: a record's message, traceback and stack are rendered here, redacted
    (``redact``, with the secrets ``secrets()`` names now) and cleaned, before any formatter sees them. Never
    drops a record."""

    def __init__(self, secrets: Secrets = tuple) -> None:
        super().__init__()
        self.secrets = secrets

    def known(self) -> list[str]:
        try:
            return [s for s in self.secrets() if s]
        except Exception:  # (a broken provider must not cost the record)
            return []

    def filter(self, record: logging.LogRecord) -> bool:
        secrets = self.known()
        try:
            message = record.getMessage()
        except Exception as e:  # a bad format string: its parts, not a lost record
            message = f"{record.msg!r} % {record.args!r} ({type(e).__name__})"
        record.msg, record.args = clean(redact(message, secrets), multiline=True), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = clean(redact(record.exc_text, secrets), multiline=True)
        if record.stack_info:
            record.stack_info = clean(redact(record.stack_info, secrets), multiline=True)
        return True


def log_path() -> Path:
    return state_dir() / LOG_NAME


def shown(path: Path) -> str:
    """``path`` as a person would type it: ``~/.local/state/ncui/ncui.log`` under the home folder."""
    home = os.path.expanduser("~")
    text = str(path)
    return "~" + text[len(home) :] if home not in ("", "/") and text.startswith(home + os.sep) else text


def _ours() -> logging.Handler | None:
    return next((h for h in logging.getLogger(LOGGER).handlers if getattr(h, "ncui_log", False)), None)


def where() -> str:
    """Where the log file is (``shown``), or "" when none is configured (a test's app, a folder not writable)."""
    h = _ours()
    return shown(Path(h.baseFilename)) if isinstance(h, logging.FileHandler) else ""


def configure(*, debug: bool = False, secrets: Secrets = tuple, path: Path | None = None) -> logging.Handler | None:
    """Log the ``ncui`` logger to ``path`` (``log_path()``): rotated, mode 600, through ``Redact(secrets)``.
    Once: a second call replaces the first's handler. None when the file cannot be opened (nothing is logged
    then, and the screen does not name a file)."""
    from logging.handlers import RotatingFileHandler

    class PrivateFileHandler(RotatingFileHandler):
        """Each file it opens (the first, and the new one after a rotation) is created mode 600."""

        def _open(self):  # (logging's hook, called on the first write and after each rotation)
            fd = os.open(self.baseFilename, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.fchmod(fd, 0o600)  # (a file left by an earlier, looser version)
            return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)

    path = path or log_path()
    logger = logging.getLogger(LOGGER)
    old = _ours()
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handler = PrivateFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError:
        return None
    handler.ncui_log = True  # type: ignore[attr-defined]  # (how where() and a second configure find it)
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(Redact(secrets))
    level = logging.DEBUG if debug else logging.WARNING
    handler.setLevel(level)
    if old is not None:
        logger.removeHandler(old)
        old.close()
    logger.addHandler(handler)
    logger.setLevel(level)
    return handler


def unconfigure() -> None:
    """The handler ``configure`` added, removed and closed (tests)."""
    h = _ours()
    if h is not None:
        logging.getLogger(LOGGER).removeHandler(h)
        h.close()
        logging.getLogger(LOGGER).setLevel(logging.NOTSET)


@dataclass(frozen=True)
class Failure:
    """A failed worker, for the screen: what failed, when, and its full traceback (redacted, cleaned)."""

    what: str
    summary: str  # "ValueError: the answer had no cluster"
    detail: str
    when: datetime = field(default_factory=datetime.now)

    @classmethod
    def of(cls, what: str, err: BaseException, secrets: Iterable[str] = ()) -> Failure:
        found = [*secrets, *_known()]  # (and those the log file's filter knows)
        text = "".join(traceback.format_exception(type(err), err, err.__traceback__))
        summary = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        return cls(
            clean(what),
            clean(redact(summary, found)),
            clean(redact(text.rstrip("\n"), found), multiline=True),
        )

    def body(self) -> str:
        """The details view's text: when, the traceback, and where the log file keeps it."""
        kept = where()
        return f"{self.when:%Y-%m-%d %H:%M:%S} · {self.what} · {self.summary}\n\n{self.detail}" + (
            f"\n\nAlso in {kept}, with what was logged around it." if kept else ""
        )


def _redactors() -> list[Redact]:
    h = _ours()
    return [f for f in (h.filters if h is not None else ()) if isinstance(f, Redact)]


def _known() -> list[str]:
    return [s for f in _redactors() for s in f.known()]
