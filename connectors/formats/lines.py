"""Line-based readers: text (per file or per line), JSONL and CSV; offsets go into ``source``."""
from __future__ import annotations

import csv
import io
import json
from typing import Any, Iterator

from connectors.formats import BadRecord

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
        yield text if isinstance(text, BadRecord) else {"source": source, "text": text}
        return
    skip_empty = options.get("skip_empty", True)
    for src, raw in _lines(source, data):
        text = _decode(src, raw, encoding)
        if isinstance(text, BadRecord):
            yield text
        elif text.strip() or not skip_empty:
            yield {"source": src, "text": text}


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
        yield {"source": src, **value}  # a "source" field in the data is earlier lineage and wins


def read_csv(source: str, data: bytes, options: dict[str, Any]) -> Iterator[dict | BadRecord]:
    """One row per CSV record after the header; a record with the wrong field count is a row error."""
    encoding = options.get("encoding", "utf-8")
    text = _decode(source, data, encoding)
    if isinstance(text, BadRecord):
        yield text
        return
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=options.get("delimiter", ","))
    header = next(reader, None)
    if header is None:
        return
    for row in reader:
        src = f"{source}#line={reader.line_num}"
        if not row:
            continue
        if len(row) != len(header):
            yield BadRecord(src, "ValueError", f"CSV record has {len(row)} fields, header has {len(header)}")
            continue
        yield {"source": src, **dict(zip(header, row))}
