"""Keep the rows where a SQL boolean expression is true."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dataflow.ops.declare import op
from dataflow.ops.table.evaluate import evaluate_mask
from dataflow.ops.table.expr import Expr, parse


@op(name="table.filter_rows", modality="table", inputs=(), outputs=(), kind="filter", batch_format="pyarrow")
def filter_rows(batch: pa.Table, *, where: Expr, vars: dict[str, Any] | None = None) -> np.ndarray:
    """Keep the rows where ``where`` is true; rows where it is false or NULL are dropped.

    Example: ``where: "rx_power_dbm < :floor AND link LIKE 'sw1%'"`` with ``vars: {floor: -12}``.

    Args:
        where: A SQL boolean expression over the columns (see ``dataflow.ops.table.expr``).
        vars: Values for the ``:name`` markers in ``where`` (thresholds you want to --set).
    """
    return evaluate_mask(parse(where), batch, vars or {})
