"""Column encodings shared by writers: decoded arrays as tensor structs, bytes as base64."""
from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["TENSOR_TYPE", "arrow_table", "json_value"]

TENSOR_TYPE = pa.struct([("shape", pa.list_(pa.int64())), ("dtype", pa.string()), ("data", pa.binary())])


def _tensor_cell(v: Any) -> dict | None:
    if v is None:
        return None
    arr = np.ascontiguousarray(v)
    return {"shape": list(arr.shape), "dtype": arr.dtype.str, "data": arr.tobytes()}


def arrow_table(cols: dict[str, np.ndarray]) -> pa.Table:
    """Return an Arrow table; ndarray cells become ``{shape, dtype, data}`` structs."""
    arrays, names = [], []
    for name, values in cols.items():
        if values.dtype == object and any(isinstance(v, np.ndarray) for v in values):
            arrays.append(pa.array([_tensor_cell(v) for v in values], type=TENSOR_TYPE))
        elif values.dtype == object:
            arrays.append(pa.array(list(values)))
        else:
            arrays.append(pa.array(values))
        names.append(name)
    return pa.table(arrays, names=names)


def json_value(v: Any) -> Any:
    """Return a JSON-ready value: bytes as base64 text, arrays as nested lists."""
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, dict):
        return {k: json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    return v
