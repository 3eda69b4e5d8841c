"""table.with_columns: add or replace columns from SQL expressions, in order."""
from __future__ import annotations

import pyarrow as pa
import pydantic
import pytest

from dataflow.ops.table.with_columns import with_columns


def test_later_columns_see_earlier_ones_and_existing_columns_are_replaced():
    batch = pa.table({"slope": [-0.0001, 0.0], "crc": [5, 500]})
    out = with_columns(batch, columns={"per_hour": "slope * 3600", "bad": "per_hour < -0.2 OR crc > :max", "crc": "crc * 2"}, vars={"max": 100})
    assert out.column_names == ["slope", "crc", "per_hour", "bad"]
    assert out.column("per_hour").to_pylist() == pytest.approx([-0.36, 0.0])
    assert out.column("bad").to_pylist() == [True, True]
    assert out.column("crc").to_pylist() == [10, 1000]


def test_unknown_function_is_rejected_when_params_are_validated():
    with pytest.raises(pydantic.ValidationError, match="unknown function 'sqr'"):
        with_columns.params(columns={"y": "sqr(x)"})
