"""table.cast: Spark's try_cast rules; a value that cannot be cast is a row error."""
from __future__ import annotations

import pyarrow as pa
import pydantic
import pytest

from dataflow.errors import RowError
from dataflow.ops.table.cast import cast_columns
from dataflow.batch import from_rows
from dataflow.runtime.stage import StageExecutor, StepCall


def test_casts_trim_strings_and_keep_nulls():
    out = cast_columns(pa.table({"a": [" 7 ", None], "b": ["yes", "0"]}), columns={"a": "long", "b": "boolean"})
    assert out.column("a").to_pylist() == [7, None] and out.column("b").to_pylist() == [True, False]
    assert out.schema.field("a").type == pa.int64()


def test_a_failed_cast_is_a_row_error_and_the_stage_isolates_the_row():
    with pytest.raises(RowError, match="column 'a': value is not a valid long"):
        cast_columns(pa.table({"a": ["1", "x"]}), columns={"a": "long"})
    rows = [{"__source__": f"r{i}", "a": v} for i, v in enumerate(["1", "x", "3"])]
    cols, errors, _ = StageExecutor([StepCall(0, "table.cast", {"columns": {"a": "long"}})])(from_rows(rows))
    assert cols["a"].tolist() == [1, 3] and [e.source for e in errors] == ["r1"]


def test_unknown_type_is_rejected():
    with pytest.raises(pydantic.ValidationError, match="unknown type 'decimal'"):
        cast_columns.params(columns={"a": "decimal"})
