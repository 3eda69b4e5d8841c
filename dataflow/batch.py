"""Conversions between the batch formats ops declare, over one canonical form.

The canonical batch is ``Columns``: a dict of column name -> 1-D numpy array, with ``object``
arrays for bytes, strings, nested values and decoded images.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["TENSOR_TYPE", "Columns", "MapCell", "column_array", "concat", "from_arrow", "from_rows", "length", "plain_arrow", "take", "to_arrow", "to_rows"]

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


def _tensor_array(values: np.ndarray) -> pa.StructArray:
    """ndarray cells (None allowed) as one ``TENSOR_TYPE`` array, built from buffers: one copy of the data, no per-cell dicts."""
    cells = [None if v is None else np.ascontiguousarray(v) for v in values]
    present = [c for c in cells if c is not None]
    sizes = np.fromiter((0 if c is None else c.nbytes for c in cells), dtype=np.int64, count=len(cells))
    ndims = np.fromiter((0 if c is None else c.ndim for c in cells), dtype=np.int32, count=len(cells))
    data = np.concatenate([c.reshape(-1).view(np.uint8) for c in present]) if present else np.empty(0, dtype=np.uint8)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    dims = np.fromiter((d for c in present for d in c.shape), dtype=np.int64)
    shape_offsets = np.concatenate([[0], np.cumsum(ndims)]).astype(np.int32)
    mask = pa.array([c is None for c in cells], type=pa.bool_()) if len(present) < len(cells) else None
    return pa.StructArray.from_arrays(
        [
            pa.ListArray.from_arrays(pa.array(shape_offsets), pa.array(dims, type=pa.int64())),
            pa.array([None if c is None else c.dtype.str for c in cells], type=pa.string()),
            _binary(offsets, data),
        ],
        fields=list(TENSOR_TYPE),
        mask=mask,
    )


def _binary(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    """A ``binary`` array over ``data`` cut at ``offsets`` (int32 offsets: Arrow's binary holds under 2 GiB per array)."""
    if offsets[-1] >= 2**31:
        raise ValueError(f"a batch of tensors holds {offsets[-1]} bytes, over Arrow's 2 GiB per binary array: lower the step's batch_size")
    return pa.Array.from_buffers(pa.binary(), len(offsets) - 1, [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)])


def _tensor_values(col: pa.ChunkedArray) -> np.ndarray:
    """``TENSOR_TYPE`` cells as read-only ndarray views over the Arrow data buffer (no copy)."""
    out = np.empty(len(col), dtype=object)
    i = 0
    for chunk in col.chunks:
        shapes, dtypes, data = chunk.flatten()  # the children, with the chunk's slice applied
        dims, shape_at = shapes.values.to_numpy(zero_copy_only=False), shapes.offsets.to_numpy()
        buffers = data.buffers()
        wide = pa.types.is_large_binary(data.type)
        offsets = np.frombuffer(buffers[1], dtype=np.int64 if wide else np.int32)[data.offset:data.offset + len(data) + 1]
        raw = np.frombuffer(buffers[2], dtype=np.uint8) if buffers[2] is not None else np.empty(0, dtype=np.uint8)
        valid = chunk.is_valid().to_numpy(zero_copy_only=False)
        for j, kind in enumerate(dtypes.to_pylist()):
            if valid[j] and kind is not None:
                out[i] = raw[offsets[j]:offsets[j + 1]].view(np.dtype(kind)).reshape(tuple(dims[shape_at[j]:shape_at[j + 1]]))
            else:
                out[i] = None
            i += 1
    return out


class MapCell(list):
    """A map value as its (key, value) pairs: ``to_arrow`` writes it back as a map, not a list of pairs."""


def _map_array(values: np.ndarray) -> pa.Array:
    pairs = [kv for v in values if v is not None for kv in v]
    key = pa.array([k for k, _ in pairs]).type if pairs else pa.string()
    value = pa.array([x for _, x in pairs]).type if pairs else pa.null()
    return pa.array(list(values), type=pa.map_(key, value))


def to_arrow(cols: Columns | pa.Table) -> pa.Table:
    """Convert to Arrow; ndarray cells (decoded images, audio) become ``{shape, dtype, data}`` structs. A table is returned as is."""
    if isinstance(cols, pa.Table):
        return cols
    arrays, names = [], []
    for k, v in cols.items():
        names.append(k)
        if _is_tensor_column(v):
            arrays.append(_tensor_array(v))
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


def plain_arrow(table: pa.Table) -> bool:
    """Whether ``table`` holds no extension-typed column (such as Ray's tensors), so Arrow steps can take it as is."""
    return not any(isinstance(f.type, pa.ExtensionType) for f in table.schema)


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
