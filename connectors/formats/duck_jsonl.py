"""A block of JSON lines parsed by DuckDB into a declared schema, where that gives what the exact read gives.

DuckDB's typed JSON transform is looser than the declared-schema rules of ``typed_jsonl``: it
turns ``"1.5"`` and ``true`` into a double, rounds ``1.5`` to an integer and reads ``5`` as a struct
of nulls. So here every declared field is read as DuckDB's ``JSON`` text (strings as text) and its
JSON kind is checked in the same query, row by row, before it is cast:

- an integer is an integer literal in range; a double any finite number literal; a boolean
  ``true``/``false``; a struct an object (asked of ``json_type`` only when all its fields are null);
- a string that could be the text of another kind (a number, ``true``/``false``, ``{``/``[`` first)
  is asked of ``json_type`` whether the JSON value was a string.

When a line breaks any of them, or DuckDB cannot parse a line, ``duck_block`` returns None and the
caller reads the block the exact way (line by line: each bad line a row error naming the field).
A block with a ``,`` before a ``}`` or ``]`` goes there too (DuckDB takes trailing commas).

Known differences from the exact read, both for JSON that RFC 8259 leaves undefined or that is
not JSON: a key given twice in one object reads its first value here (its last line by line),
and DuckDB takes ``nan``/``inf`` in any letter case in a string field or one nothing declares,
where the line-by-line read makes the line a row error.
"""
from __future__ import annotations

import json
import re
import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["applies", "duck_block"]

_DUCK = {pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.float32(): "DOUBLE"}
_NUMERIC = ", ".join(str(c) for c in b"-0123456789")
_SPACES = np.zeros(256, dtype=bool)
_SPACES[list(b" \t\n\r")] = True
_TRAILING = re.compile(rb",[ \t\n\r]*[}\]]")


def applies(schema: pa.Schema) -> bool:
    """Whether DuckDB can read blocks of this declared schema (``__source__`` first): strings, numbers, booleans, structs of them; plain names."""
    def ok(field: pa.Field) -> bool:
        if '"' in field.name or "\\" in field.name or "'" in field.name or not field.name.isprintable():
            return False
        if pa.types.is_struct(field.type):
            return all(ok(f) for f in field.type)
        return field.type == pa.string() or field.type == pa.bool_() or field.type in _DUCK
    return len(schema) > 1 and all(ok(f) for f in list(schema)[1:])


def _q(name: str) -> str:
    return f'"{name}"'


class _Query:
    """The SQL over ``lines`` of one declared schema: the values, and ``__ok`` (every non-string kind fits) per line.

    ``strings`` lists the string fields' column paths (a struct's as ``ctx.region``) with their JSON
    paths: ``_strings_ok`` checks them on the result, where most values show by their first byte
    that no other kind wrote them.
    """

    def __init__(self, schema: pa.Schema):
        self.schema = pa.schema(list(schema)[1:])
        self.strings: list[tuple[list[str], str]] = []
        checks: list[str] = []
        structure = {f.name: self._structure(f.type) for f in self.schema}
        values = [f"{self._value(f, [f.name], f'v.{_q(f.name)}', f'$.{_q(f.name)}', checks)} AS {_q(f.name)}" for f in self.schema]
        self.sql = (f"SELECT {', '.join(values)}, ({' AND '.join(checks) or 'TRUE'}) AS __ok "
                    f"FROM (SELECT line, json_transform(line, '{json.dumps(structure)}') AS v FROM lines)")

    def _structure(self, kind: pa.DataType):
        if pa.types.is_struct(kind):
            return {f.name: self._structure(f.type) for f in kind}
        return "VARCHAR" if kind == pa.string() else "JSON"

    def _value(self, field: pa.Field, names: list[str], x: str, path: str, checks: list[str]) -> str:
        kind = field.type
        if pa.types.is_struct(kind):  # a non-object reads as a struct of nulls: only then is the line asked
            subs = [self._value(f, [*names, f.name], f"{x}.{_q(f.name)}", f"{path}.{_q(f.name)}", checks) for f in kind]
            empty = " AND ".join(f"{x}.{_q(f.name)} IS NULL" for f in kind)
            checks.append(f"(CASE WHEN {x} IS NULL OR NOT ({empty}) THEN TRUE ELSE json_type(line, '{path}') = 'OBJECT' END)")
            return f"CASE WHEN {x} IS NULL THEN NULL ELSE struct_pack({', '.join(f'{_q(f.name)} := {s}' for f, s in zip(kind, subs))}) END"
        if kind == pa.string():
            self.strings.append((names, path))
            return x
        text = f"{x}::VARCHAR"
        if kind == pa.bool_():
            checks.append(f"({x} IS NULL OR {text} IN ('true', 'false'))")
            return f"({text} = 'true')"
        value = f"TRY_CAST({text} AS {_DUCK[kind]})"
        if _DUCK[kind] == "DOUBLE":  # a number's text starts with - or a digit; -Infinity and 1e400 are not finite
            checks.append(f"({x} IS NULL OR (ascii({text}) IN ({_NUMERIC}) AND coalesce(isfinite({value}), FALSE)))")
        else:
            checks.append(f"({x} IS NULL OR (regexp_full_match({text}, '-?[0-9]+') AND {value} IS NOT NULL))")
        return value


