"""The dataset methods of ``Pipeline`` that Ray Data and Daft users know: transforms, then results in memory.

Transforms (``map_batches``, ``filter``, ``select``, ``with_column(s)``) append steps and run
nothing. Results plan and run only what they need: ``take``/``show``/``schema`` run the steps on
the first inputs without writing; ``count``, ``to_arrow``, ``to_pandas``, ``to_huggingface``,
``to_ray``, ``to_spark`` and ``iter_batches`` run the pipeline once (kept for that Pipeline
object, so a second result does not run it again) through ``dataflow.results``: the engine keeps
its output in memory (Ray: the materialized Dataset, its blocks in the object store; Spark: the
persisted DataFrame) and ``to_ray``/``to_spark`` return it as is. ``to_arrow`` puts the Arrow
blocks side by side (fetched from Ray's object store without copying on this node; Spark's
``toArrow`` copies once out of the JVM); ``to_pandas`` shares a column's buffer where the type
allows (fixed width, no nulls, one chunk); ``to_huggingface`` wraps the Arrow table. Every row
is accounted for and bad rows land in a staging folder's ``_errors/`` (``report.errors``); no
data file is written, except the Parquet handoff of a plan that runs on Spark and then Ray, and
another engine's output asked for (``to_spark`` of a Ray run). A plan whose engine cannot hold
its output runs into a staged Parquet folder instead.
All of them use one Ray session (and one Spark session) per process, started on first use.
Output rows keep ``__source__`` (their lineage); their order is not the input's.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

__all__ = ["DatasetMethods", "ShownRows"]


class ShownRows(list):
    """Rows from ``Pipeline.show``: a list of dicts; in a notebook a table with image thumbnails and audio players."""

    def _repr_html_(self) -> str:
        from dataflow.report.notebook import rows_html

        return rows_html(list(self))


class DatasetMethods:
    """Mixed into ``Pipeline``; every transform returns a new Pipeline."""

    _data: dict[str, Any]
    _output: Any = None  # the dataflow.results.Held output, once run for a result

    # -- transforms ---------------------------------------------------------------------------
    def map_batches(
        self,
        fn: Callable[..., Any] | type,
        *,
        batch_format: str = "numpy",
        resources: dict[str, Any] | None = None,
        fn_kwargs: dict[str, Any] | None = None,
        fn_constructor_kwargs: dict[str, Any] | None = None,
    ):
        """Append a step running ``fn`` on each batch; it travels to the workers by value (a notebook cell's function works).

        Args:
            fn: ``fn(batch, **fn_kwargs) -> batch``, a callable class (built once per worker with
                ``fn_constructor_kwargs``; Ray runs it as an actor pool), or an ``@op``.
            batch_format: numpy (dict of arrays), pyarrow, pandas or row.
            resources: num_cpus, num_gpus, memory, concurrency, batch_size.
            fn_kwargs: Keyword arguments of each call.
            fn_constructor_kwargs: Keyword arguments of the class's constructor.
        """
        from dataflow.ops.declare import OpSpec
        from dataflow.ops.function import function_op

        if isinstance(fn, OpSpec):
            return self.apply(fn, resources=resources, **(fn_kwargs or {}))
        spec = function_op(fn, batch_format=batch_format, fn_kwargs=fn_kwargs, fn_constructor_kwargs=fn_constructor_kwargs)
        return self.apply(spec, resources=resources)

    def filter(self, expr: str, **vars: Any):
        """Keep the rows where the SQL expression holds (``table.filter_rows``), e.g. ``"n > :floor"`` with ``floor=3``."""
        return self.apply("table.filter_rows", where=expr, **({"vars": vars} if vars else {}))

    def select(self, *columns: str):
        """Keep only these columns (and ``__source__``)."""
        return self.apply("table.select", columns=list(columns))

    def with_columns(self, columns: dict[str, str], **vars: Any):
        """Add or replace columns, each a SQL expression over the row (``table.with_columns``)."""
        return self.apply("table.with_columns", columns=dict(columns), **({"vars": vars} if vars else {}))

    def with_column(self, name: str, expr: str, **vars: Any):
        """Add or replace one column given by a SQL expression."""
        return self.with_columns({name: expr}, **vars)

    # -- results ------------------------------------------------------------------------------
    def show(self, n: int = 10) -> ShownRows:
        """The first ``n`` output rows (run on the first inputs only), shown as a table with thumbnails in a notebook."""
        return ShownRows(self.take(n))

    def schema(self):
        """The output's Arrow schema, from a run over the first inputs."""
        from dataflow.batch import from_rows, to_arrow

        rows = self.take(64)
        if not rows:
            return self.to_arrow().schema
        return to_arrow(from_rows(rows, list(dict.fromkeys(k for r in rows for k in r)))).schema

    def count(self) -> int:
        """The number of output rows (runs the pipeline)."""
        return int(self._run_once().report.rows_out)

    def to_arrow(self):
        """The output as one ``pyarrow.Table`` (runs the pipeline) over the engine's Arrow blocks, not a copy of them."""
        held = self._run_once()
        if held.kind == "arrow":
            return held.value
        if held.kind == "ray":
            from dataflow.engines.ray.memory_io import arrow_table

            return arrow_table(held.value)
        if held.kind == "spark":
            return held.value.toArrow()
        import pyarrow.dataset as pads

        return pads.dataset(held.value, format="parquet").to_table()  # leaves out _dataflow/ and _errors/

    def to_pandas(self):
        """The output as a pandas DataFrame (runs the pipeline); a column shares its Arrow buffer where the types allow."""
        return self.to_arrow().to_pandas(split_blocks=True)

    def to_huggingface(self):
        """The output as a Hugging Face ``datasets.Dataset`` over its Arrow table (no copy)."""
        import datasets

        return datasets.Dataset(self.to_arrow())

    def to_ray(self):
        """The output as a ``ray.data.Dataset`` (on this process's Ray): on Ray, the run's own materialized blocks."""
        from dataflow.engines.registry import get_engine

        held = self._run_once()
        return held.value if held.kind == "ray" else get_engine("ray").from_held(held.value, held.kind)

    def to_spark(self):
        """The output as a Spark DataFrame (on this process's Spark session): on Spark, the run's own DataFrame, persisted (``unpersist()`` frees it)."""
        from dataflow.engines.registry import get_engine

        held = self._run_once()
        return held.value if held.kind == "spark" else get_engine("spark").from_held(held.value, held.kind)

    def iter_batches(self, batch_size: int = 1024, batch_format: str = "pyarrow") -> Iterator[Any]:
        """Stream the output in batches of up to ``batch_size`` rows: pyarrow (RecordBatch), pandas or numpy (dict of arrays)."""
        for batch in self.to_arrow().to_batches(max_chunksize=batch_size):
            if batch_format == "pandas":
                yield batch.to_pandas()
            elif batch_format == "numpy":
                yield {name: col.to_numpy(zero_copy_only=False) for name, col in zip(batch.schema.names, batch.columns)}
            else:
                yield batch

    # -- the one run behind the results -------------------------------------------------------
    def _run_once(self):
        """The output, computed once per Pipeline object: held by the engine (``dataflow.results``), else staged Parquet."""
        if self._output is None:
            from dataflow.dsl.parse import parse_pipeline
            from dataflow.engines.base import RunOptions
            from dataflow.runtime.held import staging_folder
            from dataflow.results import Held, hold_pipeline
            from dataflow.runner import run_pipeline

            folder = staging_folder("output")  # counters and row errors (and the output, where the engine cannot hold it)
            spec = parse_pipeline({**self._data, "sink": {"uri": folder, "format": "parquet"}})
            options = RunOptions(progress=False)
            self._output = hold_pipeline(spec, options) or Held("parquet", folder, run_pipeline(spec, options))
        return self._output
