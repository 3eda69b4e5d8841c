"""table.aggregate: GROUP BY with count, sum, mean, min, max, stddev and slope."""
from __future__ import annotations

import pyarrow as pa
import pydantic
import pytest

from dataflow.ops.table.aggregate import aggregate_rows

T = pa.table({
    "__source__": ["s3", "s1", "s2", "s4"], "link": ["a", "a", "a", None],
    "ts": [0, 1800, 3600, 0], "rx": [-3.0, -3.5, -4.0, None], "crc": [1, None, 2, 5],
})


def test_groups_with_null_keys_and_sql_null_rules():
    out = aggregate_rows(T, keys=["link"], aggregations={
        "n": "count(*)", "k": "count(crc)", "s": "sum(crc)", "mu": "mean(rx)", "sd": "stddev(rx)", "sl": "slope(rx, ts)", "hi": "max(rx)"})
    rows = {r["link"]: r for r in out.to_pylist()}
    assert out.column_names == ["link", "n", "k", "s", "mu", "sd", "sl", "hi", "__source__"]
    assert rows["a"] == {"link": "a", "n": 3, "k": 2, "s": 3, "mu": -3.5, "sd": 0.5, "sl": pytest.approx(-0.5 / 1800), "hi": -3.0, "__source__": "s1"}
    assert rows[None] == {"link": None, "n": 1, "k": 1, "s": 5, "mu": None, "sd": None, "sl": None, "hi": None, "__source__": "s4"}


def test_no_keys_is_one_row_even_over_no_rows():
    assert aggregate_rows(T, aggregations={"n": "count(*)", "s": "sum(crc * 2)"}).to_pylist() == [{"n": 4, "s": 16, "__source__": "s1"}]
    assert aggregate_rows(T.slice(0, 0), aggregations={"n": "count(*)", "m": "max(rx)"}).to_pylist() == [{"n": 0, "m": None, "__source__": None}]


def test_slope_without_x_and_non_aggregates_are_rejected():
    with pytest.raises(pydantic.ValidationError, match="'slope' takes 2 argument"):
        aggregate_rows.params(aggregations={"s": "slope(rx)"})
    with pytest.raises(pydantic.ValidationError, match="needs an aggregate function"):
        aggregate_rows.params(aggregations={"s": "rx"})
    with pytest.raises(pydantic.ValidationError, match="column 'rx' is read outside an aggregate function"):
        aggregate_rows.params(aggregations={"s": "rx + count(*)"})


def test_regression_sums_and_percentiles_follow_spark():
    t = pa.table({"k": ["a"] * 5 + ["b"], "y": [1.0, 2.0, 4.0, None, 3.0, None], "x": [0, 1, 2, 3, None, 1]})
    out = {r["k"]: r for r in aggregate_rows(t, keys=["k"], aggregations={
        "n": "regr_count(y, x)", "sl": "regr_slope(y, x)", "sxx": "regr_sxx(y, x)", "syy": "regr_syy(y, x)", "sxy": "regr_sxy(y, x)",
        "med": "percentile_approx(y, 0.5)", "p90": "percentile_approx(x, 0.9)", "sd": "stddev_samp(y)"}).to_pylist()}
    # Pairs with a null on either side are skipped; a rank is ceil(p * n) of the sorted values.
    assert out["a"] == {"k": "a", "n": 3, "sl": 1.5, "sxx": 2.0, "syy": pytest.approx(14 / 3), "sxy": 3.0, "med": 2.0, "p90": 3, "sd": pytest.approx(1.2909944)}
    assert out["b"] == {"k": "b", "n": 0, "sl": None, "sxx": None, "syy": None, "sxy": None, "med": None, "p90": 1, "sd": None}
