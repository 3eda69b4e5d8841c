"""SQL semantics of expressions on Arrow: three-valued logic, NULL on a zero divisor, Spark's casts."""
from __future__ import annotations

import math

import pyarrow as pa
import pytest

from dataflow.ops.table.casting import try_cast
from dataflow.ops.table.evaluate import evaluate, evaluate_mask
from dataflow.ops.table.expr import parse

T = pa.table({"a": [1, 2, None, 7], "b": [0, 2, 3, -2], "x": [1.5, float("nan"), -2.5, 2.5], "s": ["sw1", "sw2", None, "x'y"]})


def ev(text: str, **params):
    return evaluate(parse(text), T, params).to_pylist()


def test_null_logic_is_three_valued_and_nan_counts_as_null():
    assert ev("a > 1 AND b > 0") == [False, True, None, False]
    assert ev("a > 1 OR b > 0") == [False, True, True, True]
    assert ev("x IS NULL") == [False, True, False, False]
    assert evaluate_mask(parse("a > 1"), T).tolist() == [False, True, False, True]


def test_division_is_double_and_null_for_zero_remainder_keeps_the_dividend_sign():
    assert ev("a / b") == [None, 1.0, None, -3.5]
    assert ev("a % b") == [None, 0, None, 1]
    assert ev("-7 % 3") == [-1] * 4
    assert ev("a + b * 2") == [1, 6, None, 3]


def test_case_in_like_coalesce_and_string_functions():
    assert ev("CASE WHEN a > 1 THEN 'big' WHEN a IS NULL THEN 'none' ELSE 'small' END") == ["small", "big", "none", "big"]
    assert ev("a IN (1, 7)") == [True, False, None, True]
    assert ev("a NOT IN (1, NULL)") == [False, None, None, None]
    assert ev("s LIKE 'sw%'") == [True, True, None, False]
    assert ev("coalesce(a, b, 0)") == [1, 2, 3, 7]
    assert ev("upper(s) || '-' || cast(a AS string)") == ["SW1-1", "SW2-2", None, "X'Y-7"]
    assert ev("length(s)") == [3, 3, None, 3]


def test_numeric_functions_round_half_away_from_zero_like_spark():
    assert ev("round(x)") == [2.0, None, -3.0, 3.0]
    assert ev("floor(x)") == [1, None, -3, 2]
    assert ev("ln(b)") == [None, pytest.approx(math.log(2)), pytest.approx(math.log(3)), None]
    assert ev("greatest(a, b)") == [1, 2, 3, 7]


def test_params_and_missing_params():
    assert ev("a >= :lo", lo=2) == [False, True, None, True]
    with pytest.raises(KeyError, match="no value for ':lo'"):
        ev("a >= :lo")


def test_type_errors_name_the_types():
    with pytest.raises(TypeError, match="cannot compare string with int64"):
        ev("s > 1")
    with pytest.raises(KeyError, match="no column 'nope'"):
        ev("nope + 1")


@pytest.mark.parametrize(
    "values, target, expected",
    [
        (["12", " 7 ", "abc", None, "1.5", "+3", "99999999999"], "int", [12, 7, None, None, None, 3, None]),
        (["12.0", "1.5d", "inf", "1_000", "", "-.5", "1e400"], "double", [12.0, 1.5, math.inf, None, None, -0.5, math.inf]),
        (["TRUE", " yes ", "T", "x", "0"], "boolean", [True, True, True, None, False]),
        ([1.5, -1.5, 1e20, None], "long", [1, -1, None, None]),
        ([-10.0, 2.35, 1e-4, -0.0, 12345678.5, None], "string", ["-10.0", "2.35", "1.0E-4", "-0.0", "1.23456785E7", None]),
    ],
    ids=["string-to-int", "string-to-double", "string-to-boolean", "double-to-long", "double-to-string-as-java"],
)
def test_try_cast_follows_spark(values, target, expected):
    assert try_cast(pa.array(values), target).to_pylist() == expected


def test_unix_timestamp_reads_spark_patterns_utc_by_default_and_null_when_unreadable():
    t = pa.table({"t": ["2026-01-01T01:00:05+01:00", "2026-01-01T00:00:05Z", "garbage", None]})
    iso = "unix_timestamp(t, 'yyyy-MM-dd''T''HH:mm:ssX')"
    assert evaluate(parse(iso), t).to_pylist() == [1767225605, 1767225605, None, None]
    assert evaluate(parse("unix_timestamp('2026-01-02 03:04:05', 'yyyy-MM-dd HH:mm:ss')"), t).to_pylist() == [1767323045] * 4


def test_greatest_and_least_of_untyped_nulls_are_null():
    t = pa.table({"n": pa.nulls(2)})
    assert evaluate(parse("greatest(n, n)"), t).to_pylist() == [None, None] == evaluate(parse("least(n, NULL)"), t).to_pylist()
