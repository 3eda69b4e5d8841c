"""Conversions between the batch formats ops declare, over one canonical form.

The canonical batch is ``Columns``: a dict of column name -> 1-D numpy array, with ``object``
arrays for bytes, strings, nested values and decoded images.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["TENSOR_TYPE", "Columns", "MapCell", "column_array", "concat", "from_arrow", "from_rows", "length", "take", "to_arrow", "to_rows"]

Columns = dict[str, np.ndarray]


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


TENSOR_TYPE = pa.struct([("shape", pa.list_(pa.int64())), ("dtype", pa.string()), ("data", pa.binary())])


def _is_tensor_column(arr: np.ndarray) -> bool:
    # Engines hand equal-shaped tensors over as one N-D array, ragged ones as objects.
    return arr.ndim > 1 or (arr.dtype == object and any(isinstance(v, np.ndarray) for v in arr))


def _tensor_cell(v: Any) -> dict | None:
    if v is None:
        return None
    arr = np.ascontiguousarray(v)
    return {"shape": list(arr.shape), "dtype": arr.dtype.str, "data": arr.tobytes()}


def _tensor_values(col: pa.ChunkedArray) -> np.ndarray:
    out = np.empty(len(col), dtype=object)
    for i, cell in enumerate(col.to_pylist()):
        out[i] = None if cell is None else np.frombuffer(cell["data"], dtype=np.dtype(cell["dtype"])).reshape(cell["shape"])
    return out


class MapCell(list):
    """A map value as its (key, value) pairs: ``to_arrow`` writes it back as a map, not a list of pairs."""


def _map_array(values: np.ndarray) -> pa.Array:
    pairs = [kv for v in values if v is not None for kv in v]
    key = pa.array([k for k, _ in pairs]).type if pairs else pa.string()
    value = pa.array([x for _, x in pairs]).type if pairs else pa.null()
    return pa.array(list(values), type=pa.map_(key, value))


def to_arrow(cols: Columns) -> pa.Table:
    """Convert to Arrow; ndarray cells (decoded images, audio) become ``{shape, dtype, data}`` structs."""
    arrays, names = [], []
    for k, v in cols.items():
        names.append(k)
        if _is_tensor_column(v):
            arrays.append(pa.array([_tensor_cell(x) for x in v], type=TENSOR_TYPE))
        elif v.dtype == object and any(isinstance(x, MapCell) for x in v):
            arrays.append(_map_array(v))
        else:
            arrays.append(pa.array(list(v) if v.dtype == object else v))
    return pa.table(arrays, names=names)


def _python_values(col: pa.ChunkedArray) -> bool:
    """Whether numpy would change the column's values: nulls in numbers, booleans and times; nested cells."""
    t = col.type
    if pa.types.is_nested(t):
        return True
    return col.null_count > 0 and not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t))


def from_arrow(table: pa.Table | pa.RecordBatch) -> Columns:
    """Convert from Arrow without changing a value.

    ``{shape, dtype, data}`` struct columns and tensor extension columns come back as ndarrays;
    a column with nulls in numbers, booleans or times, and a list, struct or map column, comes
    back as Python values (numpy would turn a null number into NaN and a list into an array).
    """
    cols: Columns = {}
    for name in table.column_names:
        col = table.column(name)
        if isinstance(col, pa.Array):
            col = pa.chunked_array([col], type=col.type)
        if col.type == TENSOR_TYPE:
            cols[name] = _tensor_values(col)
        elif isinstance(col.type, pa.ExtensionType):  # e.g. Ray's tensor columns: their own to_numpy
            chunks = [c.to_numpy(zero_copy_only=False) for c in col.chunks]
            cols[name] = np.concatenate(chunks) if chunks else np.empty(0, dtype=object)
        elif pa.types.is_map(col.type):
            cols[name] = column_array([None if c is None else MapCell(c) for c in col.to_pylist()])
        elif _python_values(col):
            cols[name] = column_array(col.to_pylist())  # nulls or nested cells: an object array
        else:
            arr = col.to_numpy(zero_copy_only=False)
            if pa.types.is_binary(col.type) or pa.types.is_large_binary(col.type) or pa.types.is_string(col.type):
                arr = arr.astype(object)
            cols[name] = arr
    return cols


def concat(parts: list[Columns]) -> Columns:
    """Concatenate batches column-wise (columns missing from a part are None there)."""
    parts = [p for p in parts if p]
    if not parts:
        return {}
    names = list(dict.fromkeys(k for p in parts for k in p))
    out: Columns = {}
    for k in names:
        pieces = [p[k] if k in p else np.full(length(p), None, dtype=object) for p in parts]
        kinds = {a.dtype.kind for a in pieces}
        out[k] = np.concatenate(pieces) if len(kinds) == 1 and "O" not in kinds else _object_concat(pieces)
    return out


def _object_concat(pieces: list[np.ndarray]) -> np.ndarray:
    out = np.empty(sum(len(p) for p in pieces), dtype=object)
    i = 0
    for p in pieces:
        for v in p:
            out[i] = v
            i += 1
    return out
