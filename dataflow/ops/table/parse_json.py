"""Parse a JSON text column into typed columns with a declared schema; bad rows are row errors."""
from __future__ import annotations

import json
from typing import Any

from dataflow.columns import SOURCE
from dataflow.errors import RowError
from dataflow.nesting import deep_call, json_loads
from dataflow.ops.declare import op
from dataflow.ops.table.types import ColumnName, TypeName

__all__ = ["convert_field", "parse_json"]

_INT_RANGE = {"int": (-(2**31), 2**31 - 1), "long": (-(2**63), 2**63 - 1)}


class _NotA(Exception):
    """A JSON value that does not hold the declared type."""


def convert_field(value: Any, type_name: str) -> Any:
    """Convert one JSON value to ``type_name`` the way Spark's JSON reader does.

    Integers take JSON integers only; doubles take any JSON number; booleans take true/false;
    strings take any value (non-strings as their compact JSON text). JSON null stays null.

    Raises:
        _NotA: the value does not hold that type.
    """
    if value is None:
        return None
    if type_name in _INT_RANGE:
        lo, hi = _INT_RANGE[type_name]
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise _NotA
        return value
    if type_name in ("double", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _NotA
        return float(value)
    if type_name == "boolean":
        if not isinstance(value, bool):
            raise _NotA
        return value
    return value if isinstance(value, str) else deep_call(json.dumps, value, separators=(",", ":"))


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    if columns_in is None:
        return None
    return frozenset(set(columns_in) | set(params.fields))


@op(
    name="table.parse_json",
    modality="table",
    inputs=("{column}",),
    input_types={"{column}": "string"},
    outputs=(SOURCE,),
    batch_format="row",
    output_columns=_columns_after,
)
def parse_json(row: dict, *, fields: dict[str, TypeName], column: ColumnName = "text") -> dict:
    """Parse the JSON object in ``column`` into one typed column per ``fields`` entry.

    A row whose text is not a JSON object, or whose field does not hold the declared type (a
    non-numeric ``ts`` for a ``long``), is a row error and goes to ``_errors/``. Missing fields are
    null; fields not in the schema are ignored. The text column is kept (drop it with ``table.select``).

    Args:
        fields: The declared schema: field name -> type (string, int, long, float, double,
            boolean), in output order.
        column: The column holding JSON text.
    """
    text = row.get(column)
    if text is None:
        raise RowError(f"column '{column}' is null") from TypeError(column)
    try:
        value = json_loads(text)
    except json.JSONDecodeError as exc:
        raise RowError(f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
    if not isinstance(value, dict):
        raise RowError(f"expected a JSON object, got a JSON {type(value).__name__}") from TypeError(type(value).__name__)
    out = dict(row)
    for name, type_name in fields.items():
        try:
            out[name] = convert_field(value.get(name), type_name)
        except _NotA:
            raise RowError(f"field '{name}' is not a {type_name}") from TypeError(name)
    return out
