"""The lineage of JSON lines read by ``json_fast`` as a number that sorts as its ``path#line=N`` strings do (``dataflow.line_key``).

While the rows pass only through steps that carry ``__source__`` unread (``SparkRead.lineage_key_until``)
it is the BIGINT key, and only the aggregate's minima become strings (``LineKey.decoded``). The
rank is found per row by a binary search of comparisons of the row's file name, so the files of
one read are capped (``MAX_FILES``); paths that need escaping, or more files, keep the strings.
"""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dataflow.columns import SOURCE
from dataflow.engines.spark.columns import sql_literal, sql_name
from dataflow.line_key import DIGITS, LINE_BITS, padded_terms
from dataflow.lineage import LINE

__all__ = ["MAX_FILES", "LineKey"]

MAX_FILES = 256  # a binary search of 8 comparisons per row


@dataclass(frozen=True)
class LineKey:
    """Line keys of rows read from ``paths``: sorted, plain (as Spark's file URIs spell them), at most ``MAX_FILES``."""

    paths: tuple[str, ...]

    def row_sql(self, line: str) -> str:
        """The key of the row numbered ``line`` (SQL, a BIGINT from 1) in its task's file (``input_file_name()``)."""
        uris = ["file://" + p for p in self.paths]

        def rank(lo: int, hi: int) -> str:
            if hi - lo == 1:
                return str(lo)
            mid = (lo + hi) // 2
            return f"CASE WHEN input_file_name() < {sql_literal(uris[mid])} THEN {rank(lo, mid)} ELSE {rank(mid, hi)} END"

        padded = " ".join(f"WHEN {line} < {bound}L THEN {line} * {scale}L + {d}L" for bound, scale, d in padded_terms())  # a line number is below 2**33 < 10**DIGITS
        return f"shiftleft(CAST({rank(0, len(uris))} AS BIGINT), {LINE_BITS}) + CASE {padded} ELSE shiftleft({line}, 4) + {DIGITS}L END"

    def decoded(self, df: DataFrame) -> DataFrame:
        """``df`` with its ``__source__`` keys (an aggregate's minima) as the strings they stand for.

        A read that kept the strings (JSON lines with no field to read take the exact path) is left as it is.
        """
        if dict(df.dtypes).get(SOURCE) != "bigint":
            return df
        key = sql_name(SOURCE)
        paths = f"array({', '.join(sql_literal(p) for p in self.paths)})"
        scale = f"array({', '.join(f'{10 ** (DIGITS - d)}L' for d in range(1, DIGITS + 1))})"
        low = f"({key} & {(1 << LINE_BITS) - 1}L)"
        line = f"shiftright({low}, 4) div element_at({scale}, CAST({low} & 15L AS INT))"
        text = f"concat(element_at({paths}, CAST(shiftright({key}, {LINE_BITS}) AS INT) + 1), {sql_literal(LINE)}, CAST({line} AS STRING))"
        return df.withColumn(SOURCE, F.expr(text))
