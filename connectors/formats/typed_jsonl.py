"""JSONL read with a declared schema (``source.options.schema``): Arrow tables of the declared columns.

Plain UTF-8 input is parsed 8 MiB at a time into the declared Arrow types by ``pyarrow.json``. A
block goes to it only when every line but the empty ones (no rows, as line by line) is one JSON
object with nothing around it (``{`` first, ``}`` last), it holds no CR but in CRLFs and is valid
UTF-8, the parser takes it without an error, and Arrow's row count equals the count of those
lines. Any other block (a bad line, a line of spaces or a non-object line, a value of another kind
than declared, a lone CR) is read line by line like ``read_jsonl``: every bad line becomes a row
error with its ``path#line=N`` and reason, and the good lines of the block are kept. Compressed
files come in the same blocks, decompressed; other encodings are read line by line throughout.
The values are Spark's: integers take JSON integers in range only, doubles any JSON number,
strings any value (non-strings as their compact JSON text, objects and arrays as DuckDB writes
them, so a file reads the same here and in ``runtime.jsonl_scan``), structs objects, arrays
arrays; fields not declared are left out. A value of another kind makes the row a ``TypeError`` row error.
"""
from __future__ import annotations

import json
import threading
from typing import Any, BinaryIO, Iterator

import numpy as np
import pyarrow as pa

from connectors.formats import BadRecord
from connectors.formats.compressed import DamagedFile
from connectors.formats.lines import LongLine, damaged, jsonl_row, line_blocks, max_line_bytes, read_jsonl
from dataflow.columns import SOURCE
from dataflow.lineage import LINE
from dataflow.nesting import deep_call, too_deep

__all__ = ["arrow_schema", "read_typed_jsonl", "read_typed_jsonl_blocks", "with_lineage"]

_BOM = b"\xef\xbb\xbf"
_BLOCK = 8 << 20  # bytes read and checked at once
_PARSE_BLOCK = 1 << 20  # bytes Arrow parses at once: as fast as 8 MiB at once (measured), with smaller buffers
_ROWS = 4096  # rows of a table built line by line
_INTS = {pa.int32(): (-(2**31), 2**31 - 1), pa.int64(): (-(2**63), 2**63 - 1)}
_local = threading.local()  # a DuckDB connection per thread (``_rendered``)


def _arrow_type(ddl) -> pa.DataType:
    from sqlglot import exp

    t = exp.DataType.Type
    simple = {t.TEXT: pa.string(), t.VARCHAR: pa.string(), t.INT: pa.int32(), t.BIGINT: pa.int64(), t.DOUBLE: pa.float64(),
              t.FLOAT: pa.float32(), t.BOOLEAN: pa.bool_()}
    if ddl.this in simple:
        return simple[ddl.this]
    if ddl.this == t.STRUCT:
        return pa.struct([pa.field(f.name, _arrow_type(f.args["kind"])) for f in ddl.expressions])
    if ddl.this == t.ARRAY:
        return pa.list_(_arrow_type(ddl.expressions[0]))
    raise ValueError(ddl.sql(dialect="spark"))


def arrow_schema(fields: dict[str, str]) -> pa.Schema:
    """The Arrow schema of a declared JSONL schema (field -> Spark DDL type), ``__source__`` first.

    Raises:
        ValueError: naming the field whose type is not one of string, int, long/bigint, float,
            double, boolean, or a struct or array of them.
    """
    from sqlglot import exp
    from sqlglot.errors import ParseError

    if not isinstance(fields, dict) or not fields:
        raise ValueError(f"source.options.schema must map each field to its type, got {fields!r}")
    out = [pa.field(SOURCE, pa.string())]
    for name, ddl in fields.items():
        if name == SOURCE:
            continue
        try:
            out.append(pa.field(name, _arrow_type(exp.DataType.build(str(ddl), dialect="spark"))))
        except (ValueError, ParseError) as exc:
            raise ValueError(f"source.options.schema: field '{name}' has type '{ddl}', which a Ray jsonl read does not take "
                             "(string, int, long, float, double, boolean, struct<...>, array<...>); read it as a string and convert it in a step") from exc
    return pa.schema(out)


class _NotA(Exception):
    """A JSON value of another kind than declared; ``args[0]`` names the field."""


