"""Cast columns to declared types; a value that cannot be cast is a row error."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from dataflow.columns import SOURCE
from dataflow.errors import RowError
from dataflow.ops.declare import op
from dataflow.ops.table.casting import failed, try_cast
from dataflow.ops.table.grouping import column as read_column
from dataflow.ops.table.types import ColumnName, TypeName


def _same_columns(columns_in: frozenset[str] | None, params) -> frozenset[str] | None:
    return columns_in


@op(name="table.cast", modality="table", inputs=(), outputs=(SOURCE,), batch_format="pyarrow", output_columns=_same_columns)
def cast_columns(batch: pa.Table, *, columns: dict[ColumnName, TypeName]) -> pa.Table:
    """Cast each named column to its type with Spark's ``try_cast`` rules (strings are trimmed first).

    A non-null value that cannot be cast (``'abc'`` to ``long``, ``1e20`` to ``int``) sends its
    row to ``_errors/``; nulls stay null.

    Args:
        columns: Column name -> type (string, int, long, float, double, boolean).
    """
    for name, type_name in columns.items():
        before = read_column(batch, name)
        after = try_cast(before, type_name)
        if pc.any(failed(before, after)).as_py():
            raise RowError(f"column '{name}': value is not a valid {type_name}") from ValueError(name)
        batch = batch.set_column(batch.column_names.index(name), name, after)
    return batch
