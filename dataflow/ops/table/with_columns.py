"""Add or replace columns computed by SQL expressions."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.table.evaluate import evaluate
from dataflow.ops.table.expr import Expr, parse


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    return None if columns_in is None else frozenset(columns_in) | set(params.columns)


@op(name="table.with_columns", modality="table", inputs=(), outputs=(SOURCE,), batch_format="pyarrow", output_columns=_columns_after)
def with_columns(batch: pa.Table, *, columns: dict[str, Expr], vars: dict[str, Any] | None = None) -> pa.Table:
    """Set each named column to its SQL expression, in order: an expression may use the ones before it.

    Example: ``columns: {rx_slope_per_hour: "rx_slope * 3600", degrading: "rx_slope_per_hour < :limit"}``.

    Args:
        columns: New (or replaced) column name -> SQL expression.
        vars: Values for the ``:name`` markers in the expressions.
    """
    for name, text in columns.items():
        values = evaluate(parse(text), batch, vars or {})
        if name in batch.column_names:
            batch = batch.set_column(batch.column_names.index(name), name, values)
        else:
            batch = batch.append_column(name, values)
    return batch