def _convert(value: Any, kind: pa.DataType, name: str) -> Any:
    if value is None:
        return None
    if kind in _INTS:
        lo, hi = _INTS[kind]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise _NotA(name, kind)
        return value
    if pa.types.is_floating(kind):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _NotA(name, kind)
        return float(value)
    if pa.types.is_boolean(kind):
        if not isinstance(value, bool):
            raise _NotA(name, kind)
        return value
    if pa.types.is_struct(kind):
        if not isinstance(value, dict):
            raise _NotA(name, kind)
        return {f.name: _convert(value.get(f.name), f.type, f"{name}.{f.name}") for f in kind}
    if pa.types.is_list(kind):
        if not isinstance(value, list):
            raise _NotA(name, kind)
        return [_convert(v, kind.value_type, f"{name}[]") for v in value]
    if isinstance(value, str):
        return value
    text = deep_call(json.dumps, value, separators=(",", ":"), ensure_ascii=False)
    return _Container(text) if isinstance(value, (dict, list)) else text


class _Container(str):
    """An object or array read into a string field, as Python's compact JSON until ``_rendered`` gives it DuckDB's text."""

    made = 0  # how many were ever made in this process: a chunk of rows without one is not walked

    def __new__(cls, text: str):
        cls.made += 1
        return super().__new__(cls, text)


def _walk(value: Any, kind: pa.DataType, fn) -> Any:
    """``value`` of ``kind`` with each ``_Container`` in it replaced by ``fn`` of it."""
    if value is None:
        return None
    if pa.types.is_struct(kind):
        return {f.name: _walk(value[f.name], f.type, fn) for f in kind}
    if pa.types.is_list(kind):
        return [_walk(v, kind.value_type, fn) for v in value]
    return fn(value) if type(value) is _Container else value


def _rendered(rows: list[dict], schema: pa.Schema) -> list[dict]:
    """The rows with each object or array of a string field as DuckDB writes it (``json()``), the text its scan of the file gives (``runtime.jsonl_scan``).

    Python's and DuckDB's compact JSON differ in how they spell some doubles (``1e+16`` and
    ``10000000000000000.0``); scalars already agree. Known differences that remain: a number beyond
    a double's range or a repeated key inside such a value (DuckDB keeps the text as written).
    """
    texts: list[str] = []
    for row in rows:
        for f in schema:
            _walk(row[f.name], f.type, texts.append)
    if not texts:
        return rows
    con = getattr(_local, "con", None) or _connect()
    written = iter(con.execute("SELECT list_transform(?::VARCHAR[], lambda t: CAST(json(t) AS VARCHAR))", [texts]).fetchone()[0])
    return [{f.name: _walk(row[f.name], f.type, lambda _: next(written)) for f in schema} for row in rows]


def _connect():
    import duckdb

    _local.con = duckdb.connect(config={"threads": 1})
    return _local.con


def _typed(row: dict | BadRecord, schema: pa.Schema) -> dict | BadRecord:
    """A parsed line's declared fields in their types, or a ``TypeError`` row error naming the field."""
    if isinstance(row, BadRecord):
        return row
    try:
        return {f.name: row[SOURCE] if f.name == SOURCE else _convert(row.get(f.name), f.type, f.name) for f in schema}
    except _NotA as exc:
        return BadRecord(row[SOURCE], "TypeError", f"field '{exc.args[0]}' is not a {exc.args[1]}")


def _tables(records: Iterator[dict | BadRecord], schema: pa.Schema) -> Iterator[pa.Table | BadRecord]:
    """Row errors as they come, the typed rows as tables of up to ``_ROWS`` rows."""
    rows, made = [], _Container.made
    for rec in records:
        rec = _typed(rec, schema)
        if isinstance(rec, BadRecord):
            yield rec
            continue
        rows.append(rec)
        if len(rows) == _ROWS:
            yield pa.Table.from_pylist(_rendered(rows, schema) if _Container.made != made else rows, schema)
            rows, made = [], _Container.made
    if rows:
        yield pa.Table.from_pylist(_rendered(rows, schema) if _Container.made != made else rows, schema)


