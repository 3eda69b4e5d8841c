"""Group rows by key columns and compute Spark SQL aggregations."""
from __future__ import annotations

from typing import Any

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.table.grouping import aggregate_table
from dataflow.ops.table.sql import parse_aggregation
from dataflow.ops.table.sql_params import AggExpr
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
        aggregations: Output column -> a Spark SQL aggregation: count(*), count(DISTINCT x), sum(x),
            avg(x), min(x), max(x), stddev_samp(x), percentile_approx(x, 0.5), collect_list(x),
            regr_slope(y, x), slope(y, x) (the same), or an expression of them (``sum(a) / count(*)``).
        keys: Group-by columns; none means one row over all rows.
        vars: Values for ``:name`` markers in the aggregation arguments.
    """
    parsed = {name: parse_aggregation(text) for name, text in aggregations.items()}
    return aggregate_table(batch, list(keys or []), parsed, vars or {})