# The first bytes a string value can share with the JSON text of another kind: a number, true/false, an object, an array.
_OTHER = np.zeros(256, dtype=bool)
_OTHER[list(b"-0123456789tf{[")] = True


def _column(table: pa.Table, names: list[str]) -> pa.Array:
    col = table.column(names[0]).combine_chunks()
    for name in names[1:]:
        col = pc.struct_field(col, name)
    return col.cast(pa.string())


def _strings_ok(query: _Query, out: pa.Table, lines: pa.Table) -> bool:
    """Whether every string field's value was a JSON string: by its first byte, else by its text, else by asking DuckDB of its line."""
    for names, path in query.strings:
        col = _column(out, names)
        offsets = np.frombuffer(col.buffers()[1], dtype=np.int32)[col.offset: col.offset + len(col) + 1]
        if col.buffers()[2] is None:
            continue
        data = np.frombuffer(col.buffers()[2], dtype=np.uint8)
        starts, filled = offsets[:-1], offsets[1:] > offsets[:-1]
        maybe = np.flatnonzero(filled)[_OTHER[data[starts[filled]]]]
        if not len(maybe):
            continue
        values = col.take(pa.array(maybe))
        other = pc.or_(pc.match_substring_regex(values, r"^(-?[0-9][0-9.eE+-]*|true|false)$"), pc.match_substring_regex(values, r"^[{\[]"))
        asked = maybe[np.asarray(other.to_numpy(zero_copy_only=False), dtype=bool)]
        if not len(asked):
            continue
        kinds = _connection().from_arrow(lines.take(pa.array(asked))).query("lines", f"SELECT count(*) FROM lines WHERE json_type(line, '{path}') IS DISTINCT FROM 'VARCHAR'")
        if kinds.fetchall()[0][0]:
            return False
    return True


_QUERIES: dict[pa.Schema, _Query] = {}
_LOCAL = threading.local()  # a connection per thread, one thread each: Ray already runs a task per core


def _connection():
    import duckdb

    con = getattr(_LOCAL, "con", None)
    if con is None:
        con = _LOCAL.con = duckdb.connect(config={"threads": 1})
    return con


def _trailing_comma(data: bytes, buf: np.ndarray) -> bool:
    """Whether a ``,`` may come right before a ``}`` or ``]`` (spaces between: asked of a regex only then)."""
    closers = np.flatnonzero((buf == 125) | (buf == 93))
    before = buf[closers[closers > 0] - 1]
    if (before == 44).any():
        return True
    return bool(_SPACES[before].any()) and _TRAILING.search(data) is not None


def duck_block(data: bytes, buf: np.ndarray, ends: np.ndarray, schema: pa.Schema) -> pa.Table | None:
    """The declared columns of ``data`` (``buf``: its bytes; UTF-8 lines of one JSON object each, ending at ``ends``), or None: read it the exact way."""
    import duckdb

    if _trailing_comma(data, buf):
        return None
    query = _QUERIES.get(schema)
    if query is None:
        query = _QUERIES[schema] = _Query(schema)
    offsets = np.r_[0, ends[:-1] + 1, len(data)].astype(np.int32)
    lines = pa.table({"line": pa.StringArray.from_buffers(len(ends), pa.py_buffer(offsets), pa.py_buffer(data))})
    try:
        out = _connection().from_arrow(lines).query("lines", query.sql).to_arrow_table()
    except duckdb.Error:
        return None
    ok = out.column("__ok")
    if ok.null_count or not pc.all(ok).as_py() or not _strings_ok(query, out, lines):
        return None
    return out.drop_columns(["__ok"]).cast(query.schema)
