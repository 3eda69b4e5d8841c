"""Column type names shared by ``table.parse_json``, ``table.cast`` and ``CAST`` in expressions."""
from __future__ import annotations

import re

import pyarrow as pa
from pydantic_core import core_schema

__all__ = ["ARROW_TYPES", "SPARK_TYPES", "TYPE_NAMES", "ColumnName", "Duration", "SourceName", "TypeName", "normalize_type", "parse_duration"]

_ALIASES = {"bigint": "long", "integer": "int", "bool": "boolean", "str": "string", "float64": "double", "int64": "long"}

ARROW_TYPES: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "float": pa.float32(),
    "int": pa.int32(),
    "long": pa.int64(),
    "string": pa.string(),
}
SPARK_TYPES: dict[str, str] = {"boolean": "boolean", "double": "double", "float": "float", "int": "int", "long": "bigint", "string": "string"}
TYPE_NAMES = tuple(sorted(ARROW_TYPES))


def normalize_type(name: str) -> str:
    """Return the canonical type name for ``name`` (case-insensitive, aliases allowed).

    Raises:
        ValueError: an unknown type, naming the accepted ones.
    """
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in ARROW_TYPES:
        raise ValueError(f"unknown type '{name}' (expected one of: {', '.join(TYPE_NAMES)})")
    return key


class TypeName(str):
    """A column type name (string, int, long, float, double, boolean); checked when params are validated."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_after_validator_function(normalize_type, core_schema.str_schema())


class ColumnName(str):
    """A param naming an input column; the plan checks that an earlier step or the source provides it."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.str_schema(min_length=1)


_DURATION_RE = re.compile(r"^\s*(\d+)\s*(s|m|h|d)?\s*$")
_UNIT_SECONDS = {None: 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value: int | str) -> int:
    """Return seconds for ``90``, ``"90s"``, ``"15m"``, ``"6h"`` or ``"1d"``.

    Raises:
        ValueError: not a positive whole number of seconds, minutes, hours or days.
    """
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as 3600, '15m', '6h' or '1d', got {value!r}")
    if isinstance(value, int):
        seconds = value
    else:
        m = _DURATION_RE.match(str(value))
        if not m:
            raise ValueError(f"expected a duration such as 3600, '15m', '6h' or '1d', got {value!r}")
        seconds = int(m.group(1)) * _UNIT_SECONDS[m.group(2)]
    if seconds <= 0:
        raise ValueError(f"a duration must be positive, got {value!r}")
    return seconds


class Duration(int):
    """A window length in seconds, written as a number or with a unit (s, m, h, d)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.no_info_plain_validator_function(parse_duration, serialization=core_schema.plain_serializer_function_ser_schema(int))


class SourceName(str):
    """A param naming an entry of the pipeline's ``sources:``; checked when the pipeline is parsed."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source, handler):
        return core_schema.str_schema(min_length=1)
