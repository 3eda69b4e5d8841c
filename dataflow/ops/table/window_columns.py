"""Add columns computed over each key's rows: SQL window functions (``f(...) OVER (PARTITION BY keys ...)``)."""
from __future__ import annotations

from typing import Any

import pyarrow as pa
from sqlglot import exp

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.table.coercion import arrow_kinds
from dataflow.ops.table.duck import over_rows
from dataflow.ops.table.sql import FRAMED, ORDERED_WINDOW, duckdb_sql, parse_window, window_calls
from dataflow.ops.table.sql_params import WindowExpr
from dataflow.ops.table.types import ColumnName

__all__ = ["over_key", "window_columns"]


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    return None if columns_in is None else frozenset(columns_in) | set(params.columns)


def over_key(tree: exp.Expression, keys: list[str], order_by: str | None, source: bool) -> exp.Expression:
    """``tree`` (``parse_window``) with each window function over its key's rows, as Spark and DuckDB both read it.

    An aggregation covers all the key's rows; ``lag``, ``lead`` and ``row_number`` follow
    ``order_by`` then ``__source__`` (``source``: the rows have it), nulls first.
    """
    tree = tree.copy()
    partition = [exp.column(k, quoted=True) for k in keys] or None
    for call in list(window_calls(tree)):
        scope = call.parent if isinstance(call.parent, (exp.Filter, exp.IgnoreNulls)) else call  # sum(x) FILTER (WHERE ...), last(x, true)
        order = _order(call, order_by, source)
        ordered = exp.Order(expressions=[exp.Ordered(this=exp.column(c, quoted=True), desc=False, nulls_first=True) for c in order]) if order else None
        frame = exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING", end="UNBOUNDED", end_side="FOLLOWING") if isinstance(call, FRAMED) else None
        distinct = call.this if isinstance(call, exp.Count) and isinstance(call.this, exp.Distinct) else None
        if distinct is not None and len(distinct.expressions) == 1:  # count(DISTINCT x): Spark has no distinct window function
            window: exp.Expression = exp.ArraySize(this=exp.Window(this=exp.ArrayUniqueAgg(this=distinct.expressions[0].copy()), partition_by=partition))
        else:
            window = exp.Window(this=scope.copy(), partition_by=partition, order=ordered, spec=frame)
        if scope is tree:
            return window
        scope.replace(window)
    return tree


def _order(call: exp.Expression, order_by: str | None, source: bool) -> list[str]:
    """The columns ``call`` orders a key's rows by: none for an aggregation; ranks by ``order_by`` alone (ties share a
    rank); the others by ``order_by`` then ``__source__``."""
    if not isinstance(call, ORDERED_WINDOW):
        return []
    if isinstance(call, (exp.Rank, exp.DenseRank, exp.PercentRank, exp.CumeDist)) and order_by:
        return [order_by]
    return [*([order_by] if order_by else []), *([SOURCE] if source else [])]


@op(name="table.window_columns", modality="table", inputs=(), outputs=(SOURCE,), kind="global", partition_by="keys",
    batch_format="pyarrow", output_columns=_columns_after)
def window_columns(
    batch: pa.Table,
    *,
    columns: dict[str, WindowExpr],
    keys: list[ColumnName] | None = None,
    order_by: ColumnName | None = None,
    vars: dict[str, Any] | None = None,
) -> pa.Table:
    """Add each column computed over the rows of its key (SQL window functions); every row is kept.

    An aggregation (``max(ts)``, ``percentile_approx(rx, 0.5)``...) is over all the rows of the key:
    ``max(ts) OVER (PARTITION BY keys)``. ``lag(x, n)`` / ``lead(x, n)`` are x n rows before / after
    in ``order_by`` order (ties by ``__source__``; null past the key's first / last row), and
    ``row_number()`` counts from 1: ``lag(x, n) OVER (PARTITION BY keys ORDER BY order_by)``.
    Nulls sort first, as in Spark's ascending order. ``rank()``, ``dense_rank()``, ``percent_rank()``
    and ``cume_dist()`` follow ``order_by`` alone (ties share a rank), ``ntile(n)`` as ``lag``;
    ``first(x)``, ``last(x)`` (``last(x, true)``: skipping nulls), ``first_value``, ``last_value`` and
    ``nth_value(x, n)`` see all the key's rows in that order; ``count(DISTINCT x)`` counts the key's
    distinct values. A column may combine them with the row's own
    columns: ``rx - lag(rx)``, ``max(ts) - min(ts)``, ``crc / sum(crc)``. Example:
    ``columns: {last_ts: "max(ts)", crc_prev: "lag(crc_errors)", rx_step: "rx - lag(rx)"}``.

    Args:
        columns: New column name -> window function; a later one may not read an earlier one.
        keys: Partition columns; none means all rows form one partition.
        order_by: Column that orders a key's rows for lag, lead and row_number.
        vars: Values for ``:name`` markers in the arguments.
    """
    sql = {name: duckdb_sql(over_key(parse_window(text), list(keys or []), order_by, SOURCE in batch.column_names), vars, kinds=arrow_kinds(batch.schema))
           for name, text in columns.items()}
    return over_rows(batch, sql)
