"""table.filter_rows: keep rows where a SQL expression is true."""
from __future__ import annotations

import pyarrow as pa
import pydantic
import pytest

from dataflow.ops.table.filter_rows import filter_rows


def test_keeps_true_rows_and_drops_false_and_null():
    batch = pa.table({"rx": [-3.0, -9.0, None], "link": ["a", "b", "c"]})
    assert filter_rows(batch, where="rx > :floor", vars={"floor": -5}).tolist() == [True, False, False]


def test_a_bad_expression_is_rejected_with_its_place():
    with pytest.raises(pydantic.ValidationError, match="at column 6: incomplete GT"):
        filter_rows.params(where="rx > AND 1")
