"""table.window_columns: SQL window functions per key, every row kept."""
from __future__ import annotations

import pyarrow as pa
import pydantic
import pytest

from dataflow.ops.table.window_columns import window_columns

T = pa.table({"__source__": ["s0", "s1", "s2", "s3", "s4", "s5"], "k": ["a", "a", "b", "a", None, "a"],
              "ts": [3, 1, 5, 2, 1, 2], "v": [10, 20, 30, None, 5, 40]})


def test_aggregates_cover_the_key_and_lag_lead_follow_the_order_with_source_breaking_ties():
    out = window_columns(T, keys=["k"], order_by="ts", columns={
        "last": "max(ts)", "n": "count(*)", "prev": "lag(v)", "next2": "lead(v, 2)", "rn": "row_number()"})
    rows = {r["__source__"]: r for r in out.to_pylist()}
    assert out.num_rows == 6 and out.column_names[:4] == ["__source__", "k", "ts", "v"]
    # Key a in order: s1 (ts 1), s3 (ts 2), s5 (ts 2, after s3 by source), s0 (ts 3).
    assert [rows[s]["rn"] for s in ("s1", "s3", "s5", "s0")] == [1, 2, 3, 4]
    assert [rows[s]["prev"] for s in ("s1", "s3", "s5", "s0")] == [None, 20, None, 40]
    assert [rows[s]["next2"] for s in ("s1", "s3", "s5", "s0")] == [40, 10, None, None]
    assert {rows[s]["last"] for s in ("s1", "s3", "s5", "s0")} == {3} and rows["s0"]["n"] == 4
    assert (rows["s4"]["last"], rows["s4"]["n"], rows["s4"]["prev"]) == (1, 1, None)  # null keys form their own partition


def test_no_keys_is_one_partition_and_bad_functions_are_rejected():
    assert window_columns(T, columns={"hi": "max(v)"}).column("hi").to_pylist() == [40] * 6
    with pytest.raises(pydantic.ValidationError, match="positive integer literal"):
        window_columns.params(columns={"p": "lag(v, -1)"})
    with pytest.raises(pydantic.ValidationError, match="row_number"):
        window_columns.params(columns={"p": "v + 1"})


def test_a_column_may_combine_window_functions_with_the_rows_own_columns():
    out = window_columns(T, keys=["k"], order_by="ts", columns={"step": "v - lag(v)", "span": "max(ts) - min(ts)", "share": "v / sum(v)", "rn0": "row_number() - 1"})
    rows = {r["__source__"]: r for r in out.to_pylist()}
    order = ("s1", "s3", "s5", "s0")  # key a in order; v: 20, None, 40, 10 (sum 70)
    assert [rows[s]["step"] for s in order] == [None, None, None, -30]
    assert {rows[s]["span"] for s in order} == {2} and [rows[s]["rn0"] for s in order] == [0, 1, 2, 3]
    assert [rows[s]["share"] for s in order] == [20 / 70, None, 40 / 70, 10 / 70]
    assert out.schema.field("rn0").type == pa.int32()  # Spark's row_number is an INT
    with pytest.raises(pydantic.ValidationError, match="cannot be nested in lag"):
        window_columns.params(columns={"p": "lag(max(v))"})
    with pytest.raises(pydantic.ValidationError, match="cannot be nested in max"):
        window_columns.params(columns={"p": "max(lag(v))"})
    with pytest.raises(pydantic.ValidationError, match="not allowed here"):
        window_columns.params(columns={"p": "max(v) OVER (PARTITION BY k)"})

