"""Bytes as they come off a command's output, made into whole lines: one rule for every follow (``tail -F``
over ssh, a command on this machine). No Textual here.

``split = LineSplitter()``; for each read ``lines = split.feed(data)`` (the whole lines it completed, maybe
none); at the end ``split.end()`` (the last line when the output did not end with a newline). UTF-8 is decoded
incrementally (a character cut between two reads is whole in the next line), undecodable bytes become U+FFFD,
and a line's ``\\r\\n`` ending loses its ``\\r`` too.
"""

from __future__ import annotations

import codecs

__all__ = ["LineSplitter"]


class LineSplitter:
    """Turns reads of bytes into lists of lines (without their newline)."""

    __slots__ = ("_decode", "_partial")

    def __init__(self) -> None:
        self._decode = codecs.getincrementaldecoder("utf-8")("replace").decode
        self._partial = ""

    def feed(self, data: bytes) -> list[str]:
        """The lines ``data`` completes (none when it ends no line)."""
        text = self._partial + self._decode(data)
        lines = text.split("\n")
        self._partial = lines.pop()
        if lines and "\r" in text:
            lines = [x[:-1] if x.endswith("\r") else x for x in lines]
        return lines

    def end(self) -> list[str]:
        """The output has ended: its last line when that had no newline, else nothing."""
        tail = self._partial + self._decode(b"", True)
        self._partial = ""
        return [tail] if tail else []
