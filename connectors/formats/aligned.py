"""Whether a local JSON-lines file is one JSON object per line, checked without parsing it.

A JSON reader that reads a whole file (Spark's, DuckDB's ``read_ndjson``) skips blank lines and
reads a ``null`` line as a row of nulls, so its rows are the file's lines, in order, only when every
line starts with ``{``; then a row's position is its line number, and a line that is no clean
object fails the reader instead of being skipped. The engines' fast JSON-lines paths take a file
only when ``object_lines`` counts its lines. A compressed file (a codec its name implies, as
``connectors.formats.compressed`` reads it) is checked as it is decompressed; a damaged one fails.
"""
from __future__ import annotations

import codecs
import contextlib
from typing import BinaryIO, Iterator

import numpy as np

from connectors.formats.lines import MAX_LINE

__all__ = ["object_lines"]

_CHUNK = 1 << 18  # bytes per vectorised pass: a core's cache holds them
_LF, _CR, _BRACE, _ASCII_END = 0x0A, 0x0D, 0x7B, 0x80


def object_lines(path: str, cr: bool = True, max_line: int = MAX_LINE) -> int | None:
    """The file's line count when every line starts with ``{``, none is longer than ``max_line`` bytes and the file is UTF-8, else None: one read, one pass per chunk.

    ``cr``: whether a lone CR may appear (a reader that splits lines at LF only); a reader that
    also splits at a lone CR (Python's ``splitlines``) passes False, and a file holding a CR that
    is not the first half of a CRLF is refused (a CRLF is one line break to both readers).
    A chunk with a byte above ASCII goes through an incremental UTF-8 decoder. A compressed file
    is checked as it decompresses; a damaged one (truncated, a bad checksum) gives None.
    """
    from connectors.formats.compressed import DamagedFile

    try:
        with _content(path) as f:
            return _checked_lines(f, cr, max_line)
    except DamagedFile:
        return None


@contextlib.contextmanager
def _content(path: str) -> Iterator[BinaryIO]:
    """The file's bytes as read (plain) or decompressed (a codec its name implies), nothing after a gzip file's last member."""
    from connectors.formats.compressed import codec_of, decompressed

    with open(path, "rb", buffering=0) as raw:
        if codec_of(path) is None:
            yield raw
        else:
            with decompressed(raw, path, strict=True) as f:
                yield f


def _checked_lines(f: BinaryIO, cr: bool, max_line: int) -> int | None:
    buf = bytearray(_CHUNK + 1)  # the previous chunk's last byte, then the chunk
    buf[0] = _BRACE  # before the first chunk: no line break
    utf8 = codecs.getincrementaldecoder("utf-8")()
    lines, size = 0, 0
    tail = 0  # bytes after the last LF, at least: a line is measured only where it may be longer than max_line
    n = f.readinto(memoryview(buf)[1:])
    if n and buf[1] != _BRACE:
        return None
    while n:
        b = np.frombuffer(buf, np.uint8, count=n + 1)
        # A line break followed by anything but "{"; one that ends the file has nothing after it.
        breaks = b[:-1] == _LF
        if np.any(breaks & (b[1:] != _BRACE)) or (not cr and buf.find(b"\r", 0, n + 1) >= 0 and np.any((b[:-1] == _CR) & (b[1:] != _LF))):
            return None  # a CR ending a chunk is paired with the next chunk's first byte (``buf[0]`` then)
        if utf8.getstate()[0] or int(b[1:].max()) >= _ASCII_END:  # bytes above ASCII, or a sequence the last chunk began
            try:
                utf8.decode(bytes(buf[1 : n + 1]))
            except UnicodeDecodeError:
                return None
        found = int(np.count_nonzero(breaks))
        if not found:
            tail += n
            if tail > max_line:
                return None
        elif tail + n > max_line:  # a line ending in this chunk may be too long (always, where max_line is below a chunk)
            ends = np.flatnonzero(breaks)
            if tail + int(ends[0]) > max_line or (len(ends) > 1 and int(np.diff(ends).max()) - 1 > max_line):
                return None
            tail = n - 1 - int(ends[-1])
        else:
            tail = n
        lines += found
        size += n
        buf[0] = buf[n]
        n = f.readinto(memoryview(buf)[1:])
    if size and tail + (buf[0] != _LF) > max_line:  # the last line (its last byte was not in a pass)
        return None
    if not cr and size and buf[0] == _CR:  # the file's last byte
        return None
    try:
        utf8.decode(b"", final=True)  # a sequence cut short by the file's end
    except UnicodeDecodeError:
        return None
    # Each line break but the file's last byte is counted above: a last line ends at that byte, with or without a break.
    return lines + 1 if size else 0
