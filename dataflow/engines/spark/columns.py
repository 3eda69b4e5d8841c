"""Column names and literals as Spark SQL text (user expressions are rendered by ``dataflow.ops.table.sql``)."""
from __future__ import annotations

import math
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

__all__ = ["col", "sql_literal", "sql_name"]


def sql_name(name: str) -> str:
    """``name`` as a Spark SQL identifier (back-quoted: dots and spaces are not parsed)."""
    return "`" + name.replace("`", "``") + "`"


def col(name: str) -> Column:
    """A column by its exact name (dots and spaces are not parsed)."""
    return F.col(sql_name(name))


def sql_literal(value: Any) -> str:
    """A Python value as a Spark SQL literal: integers are BIGINT, floats DOUBLE, strings verbatim."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return f"{value}L"
    if isinstance(value, float):
        if math.isfinite(value):
            return f"{value!r}D"
        return "CAST('NaN' AS DOUBLE)" if math.isnan(value) else f"CAST('{'-' if value < 0 else ''}Infinity' AS DOUBLE)"
    # Spark SQL reads backslash escapes in string literals (spark.sql.parser.escapedStringLiterals off).
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"
