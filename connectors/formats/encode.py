"""JSON encoding of column values shared by writers: bytes as base64, arrays as nested lists."""
from __future__ import annotations

import base64
from typing import Any

import numpy as np

__all__ = ["json_value"]


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
