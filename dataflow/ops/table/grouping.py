"""Grouping over a pyarrow Table: group numbers for ``table.dedup``, aggregations through DuckDB.

Aggregations are Spark SQL (``dataflow.ops.table.sql``) run by DuckDB over the rows with Spark's
semantics: ``count`` of no rows is 0, the other aggregates are NULL; a global aggregation over no
rows is one row. The output ``__source__`` of a group is the smallest ``__source__`` in it, so
both engines agree on it.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from dataflow.columns import SOURCE
from dataflow.ops.table import duck
from dataflow.ops.table.coercion import arrow_kinds
from dataflow.ops.table.sql import duckdb_sql

__all__ = ["aggregate_table", "column", "group_ids"]


def column(table: pa.Table, name: str) -> pa.Array:
    """Return a column as one array; float NaN becomes null.

    Raises:
        KeyError: no such column, naming the columns there are.
    """
    if name not in table.column_names:
        have = ", ".join(c for c in table.column_names if not c.startswith("__"))
        raise KeyError(f"no column '{name}' (have: {have})")
    arr = table.column(name).combine_chunks()
    if pa.types.is_floating(arr.type):
        arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
    return arr


def group_ids(table: pa.Table, keys: list[str]) -> tuple[pa.Table, np.ndarray]:
    """Return (one row per group with its key values, the group number of every input row)."""
    work = pa.table({**{k: column(table, k) for k in keys}, "__row": pa.array(np.arange(table.num_rows, dtype=np.int64))})
    groups = work.group_by(keys, use_threads=False).aggregate([("__row", "list")])
    lists = groups.column("__row_list").combine_chunks()
    gid = np.empty(table.num_rows, dtype=np.int64)
    gid[lists.flatten().to_numpy()] = np.repeat(np.arange(len(lists)), np.diff(lists.offsets.to_numpy()))
    return groups.select(keys), gid


def aggregate_table(
    table: pa.Table,
    keys: list[str],
    aggregations: dict[str, exp.Expression],
    params: dict[str, Any] | None = None,
    default_x: str | None = None,
) -> pa.Table:
    """Group ``table`` by ``keys`` and compute each aggregation; columns: keys, aggregations, source.

    Args:
        table: The rows.
        keys: Group-by columns (empty: one group of all rows).
        aggregations: Output name -> parsed aggregation (``sql.parse_aggregation``).
        params: Values for ``:var`` markers in aggregation arguments.
        default_x: The x column of ``slope(y)``.
    """
    kinds = arrow_kinds(table.schema)
    sqls = {name: duckdb_sql(tree, params, default_x, kinds) for name, tree in aggregations.items()}
    extra = {SOURCE: f'min("{SOURCE}")'} if SOURCE in table.column_names else {}
    return duck.aggregate(table, keys, sqls, extra)
