"""Column type names shared by ``table.parse_json``, ``table.cast`` and ``CAST`` in expressions."""
from __future__ import annotations

import re

import pyarrow as pa
from pydantic_core import core_schema

__all__ = ["ARROW_TYPES", "SPARK_TYPES", "TYPE_NAMES", "ColumnName", "Duration", "SourceName", "TypeName", "normalize_type", "parse_duration", "strptime_format"]

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


#: Letters of Spark's datetime patterns that both engines read alike -> Python's strptime directives.
_PATTERN_LETTERS = {"yyyy": "%Y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M", "ss": "%S", "XXX": "%z", "X": "%z"}


def strptime_format(pattern: str | None) -> str:
    """Return Python's strptime format for a Spark datetime ``pattern`` (``yyyy-MM-dd'T'HH:mm:ssX``).

    Raises:
        ValueError: not a string literal, or a letter outside yyyy MM dd HH mm ss X XXX.
    """
    if not isinstance(pattern, str):
        raise ValueError("the format must be a string literal such as 'yyyy-MM-dd HH:mm:ss'")
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "'":
            end = pattern.find("'", i + 1)
            if end < 0:
                raise ValueError(f"unclosed quote in the format {pattern!r}")
            out.append(pattern[i + 1 : end].replace("%", "%%"))
            i = end + 1
            continue
        for letters, directive in _PATTERN_LETTERS.items():
            if pattern.startswith(letters, i):
                out.append(directive)
                i += len(letters)
                break
        else:
            if pattern[i].isalpha():
                raise ValueError(f"pattern letter {pattern[i]!r} is not supported in {pattern!r} (expected yyyy, MM, dd, HH, mm, ss, X or quoted text)")
            out.append(pattern[i].replace("%", "%%"))
            i += 1
    return "".join(out)
