"""Line-based readers: text (per file or per line), JSONL and CSV; offsets go into ``__source__``.

A ``__source__`` field in the data (lineage of an earlier pipeline) is replaced by the reader's:
identity comes from the input position, never from user values. Every other field, ``source``
included, is the user's and is kept as it is.

Each reader takes a binary file object and streams it: a line is read, parsed and yielded before
the next one, so a large (or compressed, see ``connectors.formats.compressed``) file is never held
whole. Lines are numbered as ``bytes.splitlines`` numbers them (at LF, CRLF or CR). A compressed
file that turns out damaged keeps the rows before the damage and ends with one ``BadRecord``
naming the file.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any, BinaryIO, Generator, Iterator, NamedTuple

import orjson

from connectors.formats import BadRecord
from connectors.formats.compressed import DamagedFile
from dataflow.columns import SOURCE
from dataflow.lineage import LINE
from dataflow.nesting import json_loads

__all__ = ["MAX_LINE", "LineRun", "LongLine", "damaged", "jsonl_row", "line_blocks", "line_runs", "long_number", "loads", "max_line_bytes", "read_csv", "read_jsonl", "read_text", "read_text_blocks", "read_whole"]

_BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark before the first line is not data
_BLOCK = 8 << 20  # bytes a block of read_text_blocks reads at once
_PIECE = 1 << 16  # bytes a block is read in: a damaged stream loses the piece that meets the damage
MAX_ROW = (1 << 31) - 1  # the most bytes of a file read as one row (text split: file, binary, image, audio): a larger value fails Parquet's writer
MAX_LINE = 16 << 20  # the longest line read as a row by default: DuckDB's largest JSON object; Spark's JSON parser refuses a string of 20M characters


def damaged(source: str, exc: DamagedFile, lines: int) -> BadRecord:
    """The row error of a damaged stream met after ``lines`` lines."""
    cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else "DamagedFile"
    return BadRecord(source, cause, f"{exc} (after line {lines}; the lines before it were read)")


def max_line_bytes(options: dict[str, Any]) -> int:
    """The source's ``max_line_bytes`` option (bytes, or a size such as ``64MiB``): the longest line read as a row; ``MAX_LINE`` by default.

    Raises:
        ValueError: not a size of at least one byte (``SourceSpec`` checks it when the pipeline is parsed).
    """
    from connectors.sizes import parse_size

    value = options.get("max_line_bytes", MAX_LINE)
    try:
        limit = parse_size(value)
    except ValueError as exc:
        raise ValueError(f"max_line_bytes: {exc}") from None
    if limit < 1:
        raise ValueError(f"max_line_bytes: expected a size of at least 1 byte, got {value!r}")
    return limit


class LongLine(NamedTuple):
    """A line of ``size`` bytes, longer than the reader's ``max_line_bytes``: skipped, never held whole."""

    size: int

    def record(self, src: str, limit: int) -> BadRecord:
        return BadRecord(src, "LineTooLong", f"line of {self.size} bytes is longer than max_line_bytes ({limit})")


