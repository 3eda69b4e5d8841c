"""The Spark engine's one op table: op name -> its native DataFrame lowering (pure: no pyspark import).

An op Spark runs has one entry here: the operations it becomes (``dataflow explain`` shows them) and
the ``"module:function"`` that builds them, imported when a job runs. The function takes
``(df, step, named_frames)`` and returns a DataFrame, or a ``Checked`` one whose bad rows go to
``_errors/``. ``EngineCaps.ops`` of the Spark engine is this table's keys.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["LOWERINGS", "Lowering"]


@dataclass(frozen=True)
class Lowering:
    """How Spark runs one op natively."""

    native: str  # the DataFrame operations, for ``dataflow explain``
    function: str  # "module:function" building them

    def load(self) -> Callable[..., Any]:
        """Return the lowering function (imports pyspark)."""
        module, _, name = self.function.partition(":")
        return getattr(importlib.import_module(module), name)


def _fn(name: str) -> str:
    return f"dataflow.engines.spark.table_ops:_{name}"


LOWERINGS: dict[str, Lowering] = {
    "table.aggregate": Lowering("groupBy(keys).agg(...)", _fn("aggregate")),
    "table.cast": Lowering("try_cast per column; rows with a failed cast -> _errors/", _fn("cast")),
    "table.dedup": Lowering("row_number() over (partition by keys order by order_by, __source__) = 1", _fn("dedup")),
    "table.filter_rows": Lowering("where(<SQL expression as a Column>)", _fn("filter_rows")),
    "table.join": Lowering("join(<named source>, keys, how)", _fn("join")),
    "table.parse_json": Lowering("from_json(<declared schema>) with a corrupt-record column; bad rows -> _errors/", _fn("parse_json")),
    "table.parse_regex": Lowering("rlike + regexp_extract per named group (the first matching pattern of several)", _fn("parse_regex")),
    "table.select": Lowering("select(columns, __source__)", _fn("select")),
    "table.window_aggregate": Lowering("window starts (explode for sliding windows), groupBy(keys, window_start).agg(...)", _fn("window_aggregate")),
    "table.window_columns": Lowering("f(...) over (partition by keys [order by order_by, __source__]) per column", _fn("window_columns")),
    "table.with_columns": Lowering("withColumn per name (SQL expressions as Columns)", _fn("with_columns")),
    "text.dedup_semantic": Lowering(
        "mapInArrow sample -> repartition(1).mapInArrow k-means fit -> mapInArrow nearest centroid -> groupBy(cluster).applyInArrow all pairs",
        "dataflow.engines.spark.semantic:semantic_dedup",
    ),
}
