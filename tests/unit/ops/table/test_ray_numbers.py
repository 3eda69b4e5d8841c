"""README "Differences on Ray" for decimals and FLOAT: what Ray (DuckDB) gives where Spark gives another type or value."""
from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from dataflow.ops.table import duck
from dataflow.ops.table.sql import duckdb_sql, parse, parse_aggregation

TABLE = pa.table({"g": ["a", "a"], "p": pa.array([1, 2], pa.decimal128(5, 2)), "q": pa.array([1, 2], pa.decimal128(5, 0)),
                  "f": pa.array([0.1, 0.2], pa.float32())})


def _first(columns: dict[str, str]) -> tuple[dict, pa.Schema]:
    out = duck.with_columns(TABLE, {n: duckdb_sql(parse(t)) for n, t in columns.items()})
    return out.to_pylist()[0], out.schema


def test_decimal_division_is_a_double_on_ray():
    row, schema = _first({"d": "p / 3"})  # Spark: decimal(9, 6) 0.333333
    assert schema.field("d").type == pa.float64() and row["d"] == pytest.approx(1 / 3, rel=1e-15)


def test_decimal_products_keep_every_digit_of_scale_on_ray():
    row, schema = _first({"m": "cast(3 as decimal(38, 10)) * cast(3 as decimal(38, 10))", "s": "p + p"})
    assert schema.field("m").type == pa.decimal128(38, 20) and row["m"] == decimal.Decimal(9)  # Spark: decimal(38, 6), the same value
    assert schema.field("s").type == pa.decimal128(6, 2)  # sums keep Spark's type


def test_round_and_floor_of_a_decimal_give_a_double_and_a_bigint_on_ray():
    row, schema = _first({"r": "round(p * 1.25, 1)", "f": "floor(p * 1.25)"})  # Spark: decimal(7, 1) 1.3 and decimal(6, 0) 1
    assert schema.field("r").type == pa.float64() and row["r"] == 1.3
    assert schema.field("f").type == pa.int64() and row["f"] == 1


def test_decimal_aggregates_on_ray():
    out = duck.aggregate(TABLE, ["g"], {n: duckdb_sql(parse_aggregation(t)) for n, t in {"s": "sum(p)", "sq": "sum(q)", "a": "avg(p)"}.items()})
    row = out.to_pylist()[0]  # Spark: decimal(15, 2), decimal(15, 0), decimal(9, 6)
    assert out.schema.field("s").type == pa.decimal128(38, 2) and row["s"] == decimal.Decimal("3.00")
    assert out.schema.field("sq").type == pa.int64() and row["sq"] == 3
    assert out.schema.field("a").type == pa.float64() and row["a"] == 1.5


def test_float_arithmetic_stays_float_on_ray_but_division_is_double_as_on_spark():
    row, schema = _first({"m": "f * 3", "a": "f + 1", "d": "f / 3"})
    assert schema.field("m").type == pa.float32() and row["m"] == pytest.approx(0.3, abs=1e-7)  # Spark: double 0.30000000447034836 (it widens)
    assert schema.field("a").type == pa.float32()
    assert schema.field("d").type == pa.float64() and row["d"] == pytest.approx(0.10000000149011612 / 3, rel=1e-15)


def test_a_float_equals_a_decimal_literal_at_float_precision_on_ray():
    row, _ = _first({"e": "f = 0.1", "x": "cast(f as double) = 0.1"})  # Spark: false for both (it widens to double)
    assert row == {"e": True, "x": False} | {k: v for k, v in row.items() if k not in ("e", "x")}


def test_float_text_is_the_shortest_that_round_trips():
    row, _ = _first({"s": "cast(cast(123456789 as float) as string)"})  # Java 17's Float.toString: 1.23456792E8
    assert row["s"] == "1.2345679E8"


def test_a_double_turned_into_text_implicitly_is_duckdbs_text_on_ray():
    out = duck.with_columns(pa.table({"d": [0.0003]}), {n: duckdb_sql(parse(t)) for n, t in {"a": "concat(d, 'x')", "c": "cast(d as string)"}.items()})
    assert out.to_pylist()[0] == {"d": 0.0003, "a": "0.0003x", "c": "3.0E-4"}  # Spark: 3.0E-4x for both
