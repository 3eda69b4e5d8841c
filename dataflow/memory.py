"""In-memory sources: a pandas frame, an Arrow table, rows, a Hugging Face, Ray or Spark dataset as a pipeline's input.

Each is staged once as Parquet in this process's staging folder (removed at exit) and read back
with the pipeline's engine, so every step, counter and ``_errors/`` record works as for files.
Rows held by the driver (pandas, Arrow, rows, Hugging Face) get ``__source__`` =
``memory:<name>#row=N``; a Ray or Spark dataset is written by its own engine, in parallel, its rows
tagged ``memory:<name>#part=<batch>,row=N`` (Ray) or ``memory:<name>#id=N`` (Spark's
``monotonically_increasing_id``). Rows that already have a ``__source__`` keep it. A pipeline
from Spark leaves the engine to the planner (Spark for its native table steps), the others run on
Ray (a notebook's engine; ``with_engine`` changes it). An
in-memory source is marked non-resumable in ``explain`` and cannot be rendered for Kubernetes: the
staging folder is local to this machine (a local Ray or Spark, or a cluster sharing it).

Examples:
    >>> import pandas as pd, dataflow
    >>> p = dataflow.from_pandas(pd.DataFrame({"n": [1, 2]}), name="frame")
    >>> p.count()  # doctest: +SKIP
    2
"""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid
from typing import Any

from dataflow.columns import SOURCE
from dataflow.dsl.spec import MEMORY_OPTION

__all__ = ["from_arrow", "from_huggingface", "from_items", "from_pandas", "from_ray", "from_spark", "staging_folder"]

_STAGING: list[str] = []
STAGED_ROWS_PER_FILE = 10_000


def staging_folder(kind: str) -> str:
    """A new, empty-named folder under this process's staging area (created on first use, removed at exit)."""
    if not _STAGING:
        root = tempfile.mkdtemp(prefix="dataflow-memory-")
        _STAGING.append(root)
        atexit.register(shutil.rmtree, root, True)
    return os.path.join(_STAGING[0], f"{kind}-{uuid.uuid4().hex[:12]}")


def _pipeline(folder: str, name: str, keep_lineage: bool, engine: str | None = None):
    from dataflow.pipeline import Pipeline

    options: dict[str, Any] = {MEMORY_OPTION: name, "keep_lineage": keep_lineage}
    data: dict[str, Any] = {"version": 1, "name": name, "source": {"uri": folder, "format": "parquet", "options": options}}
    if engine:
        data["engine"] = engine
    return Pipeline(data)


class _BatchLineage:
    """A Ray map: each batch's rows get ``memory:<name>#part=<batch id>,row=N`` (Ray gives no global row number)."""

    def __init__(self, name: str):
        self.name = name

    def __call__(self, batch):
        import pyarrow as pa

        part = uuid.uuid4().hex[:12]
        return batch.append_column(SOURCE, pa.array([f"memory:{self.name}#part={part},row={i}" for i in range(batch.num_rows)], pa.string()))


def from_arrow(table, *, name: str = "arrow"):
    """Start a pipeline over a ``pyarrow.Table``; each row's ``__source__`` is ``memory:<name>#row=N`` (kept when it has one)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if SOURCE not in table.column_names:
        table = table.append_column(SOURCE, pa.array([f"memory:{name}#row={i}" for i in range(table.num_rows)], pa.string()))
    folder = staging_folder(name)
    os.makedirs(folder)
    pq.write_table(table, os.path.join(folder, "part-0.parquet"))
    return _pipeline(folder, name, keep_lineage=True, engine="ray")


def from_pandas(df, *, name: str = "pandas"):
    """Start a pipeline over a pandas DataFrame (its index is dropped)."""
    import pyarrow as pa

    return from_arrow(pa.Table.from_pandas(df, preserve_index=False), name=name)


def from_items(rows: list[dict[str, Any]], *, name: str = "items"):
    """Start a pipeline over a list of dicts (one per row)."""
    import pyarrow as pa

    return from_arrow(pa.Table.from_pylist(list(rows)), name=name)


def from_huggingface(ds, *, name: str = "huggingface"):
    """Start a pipeline over a Hugging Face ``datasets.Dataset`` (its Arrow table; images stay ``{bytes, path}`` structs)."""
    return from_arrow(ds.with_format("arrow")[:], name=name)


def from_ray(ds, *, name: str = "ray"):
    """Start a pipeline over a ``ray.data.Dataset``: Ray writes it to the staging folder in parallel; the pipeline runs on Ray."""
    folder = staging_folder(name)
    if SOURCE not in ds.columns():
        ds = ds.map_batches(_BatchLineage(name), batch_format="pyarrow", zero_copy_batch=True)
    ds.write_parquet(folder, min_rows_per_file=STAGED_ROWS_PER_FILE)  # many small blocks make few files
    return _pipeline(folder, name, keep_lineage=True, engine="ray")


def from_spark(df, *, name: str = "spark"):
    """Start a pipeline over a Spark DataFrame: Spark writes it to the staging folder.

    The engine is left to the planner (``auto``): Spark runs the table steps it lowers natively and
    hands the rows to Ray for Python functions (``map_batches``, ops without a Spark lowering).
    """
    folder = staging_folder(name)
    if SOURCE not in df.columns:
        df = df.selectExpr("*", f"concat('memory:{name}#id=', CAST(monotonically_increasing_id() AS STRING)) AS {SOURCE}")
    df.write.parquet(folder)
    return _pipeline(folder, name, keep_lineage=True)
