"""Keep only the listed columns."""
from __future__ import annotations

import pyarrow as pa

from dataflow.columns import SOURCE
from dataflow.ops.declare import op


def _selected(columns_in: frozenset[str] | None, params) -> frozenset[str]:
    return frozenset(params.columns) | {SOURCE}


@op(
    name="table.select",
    modality="table",
    inputs=(),
    outputs=(SOURCE,),
    batch_format="pyarrow",
    output_columns=_selected,
)
def select_columns(batch: pa.Table, *, columns: list[str]) -> pa.Table:
    """Keep only ``columns`` (plus ``__source__``, which every row keeps for lineage), in that order.

    Args:
        columns: Names of the columns to keep.
    """
    missing = [c for c in columns if c not in batch.column_names]
    if missing:
        raise KeyError(f"table.select: no column(s) {missing} (have {batch.column_names})")
    keep = list(dict.fromkeys([*columns, *([SOURCE] if SOURCE in batch.column_names else [])]))
    return batch.select(keep)
