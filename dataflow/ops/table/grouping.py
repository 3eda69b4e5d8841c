"""Grouped aggregation over a pyarrow Table, with Spark's semantics for each aggregate.

``count(*)`` counts rows, ``count(x)`` non-null values; ``sum``/``min``/``max`` of no values are
null; ``mean`` is a double; ``stddev`` is the sample standard deviation (null below two values);
``slope(y, x)`` is the least-squares slope of y over x (Spark's ``regr_slope``: rows where either
is null are skipped; null below two points or when x does not vary); ``regr_count``, ``regr_sxx``,
``regr_syy`` and ``regr_sxy`` are its pair count and centred sums (null without a pair);
``percentile_approx(x, p)`` is the value at rank ``ceil(p * n)``, exact below 10,000 values. The output ``__source__`` of a
group is the smallest ``__source__`` in it, so both engines agree on it.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataflow.columns import SOURCE
from dataflow.ops.table.evaluate import column, evaluate
from dataflow.ops.table.expr import PAIRED, Aggregation, Col

__all__ = ["aggregate_table", "group_ids"]

_ARROW_AGG = {"sum": "sum", "min": "min", "max": "max", "mean": "mean"}


def group_ids(table: pa.Table, keys: list[str]) -> tuple[pa.Table, np.ndarray]:
    """Return (one row per group with its key values, the group number of every input row)."""
    work = pa.table({**{k: column(table, k) for k in keys}, "__row": pa.array(np.arange(table.num_rows, dtype=np.int64))})
    groups = work.group_by(keys, use_threads=False).aggregate([("__row", "list")])
    lists = groups.column("__row_list").combine_chunks()
    gid = np.empty(table.num_rows, dtype=np.int64)
    gid[lists.flatten().to_numpy()] = np.repeat(np.arange(len(lists)), np.diff(lists.offsets.to_numpy()))
    return groups.select(keys), gid


def _paired(func: str, y: pa.Array, x: pa.Array, gid: np.ndarray, n_groups: int) -> pa.Array:
    """Spark's ``regr_*`` over (y, x) pairs where both are set: slope, count, sxx, syy or sxy."""
    both = np.asarray(pc.and_(pc.is_valid(y), pc.is_valid(x)).to_numpy(zero_copy_only=False), dtype=bool)
    yv = np.asarray(y.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False))[both]
    xv = np.asarray(x.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False))[both]
    g = gid[both]
    n = np.bincount(g, minlength=n_groups).astype(np.float64)
    if func == "regr_count":
        return pa.array(n.astype(np.int64), pa.int64())
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.bincount(g, weights=xv, minlength=n_groups) / n
        my = np.bincount(g, weights=yv, minlength=n_groups) / n
        dx, dy = xv - mx[g], yv - my[g]
        sums = {"regr_sxx": (dx, dx), "regr_syy": (dy, dy), "regr_sxy": (dx, dy), "slope": (dx, dy)}
        a, b = sums[func]
        value = np.bincount(g, weights=a * b, minlength=n_groups)
        if func != "slope":
            return pa.array(value, pa.float64(), mask=n < 1)
        sxx = np.bincount(g, weights=dx * dx, minlength=n_groups)
        return pa.array(value / sxx, pa.float64(), mask=(n < 2) | ~(sxx > 0))


def _percentile(values: pa.Array, fraction: float, gid: np.ndarray, n_groups: int) -> pa.Array:
    """Spark's ``percentile_approx`` where it is exact (groups below its 10,000 accuracy): the value at
    rank ``ceil(fraction * n)`` of the group's sorted non-null values (the first for 0)."""
    valid = np.asarray(values.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    v = np.asarray(values.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False))[valid]
    g = gid[valid]
    order = np.lexsort((v, g))
    n = np.bincount(g, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(n)[:-1]])
    rank = np.maximum(np.ceil(fraction * n).astype(np.int64) - 1, 0)
    pick = np.where(n > 0, starts + np.minimum(rank, np.maximum(n - 1, 0)), 0)
    out = pa.array(v[order][pick] if len(v) else np.zeros(n_groups), pa.float64(), mask=n == 0)
    return out if pa.types.is_floating(values.type) or pa.types.is_null(values.type) else out.cast(values.type)


def _argument(agg: Aggregation, table: pa.Table, params: dict[str, Any]) -> pa.Array:
    return column(table, agg.arg.name) if isinstance(agg.arg, Col) else evaluate(agg.arg, table, params)


def aggregate_table(
    table: pa.Table,
    keys: list[str],
    aggregations: dict[str, Aggregation],
    params: dict[str, Any] | None = None,
    default_x: str | None = None,
) -> pa.Table:
    """Group ``table`` by ``keys`` and compute each aggregation; columns: keys, aggregations, source.

    Args:
        table: The rows.
        keys: Group-by columns (empty: one group of all rows).
        aggregations: Output name -> parsed aggregation.
        params: Values for ``:var`` markers in aggregation arguments.
        default_x: The x column of ``slope(y)``.
    """
    params = params or {}
    if keys:
        key_table, gid = group_ids(table, keys)
    else:
        key_table, gid = pa.table({}), np.zeros(table.num_rows, dtype=np.int64)
    n_groups = key_table.num_rows if keys else 1
    work = {"__gid": pa.array(gid)}
    specs: list[tuple] = []
    later: dict[str, pa.Array] = {}
    for i, (name, agg) in enumerate(aggregations.items()):
        if agg.func == "count" and agg.arg is None:
            specs.append(([], "count_all", None, name))
        elif agg.func in PAIRED:
            x = _argument(Aggregation(agg.func, agg.x), table, params) if agg.x is not None else column(table, default_x)
            later[name] = _paired(agg.func, _argument(agg, table, params), x, gid, n_groups)
        elif agg.func == "percentile_approx":
            later[name] = _percentile(_argument(agg, table, params), agg.fraction, gid, n_groups)
        else:
            work[f"__a{i}"] = _argument(agg, table, params)
            if agg.func == "count":
                specs.append((f"__a{i}", "count", pc.CountOptions(mode="only_valid"), name))
            elif agg.func == "stddev":
                specs.append((f"__a{i}", "stddev", pc.VarianceOptions(ddof=1), name))
            else:
                specs.append((f"__a{i}", _ARROW_AGG[agg.func], None, name))
    if SOURCE in table.column_names:
        work[SOURCE] = column(table, SOURCE)
        specs.append((SOURCE, "min", None, SOURCE))
    grouped = pa.table(work).group_by(["__gid"], use_threads=False).aggregate([(c, f, o) if o is not None else (c, f) for c, f, o, _ in specs])
    order = np.argsort(grouped.column("__gid").to_numpy())
    grouped = grouped.take(pa.array(order))
    present = np.zeros(n_groups, dtype=bool)
    present[grouped.column("__gid").to_numpy()] = True
    out: dict[str, pa.Array] = {k: key_table.column(k) for k in keys}
    results = {}
    for c, f, _, name in specs:
        results[name] = grouped.column("count_all" if f == "count_all" else f"{c}_{f}")
    if not keys and not present.all():
        # Spark returns one row for a global aggregation over no rows: count 0, the rest null.
        results = {n: pa.array([0]) if f in ("count_all", "count") else pa.nulls(1, results[n].type) for c, f, _, n in specs}
    for name in aggregations:
        out[name] = later[name] if name in later else results[name]
    if SOURCE in results:
        out[SOURCE] = results[SOURCE]
    return pa.table(out)
