"""Infer a JSON-lines source's fields from a sample of its first lines, as Spark DDL types.

A JSONL source without ``options.schema`` is parsed with the fields this module infers from the
first lines of its first files (the engine pins them once per run, so every shard agrees).
"""
from __future__ import annotations

import json
from typing import Any

from connectors.formats.lines import MAX_LINE
from dataflow.columns import SOURCE
from dataflow.engines.spark.columns import sql_name
from dataflow.nesting import json_loads
from dataflow.ops.table.types import SPARK_TYPES

__all__ = ["infer_json_fields", "sample_lines"]

_SAMPLE_FILES = 8
_SAMPLE_LINES = 1000
_SAMPLE_BLOCK = 1 << 16  # bytes of lines read at a time for the sample
_TYPED_DEPTH = 64  # levels of nested structs and arrays inferred as such, below the line's object: a deeper value is a string (a DDL of hundreds of levels is no schema anyone means)


def _value_type(value: Any, depth: int = 1) -> Any:
    """A JSON value's type: a type name, ``("struct", {field: type})`` or ``("array", type)``; what lies deeper than ``_TYPED_DEPTH`` levels below the line's object is a string (its JSON text)."""
    if depth > _TYPED_DEPTH:
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, dict):
        fields: dict[str, Any] = {}
        for key, v in value.items():
            fields[key] = _merge(fields.get(key), None if v is None else _value_type(v, depth + 1))
        return ("struct", fields)
    if isinstance(value, list):
        element = None
        for v in value:
            if v is not None:
                element = _merge(element, _value_type(v, depth + 1))
        return ("array", element)
    return "string"


def _merge(seen: Any, kind: Any) -> Any:
    """The type that holds both: numbers widen to double, structs merge by field, arrays by element, other mixes are string."""
    if seen is None or seen == kind:  # None: only nulls seen so far
        return kind
    if kind is None:
        return seen
    if isinstance(seen, str) and isinstance(kind, str):
        return "double" if {seen, kind} == {"long", "double"} else "string"
    if isinstance(seen, tuple) and isinstance(kind, tuple) and seen[0] == kind[0] == "struct":
        fields = dict(seen[1])
        for name, t in kind[1].items():
            fields[name] = _merge(fields.get(name), t)
        return ("struct", fields)
    if isinstance(seen, tuple) and isinstance(kind, tuple) and seen[0] == kind[0] == "array":
        return ("array", _merge(seen[1], kind[1]))
    return "string"


def _ddl(kind: Any, nested: bool = False) -> str:
    """A field's type for ``table.parse_json``: a type name at the top, Spark DDL for nested values.

    A field that held only nulls is a string (of nulls), so it is still a column or struct field.
    """
    if kind is None:
        kind = "string"
    if isinstance(kind, str):
        return SPARK_TYPES[kind] if nested else kind
    if kind[0] == "array":
        return f"ARRAY<{_ddl(kind[1] or 'string', True)}>"
    if not kind[1]:
        return "string"  # an object that was always empty: kept as its JSON text
    return f"STRUCT<{', '.join(f'{sql_name(k)}: {_ddl(t, True)}' for k, t in kind[1].items())}>"


def infer_json_fields(lines: list[str]) -> dict[str, str]:
    """Field -> Spark DDL type over sample JSON lines (see ``_merge``); objects and arrays keep their structure."""
    fields: dict[str, Any] = {}
    for line in lines:
        try:
            value = json_loads(line)  # a line nested deeper than Spark reads is no sample (nor Python's RecursionError)
        except json.JSONDecodeError:
            continue
        if not isinstance(value, dict):
            continue
        for key, v in value.items():
            if key != SOURCE:
                fields[key] = _merge(fields.get(key), None if v is None else _value_type(v))
    return {k: _ddl(t) for k, t in fields.items()}


def sample_lines(files: list[str], storage: dict, max_line: int = MAX_LINE) -> list[str]:
    """Up to the first 1,000 lines of each of the first eight ``files`` that hold a line (empty files are
    passed over): the sample a JSON schema is inferred from. ``source.options.schema`` declares it instead.
    A line longer than ``max_line`` bytes (the source's ``max_line_bytes``, a row error of the read) is
    counted, never read: the driver holds at most that much of one."""
    from connectors.formats import GONE
    from connectors.formats.compressed import DamagedFile
    from connectors.formats.lines import LongLine, line_blocks
    from connectors.registry import open_lines

    out: list[str] = []
    sampled = 0
    for uri in files:
        if sampled == _SAMPLE_FILES:
            break
        before, seen = len(out), 0
        try:
            with open_lines(uri, storage) as f:
                for block in line_blocks(f, _SAMPLE_BLOCK, max_line):
                    if isinstance(block, DamagedFile):
                        break  # the sample is what could be read; the read reports the damage
                    lines = [] if isinstance(block, LongLine) else block.splitlines()
                    out += [raw.decode("utf-8", "replace") for raw in lines[: _SAMPLE_LINES - seen]]
                    seen += max(len(lines), 1)
                    if seen >= _SAMPLE_LINES:
                        break
        except GONE:  # gone since it was listed: the read reports it
            pass
        sampled += len(out) > before
    return out
