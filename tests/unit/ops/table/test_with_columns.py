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


def test_json_tuple_sets_one_column_per_field_as_sparks_json_tuple():
    lines = ['{"host": "sw1", "lat": 1.5, "meta": {"k": [1, 2]}, "nil": null}', "not json", "[1, 2]", None]
    batch = pa.table({"js": lines, "host": ["old"] * 4})
    out = with_columns(batch, columns={"(host, lat, meta, nil, gone)": "json_tuple(js, 'host', 'lat', 'meta', 'nil', 'gone')",
                                       "tag": "host || '/' || lat"})
    assert out.column_names == ["js", "host", "lat", "meta", "nil", "gone", "tag"]  # host replaced in place
    assert out.slice(0, 1).to_pylist()[0] == {"js": lines[0], "host": "sw1", "lat": "1.5", "meta": '{"k":[1,2]}', "nil": None,
                                              "gone": None, "tag": "sw1/1.5"}
    assert all(v is None for row in out.slice(1).to_pylist() for k, v in row.items() if k not in ("js",))


@pytest.mark.parametrize(("columns", "problem"), [
    ({"(a, b)": "json_tuple(js, 'a')"}, "json_tuple gives 1 column"),
    ({"a": "json_tuple(js, 'a')"}, None),
    ({"(a, b)": "upper(js)"}, "must be json_tuple"),
    ({"a": "upper(json_tuple(js, 'a'))"}, "use it as a whole table.with_columns expression"),
    ({"(a)": "json_tuple(js, k)"}, "field names as string literals"),
])
def test_json_tuple_needs_a_key_naming_one_column_per_literal_field(columns, problem):
    if problem is None:
        assert with_columns.params(columns=columns).columns == columns
        return
    with pytest.raises(pydantic.ValidationError, match=problem):
        with_columns.params(columns=columns)


def test_json_tuple_is_not_an_expression_of_other_ops():
    from dataflow.ops.table.filter_rows import filter_rows

    with pytest.raises(pydantic.ValidationError, match="json_tuple gives several columns"):
        filter_rows.params(where="json_tuple(js, 'a') = 'x'")
