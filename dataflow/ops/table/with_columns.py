"""Add or replace columns computed by Spark SQL expressions."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.table import duck
from dataflow.ops.table.coercion import arrow_kinds
from dataflow.ops.table.json_tuple import HIDDEN, ColumnExprs, duckdb_columns, entries


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    return None if columns_in is None else frozenset(columns_in) | {n for names, _ in entries(params.columns) for n in names}


@op(name="table.with_columns", modality="table", inputs=(), outputs=(SOURCE,), batch_format="pyarrow", output_columns=_columns_after)
def with_columns(batch: pa.Table, *, columns: ColumnExprs, vars: dict[str, Any] | None = None) -> pa.Table:
    """Set each named column to its Spark SQL expression, in order: an expression may use the ones before it.

    Example: ``columns: {rx_slope_per_hour: "rx_slope * 3600", degrading: "rx_slope_per_hour < :limit"}``.
    Several columns from one JSON string, as Spark's ``json_tuple(js, 'a', 'b') AS (a, b)``:
    ``columns: {"(host, level)": "json_tuple(line, 'host', 'level')"}`` (each a string; NULL for a
    missing field or text that is not a JSON object; a nested value as JSON text).

    Args:
        columns: New (or replaced) column name -> Spark SQL expression; a key ``"(a, b)"`` names
            the columns of a ``json_tuple`` with one field each.
        vars: Values for the ``:name`` markers in the expressions (bound as literals).
    """
    out = duck.with_columns(batch, duckdb_columns(columns, vars, arrow_kinds(batch.schema)))
    return out.drop_columns([n for n in out.column_names if n.startswith(HIDDEN) and n not in batch.column_names])
