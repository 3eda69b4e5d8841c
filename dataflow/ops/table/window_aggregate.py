"""Aggregate rows per key over tumbling or sliding time windows."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.lineage import WINDOW
from dataflow.ops.declare import op
from dataflow.ops.table.grouping import aggregate_table, column
from dataflow.ops.table.sql import parse_aggregation
from dataflow.ops.table.sql_params import WindowAggExpr
from dataflow.ops.table.types import ColumnName, Duration

__all__ = ["TIME_SECONDS", "window_aggregate", "window_starts"]

TIME_SECONDS = "__df_time_s__"  # a timestamp or date time column as unix seconds: the windows' and slope(y)'s x
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def _seconds(times: pa.Array, name: str) -> pa.Array:
    """The time column as float unix seconds (nulls kept): numbers as they are, timestamps and dates (UTC) converted.

    Raises:
        TypeError: a column of another type, naming it and what is taken.
    """
    t = times.type
    if pa.types.is_timestamp(t):
        return pa.compute.divide(times.cast(pa.int64()).cast(pa.float64()), float(_PER_SECOND[t.unit]))
    if pa.types.is_date(t):
        return pa.compute.multiply(times.cast(pa.date32()).cast(pa.int32()).cast(pa.float64()), 86400.0)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_null(t):
        return times.cast(pa.float64())
    raise TypeError(f"table.window_aggregate: time_column '{name}' is of type {t}; it takes unix seconds (a number), a timestamp or a date")


def window_starts(times: np.ndarray, size: int, slide: int) -> tuple[np.ndarray, np.ndarray]:
    """Return (row index, window start) for every window ``[start, start + size)`` holding each time.

    Starts are multiples of ``slide``; a tumbling window has ``slide == size``.
    """
    last = np.floor(times / slide).astype(np.int64) * slide
    rows, starts = [], []
    for j in range(-(-size // slide)):
        start = last - j * slide
        inside = start + size > times
        rows.append(np.flatnonzero(inside))
        starts.append(start[inside])
    return np.concatenate(rows), np.concatenate(starts)


def _columns_after(columns_in: frozenset[str] | None, params) -> frozenset[str]:
    return frozenset([*(params.keys or []), "window_start", "window_end", *params.aggregations, SOURCE])


@op(
    name="table.window_aggregate",
    modality="table",
    inputs=("{time_column}",),
    outputs=("window_start", "window_end"),
    kind="global", partition_by="keys",
    batch_format="pyarrow",
    output_columns=_columns_after,
    reshapes=True,
)
def window_aggregate(
    batch: pa.Table,
    *,
    size: Duration,
    aggregations: dict[str, WindowAggExpr],
    keys: list[ColumnName] | None = None,
    time_column: ColumnName = "ts",
    slide: Duration | None = None,
    vars: dict[str, Any] | None = None,
) -> pa.Table:
    """Return one row per key and time window ``[window_start, window_end)`` with each aggregation.

    Windows start at multiples of ``slide`` (unix seconds, also for a timestamp or date time column,
    taken as its UTC unix seconds); with ``slide`` smaller than ``size`` a row falls in several windows. Rows with a null time are skipped. A window's ``__source__`` is the
    smallest in it, followed by ``#window=<window_start>`` when windows overlap. ``slope(y)`` is the least-squares
    slope of y per second of ``time_column`` (multiply by 3600 for a slope per hour).

    Args:
        size: Window length: seconds, or a number with a unit (``15m``, ``6h``, ``1d``).
        aggregations: Output column -> a Spark SQL aggregation (see ``table.aggregate``); ``slope(y)``
            regresses y on ``time_column``.
        keys: Columns that identify a series (e.g. ``[link]``).
        time_column: Column holding unix seconds (a number), a timestamp or a date.
        slide: Distance between window starts (default ``size``: tumbling windows).
        vars: Values for ``:name`` markers in aggregation arguments.
    """
    keys = list(keys or [])
    slide_s = int(slide or size)
    times = column(batch, time_column)
    seconds = _seconds(times, time_column)
    valid = np.asarray(times.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    t = np.asarray(seconds.fill_null(0.0).to_numpy(zero_copy_only=False))
    rows, starts = window_starts(t[valid], int(size), slide_s)
    rows = np.flatnonzero(valid)[rows]
    exploded = batch.take(pa.array(rows)).append_column("window_start", pa.array(starts, pa.int64()))
    x = time_column
    if pa.types.is_temporal(times.type):  # slope(y) regresses on seconds, not on timestamps
        x, exploded = TIME_SECONDS, exploded.append_column(TIME_SECONDS, seconds.take(pa.array(rows)))
    parsed = {name: parse_aggregation(text, implicit_x=True) for name, text in aggregations.items()}
    out = aggregate_table(exploded, [*keys, "window_start"], parsed, vars or {}, default_x=x)
    out = out.add_column(len(keys) + 1, "window_end", pa.compute.add(out.column("window_start"), int(size)))
    if slide_s < int(size) and SOURCE in out.column_names:
        # Overlapping windows may share their smallest row: the window start keeps identities unique.
        ident = pa.compute.binary_join_element_wise(out.column(SOURCE), out.column("window_start").cast(pa.string()), WINDOW)
        out = out.set_column(out.column_names.index(SOURCE), SOURCE, ident)
    return out
