"""A table op added on both engines in two places: its ``@op`` here, and one Spark lowering entry.

``tests/integration/engines/test_new_table_op.py`` adds the entry to the Spark engine's table
(``dataflow.engines.spark.lowerings.LOWERINGS``); Ray runs the op's Arrow function as it is.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from dataflow.ops import op


@op(name="table.double_fixture", modality="table", inputs=("{column}",), outputs=("{into}",), batch_format="pyarrow")
def double_column(batch: pa.Table, *, column: str = "n", into: str = "doubled") -> pa.Table:
    """Add a column holding twice a numeric column.

    Args:
        column: The numeric column.
        into: The column to write.
    """
    return batch.append_column(into, pc.multiply(batch.column(column), 2))


def lower_double(df, step, named):
    """Spark: the same op as native DataFrame operations."""
    from pyspark.sql import functions as F

    return df.withColumn(step.params.into, F.col(step.params.column) * 2)
