"""Python steps on Spark: a table op with no native lowering runs in Spark's Python workers (``mapInArrow``).

The step (its op by value, its params validated at plan time) runs through the ``StageExecutor``
the Ray engine uses, one executor per partition (a callable class is built once per partition).
Its output schema comes from running it at the driver on the first rows of its input, read by a
separate query that carries none of the run's counters. Rows it refuses (``RowError``) come back
flagged with their error type and reason, and the job's runner splits them off to ``_errors/`` as
it does a native check's bad rows. A step that may drop rows also reports, per batch, the rows it
dropped (``DROPS``: on the batch's first row, or on a marker row whose ``BAD`` is null when the
batch left none), so a flat map that drops some rows and expands others counts its drops exactly.
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.ops.declare import Modality, OpKind
from dataflow.batch import length, to_arrow

__all__ = ["DROPS", "PYTHON_LOWERING", "PythonStage", "python_allowed", "python_step"]

PYTHON_LOWERING = "mapInArrow[the op in Python workers, one executor per partition]; row errors -> _errors/"
SAMPLE_ROWS = 64
ETYPE, REASON = "__df_etype__", "__df_reason__"
DROPS = "__df_drops__"  # rows of a batch the step dropped; summed by the step's observation


def python_allowed(op) -> bool:
    """Whether Spark runs ``op`` in its Python workers: row-wise table ops (maps, filters, flat maps)."""
    return op.modality is Modality.TABLE and op.kind in (OpKind.MAP, OpKind.FILTER, OpKind.FLAT_MAP)


def output_schema(call, sample: pa.Table) -> pa.Schema:
    """The step's output columns and types, from running it on ``sample`` (a column of nulls only becomes a string)."""
    from dataflow.runtime.stage import StageExecutor

    out, _, _ = StageExecutor([call]).run(sample)
    table = out if isinstance(out, pa.Table) else to_arrow(out) if out else sample.schema.empty_table()
    return pa.schema([pa.field(f.name, pa.string() if pa.types.is_null(f.type) else f.type) for f in table.schema])


class PythonStage:
    """``mapInArrow`` function: the step over each Arrow batch; refused rows come back flagged."""

    def __init__(self, call, schema: pa.Schema, bad: str):
        self.call, self.schema, self.bad = call, schema, bad

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from dataflow.runtime.stage import StageExecutor

        executor = StageExecutor([self.call])
        for batch in batches:
            out, errors, stats = executor.run(pa.Table.from_batches([batch], schema=batch.schema))
            dropped = sum(sum(st.drops.values()) for st in stats.values())
            yield from self._flagged(out if isinstance(out, pa.Table) else to_arrow(out) if length(out) else None, errors, dropped).to_batches()

    def _flagged(self, good: pa.Table | None, errors: list, dropped: int) -> pa.Table:
        good = good if good is not None and good.num_rows else None
        n = good.num_rows if good is not None else 0
        marker = int(DROPS in self.schema.names and dropped > 0 and n + len(errors) == 0)  # a row that only carries the count
        rows = n + len(errors) + marker
        columns = {}
        for f in self.schema:
            if f.name == DROPS:  # the count on the batch's first row
                columns[f.name] = pa.array([dropped] + [0] * (rows - 1) if rows else [], pa.int64())
            elif f.name == self.bad:
                columns[f.name] = pa.array([False] * n + [True] * len(errors) + [None] * marker, pa.bool_())
            elif f.name == ETYPE:
                columns[f.name] = pa.array([None] * n + [e.error_type for e in errors] + [None] * marker, pa.string())
            elif f.name == REASON:
                columns[f.name] = pa.array([None] * n + [e.reason for e in errors] + [None] * marker, pa.string())
            else:
                kept = good.column(f.name).cast(f.type) if good is not None and f.name in good.column_names else pa.nulls(n, f.type)
                refused = pa.array([e.source for e in errors], pa.string()).cast(f.type) if f.name == SOURCE else pa.nulls(len(errors), f.type)
                columns[f.name] = pa.concat_arrays([*kept.chunks, refused, pa.nulls(marker, f.type)] if isinstance(kept, pa.ChunkedArray) else [kept, refused, pa.nulls(marker, f.type)])
        return pa.table(columns, schema=self.schema)


def python_step(df, step, sample: pa.Table):
    """Lower a Python step: ``mapInArrow`` with the step's output schema, as a ``Checked`` of its refused rows."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from dataflow.engines.spark.table_ops import BAD, Checked

    schema = output_schema(step.call, sample)
    counted = [pa.field(DROPS, pa.int64())] if step.drops_rows else []
    flagged = pa.schema([*schema, pa.field(BAD, pa.bool_()), pa.field(ETYPE, pa.string()), pa.field(REASON, pa.string()), *counted])
    rows = df.mapInArrow(PythonStage(step.call, flagged, BAD), from_arrow_schema(flagged))
    return Checked(rows, cases=[(f"`{BAD}`", "RowError", f"`{REASON}`")], helpers=(ETYPE, REASON, *(f.name for f in counted)), typed_by=ETYPE)
