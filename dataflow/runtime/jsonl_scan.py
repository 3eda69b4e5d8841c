"""Local JSON-lines files of a declared schema as one DuckDB relation: ``read_ndjson`` inside the fused query.

The files are plain or compressed by a codec DuckDB decompresses by their names (``duckdb_reads``: gzip,
zstd), each whole (``object_lines`` decompresses it first and refuses a damaged one, which DuckDB
might read in part). The relation has the columns the Arrow read gives (``connectors.formats.typed_jsonl``): ``__source__``
and the declared fields in their types, one row per line, file after file, in order. ``__source__``
is the line's key (``dataflow.line_key``: the file's rank among the sorted paths and its line
number), which ``JsonlScan.sources`` turns into ``<path>#line=N``: an aggregate keeps the smallest
key as it would the smallest string. Every line of each file must start with ``{``
(``connectors.formats.aligned``), so DuckDB reads exactly one row per line or fails, and a row's
place in its file is its place in the scan less the lines of the files before it.

DuckDB converts a value of another kind where Spark's rules (and the Arrow read) do not: a string
``"1.5"`` for a double, ``1.5`` for an int, ``1`` for a boolean. So a field of a non-string kind is
read as JSON and its kind checked before the cast, and a line that breaks a rule raises in the
query (``error()``): the caller then reads the files the Arrow way, where that line is a row
error. The check is computed below the row numbering, which every row passes through, so a line a
later filter drops is checked too. A string field takes any value, a non-string as its compact JSON
text (DuckDB's and the Arrow read's text agree: shortest floats, UTF-8 as is). A top-level double
NaN reads as null, as the Arrow tables do in DuckDB (``ops.table.duck``).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import pyarrow as pa

from dataflow import line_key
from dataflow.columns import SOURCE, is_working
from dataflow.lineage import LINE
from dataflow.ops.table.duck import quoted

__all__ = ["JsonlScan", "duckdb_reads", "supported"]

_GLOB = frozenset("*?[]{}")  # DuckDB expands these in a path
_CODECS = {"gzip": ".gz", "zstd": ".zst"}  # what read_ndjson decompresses, by the name's suffix
_INTS = {pa.int32(): "INTEGER", pa.int64(): "BIGINT"}
_FILE_INDEX = "file_index"  # the reader's own column of the row's file, which a field of that name would hide
_OK, _ROW, _FILE, _LINE = "__df_ok__", "__df_row__", "__df_file__", "__df_line__"


def duckdb_reads(path: str) -> bool:
    """Whether ``read_ndjson`` reads the file's lines as dataflow's readers do: plain, or gzip or zstd by its name (not bz2 or xz)."""
    from connectors.formats.compressed import read_by_name

    return read_by_name(path, _CODECS)


def supported(schema: pa.Schema) -> bool:
    """Whether every declared field (``schema`` without ``__source__``) has a type the scan reads (strings, ints, doubles, booleans, structs of them) and a name that hides none of the scan's."""
    fields = [f for f in schema if f.name != SOURCE]  # a field spelled like a working column keeps the Arrow way, which refuses its values
    return (all(_supported(f.type) and not is_working(f.name) and f.name.lower() != _FILE_INDEX for f in fields)
            and len({f.name.lower() for f in schema}) == len(schema))


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
    for Infinity; an integer's is its value's text), cheaper than parsing it again with
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
    if kind in _INTS:  # a JSON integer in range is its value's text (DuckDB's JSON text of -0 is 0)
        checks.append(f"({ref} IS NULL OR CAST(TRY_CAST({text} AS {_INTS[kind]}) AS VARCHAR) = {text})")
        return f"CAST({text} AS {_INTS[kind]})"
    checks.append(f"({ref} IS NULL OR ascii({text}) IN (45, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 73, 78))")  # any JSON number
    return f"CAST({text} AS DOUBLE)"


@dataclass(frozen=True)
class JsonlScan:
    """Local JSON-lines files, ``paths`` sorted, with their line counts (``object_lines``)."""

    paths: tuple[str, ...]
    lines: tuple[int, ...]

    @classmethod
    def of(cls, files: dict[str, int]) -> JsonlScan | None:
        """The scan of ``files`` (path: lines), or None where a path would be expanded as a glob, the files are too many or too long for the key, or their ranks would not sort as the paths do."""
        paths = sorted(files)
        if (not paths or len(paths) >= 1 << (63 - line_key.LINE_BITS) or not line_key.ranks_sort(paths)
                or any(_GLOB & set(p) or files[p] >= 10**line_key.DIGITS for p in paths)):
            return None
        return cls(tuple(paths), tuple(files[p] for p in paths))

    def sql(self, schema: pa.Schema) -> str:
        """The relation of the files read as ``schema`` (``__source__`` the line key)."""
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
        read = f"read_ndjson([{', '.join(_literal(p) for p in self.paths)}], columns = {columns}, format = 'newline_delimited')"
        starts = [0, *itertools.accumulate(self.lines[:-1])]  # each file's rows before it
        line = _ROW if len(starts) == 1 else f"{_ROW} - [{', '.join(map(str, starts))}][{_FILE} + 1]"
        padded = " ".join(f"WHEN {_LINE} < {bound} THEN {_LINE} * {scale} + {d}" for bound, scale, d in line_key.padded_terms())
        key = f"({_FILE} << {line_key.LINE_BITS}) + CASE {padded} ELSE ({_LINE} << 4) + {line_key.DIGITS} END"
        names = ", ".join(quoted(f.name) for f in fields)
        return (f"SELECT CASE WHEN {_OK} THEN {key} END AS {quoted(SOURCE)}, {names} FROM "
                f"(SELECT {line} AS {_LINE}, * FROM (SELECT row_number() OVER () AS {_ROW}, * FROM "
                f"(SELECT CAST({_FILE_INDEX} AS BIGINT) AS {_FILE}, {ok} AS {_OK}, {', '.join(values)} FROM {read})))")

    def sources(self, keys: pa.ChunkedArray) -> pa.Array:
        """The ``<path>#line=N`` strings of line keys (an aggregate's minima; null stays null)."""
        def text(key: int | None) -> str | None:
            if key is None:
                return None
            rank, n = line_key.decode(key)
            return f"{self.paths[rank]}{LINE}{n}"

        return pa.array([text(k) for k in keys.to_pylist()], pa.string())
