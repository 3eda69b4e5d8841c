"""Keep the rows where a Spark SQL boolean expression is true."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from dataflow.ops.declare import op
from dataflow.ops.table import duck
from dataflow.ops.table.coercion import arrow_kinds
from dataflow.ops.table.sql import duckdb_sql, parse
from dataflow.ops.table.sql_params import Expr


@op(name="table.filter_rows", modality="table", inputs=(), outputs=(), kind="filter", batch_format="pyarrow")
def filter_rows(batch: pa.Table, *, where: Expr, vars: dict[str, Any] | None = None) -> np.ndarray:
    """Keep the rows where ``where`` is true; rows where it is false or NULL are dropped.

    Example: ``where: "rx_power_dbm < :floor AND link LIKE 'sw1%'"`` with ``vars: {floor: -12}``.

    Args:
        where: A Spark SQL boolean expression over the columns (see ``dataflow.ops.table.sql``).
        vars: Values for the ``:name`` markers in ``where`` (thresholds you want to --set), bound as literals.
    """
    return duck.keep_mask(batch, duckdb_sql(parse(where), vars, kinds=arrow_kinds(batch.schema)))
