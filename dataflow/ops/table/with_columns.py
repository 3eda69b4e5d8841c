"""Add or replace columns computed by Spark SQL expressions."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.table import duck
from dataflow.ops.table.sql import Expr, duckdb_sql, parse


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    return None if columns_in is None else frozenset(columns_in) | set(params.columns)


@op(name="table.with_columns", modality="table", inputs=(), outputs=(SOURCE,), batch_format="pyarrow", output_columns=_columns_after)
def with_columns(batch: pa.Table, *, columns: dict[str, Expr], vars: dict[str, Any] | None = None) -> pa.Table:
    """Set each named column to its Spark SQL expression, in order: an expression may use the ones before it.

    Example: ``columns: {rx_slope_per_hour: "rx_slope * 3600", degrading: "rx_slope_per_hour < :limit"}``.

    Args:
        columns: New (or replaced) column name -> Spark SQL expression.
        vars: Values for the ``:name`` markers in the expressions (bound as literals).
    """
    return duck.with_columns(batch, {name: duckdb_sql(parse(text), vars) for name, text in columns.items()})
