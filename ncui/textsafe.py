"""Text from outside made safe for a terminal: the one sanitizer for every path where a server's, a pod's
or another program's text reaches the screen (pod logs, names, status messages, errors, model answers,
catalog text, whoami, transactions, the sign-in plugin's stderr).

``clean(text)`` removes escape sequences whole — CSI (``ESC [`` and the 8-bit U+009B), the strings OSC, DCS,
APC, PM and SOS (``ESC ] P _ ^ X`` and 8-bit U+009D U+0090 U+009F U+009E U+0098) up to their BEL or ST
(``ESC \\`` or U+009C), or to the end of the line when unterminated, and the other ``ESC`` sequences — then
every control character left: all of C0 (a tab becomes ``tab``, four spaces by default; a newline stays only
in ``multiline`` text, else it becomes a space), DEL, all of C1 (U+0080–U+009F), and the Unicode bidi
controls that reorder what the terminal shows: embeddings and overrides U+202A–U+202E, isolates
U+2066–U+2069, and the marks LRM, RLM and ALM (U+200E, U+200F, U+061C). Printable text is never changed.
No Textual here.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

__all__ = ["clean", "unsafe", "clean_json", "loads_clean"]

# What never reaches the terminal. A tab is apart (a log keeps it for the pane to expand), and so is a newline
# (kept in multi-line text).
_CONTROLS = r"\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(rf"[\n{_CONTROLS}]")
_UNSAFE_ML = re.compile(rf"[{_CONTROLS}]")
_LINE_BREAK = re.compile(r"\r\n|[\r\n]")  # one space in one-line text
_SEQ = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: parameters, intermediates, a final byte
    r"|(?:\x1b[]P_^X]|[\x9d\x90\x9f\x9e\x98])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC DCS APC PM SOS
    r"|\x1b[ -/]*[0-~]"
)  # any other ESC sequence (intermediates, then a final byte)

# What in a JSON text may decode to something clean() changes: an escape of a control (\b \t \n \f \r, any \u:
# a \u escape of a printable character too, and the n of an escaped backslash before an n: wrongly, but safely),
# or a raw control or bidi character.
_JSON_RISKY = re.compile(rf"\\[btnfru]|[{_CONTROLS}]")

unsafe = _UNSAFE.search  # unsafe(text) is None: nothing to clean but tabs (the log follower's quick test)


def clean(text: str, *, multiline: bool = False, tab: str = "    ") -> str:
    """``text`` with no escape sequence, control character or bidi control (see the module's docstring)."""
    if _UNSAFE.search(text) is None:
        return text.replace("\t", tab) if "\t" in text else text
    text = _SEQ.sub("", text)
    if multiline:
        text = _UNSAFE_ML.sub("", text.replace("\r\n", "\n"))
    else:
        text = _UNSAFE_ML.sub("", _LINE_BREAK.sub(" ", text))
    return text.replace("\t", tab) if "\t" in text else text


def clean_json(value: Any, multiline_keys: frozenset = frozenset(), *, _key: str = "") -> Any:
    """Every string of a decoded JSON document cleaned (keys too); strings under ``multiline_keys`` keep
    their newlines. A new document where anything changed, the same objects otherwise."""
    if isinstance(value, str):
        return clean(value, multiline=_key in multiline_keys)
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: clean_json(v, multiline_keys, _key=k) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_json(v, multiline_keys, _key=_key) for v in value]
    return value


def loads_clean(text: str) -> Any:
    """``clean_json(json.loads(text))``, without walking the document when its text holds nothing that could
    decode to what ``clean`` changes (a cluster's watch sends a hundred whole pods a second, next to none with
    anything to clean: bench/pods.py). Decoded by orjson (twice json's speed on a pod), or by json where orjson
    refuses what json takes (NaN, a lone surrogate; an integer past 64 bits comes as a float, as none in a Kubernetes
    object is). Raises ValueError as json.loads does."""
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        doc = json.loads(text)
    if text.isascii() and "\\" not in text and "\x7f" not in text:
        return doc  # (ASCII with no escape: the only controls json.loads lets by are whitespace between tokens)
    return clean_json(doc) if _JSON_RISKY.search(text) else doc