def read_typed_jsonl(source: str, f: BinaryIO, options: dict[str, Any]) -> Iterator[pa.Table | BadRecord]:
    """The declared columns of every line, line by line (other encodings than UTF-8)."""
    yield from _tables(read_jsonl(source, f, options), arrow_schema(options["schema"]))


def read_typed_jsonl_blocks(source: str, f: BinaryIO, options: dict[str, Any]) -> Iterator[pa.Table | BadRecord]:
    """The declared columns of every line of UTF-8 JSONL (decompressed or plain), 8 MiB blocks parsed by Arrow where they are clean."""
    schema, number, max_line = arrow_schema(options["schema"]), 0, max_line_bytes(options)
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
        if data:
            parsed = _block(data, schema)
            if parsed is None:
                lines = data.splitlines()
                yield from _tables((rec for i, raw in enumerate(lines, start=number + 1)
                                    if (rec := _line_row(f"{source}{LINE}{i}", raw, schema)) is not None), schema)
                number += len(lines)
            else:
                table, numbers, lines = parsed
                if table.num_rows:
                    yield with_lineage(table, source, numbers + number)
                number += lines


def _line_row(src: str, raw: bytes, schema: pa.Schema) -> dict | BadRecord | None:
    """A line of a block read line by line: by Python, or by Arrow alone where it nests deeper than Python reads
    (``dataflow.nesting``), so that it is a row as in a block Arrow reads whole (Arrow reads any depth)."""
    if too_deep(raw) is not None and (parsed := _block(raw, schema)) is not None and parsed[0].num_rows == 1:
        return {SOURCE: src, **parsed[0].to_pylist()[0]}
    return jsonl_row(src, raw)


def _block(data: bytes, schema: pa.Schema) -> tuple[pa.Table, np.ndarray, int] | None:
    """The block parsed by Arrow, or None when it must be read line by line.

    Returns the table (a row per line but the empty ones, which are no rows, as line by line), each
    row's line number in the block (from 1) and the block's line count.
    """
    import pyarrow.json as pj

    if b"\r" in data:
        if data.count(b"\r") != data.count(b"\r\n"):  # a lone CR: a line break to splitlines alone
            return None
        data = data.replace(b"\r\n", b"\n")  # a CRLF is one line break, as to splitlines
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = _ends(buf)
    lines = len(ends)
    empty = ends == np.r_[0, ends[:-1] + 1]  # a line break right after the last one (or first in the block)
    numbers = np.flatnonzero(~empty) + 1
    if not numbers.size:
        return pa.schema(list(schema)[1:]).empty_table(), numbers, lines
    if empty.any():  # without their line breaks: the lines that are rows, in order
        buf = np.delete(buf, ends[empty])
        data, ends = buf.tobytes(), _ends(buf)
    # NOTE: only objects go to Arrow (`{` first, `}` last): it reads a `null` line as a row of nulls, and crashes the process on a block of them.
    if buf[0] != ord("{") or (buf[ends - 1] != ord("}")).any() or (buf[ends[:-1] + 1] != ord("{")).any():
        return None
    try:
        data.decode("utf-8")  # Arrow's parser does not check it
    except UnicodeDecodeError:
        return None
    try:
        table = pj.read_json(pa.BufferReader(data), read_options=pj.ReadOptions(use_threads=False, block_size=_PARSE_BLOCK),
                             parse_options=pj.ParseOptions(explicit_schema=pa.schema(list(schema)[1:]), unexpected_field_behavior="ignore"))
    except pa.ArrowInvalid:
        return None
    if table.num_rows != len(ends):  # `{..}{..}` on one line is two objects: line by line
        return None
    return table, numbers, lines


def _ends(buf: np.ndarray) -> np.ndarray:
    """Where each line of ``buf`` ends: its line break, or the end of a last line without one."""
    ends = np.flatnonzero(buf == 10)
    return ends if len(buf) and buf[-1] == 10 else np.r_[ends, len(buf)]


def with_lineage(table: pa.Table, source: str, numbers: np.ndarray) -> pa.Table:
    """``table`` with ``__source__`` first: ``<source>#line=N`` for each row's line number in ``numbers``."""
    import pyarrow.compute as pc

    return table.add_column(0, SOURCE, pc.binary_join_element_wise(f"{source}{LINE}", pa.array(numbers).cast(pa.string()), ""))
