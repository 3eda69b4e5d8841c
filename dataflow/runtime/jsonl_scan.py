"""A local JSON-lines file of a declared schema as a DuckDB relation: ``read_ndjson`` inside the fused query.

The relation has the columns the Arrow read gives (``connectors.formats.typed_jsonl``): ``__source__``
and the declared fields in their types, one row per line in order. ``__source__`` holds only the
line number (the caller prefixes ``<path>#line=``): every line of the file must start with ``{``
(``connectors.formats.aligned``), so DuckDB reads exactly one row per line or fails.

DuckDB converts a value of another kind where Spark's rules (and the Arrow read) do not: a string
``"1.5"`` for a double, ``1.5`` for an int, ``1`` for a boolean. So a field of a non-string kind is
read as JSON and its kind checked before the cast, and a line that breaks a rule raises in the
query (``error()``): the caller then reads the file the Arrow way, where that line is a row
error. The check is computed below the row numbering, which every row passes through, so a line a
later filter drops is checked too. A string field takes any value, a non-string as its compact JSON
text (DuckDB's and the Arrow read's text agree: shortest floats, UTF-8 as is). A top-level double
NaN reads as null, as the Arrow tables do in DuckDB (``ops.table.duck``).
"""
from __future__ import annotations

import pyarrow as pa

from dataflow.columns import SOURCE, is_working
from dataflow.ops.table.duck import quoted

__all__ = ["scan_sql", "supported"]

_GLOB = frozenset("*?[]{}")  # DuckDB expands these in a path
_INTS = {pa.int32(): "INTEGER", pa.int64(): "BIGINT"}
_OK, _LINE = "__df_ok__", "__df_line__"


def supported(schema: pa.Schema) -> bool:
    """Whether every declared field (``schema`` without ``__source__``) has a type the scan reads: strings, ints, doubles, booleans, structs of them."""
    fields = [f for f in schema if f.name != SOURCE]  # a field spelled like a working column keeps the Arrow way, which refuses its values
    return all(_supported(f.type) and not is_working(f.name) for f in fields) and len({f.name.lower() for f in schema}) == len(schema)


def _supported(kind: pa.DataType) -> bool:
    if pa.types.is_struct(kind):
        return all(_supported(f.type) for f in kind) and len({f.name.lower() for f in kind}) == kind.num_fields
    return pa.types.is_string(kind) or kind in _INTS or pa.types.is_float64(kind) or pa.types.is_boolean(kind)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _read_type(kind: pa.DataType) -> str:
    """The type ``read_ndjson`` gives the field: strings as text, other scalars as raw JSON (checked), structs of those."""
    if pa.types.is_struct(kind):
        return "STRUCT(" + ", ".join(f"{quoted(f.name)} {_read_type(f.type)}" for f in kind) + ")"
    return "VARCHAR" if pa.types.is_string(kind) else "JSON"


def _value(ref: str, kind: pa.DataType, checks: list[str]) -> str:
    """The typed value of the raw field ``ref``, adding the tests its raw JSON must pass to ``checks``.

    The tests read the value's JSON text (a number's starts with ``-``, a digit, ``N`` for NaN or ``I``
    for Infinity; an integer's is digits alone), cheaper than parsing it again with
    ``json_type``; a number is cast from its text, which gives what casting the JSON value gives.
    They are in the row's check, not left to the casts: a field no step reads is never cast.
    """
    if pa.types.is_string(kind):
        return ref
    if pa.types.is_struct(kind):
        fields = ", ".join(f"{quoted(f.name)} := {_value(f'{ref}.{quoted(f.name)}', f.type, checks)}" for f in kind)
        return f"CASE WHEN {ref} IS NULL THEN NULL ELSE struct_pack({fields}) END"
    text = f"CAST({ref} AS VARCHAR)"
    if pa.types.is_boolean(kind):
        checks.append(f"({ref} IS NULL OR {text} IN ('true', 'false'))")
        return f"CAST({ref} AS BOOLEAN)"
    if kind in _INTS:  # JSON integers in range only
        checks.append(f"({ref} IS NULL OR (regexp_full_match({text}, '-?[0-9]+') AND TRY_CAST({text} AS {_INTS[kind]}) IS NOT NULL))")
        return f"CAST({text} AS {_INTS[kind]})"
    checks.append(f"({ref} IS NULL OR ascii({text}) IN (45, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 73, 78))")  # any JSON number
    return f"CAST({text} AS DOUBLE)"


def scan_sql(path: str, schema: pa.Schema) -> str | None:
    """The relation of ``path`` (a local file) read as ``schema`` (``__source__`` the line number as text), or None for a path DuckDB would expand as a glob."""
    if _GLOB & set(path):
        return None
    fields = [f for f in schema if f.name != SOURCE]
    checks: list[str] = []
    values = []
    for f in fields:
        value = _value(quoted(f.name), f.type, checks)
        if pa.types.is_float64(f.type):
            value = f"CASE WHEN isnan({value}) THEN NULL ELSE {value} END"
        values.append(f"{value} AS {quoted(f.name)}")
    ok = f"CASE WHEN {' AND '.join(checks)} THEN TRUE ELSE error('a value of another kind than declared') END" if checks else "TRUE"
    columns = "{" + ", ".join(f"{_literal(f.name)}: {_literal(_read_type(f.type))}" for f in fields) + "}"
    read = f"read_ndjson({_literal(path)}, columns = {columns}, format = 'newline_delimited')"
    names = ", ".join(quoted(f.name) for f in fields)
    return (f"SELECT CASE WHEN {_OK} THEN CAST({_LINE} AS VARCHAR) END AS {quoted(SOURCE)}, {names} FROM "
            f"(SELECT row_number() OVER () AS {_LINE}, * FROM (SELECT {ok} AS {_OK}, {', '.join(values)} FROM {read}))")
