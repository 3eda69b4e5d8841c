"""Ops defined outside the package, referenced from YAML as ``tests.opfixtures:<name>``."""
from __future__ import annotations

import numpy as np

from dataflow.errors import RowError
from dataflow.ops import op


@op(name="text.explode_on_purpose", modality="text", inputs=("__source__",), outputs=("never",), batch_format="numpy")
def explode(batch: dict, *, message: str = "boom") -> dict:
    """Raise a plain exception: a bug, which must fail the run loudly.

    Args:
        message: The exception text.
    """
    raise ValueError(message)


@op(name="text.tag_length", modality="text", inputs=("{column}",), outputs=("length",), batch_format="numpy")
def tag_length(batch: dict, *, column: str = "text") -> dict:
    """Add the character length of a column.

    Args:
        column: Column to measure.
    """
    batch["length"] = np.array([len(t) for t in batch[column]], dtype=np.int64)
    return batch


@op(name="text.count_in_actor", modality="text", inputs=("text",), outputs=("calls", "pid"), batch_format="numpy")
class CountInActor:
    """Number each batch an actor sees: shows the op was built once per actor.

    Args:
        start: Number given to the first batch.
    """

    def __init__(self, *, start: int = 1):
        import os

        self.calls = start - 1
        self.pid = os.getpid()

    def __call__(self, batch: dict) -> dict:
        self.calls += 1
        n = len(batch["text"])
        batch["calls"] = np.full(n, self.calls, dtype=np.int64)
        batch["pid"] = np.full(n, self.pid, dtype=np.int64)
        return batch


@op(name="table.lose_rows", modality="table", inputs=(), outputs=("__source__",), batch_format="pyarrow")
def lose_rows(batch, *, keep: int = 1):
    """Return only the first rows of each batch and say nothing: a bug the row-conservation check must catch.

    Args:
        keep: Rows of each batch passed on.
    """
    return batch.slice(0, keep)


@op(name="table.batch_rows", modality="table", inputs=(), outputs=("batch_rows",), batch_format="pyarrow")
def batch_rows(batch):
    """Add the number of rows of the batch the step was given: shows the batch size an engine used."""
    import pyarrow as pa

    return batch.append_column("batch_rows", pa.array([batch.num_rows] * batch.num_rows, pa.int64()))


@op(name="table.repeat_rows", modality="table", inputs=("n",), outputs=("copy",), kind="flat_map", batch_format="row")
def repeat_rows(row: dict) -> list[dict]:
    """Yield ``n`` copies of the row, numbered in ``copy``: a row with ``n`` 0 is dropped, one with 3 becomes three."""
    return [{"copy": k} for k in range(row["n"])]


@op(name="table.repeat_or_refuse", modality="table", inputs=("n",), outputs=("copy",), kind="flat_map", batch_format="row")
def repeat_or_refuse(row: dict) -> list[dict]:
    """Yield ``n`` copies of the row, numbered in ``copy``; a row with ``n`` 0 is dropped, one with a negative ``n`` is a row error."""
    if row["n"] < 0:
        raise RowError(f"n is negative: {row['n']}")
    return [{"copy": k} for k in range(row["n"])]
