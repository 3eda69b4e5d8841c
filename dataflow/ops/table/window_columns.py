"""Add columns computed over each key's rows: SQL window functions (``f(...) OVER (PARTITION BY keys ...)``)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.table.evaluate import column, evaluate
from dataflow.ops.table.expr import Aggregation, WindowExpr, parse_window
from dataflow.ops.table.grouping import aggregate_table, group_ids
from dataflow.ops.table.types import ColumnName

__all__ = ["window_columns"]

ORDERED = frozenset({"lag", "lead", "row_number"})


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    return None if columns_in is None else frozenset(columns_in) | set(params.columns)


def _ordered(batch: pa.Table, keys: list[str], order_by: str | None, gid: np.ndarray) -> np.ndarray:
    """Row indices sorted by group, then ``order_by`` (nulls first, as Spark's ascending order), then ``__source__``."""
    sort = {"__g": pa.array(gid)}
    keys_ = [("__g", "ascending", "at_start")]
    if order_by is not None:
        sort["__o"] = column(batch, order_by)
        keys_.append(("__o", "ascending", "at_start"))
    if SOURCE in batch.column_names:
        sort["__s"] = column(batch, SOURCE)
        keys_.append(("__s", "ascending", "at_start"))
    return pc.sort_indices(pa.table(sort), sort_keys=keys_).to_numpy()


def _shifted(agg: Aggregation, batch: pa.Table, params: dict[str, Any], order: np.ndarray, gid: np.ndarray) -> pa.Array:
    """lag / lead / row_number, in the order ``order``; written back to each row's own place."""
    n = batch.num_rows
    g = gid[order]
    pos = np.arange(n)
    if agg.func == "row_number":
        first = np.concatenate([[True], g[1:] != g[:-1]]) if n else np.zeros(0, bool)
        starts = np.maximum.accumulate(np.where(first, pos, 0)) if n else pos
        out = np.empty(n, dtype=np.int64)
        out[order] = pos - starts + 1
        return pa.array(out, pa.int32())
    src = pos - agg.offset if agg.func == "lag" else pos + agg.offset
    inside = (src >= 0) & (src < n)
    inside[inside] = g[src[inside]] == g[inside]
    values = evaluate(agg.arg, batch, params)
    taken = values.take(pa.array(order[np.where(inside, src, 0)] if n else np.zeros(0, np.int64)))
    shifted = pc.if_else(pa.array(inside), taken, pa.scalar(None, values.type)) if n else taken
    back = np.empty(n, dtype=np.int64)
    back[order] = pos
    return shifted.take(pa.array(back))


@op(name="table.window_columns", modality="table", inputs=(), outputs=(SOURCE,), kind="global", batch_format="pyarrow", output_columns=_columns_after)
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
    Example: ``columns: {last_ts: "max(ts)", crc_prev: "lag(crc_errors)"}``.

    Args:
        columns: New column name -> window function; a later one may not read an earlier one.
        keys: Partition columns; none means all rows form one partition.
        order_by: Column that orders a key's rows for lag, lead and row_number.
        vars: Values for ``:name`` markers in the arguments.
    """
    keys_ = list(keys or [])
    params = vars or {}
    parsed = {name: parse_window(text) for name, text in columns.items()}
    if keys_:
        _, gid = group_ids(batch, keys_)
    else:
        gid = np.zeros(batch.num_rows, dtype=np.int64)
    order = _ordered(batch, keys_, order_by, gid) if any(a.func in ORDERED for a in parsed.values()) else None
    totals = {n: a for n, a in parsed.items() if a.func not in ORDERED}
    whole = aggregate_table(batch, keys_, totals, params) if totals and batch.num_rows else None
    for name, agg in parsed.items():
        if agg.func in ORDERED:
            values = _shifted(agg, batch, params, order, gid)
        elif whole is None:
            values = pa.nulls(0, pa.int64() if agg.func in ("count", "regr_count") else pa.float64())
        else:
            values = whole.column(name).combine_chunks().take(pa.array(gid))
        if name in batch.column_names:
            batch = batch.set_column(batch.column_names.index(name), name, values)
        else:
            batch = batch.append_column(name, values)
    return batch
