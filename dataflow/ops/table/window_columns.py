"""Add columns computed over each key's rows: SQL window functions (``f(...) OVER (PARTITION BY keys ...)``)."""
from __future__ import annotations

from typing import Any

import pyarrow as pa
from sqlglot import exp

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.table.coercion import arrow_kinds
from dataflow.ops.table.duck import over_rows
from dataflow.ops.table.sql import ORDERED_WINDOW, duckdb_sql, parse_window
from dataflow.ops.table.sql_params import WindowExpr
from dataflow.ops.table.types import ColumnName

__all__ = ["window_columns", "window_spec"]


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    return None if columns_in is None else frozenset(columns_in) | set(params.columns)


def window_spec(keys: list[str], order_by: str | None, source: bool, ordered: bool) -> tuple[list[str], list[str]]:
    """(partition columns, order columns) of one window column: ordered ones by ``order_by`` then ``__source__``."""
    if not ordered:
        return keys, []
    return keys, [*([order_by] if order_by else []), *([SOURCE] if source else [])]


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
    Nulls sort first, as in Spark's ascending order. Example:
    ``columns: {last_ts: "max(ts)", crc_prev: "lag(crc_errors)"}``.

    Args:
        columns: New column name -> window function; a later one may not read an earlier one.
        keys: Partition columns; none means all rows form one partition.
        order_by: Column that orders a key's rows for lag, lead and row_number.
        vars: Values for ``:name`` markers in the arguments.
    """
    sql = {}
    for name, text in columns.items():
        tree = parse_window(text)
        part, order = window_spec(list(keys or []), order_by, SOURCE in batch.column_names, isinstance(tree, ORDERED_WINDOW))
        window = exp.Window(this=tree.copy(), partition_by=[exp.column(k, quoted=True) for k in part] or None,
                            order=exp.Order(expressions=[exp.Ordered(this=exp.column(c, quoted=True), desc=False, nulls_first=True) for c in order]) if order else None)
        value = duckdb_sql(window, vars, kinds=arrow_kinds(batch.schema))
        sql[name] = f"CAST({value} AS INTEGER)" if isinstance(tree, exp.RowNumber) else value  # Spark's row_number is an INT
    return over_rows(batch, sql)
