"""Conversions between the batch formats ops declare, over one canonical form.

The canonical batch is ``Columns``: a dict of column name -> 1-D numpy array, with ``object``
arrays for bytes, strings, nested values and decoded images.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["Columns", "column_array", "from_arrow", "from_rows", "length", "take", "to_arrow", "to_rows"]

Columns = dict[str, np.ndarray]
_ROW_ID = "__dataflow_row"


def column_array(values: list[Any]) -> np.ndarray:
    """Return a 1-D array for one column: typed for plain scalars, ``object`` otherwise."""
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        return np.array(values, dtype=bool)
    if values and all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values):
        return np.array(values, dtype=np.int64)
    if values and all(isinstance(v, (float, np.floating)) for v in values):
        return np.array(values, dtype=np.float64)
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


def length(cols: Columns) -> int:
    return len(next(iter(cols.values()))) if cols else 0


def to_rows(cols: Columns) -> list[dict[str, Any]]:
    names = list(cols)
    n = length(cols)
    return [{k: _scalar(cols[k][i]) for k in names} for i in range(n)]


def _scalar(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def from_rows(rows: list[dict[str, Any]], names: list[str] | None = None) -> Columns:
    """Build columns from rows; a key missing from a row is None there."""
    keys = list(names or [])
    seen = set(keys)
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                keys.append(k)
    return {k: column_array([r.get(k) for r in rows]) for k in keys}


def take(cols: Columns, index: np.ndarray) -> Columns:
    return {k: v[index] for k, v in cols.items()}


def _is_tensor_column(arr: np.ndarray) -> bool:
    return arr.dtype == object and any(isinstance(v, np.ndarray) for v in arr)


def to_arrow(cols: Columns, *, with_row_ids: bool = False) -> tuple[pa.Table, Columns]:
    """Convert to Arrow; decoded-image (ndarray) columns are held aside and returned separately."""
    arrays, names, held = [], [], {}
    for k, v in cols.items():
        if _is_tensor_column(v):
            held[k] = v
            continue
        names.append(k)
        arrays.append(pa.array(list(v) if v.dtype == object else v))
    if with_row_ids:
        names.append(_ROW_ID)
        arrays.append(pa.array(np.arange(length(cols), dtype=np.int64)))
    return pa.table(arrays, names=names) if names else pa.table({_ROW_ID: pa.array([], pa.int64())}), held


def from_arrow(table: pa.Table | pa.RecordBatch, held: Columns | None = None) -> Columns:
    """Convert from Arrow; re-attach ``held`` columns by the row ids an op carried through."""
    cols: Columns = {}
    for name in table.column_names:
        if name == _ROW_ID:
            continue
        col = table.column(name)
        arr = col.to_numpy(zero_copy_only=False)
        if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type) or pa.types.is_string(col.type):
            arr = arr.astype(object)
        cols[name] = arr
    if held:
        # A one-to-one op that dropped the row ids kept the rows in order.
        ids = table.column(_ROW_ID).to_numpy() if _ROW_ID in table.column_names else slice(None)
        for k, v in held.items():
            cols[k] = v[ids]
    return cols
