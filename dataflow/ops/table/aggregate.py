"""Group rows by key columns and compute aggregations (count, sum, mean, min, max, stddev, slope)."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.table.expr import AggExpr, parse_aggregation
from dataflow.ops.table.grouping import aggregate_table
from dataflow.ops.table.types import ColumnName


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str]:
    return frozenset([*(params.keys or []), *params.aggregations, SOURCE])


@op(name="table.aggregate", modality="table", inputs=(), outputs=(SOURCE,), kind="global", partition_by="keys", batch_format="pyarrow", output_columns=_columns_after, reshapes=True)
def aggregate_rows(
    batch: pa.Table, *, aggregations: dict[str, AggExpr], keys: list[ColumnName] | None = None, vars: dict[str, Any] | None = None
) -> pa.Table:
    """Return one row per distinct ``keys`` with each aggregation (SQL GROUP BY semantics).

    Example: ``aggregations: {alarms: "count(*)", crc: "sum(crc_errors)", trend: "slope(rx, ts)"}``.
    Output columns: the keys, then the aggregations, then ``__source__`` (the smallest in the group).

    Args:
        aggregations: Output column -> one of count(*), count(x), sum(x), mean(x) (or avg), min(x),
            max(x), stddev(x) (sample), slope(y, x) (least squares); x may be an expression.
        keys: Group-by columns; none means one row over all rows.
        vars: Values for ``:name`` markers in the aggregation arguments.
    """
    parsed = {name: parse_aggregation(text) for name, text in aggregations.items()}
    return aggregate_table(batch, list(keys or []), parsed, vars or {})
