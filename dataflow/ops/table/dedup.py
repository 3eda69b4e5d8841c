"""Keep one row per key: the first or last by an order column."""
from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataflow.columns import SOURCE
from dataflow.ops.declare import op
from dataflow.ops.table.grouping import column, group_ids
from dataflow.ops.table.types import ColumnName


def _same_columns(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    return columns_in


def dedup_keys(names: list[str], keys: list[str] | None) -> list[str]:
    """The key columns of a dedup: ``keys``, or every user column (``source`` too; not ``__source__``)."""
    return list(keys) if keys else [c for c in names if not c.startswith("__")]  # dataflow's own and helper columns


@op(name="table.dedup", modality="table", inputs=(), outputs=(SOURCE,), kind="global", partition_by="keys", batch_format="pyarrow", output_columns=_same_columns)
def dedup_rows(
    batch: pa.Table, *, keys: list[ColumnName] | None = None, order_by: ColumnName | None = None, keep: Literal["first", "last"] = "first"
) -> pa.Table:
    """Keep one row per distinct ``keys``: the smallest (``first``) or largest (``last``) ``order_by``.

    Ties, and dedup without ``order_by``, keep the row with the smallest ``__source__``, so the result
    is the same on every engine. Nulls in ``order_by`` sort first, as in Spark.

    Args:
        keys: Columns that identify a duplicate; none means all columns except ``__source__``.
        order_by: Column that decides which duplicate is kept.
        keep: ``first`` keeps the smallest ``order_by``, ``last`` the largest.
    """
    keys_ = dedup_keys(batch.column_names, keys)
    n = batch.num_rows
    if n == 0:
        return batch
    rank = np.zeros(n, dtype=np.int64)
    sort_cols = {}
    if order_by is not None:
        sort_cols["__o"] = column(batch, order_by)
    if SOURCE in batch.column_names:
        sort_cols["__s"] = column(batch, SOURCE)
    if sort_cols:
        # Spark's order: ascending puts nulls first, descending puts them last.
        direction, placement = ("descending", "at_end") if keep == "last" else ("ascending", "at_start")
        sorting = [("__o", direction, placement)] if order_by is not None else []
        sorting += [("__s", "ascending", "at_start")] if "__s" in sort_cols else []
        order = pc.sort_indices(pa.table(sort_cols), sort_keys=sorting)
        rank[order.to_numpy()] = np.arange(n)
    _, gid = group_ids(batch, keys_)
    best = np.full(gid.max() + 1, n, dtype=np.int64)
    np.minimum.at(best, gid, rank)
    winners = np.flatnonzero(rank == best[gid])
    return batch.take(pa.array(winners))
