"""``percentile_approx``'s partial state, bounded: a block's values, or ``points`` of them at even ranks where it has more.

A block's state is its non-null values and their count. Where a block holds more than ``points``
values of a group (``2 * accuracy``, Spark's third argument, default 10,000), the state keeps only
``points`` of them, the j-th the value of rank ``ceil(j * n / points)``, each standing for
``n / points`` values: a value's rank among them is off by less than ``n / points``. Before the merge,
a group with such a state has all its states' values replaced by ``points`` values at even ranks of
their weighted union (off by less than ``N / points`` more), so the merge query's exact quantile of
a list (``quantile_disc``) reads them as it reads plain values. The answer's rank is then off by
less than ``N / accuracy`` of the group's ``N`` values, the error Spark's ``percentile_approx``
allows; a group whose blocks each hold at most ``points`` values gets the exact answer, as before.
The merge holds at most ``points`` values per block and group, not every value of the group.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataflow.ops.table import duck

__all__ = ["QuantileState"]

DEFAULT_ACCURACY = 10_000  # Spark's percentile_approx default
_ROW = "__df_row__"


@dataclass(frozen=True)
class QuantileState:
    """The state columns of one ``percentile_approx``: ``values`` (a list) and ``count``, at most ``points`` values a block."""

    values: str
    count: str
    points: int

    def compacted(self, states: pa.Table) -> pa.Table:
        """``states`` (one row per block and group) with each list of more than ``points`` values cut to ``points`` of them at even ranks."""
        lists = _lists(states.column(self.values))
        lengths = _lengths(lists)
        if not (lengths > self.points).any():
            return states
        parts = [_ranked(v, None, self.points) if len(v) > self.points else v for v in _rows(lists, lengths)]
        return states.set_column(states.column_names.index(self.values), self.values, _list_of(parts, lists.type))

    def resampled(self, states: pa.Table, keys: list[str]) -> pa.Table:
        """``states`` where each group holding a cut list has its values as ``points`` values at even ranks of their weighted union, in its first row (its other rows empty)."""
        lists = _lists(states.column(self.values))
        lengths = _lengths(lists)
        counts = np.asarray(pc.fill_null(states.column(self.count), 0).to_numpy(), dtype=np.int64)
        if (lengths == counts).all():
            return states
        parts, out_counts = list(_rows(lists, lengths)), counts.copy()
        for rows in _groups(states, keys):
            if (lengths[rows] == counts[rows]).all():
                continue
            values = pa.concat_arrays([parts[r] for r in rows])
            weights = np.concatenate([np.full(lengths[r], counts[r] / lengths[r]) for r in rows if lengths[r]])
            for r in rows:
                parts[r], out_counts[r] = parts[r].slice(0, 0), 0
            parts[rows[0]] = _ranked(values, weights, self.points)
            out_counts[rows[0]] = self.points
        states = states.set_column(states.column_names.index(self.values), self.values, _list_of(parts, lists.type))
        return states.set_column(states.column_names.index(self.count), self.count, pa.array(out_counts, states.schema.field(self.count).type))


def _lists(column: pa.ChunkedArray) -> pa.ListArray:
    return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


def _lengths(lists: pa.ListArray) -> np.ndarray:
    return np.asarray(pc.fill_null(pc.list_value_length(lists), 0).to_numpy(), dtype=np.int64)


def _rows(lists: pa.ListArray, lengths: np.ndarray):
    """Each row's values (none for a null list)."""
    flat = lists.values
    offsets = lists.offsets.to_numpy()
    return (flat.slice(offsets[i], lengths[i]) if lengths[i] else flat.slice(0, 0) for i in range(len(lists)))


def _list_of(parts: list[pa.Array], kind: pa.DataType) -> pa.Array:
    offsets = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.concat_arrays(parts) if parts else pa.array([], kind.value_type), type=kind)


def _groups(states: pa.Table, keys: list[str]) -> list[list[int]]:
    """The row numbers of each group of ``keys`` (nulls one group), by DuckDB's GROUP BY, the merge's own: a struct or list
    key groups there, where ``grouping.group_ids`` (Arrow's ``group_by``) refuses it."""
    if not keys:
        return [list(range(states.num_rows))]
    named = ", ".join(duck.quoted(k) for k in keys)
    rows = duck.query(states.select(keys), f"SELECT list({_ROW} - 1) AS r FROM (SELECT row_number() OVER () AS {_ROW}, {named} FROM {duck.TABLE}) GROUP BY {named}")
    return rows.column(0).to_pylist()


def _ranked(values: pa.Array, weights: np.ndarray | None, points: int) -> pa.Array:
    """``points`` of ``values`` (each of its weight; None: 1): the j-th the first in order whose cumulative weight reaches ``j / points`` of the total."""
    kind = values.type
    numeric = pa.types.is_integer(kind) or pa.types.is_floating(kind)
    if weights is None and numeric:  # the common cut: a plain sort, the ranks ceil(j * n / points)
        ranks = (np.arange(1, points + 1) * len(values) + points - 1) // points
        return pa.array(np.sort(values.to_numpy(zero_copy_only=False))[ranks - 1], kind)
    order = np.argsort(values.to_numpy(zero_copy_only=False)) if numeric or pa.types.is_temporal(kind) else pc.array_sort_indices(values).to_numpy()
    cumulative = np.cumsum(weights[order]) if weights is not None else np.arange(1, len(order) + 1, dtype=np.float64)
    targets = np.arange(1, points + 1) * (cumulative[-1] / points) * (1 - 1e-12)  # a relative slack for the float sum
    at = np.minimum(np.searchsorted(cumulative, targets, side="left"), len(order) - 1)
    return values.take(pa.array(order[at]))