def line_blocks(f: BinaryIO, size: int = _BLOCK, max_line: int = MAX_LINE) -> Iterator[bytes | DamagedFile | LongLine]:
    """``f``'s bytes in blocks of whole lines, at least ``size`` new bytes each (the last one ends with the last line, with or without its break).

    The stream is read ``_PIECE`` bytes at a time (``read1``) whatever ``size``, so a damaged one
    (``DamagedFile``) keeps every line before the piece that meets the damage, the same lines for
    every reader: the block of those lines comes first, then the error; the partial line at the
    damage is part of it. A line of more than ``max_line`` bytes (its break not counted; lines
    end at LF, CR or CRLF, as ``splitlines`` cuts them) comes as a ``LongLine`` in its place: read
    past, never held whole (a reader holds at most ``max_line + size`` bytes of it).
    """
    read = f.read1 if hasattr(f, "read1") else f.read
    pending: list[bytes] = []  # read, not yet in a block: no LF in any but the pieces of this round
    held = 0  # bytes in pending
    fresh = b""  # read past a long line: its rest, not yet looked at
    while True:
        start, got, damage, end = len(pending), len(fresh), None, False
        if fresh:
            pending.append(fresh)
            fresh = b""
        while got < size:
            try:
                part = read(_PIECE)
            except DamagedFile as exc:
                damage = exc
                break
            if not part:
                end = True
                break
            pending.append(part)
            got += len(part)
        held += got
        if end:
            if any(pending):
                yield from _long_cut(b"".join(pending), max_line)
            return
        # Whole lines only: up to the last LF, looked for in this round's pieces alone (a long line is not searched again)
        for i in range(len(pending) - 1, start - 1, -1):
            cut = pending[i].rfind(b"\n") + 1
            if cut:
                yield from _long_cut(b"".join([*pending[:i], pending[i][:cut]]), max_line)
                pending = [pending[i][cut:], *pending[i + 1 :]]
                held = sum(map(len, pending))
                break
        if damage is not None:
            yield damage
            return
        if held > max_line:  # no LF in pending: the lines its CRs end, then its last line, too long already
            data = b"".join(pending)
            cut = data.rfind(b"\r", 0, len(data) - 1) + 1  # a CR with a byte after it (not an LF): a line break
            if cut:
                yield from _long_cut(data[:cut], max_line)
                data = data[cut:]
            if len(data) - data.endswith(b"\r") > max_line:
                fresh = yield from _past_line(read, len(data), data.endswith(b"\r"))
                if fresh is None:
                    return
                data = b""
            pending, held = [data] if data else [], len(data)


def _long_cut(block: bytes, max_line: int) -> Iterator[bytes | LongLine]:
    """``block`` (whole lines), with each line of more than ``max_line`` bytes as a ``LongLine`` between the blocks of the others."""
    import numpy as np

    if len(block) <= max_line:
        yield block
        return
    if b"\r" in block:
        lines = block.splitlines(keepends=True)
        nexts = np.cumsum([len(line) for line in lines])  # where the line after each begins
        lengths = np.array([len(line) - (2 if line.endswith(b"\r\n") else 1 if line.endswith((b"\n", b"\r")) else 0) for line in lines])
    else:
        nexts = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10) + 1
        if not len(nexts) or nexts[-1] != len(block):
            nexts = np.r_[nexts, len(block) + 1]  # a last line without its LF
        lengths = np.diff(np.r_[0, nexts]) - 1
    starts = np.r_[0, nexts[:-1]]
    begin = 0
    for k in np.flatnonzero(lengths > max_line):
        if starts[k] > begin:
            yield block[begin : int(starts[k])]
        yield LongLine(int(lengths[k]))
        begin = int(nexts[k])
    if begin < len(block):
        yield block[begin:]


def _past_line(read, size: int, cr: bool) -> Generator[DamagedFile | LongLine, None, bytes | None]:
    """Read past the rest of a line of which ``size`` bytes were read (no break in them but a CR as the last one when ``cr``),
    and yield it as a ``LongLine``; return what follows its break (None: the stream ended, or was damaged, within it:
    the line is then part of the damage)."""
    while True:
        if cr:
            end, part, size, cr = 0, b"\r", size - 1, False  # the CR read last is the line's break
        else:
            try:
                part = read(_PIECE)
            except DamagedFile as exc:
                yield exc
                return None
            if not part:
                yield LongLine(size)
                return None
            ends = [i for i in (part.find(b"\n"), part.find(b"\r")) if i >= 0]
            if not ends:
                size += len(part)
                continue
            end = min(ends)
        rest = part[end + 1 :]
        if part[end] == 0x0D and not rest:  # a CR ending what was read: the LF of a CRLF may come next
            try:
                rest = read(_PIECE)
            except DamagedFile as exc:
                yield LongLine(size + end)
                yield exc
                return None
        yield LongLine(size + end)
        return rest[1:] if part[end] == 0x0D and rest[:1] == b"\n" else rest


