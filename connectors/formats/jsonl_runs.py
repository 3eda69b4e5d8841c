"""Untyped UTF-8 JSON lines in runs of raw lines, and a batch of such lines as one Arrow table where Arrow gives what Python gives.

``read_jsonl_runs`` cuts a file into lines with ``lines.line_runs``, as ``lines.read_jsonl`` does (LF, CR and CRLF
breaks, a BOM before the first line, a line over ``max_line_bytes`` and a damaged compressed file
as row errors), but hands them on a block at a time (``LineRun``), not parsed. The reader then
takes a whole batch of lines at once (``arrow_batch``): Arrow's JSON reader parses it and infers
the columns' types, where the table is the one that parsing each line (``lines.jsonl_row``) and
typing each column from its values (``pa.array``) builds; elsewhere each line is parsed by Python,
as before. Arrow takes the batch only when every line is one JSON object (``{`` first, ``}``
last), the batch is valid UTF-8, holds no number of 19 digits or more (Python refuses an integer
beyond 64 bits; Arrow reads it as a double), no line nests deeper than Python reads
(``dataflow.nesting``), no column is spelled like dataflow's working columns, and Arrow parses it
without an error (a repeated key, values of two kinds in a column, a lone surrogate, a number beyond
a double's range all are; NaN and Infinity it reads as Python does) into nulls, booleans, int64, doubles, strings, lists and structs
only. Text that Arrow reads as a timestamp is read again as the string it is.
"""
from __future__ import annotations

import re
from typing import Any, BinaryIO, Iterator

import numpy as np
import pyarrow as pa

from connectors.formats import BadRecord
from connectors.formats.lines import LineRun, line_runs, long_number, max_line_bytes
from connectors.formats.typed_jsonl import with_lineage
from dataflow.columns import SOURCE, is_working
from dataflow.nesting import MAX_DEPTH, too_deep

__all__ = ["arrow_batch", "read_jsonl_runs"]

_BLOCK = 8 << 20  # bytes of lines read at once
_MAX_BATCH_BYTES = 64 << 20  # a larger batch (of very long lines) is parsed line by line
_OPEN, _CLOSE = ord("{"), ord("}")
_NULL_FIRST = re.compile(rb"\[\s*null")  # a list whose first item is null (or text that looks so)


def read_jsonl_runs(source: str, f: BinaryIO, options: dict[str, Any], multiple: int = 1) -> Iterator[LineRun | BadRecord]:
    """The lines of UTF-8 JSON lines ``f`` (plain or decompressed) in runs (``lines.line_runs``), numbered as ``lines.read_jsonl`` numbers them.

    Each run holds a ``multiple`` of lines but the last before a row error or the file's end, and
    one whose carried lines would hold more than a batch Arrow takes.
    """
    return line_runs(source, f, max_line_bytes(options), _BLOCK, multiple, _MAX_BATCH_BYTES)


def arrow_batch(run: LineRun, start: int, count: int) -> pa.Table | None:
    """Lines ``start`` to ``start + count`` of ``run`` as the table their parsed rows make (``__source__`` first), or None where Python must parse them."""
    lines = run.lines[start : start + count]
    if not lines or sum(map(len, lines)) > _MAX_BATCH_BYTES or not all(lines):
        return None
    data = b"\n".join(lines)
    if b"\r" in data or long_number(data):
        return None
    buf = np.frombuffer(data, np.uint8)
    breaks = np.flatnonzero(buf == 10)
    if buf[0] != _OPEN or buf[-1] != _CLOSE or (buf[breaks - 1] != _CLOSE).any() or (buf[breaks + 1] != _OPEN).any():
        return None
    bounds = np.r_[-1, breaks, len(data)]  # a line of at most MAX_DEPTH bytes nests no deeper
    if any(too_deep(data, int(bounds[i]) + 1, int(bounds[i + 1])) is not None for i in np.flatnonzero(np.diff(bounds) - 1 > MAX_DEPTH)):
        return None
    if not data.isascii():
        try:
            data.decode("utf-8")  # Arrow's parser does not check it
        except UnicodeDecodeError:
            return None
    table = _parsed(data, None)
    if table is not None and _NULL_FIRST.search(data):
        # NOTE: Arrow 26 infers a list whose first item is null right, but fills it wrong (a later item lost, or
        # a broken array); given the type it reads it right, but for a list of nulls only: Python reads those.
        if _has(table.schema, lambda t: pa.types.is_list(t) and pa.types.is_null(t.value_type)):
            return None
        table = _parsed(data, pa.schema([pa.field(f.name, _untimed(f.type)) for f in table.schema]))
    elif table is not None and _has(table.schema, pa.types.is_temporal):  # those columns read again as text, the others left alone
        timed = [f for f in table.schema if _type_has(f.type, pa.types.is_temporal)]
        text = _parsed(data, pa.schema([pa.field(f.name, _untimed(f.type)) for f in timed]), ignore=True)
        if text is None or text.num_rows != table.num_rows:
            return None
        for f in timed:
            table = table.set_column(table.schema.get_field_index(f.name), f.name, text.column(f.name))
    if table is None or table.num_rows != count or not all(_plain(f.type) for f in table.schema) or any(is_working(n) for n in table.column_names):
        return None
    try:
        table.validate(full=True)  # a last guard against a reader bug like the one above
    except pa.ArrowInvalid:
        return None
    if SOURCE in table.column_names:  # the data's own: replaced, as line by line
        table = table.drop_columns([SOURCE])
    return with_lineage(table, run.source, np.arange(run.first + start, run.first + start + count))


def _parsed(data: bytes, schema: pa.Schema | None, ignore: bool = False) -> pa.Table | None:
    """``data`` parsed by Arrow (``schema``: these columns in these types; ``ignore``: only those), or None where it does not parse."""
    import pyarrow.json as pj

    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore" if ignore else "error") if schema is not None else None
    try:
        return pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(use_threads=False, block_size=max(len(data), 1 << 20)),
                            parse_options=options)
    except pa.ArrowInvalid:
        return None


def _has(schema: pa.Schema, test) -> bool:
    return any(_type_has(f.type, test) for f in schema)


def _type_has(kind: pa.DataType, test) -> bool:
    if test(kind):
        return True
    if pa.types.is_struct(kind):
        return any(_type_has(f.type, test) for f in kind)
    return pa.types.is_list(kind) and _type_has(kind.value_type, test)


def _untimed(kind: pa.DataType) -> pa.DataType:
    """``kind`` with each timestamp or date (text Arrow took for one) a string."""
    if pa.types.is_temporal(kind):
        return pa.string()
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _untimed(f.type)) for f in kind])
    if pa.types.is_list(kind):
        return pa.list_(_untimed(kind.value_type))
    return kind


def _plain(kind: pa.DataType) -> bool:
    """Whether ``kind`` is one ``pa.array`` gives parsed JSON values: null, bool, int64, double, string, or lists and structs of them."""
    if pa.types.is_struct(kind):
        return all(_plain(f.type) for f in kind)
    if pa.types.is_list(kind):
        return _plain(kind.value_type)
    return kind in (pa.null(), pa.bool_(), pa.int64(), pa.float64(), pa.string())
