"""Which shard a row belongs to, when one streaming execution reads every shard of a run.

Shards are contiguous slices of the sorted input files, so the first input of each shard is a
boundary: a row's input file (its ``__source__`` without the scheme and the fragments readers and
ops append, such as ``#row=3``, ``#line=7``, ``#key=x``, declared in ``dataflow.lineage``) belongs
to the last shard whose boundary is not greater than it. ``ShardRoutes.route`` finds it by a
vectorised binary search. Only those fragments, with the values dataflow writes, are taken off,
and never from the boundaries (input URIs): a file's own name may end in ``#part=1.jsonl`` (legal
on POSIX and S3).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dataflow.errors import RunError
from dataflow.lineage import FRAGMENTS_REGEX

__all__ = ["ShardRoutes", "input_key"]

T = TypeVar("T")
_SCHEME = r"^[A-Za-z][A-Za-z0-9+.\-]*://"


def input_key(values: Any, fragments: bool = True) -> np.ndarray:
    """The input file each value names (a ``__source__``; an input URI with ``fragments`` False), as a NumPy unicode array."""
    arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(np.asarray(values, dtype=object), pa.string())
    if not pa.types.is_string(arr.type) and not pa.types.is_large_string(arr.type):
        arr = pc.cast(arr, pa.string())
    arr = pc.replace_substring_regex(arr, _SCHEME, "")
    if fragments:
        arr = pc.replace_substring_regex(arr, FRAGMENTS_REGEX, "")
    out = arr.to_numpy(zero_copy_only=False) if isinstance(arr, pa.Array) else np.concatenate([c.to_numpy(zero_copy_only=False) for c in arr.chunks] or [np.array([], dtype=object)])
    return out.astype(str)


class ShardRoutes(Generic[T]):
    """Sorted shard boundaries and a payload per shard (where that shard's rows go).

    ``first_inputs[i]`` is the first (smallest) input of shard ``i``; shards are given in input
    order and none is empty. ``smallest``: the fewest inputs a shard holds (read tasks are sized by it).
    """

    def __init__(self, first_inputs: Sequence[str], payloads: Sequence[T], smallest: int = 1):
        if len(first_inputs) != len(payloads) or not first_inputs:
            raise ValueError(f"ShardRoutes needs one first input per payload and at least one shard, got {len(first_inputs)} inputs for {len(payloads)} payloads")
        self.starts = input_key(list(first_inputs), fragments=False)
        if np.any(self.starts[1:] <= self.starts[:-1]):
            raise ValueError("ShardRoutes: shard boundaries must be strictly increasing (shards are slices of the sorted inputs)")
        self.payloads = list(payloads)
        self.smallest = smallest

    def __len__(self) -> int:
        return len(self.payloads)

    def route(self, values: Any) -> np.ndarray:
        """The shard position (0-based, in these routes) of each value.

        Raises:
            RunError: a value sorts before the first shard (not an input of this run).
        """
        n = len(values)
        if len(self.payloads) == 1:
            return np.zeros(n, dtype=np.int64)
        keys = input_key(values)
        pos = np.searchsorted(self.starts, keys, side="right").astype(np.int64) - 1
        if n and pos.min() < 0:
            bad = keys[int(np.argmin(pos))]
            raise RunError(f"row source '{bad}' is not an input of this run's shards (first input: '{self.starts[0]}'); an op must keep __source__")
        return pos

    def groups(self, values: Any) -> list[tuple[int, np.ndarray | None]]:
        """``(position, row indices)`` per shard present in ``values``, in shard order; indices ``None``: every row."""
        pos = self.route(values)
        if len(pos) == 0:
            return []
        first = int(pos[0])
        if np.all(pos == first):
            return [(first, None)]
        return [(int(p), np.flatnonzero(pos == p)) for p in np.unique(pos)]