class LineRun(NamedTuple):
    """Consecutive lines of one file: ``lines[i]`` is line ``first + i`` of ``source`` (raw bytes, no line break)."""

    source: str
    first: int
    lines: list[bytes]

    def src(self, i: int) -> str:
        """The lineage of ``lines[i]``."""
        return f"{self.source}{LINE}{self.first + i}"


def line_runs(source: str, f: BinaryIO, max_line: int = MAX_LINE, size: int = _PIECE, multiple: int = 1, carry: int | None = None) -> Iterator[LineRun | BadRecord]:
    """The lines of ``f`` numbered (cut at LF, CR and CRLF as ``splitlines`` cuts them, a BOM before the first dropped), a block of ``size`` bytes at a time (``line_blocks``).

    A long line or a damaged stream is a row error in its place. Each run holds a ``multiple`` of
    lines, the rest carried to the next block, but the last before a row error or the file's end and
    one whose carried lines and block outgrow ``carry`` bytes.
    """
    number, held, held_bytes = 0, [], 0  # lines numbered so far; lines carried, not yet in a run
    for block in line_blocks(f, size, max_line):
        if isinstance(block, (DamagedFile, LongLine)):
            if held:
                yield LineRun(source, number + 1, held)
            number += len(held)
            held, held_bytes = [], 0
            if isinstance(block, DamagedFile):
                yield damaged(source, block, number)
                return
            number += 1
            yield block.record(f"{source}{LINE}{number}", max_line)
            continue
        chunks = block.split(b"\n")
        if block.endswith(b"\n"):
            chunks.pop()
        if b"\r" in block:  # CR and CRLF inside a chunk are line breaks too
            chunks = [raw for chunk in chunks for raw in chunk.splitlines() or [b""]]
        if number == 0 and not held and chunks and chunks[0].startswith(_BOM):
            chunks[0] = chunks[0][3:]
        lines = held + chunks
        cut = len(lines) if carry is not None and held_bytes + len(block) > carry else len(lines) - len(lines) % multiple
        if cut:
            yield LineRun(source, number + 1, lines[:cut])
        number += cut
        held = lines[cut:]
        held_bytes = sum(map(len, held))
    if held:
        yield LineRun(source, number + 1, held)


def _lines(source: str, f: BinaryIO, max_line: int = MAX_LINE) -> Iterator[tuple[str, bytes] | BadRecord]:
    """Each line of ``f`` with its lineage (``line_runs``: a damaged stream keeps what the block readers keep, a long line is a row error)."""
    for run in line_runs(source, f, max_line):
        if isinstance(run, BadRecord):
            yield run
            continue
        for i, raw in enumerate(run.lines):
            yield run.src(i), raw


def _decode(src: str, raw: bytes, encoding: str) -> str | BadRecord:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        return BadRecord(src, "UnicodeDecodeError", f"undecodable text ({encoding}): {exc.reason} at byte {exc.start}")


def read_whole(source: str, f: BinaryIO, limit: int, why: str) -> bytes | BadRecord:
    """The file's bytes, read at most ``limit`` + 1 bytes: one larger is a ``FileTooLarge`` record (``why``: what it is too large for), a damaged one its ``damaged`` record."""
    try:
        data = f.read(limit + 1)
    except DamagedFile as exc:
        return damaged(source, exc, 0)
    if len(data) > limit:
        return BadRecord(source, "FileTooLarge", f"file of more than {limit} bytes: {why}")
    return data


def read_text(source: str, f: BinaryIO, options: dict[str, Any]) -> Iterator[dict | BadRecord]:
    """One row per file (``split: file``, the default; a file of more than ``MAX_ROW`` bytes is a row error, read no further) or per line (``split: line``)."""
    encoding = options.get("encoding", "utf-8")
    if options.get("split", "file") == "file":
        data = read_whole(source, f, MAX_ROW, "larger than one row holds (a value of Arrow and Parquet stays below 2 GiB); read it with split: line")
        if isinstance(data, BadRecord):
            yield data
            return
        text = _decode(source, data, encoding)
        yield text if isinstance(text, BadRecord) else {SOURCE: source, "text": text}
        return
    skip_empty = options.get("skip_empty", True)
    for line in _lines(source, f, max_line_bytes(options)):
        if isinstance(line, BadRecord):
            yield line
            continue
        src, raw = line
        text = _decode(src, raw, encoding)
        if isinstance(text, BadRecord):
            yield text
        elif text.strip() or not skip_empty:
            yield {SOURCE: src, "text": text}


