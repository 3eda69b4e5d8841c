"""Global ops on Ray: distributed lowerings by op name, else the whole dataset in one call.

A distributed lowering is ``fn(ds, call, side) -> ds`` registered in ``RAY_GLOBAL_OPS``. Without
one, the rows are gathered at the driver and the op's function runs once over all of them: exact,
and fine for the data one machine holds.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from dataflow.engines.ray.compile import RayGlobal
from dataflow.runtime.batch import concat, length
from dataflow.runtime.stage import StageExecutor
from dataflow.runtime.stats import SideOutputs, batch_key

__all__ = ["RAY_GLOBAL_OPS", "apply_global"]

RAY_GLOBAL_OPS: dict[str, Callable[[Any, Any, SideOutputs], Any]] = {}
_CHUNK_ROWS = 1024


def _gather(ds) -> dict[str, np.ndarray]:
    return concat(list(ds.iter_batches(batch_size=None, batch_format="numpy")))


def apply_global(ds, stage: RayGlobal, side: SideOutputs):
    """Return the dataset after the global op of ``stage``."""
    import pandas as pd
    import ray

    lowering = RAY_GLOBAL_OPS.get(stage.label)
    if lowering is not None:
        return lowering(ds, stage.call, side)
    cols = _gather(ds)
    executor = StageExecutor([stage.call])
    if not cols:
        return ds
    out, errors, stats = executor(cols)
    side.write(stage.name, batch_key(cols.get("source", [])), errors, stats)
    n = length(out)
    frames = [pd.DataFrame({k: v[i : i + _CHUNK_ROWS] for k, v in out.items()}) for i in range(0, max(n, 1), _CHUNK_ROWS)]
    return ray.data.from_pandas(frames)
