"""Line-based readers: text (per file or per line), JSONL and CSV; offsets go into ``__source__``.

A ``__source__`` field in the data (lineage of an earlier pipeline) is replaced by the reader's:
identity comes from the input position, never from user values. Every other field, ``source``
included, is the user's and is kept as it is.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any, Iterator

from connectors.formats import BadRecord
from dataflow.columns import SOURCE

__all__ = ["read_csv", "read_jsonl", "read_text"]


def _lines(source: str, data: bytes) -> Iterator[tuple[str, bytes]]:
    for number, raw in enumerate(data.splitlines(), start=1):
        yield f"{source}#line={number}", raw


def _decode(src: str, raw: bytes, encoding: str) -> str | BadRecord:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        return BadRecord(src, "UnicodeDecodeError", f"undecodable text ({encoding}): {exc.reason} at byte {exc.start}")


def read_text(source: str, data: bytes, options: dict[str, Any]) -> Iterator[dict | BadRecord]:
    """One row per file (``split: file``, the default) or per line (``split: line``)."""
    encoding = options.get("encoding", "utf-8")
    if options.get("split", "file") == "file":
        text = _decode(source, data, encoding)
        yield text if isinstance(text, BadRecord) else {SOURCE: source, "text": text}
        return
    skip_empty = options.get("skip_empty", True)
    for src, raw in _lines(source, data):
        text = _decode(src, raw, encoding)
        if isinstance(text, BadRecord):
            yield text
        elif text.strip() or not skip_empty:
            yield {SOURCE: src, "text": text}


def read_jsonl(source: str, data: bytes, options: dict[str, Any]) -> Iterator[dict | BadRecord]:
    """One row per JSON object line; blank lines are skipped; other lines are row errors."""
    encoding = options.get("encoding", "utf-8")
    for src, raw in _lines(source, data):
        text = _decode(src, raw, encoding)
        if isinstance(text, BadRecord):
            yield text
            continue
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            yield BadRecord(src, "JSONDecodeError", f"invalid JSON: {exc.msg} at column {exc.colno}")
            continue
        if not isinstance(value, dict):
            yield BadRecord(src, "TypeError", f"expected a JSON object, got {type(value).__name__}")
            continue
        yield _row(src, value)


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


def read_csv(source: str, data: bytes, options: dict[str, Any]) -> Iterator[dict | BadRecord]:
    """One row per CSV record after the header; a bad record is a row error, never a failed file.

    A record is bad when it has the wrong field count, holds bytes the ``encoding`` cannot decode,
    or breaks the CSV syntax (``csv.Error``, e.g. a field over the size limit). An undecodable
    header is reported too, and its names are read with U+FFFD for the bad bytes.
    """
    encoding = options.get("encoding", "utf-8")
    # NOTE: surrogateescape keeps each undecodable byte, so the record that holds it (not the file) fails.
    text = data.decode(encoding, "surrogateescape")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=options.get("delimiter", ","))
    header = next(reader, None)
    if header is None:
        return
    bad = _undecodable(f"{source}#line=1", header, encoding)
    if bad is not None:
        yield bad
        header = [h.encode(encoding, "surrogateescape").decode(encoding, "replace") for h in header]
    while True:
        src = f"{source}#line={reader.line_num + 1}"
        try:
            row = next(reader)
        except StopIteration:
            return
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