def read_text_blocks(source: str, f: BinaryIO, options: dict[str, Any]) -> Iterator[Any]:
    """``read_text`` with ``split: line`` for UTF-8 text, a block of lines at a time: Arrow tables
    (``__source__``, ``text``) instead of a dict per line, the same rows and line numbers. A block
    that is not UTF-8 comes line by line (its bad lines as ``BadRecord``); blank lines are those
    Arrow's ``utf8_trim_whitespace`` empties (Unicode white space).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    skip_empty, number, max_line = options.get("skip_empty", True), 0, max_line_bytes(options)
    for data in line_blocks(f, _BLOCK, max_line):
        if isinstance(data, DamagedFile):
            yield damaged(source, data, number)
            return
        if isinstance(data, LongLine):
            number += 1
            yield data.record(f"{source}{LINE}{number}", max_line)
            continue
        if number == 0 and data.startswith(_BOM):
            data = data[3:]
        binary = _lf_lines(data)
        lines = data.splitlines() if binary is None else None
        try:
            text = (pa.array(lines, pa.binary()) if binary is None else binary).cast(pa.string())
        except pa.ArrowInvalid:  # not UTF-8: line by line, as read_text
            lines = data.splitlines() if lines is None else lines
            for i, raw in enumerate(lines, start=number + 1):
                line = _decode(f"{source}{LINE}{i}", raw, "utf-8")
                if isinstance(line, BadRecord) or line.strip() or not skip_empty:
                    yield line if isinstance(line, BadRecord) else {SOURCE: f"{source}{LINE}{i}", "text": line}
            text = None
        count = len(lines) if text is None else len(text)
        if text is not None and len(text):
            numbers = pa.array(np.arange(number + 1, number + count + 1))
            if skip_empty:
                keep = pc.not_equal(pc.utf8_length(pc.utf8_trim_whitespace(text)), 0)
                text, numbers = text.filter(keep), numbers.filter(keep)
            if len(text):
                yield pa.table({SOURCE: pc.binary_join_element_wise(f"{source}{LINE}", numbers.cast(pa.string()), ""), "text": text})
        number += count


def _lf_lines(data: bytes):
    """The lines of ``data`` as ``bytes.splitlines`` cuts them, as one Arrow binary array over its buffer
    (no Python object per line), when only LF ends them; None when it holds a CR (cut line by line)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not data or b"\r" in data:
        return None if data else pa.array([], pa.binary())
    ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
    starts = np.r_[0, ends + 1]
    if starts[-1] == len(data):  # a last LF ends the last line, it starts none
        starts = starts[:-1]
    offsets = np.r_[starts, len(data)].astype(np.int32)
    with_lf = pa.Array.from_buffers(pa.binary(), len(starts), [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    return pc.binary_slice(with_lf, 0, -1) if data.endswith(b"\n") else _cut_lf(with_lf, pc)


def _cut_lf(lines, pc):
    """Every line's LF cut off but the last one's, which has none."""
    import pyarrow as pa

    head = pc.binary_slice(lines.slice(0, len(lines) - 1), 0, -1)
    return pa.concat_arrays([head.cast(pa.binary()), lines.slice(len(lines) - 1)])


def read_jsonl(source: str, f: BinaryIO, options: dict[str, Any]) -> Iterator[dict | BadRecord]:
    """One row per JSON object line; blank lines are skipped; other lines are row errors."""
    encoding = options.get("encoding", "utf-8")
    for line in _lines(source, f, max_line_bytes(options)):
        if isinstance(line, BadRecord):
            yield line
            continue
        row = jsonl_row(*line, encoding, int64=True)
        if row is not None:
            yield row


def jsonl_row(src: str, raw: bytes, encoding: str = "utf-8", int64: bool = False) -> dict | BadRecord | None:
    """The row of one JSONL line (``__source__`` first), a ``BadRecord`` naming why it is not one, or None for a blank line.

    ``int64``: an integer out of the 64-bit range is a row error (an untyped read: no column holds one; a declared type checks its own).
    """
    text = _decode(src, raw, encoding)
    if isinstance(text, BadRecord):
        return text
    if not text.strip():
        return None
    try:
        value = loads(text, raw if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else None, int64)
    except json.JSONDecodeError as exc:
        return BadRecord(src, "JSONDecodeError", f"invalid JSON: {exc.msg} at column {exc.colno}")
    if not isinstance(value, dict):
        return BadRecord(src, "TypeError", f"expected a JSON object, got {type(value).__name__}")
    return _row(src, value)


_DIGIT = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_NUMBER = b"0" * 19  # 19 digits in a row: an integer that may not fit 64 bits (orjson reads it as a float), or a long mantissa


def long_number(raw: bytes) -> bool:
    """Whether ``raw`` holds 19 digits in a row: an integer that may not fit 64 bits (orjson and Arrow read one as a float), or a long mantissa."""
    return _LONG_NUMBER in raw.translate(_DIGIT)


def loads(text: str, raw: bytes | None = None, int64: bool = False) -> Any:
    """``json.loads(text)`` (``raw``: its UTF-8 bytes, if so): the same value and the same error, in under half the time where orjson reads it the same.

    orjson refuses what ``json`` takes beyond the standard (NaN, Infinity, a number out of a
    double's range, a lone surrogate): those lines, and any with 19 digits in a row (orjson reads
    an integer past 64 bits as a float), are read by ``json``, as is every line orjson calls bad,
    so a bad line's message is ``json``'s. A text nested too deep is a ``JSONDecodeError``, never
    Python's ``RecursionError``: deeper than 1,024 levels where orjson reads it (its limit), than
    ``nesting.MAX_DEPTH`` (Spark's, 1,000) where ``json`` does. ``int64``: an integer out of the
    64-bit range is a ``JSONDecodeError`` (only ``json`` reads one: it has 19 digits or more).
    """
    if raw is not None and not long_number(raw):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    value = json_loads(text)
    if int64 and (wide := _wide_int(value)) is not None:
        raise json.JSONDecodeError(f"an integer of {len(str(abs(wide)))} digits is out of the 64-bit range", text, 0)
    return value


def _wide_int(value: Any) -> int | None:
    """An integer in ``value`` (a parsed JSON value, walked without recursion) out of the 64-bit range, or None."""
    todo = [value]
    while todo:
        item = todo.pop()
        if type(item) is int:
            if not -(1 << 63) <= item < 1 << 63:
                return item
        elif isinstance(item, dict):
            todo += item.values()
        elif isinstance(item, list):
            todo += item
    return None


def _row(src: str, values: dict[str, Any]) -> dict[str, Any]:
    """The row with its lineage first; the data's own ``__source__``, if any, is replaced."""
    row = {SOURCE: src}
    row.update(values)
    row[SOURCE] = src
    return row


def _undecodable(src: str, record: list[str], encoding: str) -> BadRecord | None:
    """A row error when a record holds bytes ``encoding`` cannot decode (kept as surrogate escapes)."""
    for number, field in enumerate(record, start=1):
        for ch in field:
            if "\udc80" <= ch <= "\udcff":
                return BadRecord(src, "UnicodeDecodeError", f"undecodable text ({encoding}): byte 0x{ord(ch) - 0xDC00:02x} in field {number}")
    return None


def read_csv(source: str, f: BinaryIO, options: dict[str, Any]) -> Iterator[dict | BadRecord]:
    """One row per CSV record after the header; a bad record is a row error, never a failed file.

    A record is bad when it has the wrong field count, holds bytes the ``encoding`` cannot decode,
    breaks the CSV syntax (``csv.Error``, e.g. a field over the size limit) or holds a line of more
    than ``max_line_bytes`` characters (read past, never held). An undecodable header is reported
    too, and its names are read with U+FFFD for the bad bytes; a header line over the limit is the
    file's one row error.
    """
    encoding = options.get("encoding", "utf-8")
    if encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        encoding = "utf-8-sig"  # a byte order mark is not part of the first column's name
    # NOTE: surrogateescape keeps each undecodable byte, so the record that holds it (not the file) fails.
    text = io.TextIOWrapper(f, encoding, errors="surrogateescape", newline="")
    try:
        lines = _CsvLines(text, max_line_bytes(options))
        yield from _csv_records(source, csv.reader(lines, delimiter=options.get("delimiter", ",")), lines, encoding)
    finally:
        if not f.closed:
            text.detach()  # the caller owns ``f``: the wrapper must not close it


class _LongCsvLine(Exception):
    """A CSV line longer than the limit, read past: ``csv.reader`` passes it on and starts its next record afresh."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"line of {size} characters is longer than max_line_bytes ({limit})")


class _CsvLines:
    """The lines of a text stream for ``csv.reader`` (line ends kept), counted; one of more than ``limit`` characters raises ``_LongCsvLine`` in its place."""

    def __init__(self, text: io.TextIOBase, limit: int):
        self.limit, self.number, self._size = limit, 0, limit + 2  # a piece: the limit and room for the line's break, CRLF too
        self._readline = text.readline
        self._cut_crlf = False  # a long line's piece ended at its CR: an LF next is its break, not a line

    def __iter__(self) -> _CsvLines:
        return self

    def __next__(self) -> str:
        line = self._readline(self._size)
        if self._cut_crlf:
            self._cut_crlf = False
            if line == "\n":
                line = self._readline(self._size)
        if not line:
            raise StopIteration
        self.number += 1
        if len(line) <= self.limit or len(content := line.rstrip("\r\n")) <= self.limit:
            return line  # ended by its break, or the file's last line
        size = len(content)
        while line and line[-1] not in "\r\n":  # read past the rest, a piece at a time
            line = self._readline(self._size)
            size += len(line.rstrip("\r\n"))
        self._cut_crlf = line.endswith("\r")
        raise _LongCsvLine(size, self.limit)


def _csv_records(source: str, reader, lines: _CsvLines, encoding: str) -> Iterator[dict | BadRecord]:
    """The rows and bad records of a ``csv.reader`` over ``lines`` (see :func:`read_csv`)."""
    try:
        header = next(reader, None)
    except DamagedFile as exc:
        yield damaged(source, exc, 0)
        return
    except _LongCsvLine as exc:
        yield BadRecord(f"{source}{LINE}1", "LineTooLong", f"CSV header {exc}: the file is not read")
        return
    if header is None:
        return
    bad = _undecodable(f"{source}{LINE}1", header, encoding)
    if bad is not None:
        yield bad
        header = [h.encode(encoding, "surrogateescape").decode(encoding, "replace") for h in header]
    while True:
        src = f"{source}{LINE}{lines.number + 1}"
        try:
            row = next(reader)
        except StopIteration:
            return
        except DamagedFile as exc:
            yield damaged(source, exc, lines.number)
            return
        except _LongCsvLine as exc:
            yield BadRecord(f"{source}{LINE}{lines.number}", "LineTooLong", str(exc))
            continue
        except csv.Error as exc:
            yield BadRecord(src, "csv.Error", f"malformed CSV record: {exc}")
            continue
        if not row:
            continue
        if len(row) != len(header):
            yield BadRecord(src, "ValueError", f"CSV record has {len(row)} fields, header has {len(header)}")
            continue
        bad = _undecodable(src, row, encoding)
        if bad is not None:
            yield bad
            continue
        yield _row(src, dict(zip(header, row)))
