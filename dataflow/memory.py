"""In-memory sources: a pandas frame, an Arrow table, rows, a Hugging Face, Ray or Spark dataset as a pipeline's input.

Nothing is written: this process holds the object (under the source URI ``held://<name>/<key>``)
and the engine reads it when the pipeline runs.

- Ray reads an Arrow table (``from_arrow``; ``from_pandas``, ``from_items`` and
  ``from_huggingface`` convert to Arrow first: pandas and rows are copied once into Arrow, an HF
  dataset's table is taken as is) with ``ray.data.from_arrow``: one copy into the object store,
  which the tasks then read without copying; no Parquet is encoded or decoded. A
  ``ray.data.Dataset`` (``from_ray``) is the run's input itself, its rows given ``__source__``
  lazily by a map over the Arrow blocks (zero-copy for the existing columns).
- Spark reads a DataFrame (``from_spark``) as is (its ``__source__`` is a lazy column), and an
  Arrow table with ``spark.createDataFrame`` (Arrow-based; Spark copies the rows into the JVM).
- A handoff between engines still goes through Parquet in this process's staging folder
  (``staging_folder``, removed at exit): a Spark DataFrame on Ray, a Ray Dataset on Spark, a
  plan that runs on Spark and then on Ray.

Rows held by the driver get ``__source__`` = ``memory:<name>#row=N``; a Ray dataset's rows
``memory:<name>#part=<task>-<block>,row=N`` (Ray gives no global row number); a Spark DataFrame's
``memory:<name>#id=N`` (``monotonically_increasing_id``). Rows that already have a ``__source__``
keep it. A pipeline from Spark leaves the engine to the planner (Spark for its native table
steps), the others run on Ray (a notebook's engine; ``with_engine`` changes it). An in-memory
source is marked non-resumable in ``explain`` and cannot be rendered for Kubernetes: only this
process holds the rows. The held object lives as long as this process (``release`` drops it).

Examples:
    >>> import pandas as pd, dataflow
    >>> p = dataflow.from_pandas(pd.DataFrame({"n": [1, 2]}), name="frame")
    >>> p.count()  # doctest: +SKIP
    2
"""
from __future__ import annotations

from typing import Any

from dataflow.columns import SOURCE
from dataflow.dsl.spec import MEMORY_OPTION
from dataflow.lineage import ROW
from dataflow.runtime.held import held, hold, staging_folder

__all__ = ["from_arrow", "from_huggingface", "from_items", "from_pandas", "from_ray", "from_spark", "held", "release", "staging_folder"]


def release(pipeline) -> None:
    """Drop the rows an in-memory pipeline holds (a later run of it raises ``RunError``)."""
    from dataflow.runtime.held import release as drop

    drop(pipeline._data["source"]["uri"])


def _pipeline(obj: Any, name: str, engine: str | None = None):
    from dataflow.pipeline import Pipeline

    options: dict[str, Any] = {MEMORY_OPTION: name, "keep_lineage": True}
    data: dict[str, Any] = {"version": 1, "name": name, "source": {"uri": hold(name, obj), "format": "parquet", "options": options}}
    if engine:
        data["engine"] = engine
    return Pipeline(data)


def from_arrow(table, *, name: str = "arrow"):
    """Start a pipeline over a ``pyarrow.Table`` (held, not copied); each row's ``__source__`` is ``memory:<name>#row=N`` (kept when it has one)."""
    import pyarrow as pa

    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    if SOURCE not in table.column_names:  # a new table sharing the columns' buffers, plus the lineage column
        table = table.append_column(SOURCE, pa.array([f"memory:{name}{ROW}{i}" for i in range(table.num_rows)], pa.string()))
    return _pipeline(table, name, engine="ray")


def from_pandas(df, *, name: str = "pandas"):
    """Start a pipeline over a pandas DataFrame (converted to Arrow once; its index is dropped)."""
    import pyarrow as pa

    return from_arrow(pa.Table.from_pandas(df, preserve_index=False), name=name)


def from_items(rows: list[dict[str, Any]], *, name: str = "items"):
    """Start a pipeline over a list of dicts (one per row)."""
    import pyarrow as pa

    return from_arrow(pa.Table.from_pylist(list(rows)), name=name)


def from_huggingface(ds, *, name: str = "huggingface"):
    """Start a pipeline over a Hugging Face ``datasets.Dataset`` (its Arrow table, not copied; images stay ``{bytes, path}`` structs)."""
    return from_arrow(ds.with_format("arrow")[:], name=name)


def from_ray(ds, *, name: str = "ray"):
    """Start a pipeline over a ``ray.data.Dataset``: the run reads it directly (nothing is written); the pipeline runs on Ray."""
    return _pipeline(ds, name, engine="ray")


def from_spark(df, *, name: str = "spark"):
    """Start a pipeline over a Spark DataFrame: a run on Spark reads it directly (nothing is written).

    The engine is left to the planner (``auto``): Spark runs the table steps it lowers natively and
    hands the rows to Ray for Python functions (``map_batches``, ops without a Spark lowering).
    """
    if SOURCE not in df.columns:
        df = df.selectExpr("*", f"concat('memory:{name}#id=', CAST(monotonically_increasing_id() AS STRING)) AS {SOURCE}")
    return _pipeline(df, name)
