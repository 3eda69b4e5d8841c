"""table.dedup: one row per key, chosen by an order column, ties by the smallest source."""
from __future__ import annotations

import pyarrow as pa
import pydantic
import pytest

from dataflow.ops.table.dedup import dedup_rows

T = pa.table({"__source__": ["s1", "s2", "s3", "s4", "s5"], "link": ["a", "a", "a", "b", "a"], "ts": [0, None, 7200, 10, 7200]})


def test_keep_last_and_first_by_order_column_with_spark_null_order():
    assert dedup_rows(T, keys=["link"], order_by="ts", keep="last").column("__source__").to_pylist() == ["s3", "s4"]
    assert dedup_rows(T, keys=["link"], order_by="ts", keep="first").column("__source__").to_pylist() == ["s2", "s4"]


def test_without_keys_exact_duplicates_keep_the_smallest_source():
    assert dedup_rows(T).column("__source__").to_pylist() == ["s1", "s2", "s3", "s4"]


def test_keep_must_be_first_or_last():
    with pytest.raises(pydantic.ValidationError, match="'first' or 'last'"):
        dedup_rows.params(keys=["link"], keep="middle")
